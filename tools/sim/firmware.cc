#include "tools/sim/firmware.h"

#include <algorithm>
#include <cstring>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/commands.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

Firmware::Firmware(Contexts& contexts, EngineStateControl engine, const DeviceConfig& config,
                   const BarLayout& layout, std::span<std::byte> memic_window,
                   SteeringTagTable steering_tags, Iommu& iommu)
    : config_(config),
      layout_(layout),
      memic_window_(memic_window),
      steering_tags_(steering_tags),
      iommu_(iommu),
      contexts_(contexts),
      mutex_(contexts.mutex),
      state_(contexts.state),
      caps_(contexts.caps),
      link_up_(contexts.link_up),
      port_change_(contexts.port_change),
      uar_ids_(contexts.uar_ids),
      uars_(contexts.uars),
      pd_ids_(contexts.pd_ids),
      pds_(contexts.pds),
      td_ids_(contexts.td_ids),
      tds_(contexts.tds),
      xrcd_ids_(contexts.xrcd_ids),
      xrcds_(contexts.xrcds),
      memic_(contexts.memic),
      object_ids_(contexts.object_ids),
      sw_icm_(contexts.sw_icm),
      mkey_ids_(contexts.mkey_ids),
      mkeys_(contexts.mkeys),
      eq_ids_(contexts.eq_ids),
      eqs_(contexts.eqs),
      cq_ids_(contexts.cq_ids),
      cqs_(contexts.cqs),
      qp_ids_(contexts.qp_ids),
      qps_(contexts.qps),
      srq_ids_(contexts.srq_ids),
      srqs_(contexts.srqs),
      sqs_(contexts.sqs),
      rqs_(contexts.rqs),
      tis_ids_(contexts.tis_ids),
      tises_(contexts.tises),
      tir_ids_(contexts.tir_ids),
      tirs_(contexts.tirs),
      generation_(contexts.generation),
      engine_(engine) {}

Outcome Firmware::Execute(std::span<const std::byte> in, std::span<std::byte> out) {
  std::lock_guard lock(mutex_);
  std::fill(out.begin(), out.end(), std::byte{0});
  Outcome r;
  uint16_t opcode = 0;
  if (in.size() < prm::size_bytes<prm::mbox_in>) {
    r = Refuse(Syndrome::INPUT_TOO_SHORT);
  } else {
    opcode = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode));
    auto inj = std::find_if(injected_.begin(), injected_.end(), [&](const InjectedFailure& f) {
      return !f.opcode || *f.opcode == opcode;
    });
    if (inj != injected_.end()) {
      r = {inj->status, inj->syndrome};
      if (--inj->count == 0) injected_.erase(inj);
    } else {
      r = Dispatch(opcode, in, out);
    }
  }
  ++counters_.commands;
  ++counters_.by_opcode[opcode];
  if (r.ok() && !prm::ReadsOnly(opcode)) ++generation_;
  if (!r.ok()) {
    ++counters_.commands_failed;
    std::fill(out.begin(), out.end(), std::byte{0});
  }
  // status and syndrome (the output header through its syndrome), as far as the output reaches.
  constexpr std::size_t kHeadBytes =
      (prm::mbox_out::syndrome.bit_offset + prm::mbox_out::syndrome.bit_width) / 8;
  std::array<std::byte, prm::size_bytes<prm::mbox_out>> head{};
  prm::Bits(head)
      .set(prm::mbox_out::status, static_cast<uint8_t>(r.status))
      .set(prm::mbox_out::syndrome, r.syndrome);
  if (!out.empty()) std::memcpy(out.data(), head.data(), std::min(out.size(), kHeadBytes));
  return r;
}

Outcome Firmware::CheckState(uint16_t opcode) const {
  // The states each command is accepted in are uapi's command table's (uapi/prm/commands.h).
  const uint8_t now = state_ == HcaState::kDisabled  ? prm::kHcaDisabled
                      : state_ == HcaState::kEnabled ? prm::kHcaEnabled
                                                     : prm::kHcaInitialized;
  const prm::Command* command = prm::FindCommand(opcode);
  const bool ok = command != nullptr && (command->states & now) != 0;
  return ok ? Outcome::Ok() : Refuse(Syndrome::WRONG_STATE);
}

Firmware::Handler Firmware::HandlerFor(uint16_t opcode) {
  Handler h = nullptr;
  switch (opcode) {
    case prm::ENABLE_HCA: h = &Firmware::EnableHca; break;
    case prm::DISABLE_HCA: h = &Firmware::DisableHca; break;
    case prm::QUERY_ISSI: h = &Firmware::QueryIssi; break;
    case prm::SET_ISSI: h = &Firmware::SetIssi; break;
    case prm::QUERY_PAGES: h = &Firmware::QueryPages; break;
    case prm::MANAGE_PAGES: h = &Firmware::ManagePages; break;
    case prm::QUERY_HCA_CAP: h = &Firmware::QueryHcaCap; break;
    case prm::SET_HCA_CAP: h = &Firmware::SetHcaCap; break;
    case prm::ACCESS_REG: h = &Firmware::AccessReg; break;
    case prm::INIT_HCA: h = &Firmware::InitHca; break;
    case prm::TEARDOWN_HCA: h = &Firmware::TeardownHca; break;
    case prm::SET_DRIVER_VERSION: h = &Firmware::SetDriverVersion; break;
    case prm::NOP: h = &Firmware::Nop; break;
    case prm::QUERY_VPORT_STATE: h = &Firmware::QueryVportState; break;
    case prm::QUERY_HCA_VPORT_CONTEXT: h = &Firmware::QueryHcaVportContext; break;
    case prm::QUERY_HCA_VPORT_GID: h = &Firmware::QueryHcaVportGid; break;
    case prm::QUERY_ROCE_ADDRESS: h = &Firmware::QueryRoceAddress; break;
    case prm::ALLOC_UAR: h = &Firmware::AllocUar; break;
    case prm::DEALLOC_UAR: h = &Firmware::DeallocUar; break;
    case prm::ALLOC_PD: h = &Firmware::AllocPd; break;
    case prm::DEALLOC_PD: h = &Firmware::DeallocPd; break;
    case prm::ALLOC_TRANSPORT_DOMAIN: h = &Firmware::AllocTd; break;
    case prm::DEALLOC_TRANSPORT_DOMAIN: h = &Firmware::DeallocTd; break;
    case prm::ALLOC_XRCD: h = &Firmware::AllocXrcd; break;
    case prm::DEALLOC_XRCD: h = &Firmware::DeallocXrcd; break;
    case prm::ALLOC_MEMIC: h = &Firmware::AllocMemic; break;
    case prm::DEALLOC_MEMIC: h = &Firmware::DeallocMemic; break;
    case prm::MODIFY_MEMIC: h = &Firmware::ModifyMemic; break;
    case prm::CREATE_GENERAL_OBJECT: h = &Firmware::CreateGeneralObject; break;
    case prm::DESTROY_GENERAL_OBJECT: h = &Firmware::DestroyGeneralObject; break;
    case prm::QUERY_GENERAL_OBJECT: h = &Firmware::QueryGeneralObject; break;
    case prm::CREATE_MKEY: h = &Firmware::CreateMkey; break;
    case prm::DESTROY_MKEY: h = &Firmware::DestroyMkey; break;
    case prm::QUERY_MKEY: h = &Firmware::QueryMkey; break;
    case prm::CREATE_EQ: h = &Firmware::CreateEq; break;
    case prm::DESTROY_EQ: h = &Firmware::DestroyEq; break;
    case prm::QUERY_EQ: h = &Firmware::QueryEq; break;
    case prm::CREATE_CQ: h = &Firmware::CreateCq; break;
    case prm::DESTROY_CQ: h = &Firmware::DestroyCq; break;
    case prm::QUERY_CQ: h = &Firmware::QueryCq; break;
    case prm::MODIFY_CQ: h = &Firmware::ModifyCq; break;
    case prm::CREATE_QP: h = &Firmware::CreateQp; break;
    case prm::DESTROY_QP: h = &Firmware::DestroyQp; break;
    case prm::QUERY_QP: h = &Firmware::QueryQp; break;
    case prm::RST2INIT_QP: h = &Firmware::Rst2InitQp; break;
    case prm::INIT2INIT_QP: h = &Firmware::Init2InitQp; break;
    case prm::INIT2RTR_QP: h = &Firmware::Init2RtrQp; break;
    case prm::RTR2RTS_QP: h = &Firmware::Rtr2RtsQp; break;
    case prm::RTS2RTS_QP: h = &Firmware::Rts2RtsQp; break;
    case prm::SQERR2RTS_QP: h = &Firmware::SqErr2RtsQp; break;
    case prm::SQD_RTS_QP: h = &Firmware::Sqd2RtsQp; break;
    case prm::QP_2ERR: h = &Firmware::Qp2ErrQp; break;
    case prm::QP_2RST: h = &Firmware::Qp2RstQp; break;
    case prm::CREATE_SRQ: h = &Firmware::CreateSrq; break;
    case prm::DESTROY_SRQ: h = &Firmware::DestroySrq; break;
    case prm::QUERY_SRQ: h = &Firmware::QuerySrq; break;
    case prm::ARM_RQ: h = &Firmware::ArmRq; break;
    case prm::CREATE_XRC_SRQ: h = &Firmware::CreateXrcSrq; break;
    case prm::DESTROY_XRC_SRQ: h = &Firmware::DestroyXrcSrq; break;
    case prm::QUERY_XRC_SRQ: h = &Firmware::QueryXrcSrq; break;
    case prm::ARM_XRC_SRQ: h = &Firmware::ArmXrcSrq; break;
    case prm::CREATE_TIS: h = &Firmware::CreateTis; break;
    case prm::DESTROY_TIS: h = &Firmware::DestroyTis; break;
    case prm::QUERY_TIS: h = &Firmware::QueryTis; break;
    case prm::CREATE_SQ: h = &Firmware::CreateSq; break;
    case prm::DESTROY_SQ: h = &Firmware::DestroySq; break;
    case prm::QUERY_SQ: h = &Firmware::QuerySq; break;
    case prm::MODIFY_SQ: h = &Firmware::ModifySq; break;
    case prm::CREATE_RQ: h = &Firmware::CreateRq; break;
    case prm::DESTROY_RQ: h = &Firmware::DestroyRq; break;
    case prm::QUERY_RQ: h = &Firmware::QueryRq; break;
    case prm::MODIFY_RQ: h = &Firmware::ModifyRq; break;
    case prm::CREATE_TIR: h = &Firmware::CreateTir; break;
    case prm::DESTROY_TIR: h = &Firmware::DestroyTir; break;
    case prm::QUERY_TIR: h = &Firmware::QueryTir; break;
    default:
      break;
  }
  return h;
}

bool Firmware::Implements(uint16_t opcode) { return HandlerFor(opcode) != nullptr; }

Outcome Firmware::Dispatch(uint16_t opcode, std::span<const std::byte> in,
                           std::span<std::byte> out) {
  const Handler h = HandlerFor(opcode);
  if (h == nullptr) return Refuse(Syndrome::BAD_OPCODE);
  if (Outcome s = CheckState(opcode); !s.ok()) return s;
  return (this->*h)(in, out);
}

Counters Firmware::counters() const {
  std::lock_guard lock(mutex_);
  Counters c = counters_;
  c.uars = static_cast<uint32_t>(uars_.size());
  c.pds = static_cast<uint32_t>(pds_.size());
  c.transport_domains = static_cast<uint32_t>(tds_.size());
  c.xrcds = static_cast<uint32_t>(xrcds_.size());
  c.mkeys = static_cast<uint32_t>(mkeys_.size());
  c.memic_allocations = static_cast<uint32_t>(memic_.size());
  c.sw_icm_objects = static_cast<uint32_t>(sw_icm_.size());
  c.eqs = static_cast<uint32_t>(eqs_.size());
  c.cqs = static_cast<uint32_t>(cqs_.size());
  c.qps = static_cast<uint32_t>(qps_.size());
  c.srqs = static_cast<uint32_t>(srqs_.size());
  c.sqs = static_cast<uint32_t>(sqs_.size());
  c.rqs = static_cast<uint32_t>(rqs_.size());
  c.tises = static_cast<uint32_t>(tises_.size());
  c.tirs = static_cast<uint32_t>(tirs_.size());
  c.pages_held = static_cast<uint32_t>(pages_.size());
  return c;
}

HcaState Firmware::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

void Firmware::SetLinkUp(bool up) {
  std::lock_guard lock(mutex_);
  if (link_up_ == up) return;
  link_up_ = up;
  port_change_ = up ? prm::MLX5_PORT_CHANGE_SUBTYPE_ACTIVE : prm::MLX5_PORT_CHANGE_SUBTYPE_DOWN;
}

bool Firmware::link_up() const {
  std::lock_guard lock(mutex_);
  return link_up_;
}

std::string Firmware::driver_version() const {
  std::lock_guard lock(mutex_);
  return driver_version_;
}

uint32_t Firmware::host_endianness() const {
  std::lock_guard lock(mutex_);
  return host_endianness_he_;
}

void Firmware::InjectFailure(const InjectedFailure& f) {
  std::lock_guard lock(mutex_);
  if (f.count > 0) injected_.push_back(f);
}

void Firmware::ClearInjectedFailures() {
  std::lock_guard lock(mutex_);
  injected_.clear();
}

std::optional<std::span<std::byte>> Firmware::SwIcmBytes(uint64_t icm_addr, uint64_t len) {
  std::lock_guard lock(mutex_);
  for (auto& [id, o] : sw_icm_) {
    const uint64_t size = o.backing.size();
    if (icm_addr >= o.start && icm_addr - o.start <= size && len <= size - (icm_addr - o.start))
      return std::span<std::byte>(o.backing).subspan(icm_addr - o.start, len);
  }
  return std::nullopt;
}

}  // namespace onchip::sim
