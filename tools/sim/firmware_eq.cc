// Event queues: CREATE_EQ, DESTROY_EQ, QUERY_EQ.
//
// An EQ is a ring of 2^log_eq_size 64-byte EQEs in host pages the driver lists in pas[]; the
// data engine writes EQEs there and raises interrupt vector eqc.intr. CREATE_EQ checks the
// context as firmware does (size within log_max_eq_sz, a UAR of the same uid for the EQ
// doorbell, a vector this device models, the page list) and keeps what the engine needs: the
// page list, the page size, the UAR, the event mask and the counters. A CQ names its EQ; the EQ
// refuses to go (RES_BUSY) while one does.
//
// DESTROY_EQ and QUERY_EQ carry no uid of their own in the PRM layout; the uid is the command
// header's (bytes 2-3 of every input, where a user context's commands carry it), so destroy is
// checked for ownership like every other object.
#include <array>
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr std::size_t kEqeBytesLog = 6;  // 64-byte EQEs


}  // namespace

Outcome Firmware::CreateEq(Bytes in, Out out) {
  using In = prm::create_eq_in;
  constexpr auto eqc = In::eq_context_entry;
  if (Outcome s = CheckShape<In, prm::create_eq_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, eqc)) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  if (prm::Get(in, eqc.ec)) return Refuse(Syndrome::EQ_UNSUPPORTED);
  // eqc.st at creation: 0 (the first doorbell arms it), ARMED or ALWAYS_ARMED; FIRED is the
  // device's to set.
  const uint32_t st = prm::Get(in, eqc.st);
  if (prm::Get(in, eqc.status) != 0 || (st != 0 && st != prm::EQ_CQ_STATE_ARMED && st != prm::EQ_STATE_ALWAYS_ARMED))
    return Refuse(Syndrome::EQ_STATE);
  const uint32_t log_size = prm::Get(in, eqc.log_eq_size);
  if (log_size > config_.log_max_eq_sz) return Refuse(Syndrome::EQ_SIZE);
  if (prm::Get(in, eqc.intr) >= config_.num_interrupt_vectors) return Refuse(Syndrome::EQ_INTR);
  const uint32_t log_page_size = prm::Get(in, eqc.log_page_size);
  if (log_page_size > kMaxQueueLogPageSize) return Refuse(Syndrome::EQ_PAGE_SIZE);
  if (prm::Get(in, eqc.page_offset) != 0) return Refuse(Syndrome::EQ_PAGE_OFFSET);

  auto uar = uars_.find(prm::Get(in, eqc.uar_page));
  if (uar == uars_.end()) return Refuse(Syndrome::EQ_UAR_UNKNOWN);
  if (uar->second != uid) return Refuse(Syndrome::NOT_OWNER);

  Eq eq{};
  eq.uid = uid;
  eq.log_page_bytes = 12 + log_page_size;
  if (Outcome s = ReadQueuePages(in, In::pas.bit_offset / 8, log_size + kEqeBytesLog,
                                 eq.log_page_bytes,
                                 {Syndrome::EQ_PAS_COUNT, Syndrome::EQ_PAS_ENTRY,
                                  Syndrome::EQ_PAS_UNMAPPED},
                                 &eq.pas);
      !s.ok())
    return s;

  auto eqn = eq_ids_.Allocate();
  if (!eqn) return Refuse(Syndrome::EQ_EXHAUSTED);
  std::memcpy(eq.eqc.data(), in.data() + eqc.bit_offset / 8, eq.eqc.size());
  for (std::size_t i = 0; i < eq.event_bitmask.size(); ++i)
    eq.event_bitmask[i] = prm::Get(in, In::event_bitmask[i]);
  // The counters live in the table; the context keeps only what the driver chose.
  prm::Bits(std::span<std::byte>(eq.eqc))
      .set(prm::eqc::consumer_counter, 0)
      .set(prm::eqc::producer_counter, 0);
  eqs_.emplace(*eqn, std::move(eq));
  engine_.StartEq(*eqn);
  prm::Bits(out).set(prm::create_eq_out::eq_number, *eqn);
  return Outcome::Ok();
}

Outcome Firmware::DestroyEq(Bytes in, Out out) {
  using In = prm::destroy_eq_in;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, prm::destroy_eq_out>(in, out, &uid); !s.ok())
    return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = eqs_.find(prm::Get(in, In::eq_number));
  if (it == eqs_.end()) return Refuse(Syndrome::EQ_UNKNOWN);
  if (it->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  if (it->second.cqs != 0) return Refuse(Syndrome::EQ_BUSY);
  eq_ids_.Free(it->first);
  eqs_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::QueryEq(Bytes in, Out out) {
  using In = prm::query_eq_in;
  using O = prm::query_eq_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = eqs_.find(prm::Get(in, In::eq_number));
  if (it == eqs_.end()) return Refuse(Syndrome::EQ_UNKNOWN);
  const Eq& eq = it->second;
  // uid 0 is the function's own (privileged) context and may look at any EQ.
  if (uid != 0 && eq.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::eq_context_entry.bit_offset / 8, eq.eqc.data(), eq.eqc.size());
  using Ctx = prm::eqc_bits<O::eq_context_entry.bit_offset>;
  prm::Bits(out)
      .set(Ctx::consumer_counter, engine_.eq(it->first).consumer_counter & 0xffffff)
      .set(Ctx::producer_counter, engine_.eq(it->first).producer_counter & 0xffffff)
      .set(O::event_bitmask, eq.event_bitmask[0]);
  WriteQueuePages(out, O::pas.bit_offset / 8, eq.pas);
  return Outcome::Ok();
}

}  // namespace onchip::sim
