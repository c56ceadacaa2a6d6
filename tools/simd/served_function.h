// One function the device daemon serves: a software ConnectX (tools/sim) in the daemon, brought
// up once by the driver over an in-process sim bus, as the kernel brings a PCI function up
// before any process opens it. The daemon's driver::Device owns the command queue; clients'
// commands go through its commander with their uid stamped.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "driver/device.h"
#include "tools/simd/memic_pages.h"
#include "tools/sim/device.h"

namespace onchip::simd {

struct ServedFunction {
  uint32_t index = 0;
  std::unique_ptr<sim::Device> device;
  std::shared_ptr<driver::Device> driver;  // opened on `device` (Locator::Of); closed before it goes
  // Which client each page of the MEMIC window belongs to (its clients' windows back them).
  std::unique_ptr<MemicPages> memic_pages;

  // Interrupt vectors for clients, as the kernel gives each devx user its own: vector 0 is the
  // daemon's driver's, each client takes the lowest free other one, and gives it back when it
  // goes. nullopt when every vector is taken (that client gets no interrupts).
  std::optional<uint16_t> TakeVector() {
    std::lock_guard lock(vectors_mu);
    const std::size_t n = device->config().num_interrupt_vectors;
    if (vectors_taken.size() < n) vectors_taken.resize(n, false);
    for (std::size_t v = 1; v < n; ++v) {
      if (vectors_taken[v]) continue;
      vectors_taken[v] = true;
      return static_cast<uint16_t>(v);
    }
    return std::nullopt;
  }
  void GiveBackVector(uint16_t v) {
    std::lock_guard lock(vectors_mu);
    if (v < vectors_taken.size()) vectors_taken[v] = false;
  }
  std::mutex vectors_mu;
  std::vector<bool> vectors_taken;
};

}  // namespace onchip::simd
