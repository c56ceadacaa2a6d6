// One doorbell / BlueFlame register of a UAR page (uapi/prm/uar_page.h): where a send queue
// rings. It lives with the rings, which take one, below the objects that allocate UARs
// (driver/uar.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "mmio/wc_copy.h"

namespace onchip::driver {

// `reg` is the CPU address of the register's first half.
struct Bfreg {
  uint32_t uar_index = 0;
  std::byte* reg = nullptr;
  uint32_t buf_size = 0;   // one half: the most a BlueFlame copy may write; 0 = doorbell only
  bool blueflame = false;  // false: the non-cached doorbell of the shared UAR
  bool need_lock = true;   // shared registers serialise their writers on `lock`
  uint32_t offset = 0;     // which half the next copy uses (0 or buf_size)
  // The BlueFlame copy for this register's memory (driver/copy_kernels.h); required when
  // blueflame is set.
  mmio::LineFn line64 = nullptr;
  std::mutex lock;

  // The half to write now, and flip to the other for the next post (caller holds `lock` when
  // need_lock).
  std::byte* NextHalf() {
    std::byte* at = reg + offset;
    offset ^= buf_size;
    return at;
  }
};

}  // namespace onchip::driver
