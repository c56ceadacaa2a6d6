#include "driver/verbs/attributes.h"

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "driver/port.h"
#include "driver/rings/wqe_budget.h"
#include "uapi/prm/caps.h"

namespace onchip::driver::verbs {
namespace {

uint32_t Pow2(uint64_t log) { return log >= 31 ? INT_MAX : uint32_t{1} << log; }

// The queue limits the capabilities allow, as mlx5_ib derives them, minus what onchip does not
// do: no path migration, no port events on the async fd, no P_Key/Q_Key violation
// counters, no port change on a live QP.
void QueueLimits(const prm::Bits& gen, ibv_device_attr& a) {
  a.max_qp = Pow2(gen.get(prm::cmd_hca_cap::log_max_qp));
  a.max_qp_wr = Pow2(gen.get(prm::cmd_hca_cap::log_max_qp_sz));
  a.device_cap_flags |= IBV_DEVICE_RC_RNR_NAK_GEN;
  const rings::DeviceSgeLimits sges =
      rings::DeviceSges(uint32_t(gen.get(prm::cmd_hca_cap::max_wqe_sz_sq)),
                        uint32_t(gen.get(prm::cmd_hca_cap::max_wqe_sz_rq)));
  a.max_sge = int(sges.max_sge);
  a.max_sge_rd = int(sges.max_sge_rd);
  a.max_cq = Pow2(gen.get(prm::cmd_hca_cap::log_max_cq));
  a.max_cqe = int(Pow2(gen.get(prm::cmd_hca_cap::log_max_cq_sz)) - 1);
  // Responder resources (max_dest_rd_atomic) and initiator depth (max_rd_atomic), as the
  // device bounds qpc.log_rra_max and qpc.log_sra_max.
  a.max_qp_rd_atom = Pow2(gen.get(prm::cmd_hca_cap::log_max_ra_res_qp));
  a.max_qp_init_rd_atom = Pow2(gen.get(prm::cmd_hca_cap::log_max_ra_req_qp));
  a.max_res_rd_atom = int(std::min<int64_t>(int64_t{a.max_qp_rd_atom} * a.max_qp, INT_MAX));
  if (gen.get(prm::cmd_hca_cap::log_max_srq)) {
    a.max_srq = Pow2(gen.get(prm::cmd_hca_cap::log_max_srq));
    a.max_srq_wr = int(Pow2(gen.get(prm::cmd_hca_cap::log_max_srq_sz)) - 1);
    a.max_srq_sge = int(sges.max_srq_sge);
  }
  a.local_ca_ack_delay = uint8_t(gen.get(prm::cmd_hca_cap::local_ca_ack_delay));
  // No multicast attach (attach_mcast is not an op): no groups.
  a.max_ah = INT_MAX;
}

// mlx5_ib's rule: 8-byte compare-and-swap and fetch-and-add on QPs, answered in host byte order
// (atomic_req_8B_endianness_mode, which bring-up sets), is IBV_ATOMIC_HCA; anything less, none.
ibv_atomic_cap AtomicCap(const Caps& caps) {
  if (!caps.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::atomic) || !caps.has(prm::CAP_ATOMIC))
    return IBV_ATOMIC_NONE;
  const prm::Bits atomic = caps.cur(prm::CAP_ATOMIC);
  constexpr uint32_t kBoth = prm::ATOMIC_OPS_CMP_SWAP | prm::ATOMIC_OPS_FETCH_ADD;
  if ((atomic.get(prm::atomic_caps::atomic_operations) & kBoth) == kBoth &&
      (atomic.get(prm::atomic_caps::atomic_size_qp) & prm::ATOMIC_SIZE_QP_8BYTES) &&
      atomic.get(prm::atomic_caps::atomic_req_8B_endianness_mode))
    return IBV_ATOMIC_HCA;
  return IBV_ATOMIC_NONE;
}

}  // namespace

ibv_device_attr_ex DeviceAttributes(const driver::Device& device, const Identity& id) {
  const prm::Bits gen = device.caps().cur(prm::CAP_GENERAL);
  ibv_device_attr_ex ex;
  std::memset(&ex, 0, sizeof(ex));
  ibv_device_attr& a = ex.orig_attr;

  // "22.39.1002": as the kernel prints fw_ver.
  std::snprintf(a.fw_ver, sizeof(a.fw_ver), "%u.%u.%u", unsigned(id.fw_ver >> 32),
                unsigned((id.fw_ver >> 16) & 0xffff), unsigned(id.fw_ver & 0xffff));
  a.node_guid = htobe64(id.node_guid);
  a.sys_image_guid = htobe64(id.sys_image_guid);
  a.max_mr_size = ~uint64_t{0};
  a.page_size_cap = ~((uint64_t{1} << gen.get(prm::cmd_hca_cap::log_pg_sz)) - 1);
  a.vendor_id = kMellanoxVendorId;
  a.vendor_part_id = kConnectX6DxPartId;
  a.hw_ver = 0;  // PCI revision id of the function

  // What onchip does: windows, the system image GUID, and the queue features QueueLimits adds.
  unsigned flags = IBV_DEVICE_SYS_IMAGE_GUID;
  if (gen.get(prm::cmd_hca_cap::imaicl)) {
    flags |= IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
    a.max_mw = Pow2(gen.get(prm::cmd_hca_cap::log_max_mkey));
  }
  // mlx5_ib: XRC domains, XRC SRQs and XRC QPs when the device has cmd_hca_cap.xrc.
  if (gen.get(prm::cmd_hca_cap::xrc)) flags |= IBV_DEVICE_XRC;
  a.device_cap_flags = flags;
  a.max_mr = Pow2(gen.get(prm::cmd_hca_cap::log_max_mkey));
  a.max_pd = Pow2(gen.get(prm::cmd_hca_cap::log_max_pd));
  QueueLimits(gen, a);
  a.atomic_cap = AtomicCap(device.caps());
  a.max_ee = a.max_rdd = a.max_ee_rd_atom = a.max_ee_init_rd_atom = 0;
  a.max_fmr = a.max_map_per_fmr = 0;
  // pkey_table_size is encoded: 128 << n entries.
  a.max_pkeys = uint16_t(128u << gen.get(prm::cmd_hca_cap::pkey_table_size));
  a.phys_port_cnt = uint8_t(gen.get(prm::cmd_hca_cap::num_ports));

  ex.hca_core_clock = gen.get(prm::cmd_hca_cap::device_frequency_khz);
  // CQEs carry the internal timer (63 bits of it, as mlx5_ib reports): what an extended CQ's
  // completion timestamp and ibv_query_rt_values_ex read.
  if (ex.hca_core_clock != 0) ex.completion_timestamp_mask = 0x7fff'ffff'ffff'ffffull;
  ex.max_dm_size = device.max_dm_size();
  ex.phys_port_cnt_ex = uint32_t(gen.get(prm::cmd_hca_cap::num_ports));
  return ex;
}

void DvAttributes(const driver::Device& device, mlx5dv_context* out) {
  const prm::Bits gen = device.caps().cur(prm::CAP_GENERAL);
  const uint64_t asked = out->comp_mask;
  uint64_t answered = 0;
  out->version = 0;  // the layout of mlx5dv.h's structures
  out->flags = 0;
  // mlx5_ib gives a context the CQE version libmlx5 asks for (1) when the device has it; the
  // driver's CQs are read as version 1 (user index in the srqn field, driver/rings/qpn_table.h).
  if (gen.get(prm::cmd_hca_cap::cqe_version) >= 1) out->flags |= MLX5DV_CONTEXT_FLAGS_CQE_V1;
  // Answered whatever the device: zero says "none" (no compressed CQEs, software parsing,
  // striding RQs, tunnel offloads, flow actions, DC, signature, DCI streams, memcpy or crypto
  // through onchip).
  if (asked & MLX5DV_CONTEXT_MASK_CQE_COMPRESION) {
    out->cqe_comp_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_CQE_COMPRESION;
  }
  if (asked & MLX5DV_CONTEXT_MASK_SWP) {
    out->sw_parsing_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_SWP;
  }
  if (asked & MLX5DV_CONTEXT_MASK_STRIDING_RQ) {
    out->striding_rq_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_STRIDING_RQ;
  }
  if (asked & MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS) {
    out->tunnel_offloads_caps = 0;
    answered |= MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
    out->dci_streams_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_DCI_STREAMS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_DYN_BFREGS) {
    // A dynamic bfreg is a BlueFlame register allocated after open (a thread domain's): the
    // driver gives each its own UAR page, so the function's UAR pages (cmd_hca_cap.uar_sz) bound
    // them; without BlueFlame there are none (Uars::AllocDedicated refuses).
    const bool bf = gen.get(prm::cmd_hca_cap::bf) != 0;
    out->max_dynamic_bfregs = bf ? Pow2(gen.get(prm::cmd_hca_cap::uar_sz)) : 0;
    answered |= MLX5DV_CONTEXT_MASK_DYN_BFREGS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS) {
    out->flow_action_flags = 0;
    answered |= MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS) {
    out->dc_odp_caps = 0;
    answered |= MLX5DV_CONTEXT_MASK_DC_ODP_CAPS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD) {
    out->sig_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD;
  }
  if (asked & MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH) {
    out->max_wr_memcpy_length = 0;
    answered |= MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH;
  }
  if (asked & MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD) {
    out->crypto_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;
  }
  // Answered only when the device has it: no clock info page (CLOCK_INFO_UPDATE) and no
  // mapping of the internal timer (HCA_CORE_CLOCK) are offered; LAG ports when the function
  // has them.
  if (asked & MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS) {
    if (const uint32_t lag = gen.get(prm::cmd_hca_cap::num_lag_ports); lag != 0) {
      out->num_lag_ports = static_cast<uint8_t>(lag);
      answered |= MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS;
    }
  }
  out->comp_mask = answered;
}

int PortAttributes(const driver::Device& device, const Identity& id, uint8_t port,
                   const driver::PortInfo& info, ibv_port_attr* out) {
  const prm::Bits gen = device.caps().cur(prm::CAP_GENERAL);
  if (port < 1 || port > gen.get(prm::cmd_hca_cap::num_ports)) return EINVAL;
  std::memset(out, 0, sizeof(*out));
  if (info.infiniband) {
    // mlx5_query_hca_port: the vport context's fields, tables and sizes from the capabilities.
    out->state = static_cast<ibv_port_state>(info.state);
    out->phys_state = info.phys_state;
    out->max_mtu = IBV_MTU_4096;
    out->active_mtu = IBV_MTU_4096;  // no Ethernet frame around IB packets
    out->gid_tbl_len = int(std::min(driver::GidTableSize(device), id.gid_table_len));
    out->port_cap_flags = info.cap_mask1;
    out->max_msg_sz = Pow2(gen.get(prm::cmd_hca_cap::log_max_msg));
    out->pkey_tbl_len = 1;  // the default P_Key only: modify_qp takes pkey_index 0 alone
    out->lid = info.lid;
    out->sm_lid = info.sm_lid;
    out->lmc = info.lmc;
    out->sm_sl = info.sm_sl;
    out->subnet_timeout = info.subnet_timeout;
    out->init_type_reply = info.init_type_reply;
    out->max_vl_num = 4;     // VL0..VL7
    out->active_width = 2;   // 4X
    out->active_speed = 32;  // EDR: 4 lanes x 25 Gb/s = 100 Gb/s
    out->link_layer = IBV_LINK_LAYER_INFINIBAND;
    return 0;
  }
  const bool link_up = info.link_up;
  out->state = link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  out->max_mtu = IBV_MTU_4096;
  // A standard 1500-byte Ethernet MTU leaves room for 1024-byte RoCE payloads.
  out->active_mtu = IBV_MTU_1024;
  out->gid_tbl_len = int(std::min(driver::GidTableSize(device), id.gid_table_len));
  out->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
  out->max_msg_sz = Pow2(gen.get(prm::cmd_hca_cap::log_max_msg));
  out->pkey_tbl_len = 1;  // RoCE: the default pkey only
  out->lid = 0;
  out->sm_lid = 0;
  out->lmc = 0;
  out->max_vl_num = 0;
  out->sm_sl = 0;
  out->subnet_timeout = 0;
  out->init_type_reply = 0;
  out->active_width = 2;   // 4X
  out->active_speed = 32;  // EDR: 4 lanes x 25 Gb/s = 100 Gb/s
  out->phys_state = link_up ? 5 : 3;  // LinkUp, or Disabled (mlx5_ib for a RoCE port whose link is down)
  out->link_layer = IBV_LINK_LAYER_ETHERNET;
  out->flags = 0;
  out->port_cap_flags2 = 0;
  return 0;
}

}  // namespace onchip::driver::verbs
