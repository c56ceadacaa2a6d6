// One function the device daemon serves: a software ConnectX (tools/sim) in the daemon, brought
// up once by the driver over an in-process sim bus, as the kernel brings a PCI function up
// before any process opens it. The daemon's driver::Device owns the command queue; clients'
// commands go through its commander with their uid stamped.
#pragma once

#include <cstdint>
#include <memory>

#include "driver/device.h"
#include "tools/sim/device.h"

namespace onchip::simd {

struct ServedFunction {
  uint32_t index = 0;
  std::unique_ptr<sim::Device> device;
  std::shared_ptr<driver::Device> driver;  // over a SimBus on `device`; closed before it goes
};

}  // namespace onchip::simd
