// alloc/region.h: one backing region of DMA memory, the unit the device maps.
//
// A region is a virtually contiguous, 2 MiB-aligned range whose pages are one contiguous range of
// one file (fd, fd_offset). Buffers are carved out of regions; the bus maps a region once and
// every buffer inside reuses that mapping (see dma_mapper.h).
//
// The fd is borrowed: it stays valid while the region lives. To hand it to another process or
// keep it longer, dup() it (or pass it over SCM_RIGHTS, which duplicates it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "alloc/tier.h"

namespace onchip::alloc {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

struct Region {
  void* addr = nullptr;    // 2 MiB aligned
  size_t length = 0;       // a multiple of 2 MiB
  int fd = -1;             // file backing [addr, addr + length)
  uint64_t fd_offset = 0;  // where addr sits in that file
  Tier tier = Tier::kMemfd4k;
  size_t page_size = 0;    // 4096 or 2 MiB: what the TLB sees
  int numa_socket = -1;    // -1: unknown / not placed

  bool contains(const void* p, size_t n = 1) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(addr);
    return a >= b && n <= length && a - b <= length - n;
  }
};

}  // namespace onchip::alloc
