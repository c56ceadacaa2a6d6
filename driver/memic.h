// MEMIC: on-chip memory, allocated by the firmware inside a window of BAR0 and written by the
// CPU directly through that window.
//
// As mlx5_ib does (drivers/infiniband/hw/mlx5/dm.c): sizes are rounded up to 64 bytes; the
// requested log2 alignment becomes the PRM's 64-byte units (below 6 -> 0); a bitmap of the
// window's 4 KiB pages picks candidate ranges, and ALLOC_MEMIC is asked for each in turn,
// moving to the next page when the firmware answers NOT_READY or NO_RES (EAGAIN). A page range
// stays marked while its MEMIC buffer lives; DEALLOC_MEMIC success unmarks it.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "driver/caps.h"
#include "driver/cmd/commander.h"

namespace onchip::driver {

class MemicAllocator {
 public:
  struct Allocation {
    uint64_t bar_offset = 0;  // memic_start_addr: where the buffer starts inside BAR0
    uint64_t size = 0;        // bytes the firmware allocated (length rounded up to 64)
    uint32_t first_page = 0;  // the window pages marked for it
    uint32_t num_pages = 0;
  };

  // From the DEV_MEM capabilities (CUR). Without `memic` every Alloc is EOPNOTSUPP.
  void Configure(const Caps& caps, uint64_t bar0_size);
  bool supported() const { return memic_; }
  uint64_t max_size() const { return memic_ ? max_memic_size_ : 0; }

  // EOPNOTSUPP without MEMIC; EINVAL for length 0 or an alignment above
  // log_max_memic_addr_alignment; ENOMEM when no candidate range is left; any other firmware
  // error as the firmware gave it. Nothing stays allocated on failure.
  Result<Allocation> Alloc(cmd::Commander& c, uint64_t length, uint32_t log_align_req);
  // DEALLOC_MEMIC. On failure the buffer stays allocated and marked.
  Result<void> Free(cmd::Commander& c, const Allocation& a);

  uint32_t pages_in_use() const;

 private:
  mutable std::mutex mu_;
  std::vector<bool> used_;  // one bit per 4 KiB page of the MEMIC window
  bool memic_ = false;
  uint64_t bar_start_ = 0;
  uint64_t bar_size_ = 0;
  uint64_t max_memic_size_ = 0;
  uint32_t log_max_align_ = 0;
};

}  // namespace onchip::driver
