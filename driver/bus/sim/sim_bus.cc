#include "driver/bus/sim/sim_bus.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "log/log.h"
#include "mmio/barriers.h"

namespace onchip::driver::bus {

namespace {

// The function's BAR0 mapped whole, with its read-only page over it.
Result<std::byte*> MapBar0(const vpci::Function& function) {
  const vpci::SharedMemory bar = function.bar0();
  if (bar.fd < 0 || bar.size == 0 || bar.size % kPageSize != 0)
    return Fail(EINVAL, "sim bus: function has no usable BAR0");
  void* p = mmap(nullptr, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, bar.fd, 0);
  if (p == MAP_FAILED) return Fail(errno, "sim bus: mmap BAR0");
  auto* base = static_cast<std::byte*>(p);
  const auto ro = function.bar0_read_only_page();
  if (!ro) return base;
  int e = EINVAL;
  if (ro->bar_offset % kPageSize == 0 && ro->bar_offset < bar.size) {
    if (mmap(base + ro->bar_offset, kPageSize, PROT_READ, MAP_SHARED | MAP_FIXED, ro->fd, 0) !=
        MAP_FAILED)
      return base;
    e = errno;
  }
  munmap(base, bar.size);
  return Fail(e, "sim bus: map BAR0's read-only page");
}

}  // namespace

Result<std::unique_ptr<SimBus>> SimBus::Open(vpci::Function& function) {
  ONCHIP_TRY(std::byte* const bar0, MapBar0(function));
  return std::unique_ptr<SimBus>(new SimBus(function, bar0, function.bar0().size, kDefaultIovaBase));
}

Result<std::unique_ptr<SimBus>> SimBus::Open(std::unique_ptr<vpci::Function> function) {
  if (!function) return Fail(EINVAL, "sim bus: no function");
  ONCHIP_TRY(std::unique_ptr<SimBus> bus, Open(*function));
  bus->owned_ = std::move(function);
  return bus;
}

Result<std::unique_ptr<SimBus>> SimBus::Open(std::unique_ptr<vpci::Function> function,
                                             uint64_t iova_base) {
  if (!function) return Fail(EINVAL, "sim bus: no function");
  ONCHIP_TRY(std::byte* const bar0, MapBar0(*function));
  std::unique_ptr<SimBus> bus(new SimBus(*function, bar0, function->bar0().size, iova_base));
  bus->owned_ = std::move(function);
  return bus;
}

SimBus::~SimBus() { munmap(bar0_, bar0_size_); }

void SimBus::DoorbellRung() {
  mmio::DoorbellBeforeSleepCheckBarrier();
  auto* word = reinterpret_cast<uint32_t*>(bar0_ + vpci::kEngineSleepWordOffset);
  if (std::atomic_ref<uint32_t>(*word).load(std::memory_order_seq_cst) != 0) [[unlikely]] {
    doorbell_kicks_.fetch_add(1, std::memory_order_relaxed);
    function_.Kick();
  }
}

Result<uint64_t> SimBus::Map(const alloc::Region& r) {
  if (r.addr == nullptr || r.length == 0 || r.length % kPageSize != 0)
    return Fail(EINVAL, "sim bus: region must be whole pages");
  const uint64_t iova = iova_.Take(r.length, reinterpret_cast<uintptr_t>(r.addr));
  vpci::DmaRegion region{.iova = iova, .length = r.length, .host = r.addr, .fd = r.fd,
                         .fd_offset = r.fd_offset};
  ONCHIP_CHECK(function_.MapDma(region));
  return iova;
}

void SimBus::Unmap(const alloc::Region& r, uint64_t iova) {
  // Once UnmapDma returns the device no longer touches the pages. It fails only for a mapping
  // the function never had, which Map never returns.
  if (auto unmapped = function_.UnmapDma(iova, r.length); !unmapped)
    log::Say(log::Level::kWarn, "onchip sim bus: %s", unmapped.error().describe().c_str());
}

Result<DmaMapping> SimBus::MapHost(std::byte* host, uint64_t length) {
  if (host == nullptr || length == 0 || reinterpret_cast<uintptr_t>(host) % kPageSize != 0 ||
      length % kPageSize != 0)
    return Fail(EINVAL, "sim bus: host mapping must be whole 4 KiB pages");
  const uint64_t iova = iova_.Take(length, reinterpret_cast<uintptr_t>(host));
  vpci::DmaRegion region{.iova = iova, .length = length, .host = host, .fd = -1, .fd_offset = 0};
  ONCHIP_CHECK(function_.MapDma(region));
  return DmaMapping(this, host, iova, length);
}

Result<void> SimBus::UnmapHost(uint64_t iova, uint64_t length) {
  return function_.UnmapDma(iova, length);
}

}  // namespace onchip::driver::bus
