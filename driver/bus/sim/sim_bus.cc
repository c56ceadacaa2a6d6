#include "driver/bus/sim/sim_bus.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace onchip::bus {

Result<std::unique_ptr<SimBus>> SimBus::Open(vpci::Function& function) {
  const vpci::SharedMemory bar = function.bar0();
  if (bar.fd < 0 || bar.size == 0 || bar.size % kPageSize != 0)
    return Fail(EINVAL, "sim bus: function has no usable BAR0");
  void* p = mmap(nullptr, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, bar.fd, 0);
  if (p == MAP_FAILED) return Fail(errno, "sim bus: mmap BAR0");
  return std::unique_ptr<SimBus>(new SimBus(function, static_cast<std::byte*>(p), bar.size));
}

Result<std::unique_ptr<SimBus>> SimBus::Open(std::unique_ptr<vpci::Function> function) {
  if (!function) return Fail(EINVAL, "sim bus: no function");
  ONCHIP_TRY(std::unique_ptr<SimBus> bus, Open(*function));
  bus->owned_ = std::move(function);
  return bus;
}

SimBus::~SimBus() { munmap(bar0_, bar0_size_); }

Result<DmaBuffer> SimBus::AllocDma(uint64_t length) {
  if (length == 0) return Fail(EINVAL, "sim bus: zero-length DMA buffer");
  const uint64_t size = RoundUpPage(length);
  const int fd = memfd_create("onchip-dma", MFD_CLOEXEC);
  if (fd < 0) return Fail(errno, "sim bus: memfd_create for DMA");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    close(fd);
    return Fail(e, "sim bus: size DMA memfd");
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return Fail(e, "sim bus: mmap DMA memfd");
  }
  const uint64_t iova = next_iova_.fetch_add(size + kPageSize);  // a guard page between buffers
  vpci::DmaRegion region{.iova = iova, .length = size, .host = p, .fd = fd, .fd_offset = 0};
  if (auto mapped = function_.MapDma(region); !mapped) {
    munmap(p, size);
    close(fd);
    return std::unexpected(mapped.error());
  }
  return DmaBuffer(this, static_cast<std::byte*>(p), iova, size, static_cast<uint64_t>(fd));
}

Result<void> SimBus::FreeDma(std::byte* host, uint64_t iova, uint64_t length, uint64_t cookie) {
  // Unmap from the device first: once UnmapDma returns the device no longer touches the pages.
  auto unmapped = function_.UnmapDma(iova, length);
  munmap(host, length);
  close(static_cast<int>(cookie));
  return unmapped;
}

Result<DmaMapping> SimBus::MapHost(std::byte* host, uint64_t length) {
  if (host == nullptr || length == 0 || reinterpret_cast<uintptr_t>(host) % kPageSize != 0 ||
      length % kPageSize != 0)
    return Fail(EINVAL, "sim bus: host mapping must be whole 4 KiB pages");
  const uint64_t iova = next_iova_.fetch_add(length + kPageSize);
  vpci::DmaRegion region{.iova = iova, .length = length, .host = host, .fd = -1, .fd_offset = 0};
  ONCHIP_CHECK(function_.MapDma(region));
  return DmaMapping(this, host, iova, length);
}

Result<void> SimBus::UnmapHost(uint64_t iova, uint64_t length) {
  return function_.UnmapDma(iova, length);
}

}  // namespace onchip::bus
