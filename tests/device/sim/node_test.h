// The fixtures of the data-engine tests: a started test-side driver (Node) on the test's device,
// a CQ for each of two QPs to come, and an mkey over all of the data area (NodeTest); two RC QPs
// on those CQs, to be connected to each other through the device's own GID (RcPairTest); and
// the byte pattern those tests write and look for.
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

class RcPairTest : public NodeTest {
 protected:
  void SetUp() override {
    NodeTest::SetUp();
    a_ = node_->NewQp(0, prm::QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
    b_ = node_->NewQp(1, prm::QP_ST_RC, cq_b_.cqn, cq_b_.cqn);
  }
  // The path to `qpn` on this device, through the GID RoCE v2 uses (index 3).
  Node::Path PathTo(uint32_t qpn) {
    Node::Path p;
    p.remote_qpn = qpn;
    p.rgid = sim_->engine().gids()[3];
    return p;
  }
  // Connects a to b and b to a; a path's other fields (timeouts, retry counts) as given.
  void ConnectBoth(Node::Path to_b = {}, Node::Path to_a = {}) {
    node_->ConnectPair(a_, b_, sim_->engine().gids()[3], to_b, to_a);
  }
  // Addresses in the data area.
  static constexpr uint64_t kSrc = Node::kDataVa + 0x1000;
  static constexpr uint64_t kDst = Node::kDataVa + 0x20000;

  Node::QpInfo a_, b_;
};

}  // namespace onchip::sim::testing
