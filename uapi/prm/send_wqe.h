// Send WQE segments as plain structs (prm::pod), with the values their fields carry: opcodes,
// fm_ce_se bits, the inline flag, the UD address-vector flag. Layout truth and the checks that
// tie these structs to it: uapi/prm/pod.h. The UMR segments stay bit layouts (uapi/prm/umr.h).
//
// A send WQE is a control segment followed by segments that depend on the opcode, in units of
// 16 bytes (ds), in basic blocks of 64 bytes:
//
//   SEND             ctrl [datagram (UD)] data* | inline
//   RDMA_WRITE(_IMM) ctrl raddr data* | inline
//   RDMA_READ        ctrl raddr data*
//   ATOMIC_CS/FA     ctrl raddr atomic data (the 8-byte result)
//
// ctrl.opmod_idx_opcode = opmod << 24 | wqe_index << 8 | opcode; ctrl.qpn_ds = qpn << 8 | ds.
// The 8-byte send doorbell is the ctrl segment's first 8 bytes as they lie in memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/endian.h"
#include "uapi/prm/pod.h"
#include "uapi/prm/wqe.h"

namespace onchip::prm {

// WQE basic block and ds unit.
inline constexpr uint32_t MLX5_SEND_WQE_BB = 64;
inline constexpr uint32_t MLX5_SEND_WQE_SHIFT = 6;
inline constexpr uint32_t MLX5_SEND_WQE_DS = 16;
// ds is six bits of qpn_ds.
inline constexpr uint32_t kWqeDsMask = 0x3f;

// mlx5_wqe_ctrl_seg.opmod_idx_opcode[7:0].
enum SendOpcode : uint8_t {
  MLX5_OPCODE_NOP = 0x00,
  MLX5_OPCODE_SEND_INVAL = 0x01,
  MLX5_OPCODE_RDMA_WRITE = 0x08,
  MLX5_OPCODE_RDMA_WRITE_IMM = 0x09,
  MLX5_OPCODE_SEND = 0x0a,
  MLX5_OPCODE_SEND_IMM = 0x0b,
  MLX5_OPCODE_TSO = 0x0e,
  MLX5_OPCODE_RDMA_READ = 0x10,
  MLX5_OPCODE_ATOMIC_CS = 0x11,
  MLX5_OPCODE_ATOMIC_FA = 0x12,
  MLX5_OPCODE_ATOMIC_MASKED_CS = 0x14,
  MLX5_OPCODE_ATOMIC_MASKED_FA = 0x15,
  MLX5_OPCODE_LOCAL_INVAL = 0x1b,
  MLX5_OPCODE_UMR = 0x25,  // BIND_MW and LOCAL_INV as the kernel and rdma-core post them
};

// mlx5_wqe_ctrl_seg.fm_ce_se: fence mode [7:5], completion request [3:2], solicited [1].
enum WqeCtrlFlag : uint8_t {
  MLX5_WQE_CTRL_SOLICITED = 1 << 1,
  MLX5_WQE_CTRL_CQ_UPDATE = 2 << 2,
  MLX5_WQE_CTRL_CQ_UPDATE_AND_EQE = 3 << 2,
  MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE = 1 << 5,
  MLX5_WQE_CTRL_FENCE = 4 << 5,  // the kernel's MLX5_FENCE_MODE_SMALL_AND_FENCE
};
enum FenceMode : uint8_t {
  MLX5_FENCE_MODE_NONE = 0 << 5,
  MLX5_FENCE_MODE_INITIATOR_SMALL = 1 << 5,
  MLX5_FENCE_MODE_FENCE = 2 << 5,
  MLX5_FENCE_MODE_STRONG_ORDERING = 3 << 5,
  MLX5_FENCE_MODE_SMALL_AND_FENCE = 4 << 5,
};
inline constexpr uint8_t kFenceModeMask = 7 << 5;

// mlx5_wqe_inline_seg.byte_count: set for inline data (the bytes follow the 4-byte header).
inline constexpr uint32_t MLX5_INLINE_SEG = 0x80000000;
// mlx5_wqe_av.dqp_dct: the extended (48-byte) address vector.
inline constexpr uint32_t MLX5_EXTENDED_UD_AV = 0x80000000;

constexpr uint32_t OpmodIdxOpcode(uint8_t opmod, uint16_t wqe_index, uint8_t opcode) {
  return (uint32_t{opmod} << 24) | (uint32_t{wqe_index} << 8) | opcode;
}
constexpr uint32_t QpnDs(uint32_t qpn, uint32_t ds) { return (qpn << 8) | (ds & kWqeDsMask); }
constexpr uint8_t OpcodeOf(uint32_t opmod_idx_opcode) {
  return static_cast<uint8_t>(opmod_idx_opcode & 0xff);
}
constexpr uint16_t WqeIndexOf(uint32_t opmod_idx_opcode) {
  return static_cast<uint16_t>(opmod_idx_opcode >> 8);
}
constexpr uint32_t QpnOf(uint32_t qpn_ds) { return qpn_ds >> 8; }
constexpr uint32_t DsOf(uint32_t qpn_ds) { return qpn_ds & kWqeDsMask; }

namespace pod {

struct mlx5_wqe_ctrl_seg {
  Be32 opmod_idx_opcode;
  Be32 qpn_ds;
  uint8_t signature;
  uint8_t rsvd[2];
  uint8_t fm_ce_se;
  union {
    Be32 general_id;
    Be32 imm;  // SEND_IMM/WRITE_IMM immediate, SEND_INV rkey, UMR target mkey
    Be32 umr_mkey;
    Be32 tis_tir_num;
  };
};
static_assert(sizeof(mlx5_wqe_ctrl_seg) * 8 == prm::mlx5_wqe_ctrl_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, opmod_idx_opcode, prm::mlx5_wqe_ctrl_seg::opmod_idx_opcode);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, qpn_ds, prm::mlx5_wqe_ctrl_seg::qpn_ds);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, signature, prm::mlx5_wqe_ctrl_seg::signature);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, fm_ce_se, prm::mlx5_wqe_ctrl_seg::fm_ce_se);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, general_id, prm::mlx5_wqe_ctrl_seg::general_id);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, imm, prm::mlx5_wqe_ctrl_seg::imm);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, umr_mkey, prm::mlx5_wqe_ctrl_seg::umr_mkey);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_ctrl_seg, tis_tir_num, prm::mlx5_wqe_ctrl_seg::tis_tir_num);

struct mlx5_wqe_raddr_seg {
  Be64 raddr;
  Be32 rkey;
  Be32 reserved;
};
static_assert(sizeof(mlx5_wqe_raddr_seg) * 8 == prm::mlx5_wqe_raddr_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_raddr_seg, raddr, prm::mlx5_wqe_raddr_seg::raddr);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_raddr_seg, rkey, prm::mlx5_wqe_raddr_seg::rkey);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_raddr_seg, reserved, prm::mlx5_wqe_raddr_seg::reserved);

// The XRC segment: right after ctrl on an XRC initiator's WQEs (not BIND_MW / LOCAL_INV): the
// XRC SRQ at the target the message is for.
struct mlx5_wqe_xrc_seg {
  Be32 xrc_srqn;
  uint8_t rsvd[12];
};
static_assert(sizeof(mlx5_wqe_xrc_seg) * 8 == prm::mlx5_wqe_xrc_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_xrc_seg, xrc_srqn, prm::mlx5_wqe_xrc_seg::xrc_srqn);

// Gather (send) and scatter (receive) entry.
struct mlx5_wqe_data_seg {
  Be32 byte_count;
  Be32 lkey;
  Be64 addr;
};
static_assert(sizeof(mlx5_wqe_data_seg) * 8 == prm::mlx5_wqe_data_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_data_seg, byte_count, prm::mlx5_wqe_data_seg::byte_count);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_data_seg, lkey, prm::mlx5_wqe_data_seg::lkey);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_data_seg, addr, prm::mlx5_wqe_data_seg::addr);

// CS: swap_add = swap value, compare = compare value. FA: swap_add = the addend.
struct mlx5_wqe_atomic_seg {
  Be64 swap_add;
  Be64 compare;
};
static_assert(sizeof(mlx5_wqe_atomic_seg) * 8 == prm::mlx5_wqe_atomic_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_atomic_seg, swap_add, prm::mlx5_wqe_atomic_seg::swap_add);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_atomic_seg, compare, prm::mlx5_wqe_atomic_seg::compare);

struct mlx5_wqe_masked_atomic_seg {
  Be64 swap_add;
  Be64 compare;
  Be64 swap_add_mask;
  Be64 compare_mask;
};
static_assert(sizeof(mlx5_wqe_masked_atomic_seg) * 8 == prm::mlx5_wqe_masked_atomic_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_masked_atomic_seg, swap_add, prm::mlx5_wqe_masked_atomic_seg::swap_add);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_masked_atomic_seg, compare, prm::mlx5_wqe_masked_atomic_seg::compare);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_masked_atomic_seg, swap_add_mask,
                       prm::mlx5_wqe_masked_atomic_seg::swap_add_mask);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_masked_atomic_seg, compare_mask,
                       prm::mlx5_wqe_masked_atomic_seg::compare_mask);

// The inline data header: byte_count = MLX5_INLINE_SEG | length; the data follows unaligned and
// the whole segment is padded to 16 bytes.
struct mlx5_wqe_inline_seg {
  Be32 byte_count;
};
static_assert(sizeof(mlx5_wqe_inline_seg) * 8 == prm::mlx5_wqe_inline_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_inline_seg, byte_count, prm::mlx5_wqe_inline_seg::byte_count);
static_assert(prm::mlx5_wqe_inline_seg::data.bit_offset == sizeof(mlx5_wqe_inline_seg) * 8);

// The UD datagram segment: the 48-byte address vector. ctrl (16) + av (48) is one basic block.
struct mlx5_wqe_av {
  union {
    struct {
      Be32 qkey;
      Be32 reserved;
    } qkey;
    Be64 dc_key;
  } key;
  Be32 dqp_dct;  // MLX5_EXTENDED_UD_AV | remote QPN
  uint8_t stat_rate_sl;
  uint8_t fl_mlid;
  union {
    Be16 rlid;       // IB: destination LID
    Be16 udp_sport;  // RoCE v2: UDP source port
  };
  uint8_t reserved0[4];
  uint8_t rmac[6];
  uint8_t tclass;
  uint8_t hop_limit;
  Be32 grh_gid_fl;
  uint8_t rgid[16];
};
static_assert(sizeof(mlx5_wqe_av) * 8 == prm::mlx5_av::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, key.qkey.qkey, prm::mlx5_av::key.qkey.qkey);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, key.qkey.reserved, prm::mlx5_av::key.qkey.reserved);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, key.dc_key, prm::mlx5_av::key.dc_key);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, dqp_dct, prm::mlx5_av::dqp_dct);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, stat_rate_sl, prm::mlx5_av::stat_rate_sl);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, fl_mlid, prm::mlx5_av::fl_mlid);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, rlid, prm::mlx5_av::rlid);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, udp_sport, prm::mlx5_av::udp_sport);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, reserved0, prm::mlx5_av::reserved0);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, rmac, prm::mlx5_av::rmac);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, tclass, prm::mlx5_av::tclass);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, hop_limit, prm::mlx5_av::hop_limit);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, grh_gid_fl, prm::mlx5_av::grh_gid_fl);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_av, rgid, prm::mlx5_av::rgid);

static_assert(sizeof(mlx5_wqe_ctrl_seg) + sizeof(mlx5_wqe_av) == MLX5_SEND_WQE_BB);
static_assert(sizeof(mlx5_wqe_ctrl_seg) == MLX5_SEND_WQE_DS);

}  // namespace pod
}  // namespace onchip::prm
