// The UMR work request that binds a memory window to part of an MR, or invalidates a window,
// from plain values: what a send queue posts for IBV_WR_BIND_MW and IBV_WR_LOCAL_INV, and what
// driver/mw_bind.h posts for ibv_bind_mw. The layout (ctrl + UMR control + mkey segment [+ one
// inline KLM]) and every flag are uapi/prm/umr.h's; the rules are rdma-core's set_bind_wr, as
// driver/mw_bind.h describes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "uapi/prm/umr.h"
#include "uapi/result.h"

namespace onchip::driver::rings {

inline constexpr std::size_t kUmrBindBytes = prm::UmrWqe::kBindBytes;        // 192
inline constexpr std::size_t kUmrInvalidateBytes = prm::UmrWqe::kHeadBytes;  // 128

struct UmrRequest {
  bool type2 = false;      // window type 2: bound to `qpn`, CHECK_FREE / CHECK_QPN
  uint32_t target_key = 0; // ctrl.imm: the window's current rkey, or the key to invalidate
  uint32_t new_rkey = 0;   // its low byte becomes the window's new key byte
  uint32_t mr_lkey = 0;    // the MR the window covers (bind only)
  uint64_t addr = 0;
  uint64_t length = 0;     // 0: invalidate (the window becomes free)
  unsigned access = 0;     // IBV_ACCESS_* of the window
  uint32_t qpn = 0;        // the posting QP
};

// Writes the WQE into out[0, size) and returns size (kUmrBindBytes, or kUmrInvalidateBytes for a
// zero length). The WQE index and the fence / completion byte are the poster's: left 0 here.
// EINVAL if `out` is too small or a value does not fit its field.
Result<std::size_t> BuildUmrWqe(const UmrRequest& request, std::span<std::byte> out);

}  // namespace onchip::driver::rings
