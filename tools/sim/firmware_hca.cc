// HCA life cycle: ENABLE/DISABLE_HCA, ISSI, pages, capabilities, ACCESS_REG, INIT/TEARDOWN_HCA,
// SET_DRIVER_VERSION, NOP.
#include <algorithm>

#include "tools/sim/firmware.h"
#include "tools/sim/vport_query_checks.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr uint32_t kSupportedIssi = 0x3;  // ISSI 0 and 1

}  // namespace

Outcome Firmware::EnableHca(Bytes in, Out out) {
  using In = prm::enable_hca_in;
  if (Outcome s = CheckShape<In, prm::enable_hca_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  if (prm::Get(in, In::function_id) != 0 || prm::Get(in, In::embedded_cpu_function) != 0)
    return Refuse(Syndrome::BAD_FUNCTION);
  state_ = HcaState::kEnabled;
  return Outcome::Ok();
}

Outcome Firmware::DisableHca(Bytes in, Out out) {
  using In = prm::disable_hca_in;
  if (Outcome s = CheckShape<In, prm::disable_hca_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  if (prm::Get(in, In::function_id) != 0 || prm::Get(in, In::embedded_cpu_function) != 0)
    return Refuse(Syndrome::BAD_FUNCTION);
  state_ = HcaState::kDisabled;
  current_issi_ = 0;
  return Outcome::Ok();
}

Outcome Firmware::QueryIssi(Bytes in, Out out) {
  using In = prm::query_issi_in;
  if (Outcome s = CheckShape<In, prm::query_issi_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  prm::Bits(out)
      .set(prm::query_issi_out::current_issi, current_issi_)
      .set(prm::query_issi_out::supported_issi_dw0, kSupportedIssi);
  return Outcome::Ok();
}

Outcome Firmware::SetIssi(Bytes in, Out out) {
  using In = prm::set_issi_in;
  if (Outcome s = CheckShape<In, prm::set_issi_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  const uint32_t issi = prm::Get(in, In::current_issi);
  if (issi >= 32 || !((kSupportedIssi >> issi) & 1))
    return Refuse(Syndrome::ISSI_UNSUPPORTED);
  current_issi_ = static_cast<uint16_t>(issi);
  return Outcome::Ok();
}

// Pages the firmware wants beyond those it holds (negative: it would give some back).
int64_t Firmware::PagesWanted() const {
  int64_t need = 0;
  if (state_ == HcaState::kEnabled) need = config_.boot_pages;
  if (state_ == HcaState::kInitialized) need = int64_t{config_.boot_pages} + config_.init_pages;
  return need - static_cast<int64_t>(pages_.size());
}

Outcome Firmware::QueryPages(Bytes in, Out out) {
  using In = prm::query_pages_in;
  if (Outcome s = CheckShape<In, prm::query_pages_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::function_id) != 0 || prm::Get(in, In::embedded_cpu_function) != 0)
    return Refuse(Syndrome::BAD_FUNCTION);
  const int64_t held = static_cast<int64_t>(pages_.size());
  int64_t n = 0;
  switch (prm::Get(in, In::op_mod)) {
    case prm::BOOT_PAGES:
      n = std::max<int64_t>(0, int64_t{config_.boot_pages} - held);
      break;
    case prm::INIT_PAGES:
      n = std::max<int64_t>(0, int64_t{config_.boot_pages} + config_.init_pages - held);
      break;
    case prm::REGULAR_PAGES:
      n = PagesWanted();
      break;
    default:
      return BadOpMod();
  }
  prm::Bits(out).set(prm::query_pages_out::num_pages, static_cast<uint32_t>(static_cast<int32_t>(n)));
  return Outcome::Ok();
}

Outcome Firmware::ManagePages(Bytes in, Out out) {
  using In = prm::manage_pages_in;
  using O = prm::manage_pages_out;
  if (Outcome s = CheckShape<In, O>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::function_id) != 0 || prm::Get(in, In::embedded_cpu_function) != 0)
    return Refuse(Syndrome::BAD_FUNCTION);
  const uint64_t n = prm::Get(in, In::input_num_entries);
  switch (prm::Get(in, In::op_mod)) {
    case prm::PAGES_CANT_GIVE:
      return Outcome::Ok();
    case prm::PAGES_GIVE: {
      if (in.size() < prm::size_bytes<In> + 8 * n)
        return Refuse(Syndrome::INPUT_TOO_SHORT);
      if (pages_.size() + n > config_.max_pages_held)
        return Refuse(Syndrome::PAGES_LIMIT);
      std::set<uint64_t> fresh;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t pa = prm::Get(in, In::pas[i]);
        if (pa % prm::ADAPTER_PAGE_SIZE != 0)
          return Refuse(Syndrome::PAGE_UNALIGNED);
        if (pages_.contains(pa) || !fresh.insert(pa).second)
          return Refuse(Syndrome::PAGE_DUPLICATE);
        if (!iommu_.IsMapped(pa, prm::ADAPTER_PAGE_SIZE))
          return Refuse(Syndrome::PAGE_UNMAPPED);
      }
      pages_.merge(fresh);
      return Outcome::Ok();
    }
    case prm::PAGES_TAKE: {
      if (out.size() < prm::size_bytes<O> + 8 * n)
        return Refuse(Syndrome::OUTPUT_TOO_SHORT);
      // While initialized the firmware keeps what it needs; otherwise everything may go back.
      const uint64_t keep = state_ == HcaState::kInitialized
                                ? uint64_t{config_.boot_pages} + config_.init_pages
                                : 0;
      const uint64_t surplus = pages_.size() > keep ? pages_.size() - keep : 0;
      const uint64_t give_back = std::min(n, surplus);
      prm::Bits bits(out);
      for (uint64_t i = 0; i < give_back; ++i) {
        auto last = std::prev(pages_.end());
        bits.set(O::pas[i], *last);
        pages_.erase(last);
      }
      bits.set(O::output_num_entries, give_back);
      return Outcome::Ok();
    }
    default:
      return BadOpMod();
  }
}

Outcome Firmware::QueryHcaCap(Bytes in, Out out) {
  using In = prm::query_hca_cap_in;
  using O = prm::query_hca_cap_out;
  if (Outcome s = CheckShape<In, O>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::other_function) != 0 || prm::Get(in, In::ec_vf_function) != 0 ||
      prm::Get(in, In::function_id_type) != 0 || prm::Get(in, In::function_id) != 0)
    return Refuse(Syndrome::CAP_OTHER_FUNCTION);
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  const uint16_t type = static_cast<uint16_t>(op_mod >> 1);
  if (!caps_.Supported(type))
    return Refuse(Syndrome::CAP_TYPE_UNSUPPORTED);
  auto page = caps_.Page(type, (op_mod & 1) == prm::HCA_CAP_OPMOD_GET_CUR);
  std::copy(page.begin(), page.end(), prm::Bits(out).region(O::capability).begin());
  return Outcome::Ok();
}

Outcome Firmware::SetHcaCap(Bytes in, Out out) {
  using In = prm::set_hca_cap_in;
  if (Outcome s = CheckShape<In, prm::set_hca_cap_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::other_function) != 0 || prm::Get(in, In::ec_vf_function) != 0 ||
      prm::Get(in, In::function_id_type) != 0 || prm::Get(in, In::function_id) != 0)
    return Refuse(Syndrome::CAP_OTHER_FUNCTION);
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  if (op_mod & 1) return BadOpMod();
  return caps_.Set(static_cast<uint16_t>(op_mod >> 1),
                   in.subspan(In::capability.byte_offset, In::capability.byte_size));
}

Outcome Firmware::AccessReg(Bytes in, Out out) {
  using In = prm::access_register_in;
  using O = prm::access_register_out;
  using Reg = prm::register_host_endianness_bits<In::register_data.bit_offset>;
  constexpr std::size_t kRegBytes = prm::size_bytes<prm::register_host_endianness>;
  if (Outcome s = CheckShape<In, O>(in, out); !s.ok()) return s;
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  if (op_mod != prm::ACCESS_REG_WRITE && op_mod != prm::ACCESS_REG_READ) return BadOpMod();
  if (prm::Get(in, In::register_id) != prm::REG_HOST_ENDIANNESS)
    return Refuse(Syndrome::REGISTER_UNSUPPORTED);
  if (prm::Get(in, In::argument) != 0)
    return Refuse(Syndrome::REGISTER_ARGUMENT);
  if (in.size() < prm::size_bytes<In> + kRegBytes)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  if (out.size() < prm::size_bytes<O> + kRegBytes)
    return Refuse(Syndrome::OUTPUT_TOO_SHORT);
  if (op_mod == prm::ACCESS_REG_WRITE) {
    if (!ReservedClear(in, Reg{}))
      return Refuse(Syndrome::RESERVED_NOT_ZERO);
    host_endianness_he_ = prm::Get(in, Reg::he);
  }
  // Both directions answer with the register's (new) contents.
  prm::Bits(out).set(prm::register_host_endianness_bits<O::register_data.bit_offset>::he,
                     host_endianness_he_);
  return Outcome::Ok();
}

Outcome Firmware::InitHca(Bytes in, Out out) {
  using In = prm::init_hca_in;
  if (Outcome s = CheckShape<In, prm::init_hca_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  if (prm::Get(in, In::sw_vhca_id) != 0 &&
      !caps_.General2(prm::cmd_hca_cap_2::sw_vhca_id_valid))
    return Refuse(Syndrome::SW_VHCA_ID_UNSUPPORTED);
  if (pages_.size() < uint64_t{config_.boot_pages} + config_.init_pages)
    return Refuse(Syndrome::PAGES_MISSING);
  for (std::size_t i = 0; i < sw_owner_id_.size(); ++i)
    sw_owner_id_[i] = prm::Get(in, In::sw_owner_id[i]);
  state_ = HcaState::kInitialized;
  return Outcome::Ok();
}

Outcome Firmware::TeardownHca(Bytes in, Out out) {
  using In = prm::teardown_hca_in;
  if (Outcome s = CheckShape<In, prm::teardown_hca_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  const uint32_t profile = prm::Get(in, In::profile);
  const bool objects_alive = !(uars_.empty() && pds_.empty() && tds_.empty() && xrcds_.empty() && mkeys_.empty() &&
                               memic_.empty() && sw_icm_.empty() && eqs_.empty() &&
                               cqs_.empty() && qps_.empty() && srqs_.empty());
  switch (profile) {
    case prm::TEARDOWN_HCA_GRACEFUL_CLOSE:
      if (objects_alive) return Refuse(Syndrome::TEARDOWN_BUSY);
      break;
    case prm::TEARDOWN_HCA_FORCE_CLOSE:
      ReleaseAllObjects();
      prm::Bits(out).set(prm::teardown_hca_out::state, 0);  // force close succeeded
      break;
    default:  // fast teardown is not advertised
      return Refuse(Syndrome::TEARDOWN_PROFILE);
  }
  state_ = HcaState::kEnabled;
  return Outcome::Ok();
}

void Firmware::ReleaseAllObjects() {
  // Users before what they use: QPs hold SRQs, CQs, PDs and XRC domains; SRQs hold PDs (XRC SRQs
  // also CQs and XRC domains); CQs hold EQs; TIRs
  // hold RQs; SQs hold TISes; SQs and RQs hold CQs and PDs; TISes and TIRs hold transport domains.
  tirs_.clear();
  tir_ids_ = IndexPool(1, (uint32_t{1} << config_.log_max_tir) - 1);
  sqs_.clear();
  rqs_.clear();
  tises_.clear();
  tis_ids_ = IndexPool(1, (uint32_t{1} << config_.log_max_tis) - 1);
  qps_.clear();
  qp_ids_ = IndexPool(kFirstQpn, QpCount(config_));
  srqs_.clear();
  srq_ids_ = IndexPool(0, uint32_t{1} << std::min<uint32_t>(config_.log_max_srq, 24));
  xrcds_.clear();  // held by XRC QPs and XRC SRQs only
  xrcd_ids_ = IndexPool(1, (uint32_t{1} << config_.log_max_xrcd) - 1);
  cqs_.clear();
  cq_ids_ = IndexPool(0, uint32_t{1} << config_.log_max_cq);
  eqs_.clear();
  eq_ids_ = IndexPool(0, EqCount(config_));
  mkeys_.clear();
  mkey_ids_ = IndexPool(1, (uint32_t{1} << config_.log_max_mkey) - 1);
  sw_icm_.clear();
  object_ids_ = IndexPool(1, 1u << 16);
  memic_.clear();
  pds_.clear();
  pd_ids_ = IndexPool(1, (uint32_t{1} << config_.log_max_pd) - 1);
  tds_.clear();
  td_ids_ = IndexPool(1, (uint32_t{1} << config_.log_max_transport_domain) - 1);
  uars_.clear();
  uar_ids_ = IndexPool(config_.first_uar_index, config_.num_uars);
}

Outcome Firmware::SetDriverVersion(Bytes in, Out out) {
  using In = prm::set_driver_version_in;
  if (Outcome s = CheckShape<In, prm::set_driver_version_out>(in, out); !s.ok()) return s;
  // The layout names its reserved words; firmware still wants them clear.
  if (prm::Get(in, In::reserved_0) != 0 || prm::Get(in, In::reserved_1) != 0 ||
      prm::Get(in, In::reserved_2) != 0)
    return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  std::string v;
  for (std::size_t i = 0; i < In::driver_version.count; ++i) {
    const char c = static_cast<char>(prm::Get(in, In::driver_version[i]));
    if (c == '\0') break;
    v.push_back(c);
  }
  driver_version_ = std::move(v);
  return Outcome::Ok();
}

// The NIC vport's state is the port's link; op_mod 2 asks for the uplink, the same port here.
// Another vport's (other_vport) needs an e-switch manager, which this function is not.
Outcome Firmware::QueryVportState(Bytes in, Out out) {
  using In = prm::query_vport_state_in;
  if (Outcome s = CheckShape<In, prm::query_vport_state_out>(in, out); !s.ok()) return s;
  constexpr uint32_t kVnicVport = 0, kUplink = 2;
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  if (op_mod != kVnicVport && op_mod != kUplink) return BadOpMod();
  if (prm::Get(in, In::other_vport) != 0 || prm::Get(in, In::vport_number) != 0)
    return Refuse(Syndrome::CAP_OTHER_FUNCTION);
  const uint32_t state = link_up_ ? prm::MLX5_VPORT_STATE_UP : prm::MLX5_VPORT_STATE_DOWN;
  prm::Bits(out)
      .set(prm::query_vport_state_out::admin_state, prm::MLX5_VPORT_STATE_UP)
      .set(prm::query_vport_state_out::state, state);
  return Outcome::Ok();
}

namespace {

// IBTA PortInfo values: PortState ACTIVE / DOWN, PortPhysicalState LinkUp / Disabled.
constexpr uint32_t kIbPortActive = 4, kIbPortDown = 1;
constexpr uint32_t kIbPhysLinkUp = 5, kIbPhysDisabled = 3;
// PortInfo.CapabilityMask: CommunicationManagementSupported, SystemImageGUIDSupported.
constexpr uint32_t kIbCapMask1 = 1u << 16 | 1u << 11;
// PortInfo.SubnetTimeOut as a subnet manager commonly sets it (4.096 us * 2^18 ~ 1 s).
constexpr uint32_t kSubnetTimeout = 18;
// The subnet manager's LID (tools/sim/wire.h Fabric::kSmLid; the firmware is below the wire).
constexpr uint32_t kSmLid = 1;

}  // namespace

Outcome Firmware::QueryHcaVportContext(Bytes in, Out out) {
  using In = prm::query_hca_vport_context_in;
  if (Outcome s = CheckShape<In, prm::query_hca_vport_context_out>(in, out); !s.ok()) return s;
  if (Outcome s = CheckOwnIbVportQuery<In>(in, config_); !s.ok()) return s;
  using Ctx = prm::hca_vport_context_bits<prm::query_hca_vport_context_out::hca_vport_context.bit_offset>;
  const uint64_t guid = NodeGuid(config_);
  prm::Bits(out)
      .set(Ctx::has_smi, 1)
      .set(Ctx::port_physical_state, link_up_ ? kIbPhysLinkUp : kIbPhysDisabled)
      .set(Ctx::port_state, link_up_ ? kIbPortActive : kIbPortDown)
      .set(Ctx::vport_state, link_up_ ? kIbPortActive : kIbPortDown)
      .set(Ctx::system_image_guid, guid)
      .set(Ctx::port_guid, guid)
      .set(Ctx::node_guid, guid)
      .set(Ctx::cap_mask1, kIbCapMask1)
      .set(Ctx::lid, config_.lid)
      .set(Ctx::lmc, 0)
      .set(Ctx::subnet_timeout, kSubnetTimeout)
      .set(Ctx::sm_lid, kSmLid)
      .set(Ctx::sm_sl, 0);
  return Outcome::Ok();
}

Outcome Firmware::Nop(Bytes in, Out out) {
  using In = prm::nop_in;
  if (Outcome s = CheckShape<In, prm::nop_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  return Outcome::Ok();
}

}  // namespace onchip::sim
