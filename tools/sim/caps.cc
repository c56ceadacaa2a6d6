#include "tools/sim/caps.h"

#include <cstdlib>
#include <vector>

#include "tools/sim/gid_table.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {
namespace {

using prm::cmd_hca_cap;
using prm::device_mem_cap;
using prm::roce_cap;
using RxProps = prm::flow_table_prop_layout_bits<prm::flow_table_nic_cap::flow_table_properties_nic_receive.bit_offset>;
using TxProps = prm::flow_table_prop_layout_bits<prm::flow_table_nic_cap::flow_table_properties_nic_transmit.bit_offset>;

// Where SW ICM areas live in the device's ICM address space: one 2^40-aligned region per type.
constexpr uint64_t kSteeringIcmBase = uint64_t{1} << 40;
constexpr uint64_t kHeaderModifyIcmBase = uint64_t{2} << 40;
constexpr uint64_t kHeaderModifyPatternIcmBase = uint64_t{3} << 40;
constexpr uint64_t kIndirectEncapIcmBase = uint64_t{4} << 40;

struct Writable {
  std::size_t bit_offset;
  std::size_t bit_width;
};
template <class F>
constexpr Writable W(F) {
  return {F::bit_offset, F::bit_width};
}

// The fields a driver may change, per capability type (what mlx5_core's handle_hca_cap* writes).
const std::vector<Writable>& WritableFields(uint16_t type) {
  static const std::vector<Writable> general = {
      W(cmd_hca_cap::pkey_table_size), W(cmd_hca_cap::log_max_qp),
      W(cmd_hca_cap::cmdif_checksum), W(cmd_hca_cap::drain_sigerr),
      W(cmd_hca_cap::uar_4k), W(cmd_hca_cap::log_uar_page_sz),
      W(cmd_hca_cap::cache_line_128byte), W(cmd_hca_cap::dct),
      W(cmd_hca_cap::release_all_pages), W(cmd_hca_cap::mkey_by_name),
      W(cmd_hca_cap::roce), W(cmd_hca_cap::log_max_current_uc_list),
      W(cmd_hca_cap::abs_native_port_num), W(cmd_hca_cap::num_vhca_ports),
  };
  static const std::vector<Writable> roce = {W(roce_cap::sw_r_roce_src_udp_port),
                                             W(roce_cap::qp_ooo_transmit_default)};
  static const std::vector<Writable> atomic = {
      W(prm::atomic_caps::atomic_req_8B_endianness_mode)};
  static const std::vector<Writable> none;
  switch (type) {
    case prm::CAP_GENERAL:
      return general;
    case prm::CAP_ROCE:
      return roce;
    case prm::CAP_ATOMIC:
      return atomic;
    default:
      return none;
  }
}

class PageWriter {
 public:
  explicit PageWriter(std::span<std::byte> page) : bits_(page) {}
  template <class F>
  PageWriter& set(F f, uint64_t v) {
    bits_.set(f, v);
    if (!bits_.ok()) std::abort();  // a default that does not fit its field: a bug here
    return *this;
  }

 private:
  prm::Bits bits_;
};

uint8_t Log2Ceil(uint64_t v) {
  uint8_t l = 0;
  while ((uint64_t{1} << l) < v) ++l;
  return l;
}

// The maximum (and, but for what the constructor turns off, the current) values of each
// capability page this device reports.
void WriteGeneralCaps(std::span<std::byte> max, const DeviceConfig& c) {
  PageWriter(max)
      .set(cmd_hca_cap::hca_cap_2, 1)
      .set(cmd_hca_cap::log_max_srq_sz, c.log_max_srq_sz)
      .set(cmd_hca_cap::log_max_qp_sz, c.log_max_qp_sz)
      .set(cmd_hca_cap::log_max_qp, c.log_max_qp)
      .set(cmd_hca_cap::log_max_srq, c.log_max_srq)
      .set(cmd_hca_cap::log_max_cq_sz, c.log_max_cq_sz)
      .set(cmd_hca_cap::log_max_cq, c.log_max_cq)
      .set(cmd_hca_cap::log_max_eq_sz, c.log_max_eq_sz)
      .set(cmd_hca_cap::log_max_eq, c.log_max_eq)
      .set(cmd_hca_cap::relaxed_ordering_write, 1)
      .set(cmd_hca_cap::relaxed_ordering_read, 1)
      .set(cmd_hca_cap::log_max_mkey, c.log_max_mkey)
      .set(cmd_hca_cap::max_indirection, 4)
      .set(cmd_hca_cap::log_max_mrw_sz, c.log_max_mrw_sz)
      .set(cmd_hca_cap::umr_extended_translation_offset, 1)
      .set(cmd_hca_cap::null_mkey, 1)
      .set(cmd_hca_cap::log_max_klm_list_size, c.log_max_klm_list_size)
      .set(cmd_hca_cap::release_all_pages, 1)
      .set(cmd_hca_cap::cache_line_128byte, 0)
      .set(cmd_hca_cap::pkey_table_size, 0)  // encoded: 0 = 128 entries
      .set(cmd_hca_cap::device_memory, (c.memic || c.sw_icm) ? 1 : 0)
      .set(cmd_hca_cap::nic_flow_table, 1)
      // Port 1's link layer (0 InfiniBand, 1 Ethernet); an IB port's GID table is
      // gid_table_size encoded (8 << n entries), RoCE's is roce_address_table_size.
      .set(cmd_hca_cap::port_type, static_cast<uint32_t>(c.port_type))
      .set(cmd_hca_cap::gid_table_size, kIbGidTableSizeCode)
      .set(cmd_hca_cap::log_max_ra_req_qp, c.log_max_ra_req_qp)
      .set(cmd_hca_cap::log_max_ra_res_qp, c.log_max_ra_res_qp)
      .set(cmd_hca_cap::num_ports, c.num_ports)
      .set(cmd_hca_cap::log_max_msg, c.log_max_msg)
      .set(cmd_hca_cap::cqe_version, 1)
      .set(cmd_hca_cap::drain_sigerr, 1)
      .set(cmd_hca_cap::roce, c.port_type == DeviceConfig::PortType::kEthernet ? 1 : 0)
      .set(cmd_hca_cap::atomic, 1)
      .set(cmd_hca_cap::imaicl, c.imaicl ? 1 : 0)
      // RC, UC, UD and XRC queue pairs (XRC domains, XRC SRQs, XRC initiator and target QPs).
      .set(cmd_hca_cap::xrc, 1)
      .set(cmd_hca_cap::ud, 1)
      .set(cmd_hca_cap::uc, 1)
      .set(cmd_hca_cap::rc, 1)
      .set(cmd_hca_cap::uar_4k, 1)
      .set(cmd_hca_cap::uar_sz, Log2Ceil(uint64_t{c.first_uar_index} + c.num_uars))
      .set(cmd_hca_cap::log_pg_sz, 12)
      .set(cmd_hca_cap::bf, c.bf ? 1 : 0)
      .set(cmd_hca_cap::driver_version, 1)
      .set(cmd_hca_cap::log_bf_reg_size, c.log_bf_reg_size)
      .set(cmd_hca_cap::max_wqe_sz_sq, c.max_wqe_sz_sq)
      .set(cmd_hca_cap::mkey_pcie_tph, c.mkey_pcie_tph ? 1 : 0)
      .set(cmd_hca_cap::max_wqe_sz_rq, c.max_wqe_sz_rq)
      .set(cmd_hca_cap::log_max_transport_domain, c.log_max_transport_domain)
      // Raw packet QPs: SQ and RQ objects (numbered with the QPs), one TIS per SQ, TIRs that
      // dispatch to one RQ; no RQ tables (RSS), no checksum or LSO offloads.
      .set(cmd_hca_cap::log_max_sq, c.log_max_qp)
      .set(cmd_hca_cap::log_max_rq, c.log_max_qp)
      .set(cmd_hca_cap::log_max_tis, c.log_max_tis)
      .set(cmd_hca_cap::log_max_tir, c.log_max_tir)
      .set(cmd_hca_cap::log_max_tis_per_sq, 0)
      .set(cmd_hca_cap::log_max_wq_sz, c.log_max_wq_sz)
      .set(cmd_hca_cap::log_max_pd, c.log_max_pd)
      .set(cmd_hca_cap::log_max_xrcd, c.log_max_xrcd)
      .set(cmd_hca_cap::roce_rw_supported, 1)
      .set(cmd_hca_cap::log_max_current_uc_list, 4)
      .set(cmd_hca_cap::general_obj_types,
           c.sw_icm ? (uint64_t{1} << prm::GENERAL_OBJECT_TYPES_SW_ICM) : 0)
      .set(cmd_hca_cap::max_num_eqs, c.max_num_eqs)
      // CQ moderation (MODIFY_CQ cq_period / cq_max_count) and resize when configured; no
      // overrun ignore, no EQ remap, no period-mode change, no CQE compression.
      .set(cmd_hca_cap::cq_moderation, 1)
      .set(cmd_hca_cap::cq_resize, c.cq_resize ? 1 : 0)
      // The internal timer counts nanoseconds: a 1 GHz device clock.
      .set(cmd_hca_cap::device_frequency_mhz, 1000)
      .set(cmd_hca_cap::device_frequency_khz, 1000000)
      .set(cmd_hca_cap::log_uar_page_sz, 0)
      .set(cmd_hca_cap::num_of_uars_per_page, 1)
      .set(cmd_hca_cap::sw_owner_id, 1)
      .set(cmd_hca_cap::num_vhca_ports, 1)
      .set(cmd_hca_cap::abs_native_port_num, 1);
}

void WriteRoceCaps(std::span<std::byte> max, const DeviceConfig& c) {
  PageWriter(max)
      .set(roce_cap::sw_r_roce_src_udp_port, 1)
      .set(roce_cap::l3_type, 0x3)        // IPv4 and IPv6
      .set(roce_cap::roce_version, 0x5)   // RoCE v1 and v2
      .set(roce_cap::r_roce_dest_udp_port, 4791)
      .set(roce_cap::r_roce_max_src_udp_port, 0xffff)
      .set(roce_cap::r_roce_min_src_udp_port, 0xc000)
      .set(roce_cap::roce_address_table_size, c.roce_address_table_size);
}

void WriteAtomicCaps(std::span<std::byte> max) {
  // 8-byte compare-and-swap and fetch-and-add on RC QPs. The responder's byte order for 8-byte
  // atomics is the driver's choice (atomic_req_8B_endianness_mode, settable to 1 = host order,
  // as mlx5_core sets it when supported_atomic_req_8B_endianness_mode_1 says it may).
  PageWriter(max)
      .set(prm::atomic_caps::supported_atomic_req_8B_endianness_mode_1, 1)
      .set(prm::atomic_caps::atomic_req_8B_endianness_mode, 1)
      .set(prm::atomic_caps::atomic_operations,
           prm::ATOMIC_OPS_CMP_SWAP | prm::ATOMIC_OPS_FETCH_ADD)
      .set(prm::atomic_caps::atomic_size_qp, prm::ATOMIC_SIZE_QP_8BYTES);
}

void WriteFlowTableCaps(std::span<std::byte> max, const DeviceConfig& c) {
  PageWriter(max)
      .set(RxProps::ft_support, 1)
      .set(RxProps::sw_owner, c.sw_owner ? 1 : 0)
      .set(RxProps::sw_owner_v2, c.sw_owner_v2 ? 1 : 0)
      .set(RxProps::log_max_ft_size, 23)
      .set(RxProps::max_ft_level, 63)
      .set(RxProps::log_max_ft_num, 16)
      .set(TxProps::ft_support, 1)
      .set(TxProps::sw_owner, c.sw_owner ? 1 : 0)
      .set(TxProps::sw_owner_v2, c.sw_owner_v2 ? 1 : 0)
      .set(TxProps::log_max_ft_size, 23)
      .set(TxProps::max_ft_level, 63)
      .set(TxProps::log_max_ft_num, 16);
}

void WriteDevMemCaps(std::span<std::byte> max, const DeviceConfig& c, const BarLayout& layout) {
  PageWriter w(max);
  if (c.memic) {
    w.set(device_mem_cap::memic, 1)
        .set(device_mem_cap::log_min_memic_alloc_size, 6)
        .set(device_mem_cap::log_max_memic_addr_alignment, c.log_max_memic_addr_alignment)
        .set(device_mem_cap::memic_bar_start_addr, layout.memic_start)
        .set(device_mem_cap::memic_bar_size, c.memic_bar_size)
        .set(device_mem_cap::max_memic_size, c.max_memic_size)
        .set(device_mem_cap::memic_operations, 0);  // MODIFY_MEMIC windows are not modelled
  }
  if (c.sw_icm) {
    w.set(device_mem_cap::log_sw_icm_alloc_granularity, c.log_sw_icm_alloc_granularity);
    if (c.log_steering_sw_icm_size)
      w.set(device_mem_cap::steering_sw_icm_start_address, kSteeringIcmBase)
          .set(device_mem_cap::log_steering_sw_icm_size, c.log_steering_sw_icm_size);
    if (c.log_header_modify_sw_icm_size)
      w.set(device_mem_cap::header_modify_sw_icm_start_address, kHeaderModifyIcmBase)
          .set(device_mem_cap::log_header_modify_sw_icm_size, c.log_header_modify_sw_icm_size);
    if (c.log_header_modify_pattern_sw_icm_size)
      w.set(device_mem_cap::header_modify_pattern_sw_icm_start_address,
            kHeaderModifyPatternIcmBase)
          .set(device_mem_cap::log_header_modify_pattern_sw_icm_size,
               c.log_header_modify_pattern_sw_icm_size);
    if (c.log_indirect_encap_sw_icm_size)
      w.set(device_mem_cap::indirect_encap_sw_icm_start_address, kIndirectEncapIcmBase)
          .set(device_mem_cap::log_indirect_encap_sw_icm_size,
               c.log_indirect_encap_sw_icm_size);
  }
}

}  // namespace

Capabilities::Capabilities(const DeviceConfig& c, const BarLayout& layout) {
  {
    Pages& p = pages_[prm::CAP_GENERAL];
    WriteGeneralCaps(p.max, c);
    p.cur = p.max;
    // Off until the driver turns them on (SET_HCA_CAP).
    PageWriter(p.cur)
        .set(cmd_hca_cap::uar_4k, 0)
        .set(cmd_hca_cap::drain_sigerr, 0)
        .set(cmd_hca_cap::abs_native_port_num, 0);
  }
  {
    Pages& p = pages_[prm::CAP_GENERAL_2];
    PageWriter(p.max).set(prm::cmd_hca_cap_2::sw_vhca_id_valid, 0);
    p.cur = p.max;
  }
  {
    Pages& p = pages_[prm::CAP_ROCE];
    WriteRoceCaps(p.max, c);
    p.cur = p.max;
    PageWriter(p.cur).set(roce_cap::sw_r_roce_src_udp_port, 0);
  }
  {
    Pages& p = pages_[prm::CAP_ATOMIC];
    WriteAtomicCaps(p.max);
    p.cur = p.max;
    PageWriter(p.cur).set(prm::atomic_caps::atomic_req_8B_endianness_mode, 0);
  }
  {
    Pages& p = pages_[prm::CAP_FLOW_TABLE];
    WriteFlowTableCaps(p.max, c);
    p.cur = p.max;
  }
  {
    Pages& p = pages_[prm::CAP_DEV_MEM];
    WriteDevMemCaps(p.max, c, layout);
    p.cur = p.max;
  }
}

std::span<const std::byte, kCapPageBytes> Capabilities::Page(uint16_t cap_type,
                                                             bool current) const {
  const Pages& p = pages_.at(cap_type);
  return current ? std::span<const std::byte, kCapPageBytes>(p.cur)
                 : std::span<const std::byte, kCapPageBytes>(p.max);
}

Outcome Capabilities::Set(uint16_t cap_type, std::span<const std::byte> page) {
  auto it = pages_.find(cap_type);
  if (it == pages_.end())
    return Refuse(Syndrome::CAP_TYPE_UNSUPPORTED);
  const auto& fields = WritableFields(cap_type);
  if (fields.empty())
    return Refuse(Syndrome::CAP_NOT_SETTABLE);
  for (const Writable& f : fields) {
    const uint64_t v = prm::detail::GetBits(page.data(), f.bit_offset, f.bit_width);
    const uint64_t max = prm::detail::GetBits(it->second.max.data(), f.bit_offset, f.bit_width);
    if (v > max) return Refuse(Syndrome::CAP_ABOVE_MAX);
  }
  for (const Writable& f : fields)
    prm::detail::SetBits(it->second.cur.data(), f.bit_offset, f.bit_width,
                         prm::detail::GetBits(page.data(), f.bit_offset, f.bit_width));
  return Outcome::Ok();
}

}  // namespace onchip::sim
