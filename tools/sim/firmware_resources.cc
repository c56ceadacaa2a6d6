// UARs, protection domains, transport domains and XRC domains.
//
// An XRC domain is a number and an owner, like a PD: XRC SRQs and XRC QPs name it, and it stays
// while any of them lives (DEALLOC_XRCD is RES_BUSY). Numbers run from 1 to 2^log_max_xrcd - 1.
#include "tools/sim/firmware.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/xrc.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

Outcome Firmware::AllocUar(Bytes in, Out out) {
  using In = prm::alloc_uar_in;
  if (Outcome s = CheckShape<In, prm::alloc_uar_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto idx = uar_ids_.Allocate();
  if (!idx) return Refuse(Syndrome::UAR_EXHAUSTED);
  uars_[*idx] = static_cast<uint16_t>(prm::Get(in, In::uid));
  prm::Bits(out).set(prm::alloc_uar_out::uar, *idx);
  return Outcome::Ok();
}

Outcome Firmware::DeallocUar(Bytes in, Out out) {
  using In = prm::dealloc_uar_in;
  if (Outcome s = CheckShape<In, prm::dealloc_uar_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto it = uars_.find(prm::Get(in, In::uar));
  if (it == uars_.end()) return Refuse(Syndrome::UAR_UNKNOWN);
  if (it->second != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  uar_ids_.Free(it->first);
  uars_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::AllocPd(Bytes in, Out out) {
  using In = prm::alloc_pd_in;
  if (Outcome s = CheckShape<In, prm::alloc_pd_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto idx = pd_ids_.Allocate();
  if (!idx) return Refuse(Syndrome::PD_EXHAUSTED);
  pds_[*idx] = Pd{static_cast<uint16_t>(prm::Get(in, In::uid))};
  prm::Bits(out).set(prm::alloc_pd_out::pd, *idx);
  return Outcome::Ok();
}

Outcome Firmware::DeallocPd(Bytes in, Out out) {
  using In = prm::dealloc_pd_in;
  if (Outcome s = CheckShape<In, prm::dealloc_pd_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto it = pds_.find(prm::Get(in, In::pd));
  if (it == pds_.end()) return Refuse(Syndrome::PD_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (it->second.mkeys != 0 || it->second.queues != 0)
    return Refuse(Syndrome::PD_BUSY);
  pd_ids_.Free(it->first);
  pds_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::AllocTd(Bytes in, Out out) {
  using In = prm::alloc_transport_domain_in;
  if (Outcome s = CheckShape<In, prm::alloc_transport_domain_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto idx = td_ids_.Allocate();
  if (!idx) return Refuse(Syndrome::TD_EXHAUSTED);
  tds_[*idx] = static_cast<uint16_t>(prm::Get(in, In::uid));
  prm::Bits(out).set(prm::alloc_transport_domain_out::transport_domain, *idx);
  return Outcome::Ok();
}

Outcome Firmware::DeallocTd(Bytes in, Out out) {
  using In = prm::dealloc_transport_domain_in;
  if (Outcome s = CheckShape<In, prm::dealloc_transport_domain_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto it = tds_.find(prm::Get(in, In::transport_domain));
  if (it == tds_.end()) return Refuse(Syndrome::TD_UNKNOWN);
  if (it->second != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (TdUsers(it->first) != 0) return Refuse(Syndrome::TD_BUSY);
  td_ids_.Free(it->first);
  tds_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::AllocXrcd(Bytes in, Out out) {
  using In = prm::alloc_xrcd_in;
  if (Outcome s = CheckShape<In, prm::alloc_xrcd_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto idx = xrcd_ids_.Allocate();
  if (!idx) return Refuse(Syndrome::XRCD_EXHAUSTED);
  xrcds_[*idx] = Xrcd{static_cast<uint16_t>(prm::Get(in, In::uid))};
  prm::Bits(out).set(prm::alloc_xrcd_out::xrcd, *idx);
  return Outcome::Ok();
}

Outcome Firmware::DeallocXrcd(Bytes in, Out out) {
  using In = prm::dealloc_xrcd_in;
  if (Outcome s = CheckShape<In, prm::dealloc_xrcd_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  auto it = xrcds_.find(prm::Get(in, In::xrcd));
  if (it == xrcds_.end()) return Refuse(Syndrome::XRCD_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (it->second.users != 0) return Refuse(Syndrome::XRCD_BUSY);
  xrcd_ids_.Free(it->first);
  xrcds_.erase(it);
  return Outcome::Ok();
}

}  // namespace onchip::sim
