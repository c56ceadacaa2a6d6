// Shared receive queues: CREATE_SRQ, DESTROY_SRQ, QUERY_SRQ, ARM_RQ.
//
// An SRQ is a ring of 2^log_srq_size receive WQEs of 16 << log_rq_stride bytes in host pages
// the driver lists in pas[], each starting with the next-segment that links libmlx5's free list,
// and a doorbell record at dbr_addr whose one big-endian word is the post counter. CREATE_SRQ
// checks these as firmware does: the size within log_max_srq_sz, the stride within
// max_wqe_sz_rq, a PD of the creator's, the page list and the record. An XRC domain or a CQ in
// the context is refused (SRQ_XRC: that SRQ is CREATE_XRC_SRQ's, firmware_xrc_srq.cc), as are WQ
// signatures, the contiguous-SRQ mode and the reserved lkey, none of which this device
// advertises. These commands refuse an XRC SRQ (SRQ_TYPE). The SRQ is held by the QPs receiving from
// it (DESTROY_SRQ is RES_BUSY) and holds its PD.
//
// ARM_RQ (op_mod SRQ) sets the limit watermark: when the number of posted WQEs the data engine
// has not consumed falls below lwm, the SRQ raises its limit event once and the watermark is
// cleared. lwm must be below the ring size. QUERY_SRQ answers the context with the current lwm
// and the page list; wqe_cnt, the device's, reads 0.
#include <cstring>

#include "tools/sim/firmware.h"
#include "tools/sim/srq_queue_checks.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/srq.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {


}  // namespace

Outcome Firmware::CreateSrq(Bytes in, Out out) {
  using In = prm::create_srq_in;
  using Ctx = prm::srqc_bits<In::srq_context_entry.bit_offset>;
  static_assert(sizeof(Srq::srqc) == prm::size_bytes<prm::srqc>);
  if (Outcome s = CheckShape<In, prm::create_srq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  if (prm::Get(in, Ctx::xrcd) || prm::Get(in, Ctx::cqn)) return Refuse(Syndrome::SRQ_XRC);
  if (prm::Get(in, Ctx::wq_signature) || prm::Get(in, Ctx::cont_srq) || prm::Get(in, Ctx::rlky))
    return Refuse(Syndrome::SRQ_UNSUPPORTED);
  SrqRing ring;
  if (Outcome s = CheckSrqRing<Ctx>(in, static_cast<uint32_t>(prm::Get(in, Ctx::log_srq_size)),
                                    config_, kMaxQueueLogPageSize, &ring);
      !s.ok())
    return s;

  const SrqContext context{.uid = uid,
                           .pdn = static_cast<uint32_t>(prm::Get(in, Ctx::pd)),
                           .dbr_addr = prm::Get(in, Ctx::dbr_addr),
                           .pas_offset = In::pas.bit_offset / 8,
                           .srqc = in.subspan(Ctx::bit_offset / 8, sizeof(Srq::srqc))};
  uint32_t srqn = 0;
  if (Outcome s = CreateSrqFromContext(in, context, ring, nullptr, &srqn); !s.ok()) return s;
  prm::Bits(out).set(prm::create_srq_out::srqn, srqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroySrq(Bytes in, Out out) {
  using In = prm::destroy_srq_in;
  if (Outcome s = CheckShape<In, prm::destroy_srq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = srqs_.find(prm::Get(in, In::srqn));
  if (it == srqs_.end()) return Refuse(Syndrome::SRQ_UNKNOWN);
  if (it->second.xrcd) return Refuse(Syndrome::SRQ_TYPE);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (it->second.users != 0) return Refuse(Syndrome::SRQ_BUSY);
  --pds_.at(it->second.pd).queues;
  srq_ids_.Free(it->first);
  srqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QuerySrq(Bytes in, Out out) {
  using In = prm::query_srq_in;
  using O = prm::query_srq_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = srqs_.find(prm::Get(in, In::srqn));
  if (it == srqs_.end()) return Refuse(Syndrome::SRQ_UNKNOWN);
  const Srq& srq = it->second;
  if (srq.xrcd) return Refuse(Syndrome::SRQ_TYPE);
  // uid 0 is the function's own (privileged) context and may look at any SRQ.
  if (uid != 0 && srq.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::srq_context_entry.bit_offset / 8, srq.srqc.data(), srq.srqc.size());
  WriteQueuePages(out, O::pas.bit_offset / 8, srq.pas);
  return Outcome::Ok();
}

Outcome Firmware::ArmRq(Bytes in, Out out) {
  using In = prm::arm_rq_in;
  if (Outcome s = CheckShape<In, prm::arm_rq_out>(in, out); !s.ok()) return s;
  // Only SRQs are receive queues this device has (no RQ objects).
  if (prm::Get(in, In::op_mod) != prm::ARM_RQ_IN_OP_MOD_SRQ) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = srqs_.find(prm::Get(in, In::srq_number));
  if (it == srqs_.end()) return Refuse(Syndrome::SRQ_UNKNOWN);
  Srq& srq = it->second;
  if (srq.xrcd) return Refuse(Syndrome::SRQ_TYPE);
  if (srq.uid != prm::Get(in, In::uid)) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t lwm = prm::Get(in, In::lwm);
  if (lwm >= srq.wqe_count) return Refuse(Syndrome::SRQ_LWM);
  prm::Bits(std::span<std::byte>(srq.srqc)).set(prm::srqc::lwm, lwm);
  return Outcome::Ok();
}

}  // namespace onchip::sim
