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
// MODIFY_CQ op_mod 0 changes moderation only (cq_period, cq_max_count through
// modify_field_select); the other fields (overrun, EQ remap, period mode) need capabilities this
// device does not advertise.
//
// MODIFY_CQ op_mod 1 resizes (cq_resize): resize_field_select takes log_cq_size, page_offset and
// log_page_size from the context (fields not selected keep their values; cqe_sz is taken as
// given), pas[] lists the new buffer's pages. The CQEs not yet polled (producer counter minus
// the doorbell record's consumer index) must fit the new ring with a slot to spare, as
// ibv_cq.cqe promises, and the old ring must have a free slot: there the device writes a
// RESIZE_CQ CQE at the producer counter, with the old ring's owner bit, and from the next count
// on writes into the new buffer. The driver copies the unpolled CQEs across itself, each one slot
// further on, so that its consumer index passes the resize CQE. Command and data engine hold one
// mutex, so no CQE lands in the old ring after the switch.
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr uint32_t kCqeSz64 = 0;
constexpr uint32_t kCqeSz128 = 1;
constexpr uint32_t kDbrAlignment = 8;
constexpr uint32_t kDbrBytes = 8;  // consumer index word and arm word


}  // namespace

Outcome Firmware::CreateCq(Bytes in, Out out) {
  using In = prm::create_cq_in;
  constexpr auto cqc = In::cq_context;
  if (Outcome s = CheckShape<In, prm::create_cq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, cqc)) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  if (prm::Get(in, In::cq_umem_valid) || prm::Get(in, cqc.dbr_umem_valid) ||
      prm::Get(in, cqc.apu_cq) || prm::Get(in, cqc.cqe_comp_en) ||
      prm::Get(in, cqc.mini_cqe_res_format) || prm::Get(in, cqc.cqe_compression_layout) ||
      prm::Get(in, cqc.oi) || prm::Get(in, cqc.cc) || prm::Get(in, cqc.scqe_break_moderation_en) ||
      prm::Get(in, cqc.cq_period_mode) != 0)
    return Refuse(Syndrome::CQ_UNSUPPORTED);
  // State and counters are the device's: a new CQ is not armed and has produced nothing.
  if (prm::Get(in, cqc.status) || prm::Get(in, cqc.st) || prm::Get(in, cqc.last_notified_index) ||
      prm::Get(in, cqc.last_solicit_index) || prm::Get(in, cqc.consumer_counter) ||
      prm::Get(in, cqc.producer_counter))
    return Refuse(Syndrome::CQ_STATE);
  const uint32_t cqe_sz = prm::Get(in, cqc.cqe_sz);
  if (cqe_sz != kCqeSz64 && cqe_sz != kCqeSz128) return Refuse(Syndrome::CQ_CQE_SIZE);
  const uint32_t log_size = prm::Get(in, cqc.log_cq_size);
  if (log_size > config_.log_max_cq_sz) return Refuse(Syndrome::CQ_SIZE);
  const uint32_t log_page_size = prm::Get(in, cqc.log_page_size);
  if (log_page_size > kMaxQueueLogPageSize) return Refuse(Syndrome::CQ_PAGE_SIZE);
  if (prm::Get(in, cqc.page_offset) != 0) return Refuse(Syndrome::CQ_PAGE_OFFSET);

  auto uar = uars_.find(prm::Get(in, cqc.uar_page));
  if (uar == uars_.end()) return Refuse(Syndrome::CQ_UAR_UNKNOWN);
  if (uar->second != uid) return Refuse(Syndrome::NOT_OWNER);
  const uint32_t eqn = prm::Get(in, cqc.c_eqn_or_apu_element);
  auto eq = eqs_.find(eqn);
  if (eq == eqs_.end()) return Refuse(Syndrome::CQ_EQ_UNKNOWN);
  if (eq->second.uid != uid && eq->second.uid != 0)
    return Refuse(Syndrome::NOT_OWNER);

  const uint64_t dbr = prm::Get(in, cqc.dbr_addr);
  if (dbr % kDbrAlignment != 0) return Refuse(Syndrome::CQ_DBR_ALIGNMENT);
  if (!iommu_.IsMappedFor(uid, dbr, kDbrBytes)) return Refuse(Syndrome::CQ_DBR_UNMAPPED);

  Cq cq{};
  cq.uid = uid;
  cq.eqn = eqn;
  cq.dbr_addr = dbr;
  cq.log_page_bytes = 12 + log_page_size;
  cq.log_size = log_size;
  cq.cqe_bytes = cqe_sz == kCqeSz128 ? 128 : 64;
  const uint32_t log_cqe_bytes = cqe_sz == kCqeSz128 ? 7 : 6;
  if (Outcome s = ReadQueuePages(in, In::pas.bit_offset / 8, log_size + log_cqe_bytes,
                                 cq.log_page_bytes,
                                 {Syndrome::CQ_PAS_COUNT, Syndrome::CQ_PAS_ENTRY,
                                  Syndrome::CQ_PAS_UNMAPPED},
                                 &cq.pas);
      !s.ok())
    return s;

  auto cqn = cq_ids_.Allocate();
  if (!cqn) return Refuse(Syndrome::CQ_EXHAUSTED);
  std::memcpy(cq.cqc.data(), in.data() + cqc.bit_offset / 8, cq.cqc.size());
  ++eq->second.cqs;
  cqs_.emplace(*cqn, std::move(cq));
  engine_.StartCq(*cqn);
  prm::Bits(out).set(prm::create_cq_out::cqn, *cqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyCq(Bytes in, Out out) {
  using In = prm::destroy_cq_in;
  if (Outcome s = CheckShape<In, prm::destroy_cq_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = cqs_.find(prm::Get(in, In::cqn));
  if (it == cqs_.end()) return Refuse(Syndrome::CQ_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (it->second.users != 0) return Refuse(Syndrome::CQ_BUSY);
  --eqs_.at(it->second.eqn).cqs;
  cq_ids_.Free(it->first);
  cqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryCq(Bytes in, Out out) {
  using In = prm::query_cq_in;
  using O = prm::query_cq_out;
  using Ctx = prm::cqc_bits<O::cq_context.bit_offset>;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = cqs_.find(prm::Get(in, In::cqn));
  if (it == cqs_.end()) return Refuse(Syndrome::CQ_UNKNOWN);
  const uint32_t cqn = it->first;
  const Cq& cq = it->second;
  // uid 0 is the function's own (privileged) context and may look at any CQ.
  if (uid != 0 && cq.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  // The engine reads the consumer index when a completion finds the ring full; the query
  // reports the doorbell record's current value.
  if (auto ci = Iommu::Access(iommu_).LoadAcquire32(cq.dbr_addr + prm::MLX5_CQ_SET_CI * 4))
    engine_.NoteCqConsumer(cqn, prm::Be32::FromRaw(*ci).host() & prm::kCqConsumerIndexMask);
  const CqProgress& counters = engine_.cq(cqn);
  std::memcpy(out.data() + O::cq_context.bit_offset / 8, cq.cqc.data(), cq.cqc.size());
  prm::Bits(out)
      .set(Ctx::consumer_counter, counters.consumer_counter & 0xffffff)
      .set(Ctx::producer_counter, counters.producer_counter & 0xffffff);
  WriteQueuePages(out, O::pas.bit_offset / 8, cq.pas);
  return Outcome::Ok();
}

Outcome Firmware::ModifyCq(Bytes in, Out out) {
  using In = prm::modify_cq_in;
  using Ctx = prm::cqc_bits<In::cq_context.bit_offset>;
  if (Outcome s = CheckShape<In, prm::modify_cq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, Ctx{})) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  if (op_mod == prm::CQ_OPMOD_RESIZE && !config_.cq_resize)
    return Refuse(Syndrome::CQ_RESIZE_UNSUPPORTED);
  if (op_mod != prm::CQ_OPMOD_MODIFY && op_mod != prm::CQ_OPMOD_RESIZE)
    return Refuse(Syndrome::BAD_OP_MOD);
  if (prm::Get(in, In::cq_umem_valid)) return Refuse(Syndrome::CQ_UNSUPPORTED);
  auto it = cqs_.find(prm::Get(in, In::cqn));
  if (it == cqs_.end()) return Refuse(Syndrome::CQ_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  const uint32_t select = prm::Get(in, In::modify_field_select_resize_field_select);
  if (op_mod == prm::CQ_OPMOD_RESIZE) return ResizeCq(in, it->first, it->second, select);
  if ((select & ~uint32_t{prm::CQ_MODIFY_PERIOD | prm::CQ_MODIFY_COUNT}) != 0)
    return Refuse(Syndrome::CQ_MODIFY_FIELD);
  // Fields not selected are ignored, as firmware ignores them.
  prm::Bits ctx(std::span<std::byte>(it->second.cqc));
  if (select & prm::CQ_MODIFY_PERIOD) ctx.set(prm::cqc::cq_period, prm::Get(in, Ctx::cq_period));
  if (select & prm::CQ_MODIFY_COUNT)
    ctx.set(prm::cqc::cq_max_count, prm::Get(in, Ctx::cq_max_count));
  return Outcome::Ok();
}

Outcome Firmware::ResizeCq(Bytes in, uint32_t cqn, Cq& cq, uint32_t select) {
  using In = prm::modify_cq_in;
  using Ctx = prm::cqc_bits<In::cq_context.bit_offset>;
  constexpr uint32_t kResizeFields = prm::MLX5_MODIFY_CQ_MASK_LOG_SIZE |
                                     prm::MLX5_MODIFY_CQ_MASK_PG_OFFSET |
                                     prm::MLX5_MODIFY_CQ_MASK_PG_SIZE;
  if ((select & ~kResizeFields) != 0) return Refuse(Syndrome::CQ_MODIFY_FIELD);
  const CqProgress& counters = engine_.cq(cqn);
  if (counters.overflowed) return Refuse(Syndrome::CQ_RESIZE_STATE);
  prm::Bits ctx(std::span<std::byte>(cq.cqc));
  const uint32_t old_log_size = static_cast<uint32_t>(ctx.get(prm::cqc::log_cq_size));
  const uint32_t old_cqe_bytes = ctx.get(prm::cqc::cqe_sz) == kCqeSz128 ? 128 : 64;
  const uint32_t cqe_sz = prm::Get(in, Ctx::cqe_sz);
  if (cqe_sz != kCqeSz64 && cqe_sz != kCqeSz128) return Refuse(Syndrome::CQ_CQE_SIZE);
  const uint32_t log_size = (select & prm::MLX5_MODIFY_CQ_MASK_LOG_SIZE)
                                ? prm::Get(in, Ctx::log_cq_size)
                                : old_log_size;
  if (log_size > config_.log_max_cq_sz) return Refuse(Syndrome::CQ_SIZE);
  const uint32_t log_page_size = (select & prm::MLX5_MODIFY_CQ_MASK_PG_SIZE)
                                     ? prm::Get(in, Ctx::log_page_size)
                                     : static_cast<uint32_t>(ctx.get(prm::cqc::log_page_size));
  if (log_page_size > kMaxQueueLogPageSize) return Refuse(Syndrome::CQ_PAGE_SIZE);
  if ((select & prm::MLX5_MODIFY_CQ_MASK_PG_OFFSET) && prm::Get(in, Ctx::page_offset) != 0)
    return Refuse(Syndrome::CQ_PAGE_OFFSET);
  std::vector<uint64_t> pas;
  const uint32_t log_page_bytes = 12 + log_page_size;
  if (Outcome s = ReadQueuePages(in, In::pas.bit_offset / 8,
                                 log_size + (cqe_sz == kCqeSz128 ? 7 : 6), log_page_bytes,
                                 {Syndrome::CQ_PAS_COUNT, Syndrome::CQ_PAS_ENTRY,
                                  Syndrome::CQ_PAS_UNMAPPED},
                                 &pas);
      !s.ok())
    return s;

  // What software has not polled yet, by the consumer index it last published.
  std::array<std::byte, 4> ci_bytes{};
  if (!iommu_.Read(cq.dbr_addr + prm::MLX5_CQ_SET_CI * 4, ci_bytes))
    return Refuse(Syndrome::CQ_DBR_UNMAPPED);
  uint32_t ci_be;
  std::memcpy(&ci_be, ci_bytes.data(), sizeof ci_be);
  engine_.NoteCqConsumer(cqn, prm::Be32::FromRaw(ci_be).host() & prm::kCqConsumerIndexMask);
  const uint32_t producer = counters.producer_counter;
  const uint32_t outstanding = (producer - counters.consumer_counter) & prm::kCqConsumerIndexMask;
  const uint32_t old_size = uint32_t{1} << old_log_size;
  if (outstanding >= (uint32_t{1} << log_size) || outstanding >= old_size)
    return Refuse(Syndrome::CQ_RESIZE_OUTSTANDING);

  // The resize CQE at the switch point, in the old ring: all but op_own, then op_own.
  const uint64_t old_page = uint64_t{1} << cq.log_page_bytes;
  const uint64_t offset =
      uint64_t{producer & (old_size - 1)} * old_cqe_bytes + (old_cqe_bytes - 64);
  const uint64_t page_index = offset >> cq.log_page_bytes;
  if (page_index >= cq.pas.size()) return Refuse(Syndrome::CQ_PAS_UNMAPPED);
  const uint64_t at = cq.pas[page_index] + (offset & (old_page - 1));
  prm::pod::mlx5_cqe64 resize{};
  resize.op_own = prm::CqeOpOwn(prm::MLX5_CQE_RESIZE_CQ,
                                prm::CqeOwnerFor(producer, old_size));
  std::array<std::byte, sizeof resize> bytes;
  std::memcpy(bytes.data(), &resize, sizeof resize);
  if (!iommu_.IsMapped(at, sizeof resize)) return Refuse(Syndrome::CQ_PAS_UNMAPPED);
  (void)iommu_.Write(at, std::span<const std::byte>(bytes).first(sizeof resize - 1));
  (void)iommu_.Write(at + sizeof resize - 1, std::span<const std::byte>(bytes).last(1));
  engine_.CountResizeCqe(cqn);

  cq.pas = std::move(pas);
  cq.log_page_bytes = log_page_bytes;
  cq.log_size = log_size;
  cq.cqe_bytes = cqe_sz == kCqeSz128 ? 128 : 64;
  ctx.set(prm::cqc::log_cq_size, log_size)
      .set(prm::cqc::log_page_size, log_page_size)
      .set(prm::cqc::page_offset, 0)
      .set(prm::cqc::cqe_sz, cqe_sz);
  return Outcome::Ok();
}

}  // namespace onchip::sim
