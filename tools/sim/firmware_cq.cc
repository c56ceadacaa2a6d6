// Completion queues: CREATE_CQ, DESTROY_CQ, QUERY_CQ, MODIFY_CQ.
//
// A CQ is a ring of 2^log_cq_size CQEs of 64 or 128 bytes in host pages the driver lists in
// pas[], a doorbell record (consumer index and arm words) at dbr_addr, a UAR for the arm
// doorbell and the EQ its completion events go to. CREATE_CQ checks all of these as firmware
// does and refuses the features this device does not advertise (CQE compression, APU CQs, UMEM
// buffers, overrun ignore, collapsed CQs, break-moderation, period mode from CQE). The data
// engine keeps the producer and consumer counters in the table; QUERY_CQ reports them.
//
// The EQ must belong to the CQ's uid or to uid 0: a user context's CQs report to the EQs the
// kernel (uid 0) created, as on a real function. A CQ holds its EQ (DESTROY_EQ is RES_BUSY) and
// is held by the QPs and SRQs naming it (Cq::users).
//
// MODIFY_CQ changes moderation only (cq_period, cq_max_count through modify_field_select); the
// other fields (overrun, EQ remap, period mode) need capabilities this device does not
// advertise, and resize (op_mod 1) needs cq_resize, which is 0.
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

using prm::CommandStatus;
using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr uint32_t kCqeSz64 = 0;
constexpr uint32_t kCqeSz128 = 1;
constexpr uint32_t kDbrAlignment = 8;
constexpr uint32_t kDbrBytes = 8;  // consumer index word and arm word

Outcome Bad(Syndrome s) { return Refuse(CommandStatus::BAD_PARAM_ERR, s); }

}  // namespace

Outcome Firmware::CreateCq(Bytes in, Out out) {
  using In = prm::create_cq_in;
  constexpr auto cqc = In::cq_context;
  if (Outcome s = CheckShape<In, prm::create_cq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, cqc)) return Bad(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Bad(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  if (prm::Get(in, In::cq_umem_valid) || prm::Get(in, cqc.dbr_umem_valid) ||
      prm::Get(in, cqc.apu_cq) || prm::Get(in, cqc.cqe_comp_en) ||
      prm::Get(in, cqc.mini_cqe_res_format) || prm::Get(in, cqc.cqe_compression_layout) ||
      prm::Get(in, cqc.oi) || prm::Get(in, cqc.cc) || prm::Get(in, cqc.scqe_break_moderation_en) ||
      prm::Get(in, cqc.cq_period_mode) != 0)
    return Bad(Syndrome::CQ_UNSUPPORTED);
  // State and counters are the device's: a new CQ is not armed and has produced nothing.
  if (prm::Get(in, cqc.status) || prm::Get(in, cqc.st) || prm::Get(in, cqc.last_notified_index) ||
      prm::Get(in, cqc.last_solicit_index) || prm::Get(in, cqc.consumer_counter) ||
      prm::Get(in, cqc.producer_counter))
    return Bad(Syndrome::CQ_STATE);
  const uint32_t cqe_sz = prm::Get(in, cqc.cqe_sz);
  if (cqe_sz != kCqeSz64 && cqe_sz != kCqeSz128) return Bad(Syndrome::CQ_CQE_SIZE);
  const uint32_t log_size = prm::Get(in, cqc.log_cq_size);
  if (log_size > config_.log_max_cq_sz) return Bad(Syndrome::CQ_SIZE);
  const uint32_t log_page_size = prm::Get(in, cqc.log_page_size);
  if (log_page_size > kMaxQueueLogPageSize) return Bad(Syndrome::CQ_PAGE_SIZE);
  if (prm::Get(in, cqc.page_offset) != 0) return Bad(Syndrome::CQ_PAGE_OFFSET);

  auto uar = uars_.find(prm::Get(in, cqc.uar_page));
  if (uar == uars_.end()) return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::CQ_UAR_UNKNOWN);
  if (uar->second != uid) return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER);
  const uint32_t eqn = prm::Get(in, cqc.c_eqn_or_apu_element);
  auto eq = eqs_.find(eqn);
  if (eq == eqs_.end()) return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::CQ_EQ_UNKNOWN);
  if (eq->second.uid != uid && eq->second.uid != 0)
    return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER);

  const uint64_t dbr = prm::Get(in, cqc.dbr_addr);
  if (dbr % kDbrAlignment != 0) return Bad(Syndrome::CQ_DBR_ALIGNMENT);
  if (!iommu_.IsMapped(dbr, kDbrBytes)) return Bad(Syndrome::CQ_DBR_UNMAPPED);

  Cq cq{};
  cq.uid = uid;
  cq.eqn = eqn;
  cq.dbr_addr = dbr;
  cq.log_page_bytes = 12 + log_page_size;
  const uint32_t log_cqe_bytes = cqe_sz == kCqeSz128 ? 7 : 6;
  if (Outcome s = ReadQueuePages(in, In::pas.bit_offset / 8, log_size + log_cqe_bytes,
                                 cq.log_page_bytes,
                                 {Syndrome::CQ_PAS_COUNT, Syndrome::CQ_PAS_ENTRY,
                                  Syndrome::CQ_PAS_UNMAPPED},
                                 &cq.pas);
      !s.ok())
    return s;

  auto cqn = cq_ids_.Allocate();
  if (!cqn) return Refuse(CommandStatus::NO_RES_ERR, Syndrome::CQ_EXHAUSTED);
  std::memcpy(cq.cqc.data(), in.data() + cqc.bit_offset / 8, cq.cqc.size());
  ++eq->second.cqs;
  cqs_.emplace(*cqn, std::move(cq));
  prm::Bits(out).set(prm::create_cq_out::cqn, *cqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyCq(Bytes in, Out out) {
  using In = prm::destroy_cq_in;
  if (Outcome s = CheckShape<In, prm::destroy_cq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Bad(Syndrome::BAD_OP_MOD);
  auto it = cqs_.find(prm::Get(in, In::cqn));
  if (it == cqs_.end()) return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::CQ_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER);
  if (it->second.users != 0) return Refuse(CommandStatus::RES_BUSY, Syndrome::CQ_BUSY);
  --eqs_.at(it->second.eqn).cqs;
  cq_ids_.Free(it->first);
  cqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryCq(Bytes in, Out out) {
  using In = prm::query_cq_in;
  using O = prm::query_cq_out;
  using Ctx = prm::cqc_bits<O::cq_context.bit_offset>;
  if (Outcome s = CheckShape<In, O>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Bad(Syndrome::BAD_OP_MOD);
  auto it = cqs_.find(prm::Get(in, In::cqn));
  if (it == cqs_.end()) return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::CQ_UNKNOWN);
  const Cq& cq = it->second;
  std::memcpy(out.data() + O::cq_context.bit_offset / 8, cq.cqc.data(), cq.cqc.size());
  prm::Bits(out)
      .set(Ctx::consumer_counter, cq.consumer_counter & 0xffffff)
      .set(Ctx::producer_counter, cq.producer_counter & 0xffffff);
  WriteQueuePages(out, O::pas.bit_offset / 8, cq.pas);
  return Outcome::Ok();
}

Outcome Firmware::ModifyCq(Bytes in, Out out) {
  using In = prm::modify_cq_in;
  using Ctx = prm::cqc_bits<In::cq_context.bit_offset>;
  if (Outcome s = CheckShape<In, prm::modify_cq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Bad(Syndrome::RESERVED_NOT_ZERO);
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  if (op_mod == prm::CQ_OPMOD_RESIZE) return Bad(Syndrome::CQ_RESIZE_UNSUPPORTED);
  if (op_mod != prm::CQ_OPMOD_MODIFY) return Bad(Syndrome::BAD_OP_MOD);
  if (prm::Get(in, In::cq_umem_valid)) return Bad(Syndrome::CQ_UNSUPPORTED);
  auto it = cqs_.find(prm::Get(in, In::cqn));
  if (it == cqs_.end()) return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::CQ_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER);
  const uint32_t select = prm::Get(in, In::modify_field_select_resize_field_select);
  if ((select & ~uint32_t{prm::CQ_MODIFY_PERIOD | prm::CQ_MODIFY_COUNT}) != 0)
    return Bad(Syndrome::CQ_MODIFY_FIELD);
  // Fields not selected are ignored, as firmware ignores them.
  prm::Bits ctx(std::span<std::byte>(it->second.cqc));
  if (select & prm::CQ_MODIFY_PERIOD) ctx.set(prm::cqc::cq_period, prm::Get(in, Ctx::cq_period));
  if (select & prm::CQ_MODIFY_COUNT)
    ctx.set(prm::cqc::cq_max_count, prm::Get(in, Ctx::cq_max_count));
  return Outcome::Ok();
}

}  // namespace onchip::sim
