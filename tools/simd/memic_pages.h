// Which client each 4 KiB page of a function's MEMIC window belongs to.
//
// A client reaches its device memory through its own pages (client_window.h), so no page may
// hold two clients' allocations: the kernel gives every allocation whole pages for the same
// reason (drivers/infiniband/hw/mlx5/dm.c, mlx5_cmd_alloc_memic, and its page bitmap). Here a
// page belongs to the client with an allocation in it, and that client's further allocations
// may share it; a page is free again when the client's last allocation in it goes.
//
// Threading: the caller holds mutex() across the check, the ALLOC_MEMIC it guards and Take, so
// that two clients' allocations cannot land in one free page at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace onchip::simd {

class MemicPages {
 public:
  // The window [start, start + size) in BAR0 offsets (size a multiple of 4 KiB, 0: no MEMIC).
  MemicPages(uint64_t start, uint64_t size);

  std::mutex& mutex() { return mu_; }

  // Whether every page [start, start + length) touches is inside the window and free or
  // `client`'s (an ALLOC_MEMIC range it may ask the firmware to allocate in).
  bool MayUse(uint64_t start, uint64_t length, uint32_t client) const;
  // An allocation of `client` at [start, start + length): returns the BAR0 offsets of the
  // pages that were free and are now the client's (the ones to back with its window).
  std::vector<uint64_t> Take(uint64_t start, uint64_t length, uint32_t client);
  // The allocation went: returns the pages that are free again (the ones to restore).
  std::vector<uint64_t> Give(uint64_t start, uint64_t length, uint32_t client);

 private:
  struct Page {
    uint32_t client = 0;       // meaningful while allocations != 0
    uint32_t allocations = 0;  // the client's allocations in the page
  };
  // Indices of the pages [start, start + length) touches, or an empty range outside the window.
  bool PageRange(uint64_t start, uint64_t length, uint64_t& first, uint64_t& end) const;

  const uint64_t start_;
  std::vector<Page> pages_;
  std::mutex mu_;
};

}  // namespace onchip::simd
