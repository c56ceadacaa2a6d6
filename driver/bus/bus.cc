#include "driver/bus/bus.h"

#include <endian.h>

#include <cerrno>
#include <utility>

namespace onchip::driver::bus {

DmaMapping& DmaMapping::operator=(DmaMapping&& o) noexcept {
  if (this != &o) {
    (void)Reset();
    bus_ = std::exchange(o.bus_, nullptr);
    host_ = std::exchange(o.host_, nullptr);
    iova_ = std::exchange(o.iova_, 0);
    length_ = std::exchange(o.length_, 0);
  }
  return *this;
}

Result<void> DmaMapping::Reset() {
  if (bus_ == nullptr) return {};
  Bus* bus = std::exchange(bus_, nullptr);
  host_ = nullptr;
  return bus->UnmapHost(std::exchange(iova_, 0), std::exchange(length_, 0));
}

uint64_t IovaSpace::Take(uint64_t length, uintptr_t host) {
  constexpr uint64_t kLarge = alloc::kHugePageBytes;
  const uint64_t phase = host & (kLarge - 1);
  uint64_t cur = next_.load(std::memory_order_relaxed);
  for (;;) {
    // The first IOVA at or above `cur` with the host address's offset inside a 2 MiB page.
    uint64_t iova = (cur & ~(kLarge - 1)) + phase;
    if (iova < cur) iova += kLarge;
    const uint64_t next = iova + RoundUpPage(length) + kPageSize;
    if (next_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) return iova;
  }
}

Result<std::byte*> Bus::Bar0Window(uint64_t offset, uint64_t length) const {
  if (offset > bar0_size() || length > bar0_size() - offset)
    return Fail(EFAULT, "bus: window outside BAR0");
  return bar0() + offset;
}

uint32_t Bus::Read32(uint64_t offset) const {
  // A relaxed atomic access is one plain 32-bit load or store (what MMIO needs) and tells the
  // compiler and the sanitizers that another agent (the device) touches the word concurrently.
  const auto* reg = reinterpret_cast<const volatile uint32_t*>(bar0() + offset);
  return be32toh(__atomic_load_n(reg, __ATOMIC_RELAXED));
}

void Bus::Write32(uint64_t offset, uint32_t value) {
  auto* reg = reinterpret_cast<volatile uint32_t*>(bar0() + offset);
  __atomic_store_n(reg, htobe32(value), __ATOMIC_RELAXED);
}

}  // namespace onchip::driver::bus
