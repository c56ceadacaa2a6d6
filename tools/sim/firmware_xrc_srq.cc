// XRC shared receive queues: CREATE_XRC_SRQ, DESTROY_XRC_SRQ, QUERY_XRC_SRQ, ARM_XRC_SRQ.
//
// An XRC SRQ is an SRQ (the same ring of receive WQEs linked by their next-segments, the same
// doorbell record, numbers from the same table) that belongs to an XRC domain and completes its
// receives on its own CQ: no QP names it. A request arriving at an XRC target QP names it
// (the XRC segment of the sender's WQE), and the target takes the receive from it when both
// belong to the same domain. CREATE_XRC_SRQ checks the ring, the PD, the record and the pages
// through the steps CREATE_SRQ takes (srq_queue_checks.h, firmware_srq_create.cc), and also that
// xrcd and cqn name live objects of the creator's; the SRQ holds its PD, its CQ (DESTROY_CQ is
// RES_BUSY) and its domain (DEALLOC_XRCD is RES_BUSY). user_index is what its receive CQEs
// carry in srqn_uidx (CQE version 1); user_index_equal_xrc_srqn takes the SRQ number instead. The doorbell record is db_record_addr_h/_l (4-byte aligned by format).
//
// The plain SRQ commands refuse an XRC SRQ and these refuse a plain one (SRQ_TYPE).
#include <cstring>

#include "tools/sim/firmware.h"
#include "tools/sim/srq_queue_checks.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/xrc.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {


}  // namespace

Outcome Firmware::CreateXrcSrq(Bytes in, Out out) {
  using In = prm::create_xrc_srq_in;
  using Ctx = prm::xrc_srqc_bits<In::xrc_srq_context_entry.bit_offset>;
  static_assert(sizeof(Srq::srqc) == prm::size_bytes<prm::xrc_srqc>);
  if (Outcome s = CheckShape<In, prm::create_xrc_srq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  // Not advertised: WQ signatures, the contiguous mode, the reserved lkey, cyclic receive WQEs,
  // UMEM buffers and records.
  if (prm::Get(in, Ctx::wq_signature) || prm::Get(in, Ctx::cont_srq) || prm::Get(in, Ctx::rlky) ||
      prm::Get(in, Ctx::basic_cyclic_rcv_wqe) || prm::Get(in, Ctx::dbr_umem_valid) ||
      prm::Get(in, In::xrc_srq_umem_valid))
    return Refuse(Syndrome::SRQ_UNSUPPORTED);
  SrqRing ring;
  if (Outcome s = CheckSrqRing<Ctx>(in, static_cast<uint32_t>(prm::Get(in, Ctx::log_xrc_srq_size)),
                                    config_, kMaxQueueLogPageSize, &ring);
      !s.ok())
    return s;

  const SrqContext context{
      .uid = uid,
      .pdn = static_cast<uint32_t>(prm::Get(in, Ctx::pd)),
      .dbr_addr = uint64_t{prm::Get(in, Ctx::db_record_addr_h)} << 32 |
                  uint64_t{prm::Get(in, Ctx::db_record_addr_l)} << 2,
      .pas_offset = In::pas.bit_offset / 8,
      .srqc = in.subspan(Ctx::bit_offset / 8, sizeof(Srq::srqc))};
  // The objects it names besides its PD, all the creator's.
  const auto domain_and_cq = [&](Srq& srq) {
    auto xrcd = xrcds_.find(prm::Get(in, Ctx::xrcd));
    if (xrcd == xrcds_.end()) return Refuse(Syndrome::SRQ_XRCD_UNKNOWN);
    if (xrcd->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
    auto cq = cqs_.find(prm::Get(in, Ctx::cqn));
    if (cq == cqs_.end()) return Refuse(Syndrome::SRQ_CQ_UNKNOWN);
    if (cq->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
    srq.xrcd = xrcd->first;
    srq.cqn = cq->first;
    return Outcome::Ok();
  };
  uint32_t srqn = 0;
  if (Outcome s = CreateSrqFromContext(in, context, ring, domain_and_cq, &srqn); !s.ok()) return s;
  // Nothing below can fail: the SRQ is published and now holds its CQ and domain too.
  Srq& srq = srqs_.at(srqn);
  srq.user_index = prm::Get(in, Ctx::user_index_equal_xrc_srqn)
                       ? srqn
                       : static_cast<uint32_t>(prm::Get(in, Ctx::user_index));
  ++cqs_.at(srq.cqn).users;
  ++xrcds_.at(*srq.xrcd).users;
  prm::Bits(out).set(prm::create_xrc_srq_out::xrc_srqn, srqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyXrcSrq(Bytes in, Out out) {
  using In = prm::destroy_xrc_srq_in;
  if (Outcome s = CheckShape<In, prm::destroy_xrc_srq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = srqs_.find(prm::Get(in, In::xrc_srqn));
  if (it == srqs_.end()) return Refuse(Syndrome::SRQ_UNKNOWN);
  Srq& srq = it->second;
  if (!srq.xrcd) return Refuse(Syndrome::SRQ_TYPE);
  if (srq.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  // No QP holds an XRC SRQ: target QPs find it per request, and one gone is refused then.
  --pds_.at(srq.pd).queues;
  --cqs_.at(srq.cqn).users;
  --xrcds_.at(*srq.xrcd).users;
  srq_ids_.Free(it->first);
  srqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryXrcSrq(Bytes in, Out out) {
  using In = prm::query_xrc_srq_in;
  using O = prm::query_xrc_srq_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = srqs_.find(prm::Get(in, In::xrc_srqn));
  if (it == srqs_.end()) return Refuse(Syndrome::SRQ_UNKNOWN);
  const Srq& srq = it->second;
  if (!srq.xrcd) return Refuse(Syndrome::SRQ_TYPE);
  // uid 0 is the function's own (privileged) context and may look at any SRQ.
  if (uid != 0 && srq.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::xrc_srq_context_entry.bit_offset / 8, srq.srqc.data(),
              srq.srqc.size());
  WriteQueuePages(out, O::pas.bit_offset / 8, srq.pas);
  return Outcome::Ok();
}

Outcome Firmware::ArmXrcSrq(Bytes in, Out out) {
  using In = prm::arm_xrc_srq_in;
  if (Outcome s = CheckShape<In, prm::arm_xrc_srq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != prm::ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = srqs_.find(prm::Get(in, In::xrc_srqn));
  if (it == srqs_.end()) return Refuse(Syndrome::SRQ_UNKNOWN);
  Srq& srq = it->second;
  if (!srq.xrcd) return Refuse(Syndrome::SRQ_TYPE);
  if (srq.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t lwm = prm::Get(in, In::lwm);
  if (lwm >= srq.wqe_count) return Refuse(Syndrome::SRQ_LWM);
  prm::Bits(std::span<std::byte>(srq.srqc)).set(prm::xrc_srqc::lwm, lwm);
  return Outcome::Ok();
}

}  // namespace onchip::sim
