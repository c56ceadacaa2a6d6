// The 64-byte CQE as plain structs (prm::pod): a good completion (mlx5_cqe64) and an error
// completion (mlx5_err_cqe), which share their last 8 bytes; with the values of op_own. Error
// syndromes: uapi/prm/cqe_syndrome.h. Layout truth: uapi/prm/pod.h.
//
// op_own: [7:4] CQE opcode, [3:2] format (good CQEs: payload scattered to the CQE), [1]
// solicited event, [0] owner. The device writes owner = (producer index / CQ size) & 1; a CQE at
// consumer index n belongs to software iff its opcode is not MLX5_CQE_INVALID and its owner bit
// equals (n / CQ size) & 1. Software initialises every op_own to kCqeInitialOpOwn. With 128-byte
// CQEs the 64-byte CQE is the second half.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/endian.h"
#include "uapi/prm/pod.h"
#include "uapi/prm/wqe.h"

namespace onchip::prm {

enum CqeOpcode : uint8_t {
  MLX5_CQE_REQ = 0,
  MLX5_CQE_RESP_WR_IMM = 1,
  MLX5_CQE_RESP_SEND = 2,
  MLX5_CQE_RESP_SEND_IMM = 3,
  MLX5_CQE_RESP_SEND_INV = 4,
  MLX5_CQE_RESIZE_CQ = 5,
  MLX5_CQE_NO_PACKET = 6,
  MLX5_CQE_SIG_ERR = 12,
  MLX5_CQE_REQ_ERR = 13,
  MLX5_CQE_RESP_ERR = 14,
  MLX5_CQE_INVALID = 15,
};

inline constexpr uint8_t MLX5_CQE_OWNER_MASK = 0x1;
inline constexpr uint8_t kCqeSolicitedBit = 0x2;
inline constexpr uint8_t kCqeFormatMask = 0xc;
// Format bits of a good CQE: the payload is in the CQE's first 32 bytes / the 64 bytes before it.
inline constexpr uint8_t MLX5_INLINE_SCATTER_32 = 0x4;
inline constexpr uint8_t MLX5_INLINE_SCATTER_64 = 0x8;
inline constexpr uint8_t kCqeInitialOpOwn = MLX5_CQE_INVALID << 4;

constexpr uint8_t CqeOpOwn(CqeOpcode opcode, bool owner) {
  return static_cast<uint8_t>((opcode << 4) | (owner ? MLX5_CQE_OWNER_MASK : 0));
}
constexpr CqeOpcode CqeOpcodeOf(uint8_t op_own) { return static_cast<CqeOpcode>(op_own >> 4); }
constexpr uint8_t CqeFormatOf(uint8_t op_own) { return (op_own & kCqeFormatMask) >> 2; }
constexpr bool CqeOwner(uint8_t op_own) { return (op_own & MLX5_CQE_OWNER_MASK) != 0; }
// The owner value the device writes for the CQE at `index` of a CQ of `size` entries (a power
// of two); software owns the CQE when the bits match.
constexpr bool CqeOwnerFor(uint32_t index, uint32_t size) { return (index & size) != 0; }

// sop_drop_qpn and s_wqe_opcode_qpn: [31:24] the WQE opcode, [23:0] the QP number.
inline constexpr uint32_t kCqeQpnMask = 0xffffff;
constexpr uint32_t CqeQpn(uint32_t word) { return word & kCqeQpnMask; }
constexpr uint8_t CqeWqeOpcode(uint32_t word) { return static_cast<uint8_t>(word >> 24); }

namespace pod {

struct mlx5_cqe64 {
  uint8_t tls_outer_l3_tunneled;
  uint8_t rsvd0;
  Be16 wqe_id;
  uint8_t lro[8];  // lro / shampo: raw-packet receive offloads
  Be32 rss_hash_result;
  uint8_t rss_hash_type;
  uint8_t ml_path;
  uint8_t rsvd20[2];
  Be16 check_sum;
  Be16 slid;
  Be32 flags_rqpn;
  uint8_t hds_ip_ext;
  uint8_t l4_l3_hdr_type;
  Be16 vlan_info;
  Be32 srqn;  // srqn, or the user index with CQE version 1
  union {
    Be32 immediate;
    Be32 inval_rkey;
    Be32 pkey;
    Be32 ft_metadata;
  };
  uint8_t rsvd40[4];
  Be32 byte_cnt;
  Be32 timestamp_h;
  Be32 timestamp_l;
  Be32 sop_drop_qpn;
  Be16 wqe_counter;
  union {
    uint8_t signature;
    uint8_t validity_iteration_count;
  };
  uint8_t op_own;
};
using CqeBits = prm::mlx5_cqe64;
static_assert(sizeof(mlx5_cqe64) * 8 == CqeBits::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, tls_outer_l3_tunneled, CqeBits::tls_outer_l3_tunneled);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, wqe_id, CqeBits::wqe_id);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, lro, CqeBits::lro);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, lro, CqeBits::shampo);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, rss_hash_result, CqeBits::rss_hash_result);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, rss_hash_type, CqeBits::rss_hash_type);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, ml_path, CqeBits::ml_path);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, check_sum, CqeBits::check_sum);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, slid, CqeBits::slid);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, flags_rqpn, CqeBits::flags_rqpn);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, hds_ip_ext, CqeBits::hds_ip_ext);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, l4_l3_hdr_type, CqeBits::l4_l3_hdr_type);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, vlan_info, CqeBits::vlan_info);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, srqn, CqeBits::srqn);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, immediate, CqeBits::immediate);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, inval_rkey, CqeBits::inval_rkey);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, pkey, CqeBits::pkey);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, ft_metadata, CqeBits::ft_metadata);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, byte_cnt, CqeBits::byte_cnt);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, timestamp_h, CqeBits::timestamp_h);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, timestamp_l, CqeBits::timestamp_l);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, sop_drop_qpn, CqeBits::sop_drop_qpn);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, wqe_counter, CqeBits::wqe_counter);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, signature, CqeBits::signature);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, validity_iteration_count, CqeBits::validity_iteration_count);
ONCHIP_PRM_POD_MATCHES(mlx5_cqe64, op_own, CqeBits::op_own);

struct mlx5_err_cqe {
  uint8_t rsvd0[32];
  Be32 srqn;
  uint8_t rsvd1[18];
  uint8_t vendor_err_synd;
  uint8_t syndrome;  // CqeSyndrome
  Be32 s_wqe_opcode_qpn;
  Be16 wqe_counter;
  uint8_t signature;
  uint8_t op_own;
};
using ErrCqeBits = prm::mlx5_err_cqe;
static_assert(sizeof(mlx5_err_cqe) * 8 == ErrCqeBits::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, srqn, ErrCqeBits::srqn);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, vendor_err_synd, ErrCqeBits::vendor_err_synd);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, syndrome, ErrCqeBits::syndrome);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, s_wqe_opcode_qpn, ErrCqeBits::s_wqe_opcode_qpn);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, wqe_counter, ErrCqeBits::wqe_counter);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, signature, ErrCqeBits::signature);
ONCHIP_PRM_POD_MATCHES(mlx5_err_cqe, op_own, ErrCqeBits::op_own);

// A good and an error CQE agree on the words a poller reads before it knows which it has.
static_assert(offsetof(mlx5_cqe64, wqe_counter) == offsetof(mlx5_err_cqe, wqe_counter) &&
              offsetof(mlx5_cqe64, op_own) == offsetof(mlx5_err_cqe, op_own) &&
              offsetof(mlx5_cqe64, srqn) == offsetof(mlx5_err_cqe, srqn) &&
              offsetof(mlx5_cqe64, sop_drop_qpn) == offsetof(mlx5_err_cqe, s_wqe_opcode_qpn));

}  // namespace pod
}  // namespace onchip::prm
