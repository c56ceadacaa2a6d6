// A second (or third) software ConnectX for a device test: the device, a test-side driver (Node)
// brought up on it, a CQ, and an mkey over all of its data area. The test's own device comes from
// SimTest / NodeTest; these are the others a wire or a shared device thread needs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "tests/device/sim/engine_node.h"
#include "tests/device/sim/cmd_writer.h"
#include "tools/sim/device.h"
#include "tools/sim/device_thread.h"

namespace onchip::sim::testing {

struct StartedFunction {
  std::unique_ptr<Device> device;
  std::unique_ptr<CommandWriter> writer;
  std::unique_ptr<Node> node;
  Node::CqInfo cq;
  uint32_t key = 0;

  ~StartedFunction() {
    node.reset();
    writer.reset();
    device.reset();
  }
};

// A device with `config`, on `thread` when given (else a thread of its own), started; null (and
// a test failure) when the device cannot be created.
inline std::unique_ptr<StartedFunction> StartFunction(
    const DeviceConfig& config, std::shared_ptr<DeviceThread> thread = nullptr) {
  auto d = thread ? Device::Create(config, std::move(thread)) : Device::Create(config);
  EXPECT_TRUE(d) << d.error().describe();
  if (!d) return nullptr;
  auto f = std::make_unique<StartedFunction>();
  f->device = std::move(*d);
  f->writer = std::make_unique<CommandWriter>(*f->device);
  f->node = std::make_unique<Node>(*f->writer);
  f->node->Start();
  f->cq = f->node->NewCq(0);
  f->key = f->node->MttKey(kAll);
  return f;
}

}  // namespace onchip::sim::testing
