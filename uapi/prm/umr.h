// Values a UMR (user memory registration) work request carries: the send-WQE opcode, the UMR
// control segment's flags, the mkey-mask bits that say which mkey-context fields a UMR writes,
// and the mkey segment's status and access-flag bits. The segments' layouts are in
// uapi/prm/wqe.h (mlx5_wqe_ctrl_seg, mlx5_wqe_umr_ctrl_seg, mlx5_mkey_seg, mlx5_klm).
//
// Names follow the kernel's include/linux/mlx5/device.h and qp.h, except where rdma-core is the
// only writer of a bit (MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN, and CHECK_FREE, which rdma-core names
// for the value the kernel calls MLX5_UMR_CHECK_NOT_FREE: "fail unless the target mkey is free").
#pragma once

#include <cstdint>

namespace onchip::prm {

// mlx5_wqe_ctrl_seg.opmod_idx_opcode[7:0].
inline constexpr uint8_t MLX5_OPCODE_UMR = 0x25;

// Bytes of the segments of a UMR WQE, and its size in 16-byte units (mlx5_wqe_ctrl_seg.qpn_ds).
inline constexpr uint32_t MLX5_WQE_DS_BYTES = 16;
inline constexpr uint32_t MLX5_UMR_INLINE_KLM_BYTES = 64;  // one KLM padded to 64 bytes

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
