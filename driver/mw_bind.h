// Binding a memory window: the checks rdma-core makes before posting, and the UMR work request
// that asks the device to bind (or invalidate) the window. The send queue that posts it arrives
// with the data path; until then the WQE goes straight to the device's UMR logic in tests.
//
// CheckBind, in rdma-core's order (ibv_bind_mw in libibverbs, then mlx5_bind_mw and
// set_bind_wr): a window other than type 1 through ibv_bind_mw -> EINVAL (type_1_verb); no MR
// but an address or length -> EINVAL; the MR on another PD -> EPERM; ZERO_BASED in the window
// access -> EINVAL; an MR that is not a plain MR -> EOPNOTSUPP (rdma-core's ENOTSUP, the same
// value on Linux); a zero-based MR -> EINVAL; length over 2 GiB (one KLM) -> EOPNOTSUPP.
//
// BuildBindWqe writes what rdma-core's set_bind_wr writes: ctrl (opcode UMR, ctrl.imm = the
// window's current rkey) + UMR control (INLINE | TRNSLATION_OFFSET, CHECK_FREE for a type-2
// bind, CHECK_QPN for a type-2 invalidate; mkey_mask FREE | KEY, QPN for type 2, LEN |
// START_ADDR | the four access bits for a bind) + mkey segment (new key byte, the QP for type 2,
// access, start address, length, or status FREE to invalidate) + one inline KLM for a bind
// (byte_count, the MR's lkey, the address). A zero length unbinds.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "driver/mw.h"
#include "uapi/prm/umr.h"
#include "uapi/result.h"

namespace onchip::driver {

// Bytes of a bind WQE (ctrl + UMR ctrl + mkey seg + KLM block) and of an invalidate (no KLMs).
inline constexpr std::size_t kBindWqeBytes = prm::UmrWqe::kBindBytes;
inline constexpr std::size_t kInvalidateWqeBytes = prm::UmrWqe::kHeadBytes;

// `type_1_verb`: the caller is ibv_bind_mw (type 1 only), not a work request (either type).
Result<void> CheckBind(const Mw& mw, const ibv_mw_bind_info& info, bool type_1_verb);

// Writes the UMR WQE binding `mw` to `info` with key byte new_rkey & 0xff, posted on QP `qpn`;
// returns the bytes used (kBindWqeBytes, or kInvalidateWqeBytes when info.length is 0). EINVAL
// if `out` is too small. Does not check the bind (CheckBind does).
Result<std::size_t> BuildBindWqe(const Mw& mw, uint32_t new_rkey, const ibv_mw_bind_info& info,
                                 uint32_t qpn, std::span<std::byte> out);

}  // namespace onchip::driver
