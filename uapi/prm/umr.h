// A UMR (user memory registration) work request: where its segments sit (UmrWqe), the UMR
// control segment's flags, the mkey-mask bits that say which mkey-context fields a UMR writes,
// and the mkey segment's status and access-flag bits. The segments' layouts are in
// uapi/prm/wqe.h (mlx5_wqe_ctrl_seg, mlx5_wqe_umr_ctrl_seg, mlx5_mkey_seg, mlx5_klm); the
// opcode, MLX5_OPCODE_UMR, is with the other send opcodes in uapi/prm/send_wqe.h.
//
// Names follow the kernel's include/linux/mlx5/device.h and qp.h, except where rdma-core is the
// only writer of a bit (MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN, and CHECK_FREE, which rdma-core names
// for the value the kernel calls MLX5_UMR_CHECK_NOT_FREE: "fail unless the target mkey is free").
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/field.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/send_wqe.h"  // MLX5_OPCODE_UMR, MLX5_SEND_WQE_DS
#include "uapi/prm/wqe.h"

namespace onchip::prm {

// One KLM padded to 64 bytes: the inline translation list of a bind.
inline constexpr uint32_t MLX5_UMR_INLINE_KLM_BYTES = 64;

// A UMR WQE as the segments lie one after another: ctrl (16 bytes), UMR control (48), mkey
// segment (64), then for a bind the inline KLM block (64). Each member is the generated layout
// at its place in the WQE, so `prm::Bits(wqe).set(UmrWqe::mkey_seg::len, n)` writes the mkey
// segment's len wherever the segment sits.
struct UmrWqe {
  static constexpr std::size_t kUmrCtrlOffset = size_bytes<prm::mlx5_wqe_ctrl_seg>;
  static constexpr std::size_t kMkeySegOffset = kUmrCtrlOffset + size_bytes<mlx5_wqe_umr_ctrl_seg>;
  static constexpr std::size_t kKlmOffset = kMkeySegOffset + size_bytes<mlx5_mkey_seg>;
  // ctrl + UMR control + mkey segment: an invalidate is exactly this.
  static constexpr std::size_t kHeadBytes = kKlmOffset;
  static constexpr std::size_t kBindBytes = kHeadBytes + MLX5_UMR_INLINE_KLM_BYTES;
  static constexpr uint32_t kHeadDs = kHeadBytes / MLX5_SEND_WQE_DS;
  // xlt_octowords of a bind: the inline KLM block in 16-byte units.
  static constexpr uint32_t kBindXltOctowords = MLX5_UMR_INLINE_KLM_BYTES / MLX5_SEND_WQE_DS;

  using ctrl = prm::mlx5_wqe_ctrl_seg_bits<0>;
  using umr_ctrl = mlx5_wqe_umr_ctrl_seg_bits<kUmrCtrlOffset * 8>;
  using mkey_seg = mlx5_mkey_seg_bits<kMkeySegOffset * 8>;
  // The mkey segment is an mkc on the wire; the device reads its fields as mkc fields.
  using mkey_seg_mkc = mkc_bits<kMkeySegOffset * 8>;
  using klm = mlx5_klm_bits<kKlmOffset * 8>;
};
static_assert(UmrWqe::kUmrCtrlOffset == 16 && UmrWqe::kMkeySegOffset == 64 &&
              UmrWqe::kHeadBytes == 128 && UmrWqe::kBindBytes == 192 && UmrWqe::kHeadDs == 8);
static_assert(size_bytes<mlx5_mkey_seg> == size_bytes<mkc>, "the mkey segment is an mkc");
static_assert(UmrWqe::kHeadBytes % MLX5_SEND_WQE_BB == 0 && UmrWqe::kBindBytes % MLX5_SEND_WQE_BB == 0);

// mlx5_wqe_umr_ctrl_seg.flags.
enum UmrCtrlFlag : uint8_t {
  MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN = 1 << 3,           // invalidate: the window's QP must post it
  MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET = 1 << 4,   // xlt_offset is valid
  MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE = 1 << 5,          // fail unless the target mkey is free
  MLX5_UMR_CHECK_FREE = 1 << 6,  // kernel name; the check is the opposite: fail if it IS free
  MLX5_WQE_UMR_CTRL_FLAG_INLINE = 1 << 7,              // the translation list follows inline
};

// mlx5_wqe_umr_ctrl_seg.mkey_mask: bit n set = the UMR writes that mkey-context field.
enum MkeyMask : uint64_t {
  MLX5_MKEY_MASK_LEN = uint64_t{1} << 0,
  MLX5_MKEY_MASK_PAGE_SIZE = uint64_t{1} << 1,
  MLX5_MKEY_MASK_START_ADDR = uint64_t{1} << 6,
  MLX5_MKEY_MASK_PD = uint64_t{1} << 7,
  MLX5_MKEY_MASK_EN_RINVAL = uint64_t{1} << 8,
  MLX5_MKEY_MASK_EN_SIGERR = uint64_t{1} << 9,
  MLX5_MKEY_MASK_BSF_EN = uint64_t{1} << 12,
  MLX5_MKEY_MASK_KEY = uint64_t{1} << 13,
  MLX5_MKEY_MASK_QPN = uint64_t{1} << 14,
  MLX5_MKEY_MASK_LR = uint64_t{1} << 17,
  MLX5_MKEY_MASK_LW = uint64_t{1} << 18,
  MLX5_MKEY_MASK_RR = uint64_t{1} << 19,
  MLX5_MKEY_MASK_RW = uint64_t{1} << 20,
  MLX5_MKEY_MASK_A = uint64_t{1} << 21,
  MLX5_MKEY_MASK_SMALL_FENCE = uint64_t{1} << 23,
  MLX5_MKEY_MASK_RELAXED_ORDERING_WRITE = uint64_t{1} << 25,
  MLX5_MKEY_MASK_FREE = uint64_t{1} << 29,
  MLX5_MKEY_MASK_RELAXED_ORDERING_READ = uint64_t{1} << 47,
};

// mlx5_mkey_seg.status.
inline constexpr uint8_t MLX5_MKEY_STATUS_FREE = 1 << 6;

// mlx5_mkey_seg.flags (byte 2, the mkc's a/rw/rr/lw/lr bits).
enum MkeySegAccess : uint8_t {
  MLX5_PERM_LOCAL_READ = 1 << 2,
  MLX5_PERM_LOCAL_WRITE = 1 << 3,
  MLX5_PERM_REMOTE_READ = 1 << 4,
  MLX5_PERM_REMOTE_WRITE = 1 << 5,
  MLX5_PERM_ATOMIC = 1 << 6,
  MLX5_PERM_UMR_EN = 1 << 7,
};

// mlx5_mkey_seg.qpn_mkey7_0 and mkc.qpn: "bound to no QP".
inline constexpr uint32_t MLX5_MKEY_NO_QPN = 0xffffff;
// Largest byte count one KLM carries (rdma-core refuses longer binds with EOPNOTSUPP).
inline constexpr uint64_t MLX5_MAX_KLM_BYTE_COUNT = uint64_t{1} << 31;

}  // namespace onchip::prm
