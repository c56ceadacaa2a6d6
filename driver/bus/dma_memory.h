// DmaMemory: a buffer the driver allocated for the device (the command queue page, mailbox
// blocks, pages lent to firmware, queue buffers), carved by alloc::MemoryProvider out of a
// hugepage (or memfd) region that the bus mapped once (bus.h), and given back to the provider
// when the handle goes.
//
// `host` and `iova` name the same `length` bytes; the memory is zero when allocated. The
// provider must outlive every handle, and the device must have stopped using the memory
// before the handle is reset (the driver's teardown order sees to both).
//
//   ONCHIP_TRY(DmaMemory page, DmaMemory::Allocate(provider, 4096, 4096));
//   write_address_register(page.iova());
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "alloc/provider.h"
#include "uapi/result.h"

namespace onchip::driver::bus {

class DmaMemory {
 public:
  // `alignment` a power of two up to 2 MiB. Errors: the provider's (EINVAL, ENOMEM, the bus's
  // mapping error); EFAULT if the provider has no DMA mapper (the device could not reach it).
  static Result<DmaMemory> Allocate(alloc::MemoryProvider& provider, size_t length,
                                    size_t alignment);

  DmaMemory() = default;
  DmaMemory(DmaMemory&& o) noexcept { *this = std::move(o); }
  DmaMemory& operator=(DmaMemory&& o) noexcept;
  DmaMemory(const DmaMemory&) = delete;
  DmaMemory& operator=(const DmaMemory&) = delete;
  ~DmaMemory() { Reset(); }

  std::byte* host() const { return static_cast<std::byte*>(a_.addr); }
  uint64_t iova() const { return a_.iova; }
  // The usable bytes: the request rounded up to the provider's block size.
  uint64_t length() const { return a_.length; }
  // Where it lives (tier, page size, fd + offset), as the provider described it.
  const alloc::Allocation& allocation() const { return a_; }
  explicit operator bool() const { return provider_ != nullptr; }
  // Gives the memory back to the provider now.
  void Reset();

 private:
  DmaMemory(alloc::MemoryProvider* provider, const alloc::Allocation& a) : provider_(provider), a_(a) {}

  alloc::MemoryProvider* provider_ = nullptr;
  alloc::Allocation a_;
};

}  // namespace onchip::driver::bus
