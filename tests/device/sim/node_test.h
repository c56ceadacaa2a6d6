// The fixture of the data-engine tests: a started test-side driver (Node) on the test's device,
// a CQ for each of two QPs to come, and an mkey over all of the data area; and the byte pattern
// those tests write and look for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tests/device/sim/engine_node.h"
#include "tests/device/sim/sim_fixture.h"

namespace onchip::sim::testing {

// n bytes seed, seed + step, seed + 2 step, ... (mod 256).
inline std::vector<std::byte> Pattern(std::size_t n, uint8_t seed, unsigned step = 7) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(seed + i * step);
  return v;
}

class NodeTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    node_ = std::make_unique<Node>(*w_);
    node_->Start();
    cq_a_ = node_->NewCq(0);
    cq_b_ = node_->NewCq(1);
    key_ = node_->MttKey(kAll);
  }
  void TearDown() override {
    node_.reset();
    SimTest::TearDown();
  }

  std::unique_ptr<Node> node_;
  Node::CqInfo cq_a_, cq_b_;
  uint32_t key_ = 0;
};

}  // namespace onchip::sim::testing
