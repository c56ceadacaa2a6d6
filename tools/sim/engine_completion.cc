// Completions and events: CQEs and EQEs in the PRM layouts, CQ and EQ arming, interrupts.
//
// A CQE is written whole but for its op_own byte, which is stored last with release order, so a
// poller that sees the owner bit flip sees the rest. The owner bit is the producer count's pass
// over the ring; a CQE that finds the ring full (producer - the doorbell record's consumer
// index = size) is not written: the CQ enters the overflow state (cqc.status), writes nothing
// more, and a CQ error EQE reports it.
//
// Arming: the driver writes the arm word to the CQ doorbell record and then {arm word, cqn} to
// the CQ doorbell of a UAR page with one 64-bit store. The device consumes that register (it
// leaves a value there no driver writes), so an arm request is seen even when its word equals
// the previous one; a change of the record's arm word counts as a request too, so arm stores of
// two CQs to one UAR register that overwrite each other lose nothing. An armed CQ writes a
// completion EQE to its EQ at the next CQE (the next solicited or error CQE when armed for
// solicited only), at once if CQEs past the arm word's consumer index already exist. Moderation
// (cqc.cq_max_count, cqc.cq_period in microseconds, both 0 by default: none) holds that EQE back
// until cq_max_count such completions arrived or cq_period passed since the first of them,
// whichever comes first; a new arm starts the count and the period again. An EQ
// armed through its UAR doorbell (0x40) signals its interrupt vector's eventfd once and waits
// to be armed again; ALWAYS_ARMED EQs signal every EQE. An EQ doorbell (0x40 arm, 0x48 update
// CI) whose consumer index is ahead of the EQEs written is ignored.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include "tools/sim/engine.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim {

namespace {

using Bytes = std::span<const std::byte>;

// cqc.status values.
constexpr uint32_t kCqStatusOverflow = 0x9;
constexpr uint32_t kCqStatusWriteFail = 0xa;
// The EQE of a CQ error: the syndrome byte (data byte 11).
constexpr uint8_t kCqErrorOverflow = 0x1;
// Half the range of the 24-bit EQ counters: a consumer index less than this far past the
// producer counter is ahead of it, one further is behind it.
constexpr uint32_t kEqCounterHalf = uint32_t{1} << 23;

}  // namespace

void Engine::MoveToError(uint32_t qpn) {
  ++qps_moved_to_error_;
  ctx_.QpToError(qpn);
  QpProgress& pr = state_.qp(qpn);
  pr.awaiting = false;
  pr.retries_loaded = false;
  pr.resend_at_ns = 0;
}

bool Engine::WriteCqe(uint32_t cqn, const Cq& cq, const CqeFields& f) {
  CqProgress& pr = state_.cq(cqn);
  if (pr.overflowed) return false;
  const uint32_t size = uint32_t{1} << cq.log_size;
  const uint32_t cqe_bytes = cq.cqe_bytes;
  // The consumer index only grows, so a ring that is not full by the last reading of it is not
  // full: the doorbell record is read again only when that reading says full (as a NIC keeps
  // the index it last fetched).
  auto full = [&] {
    return ((pr.producer_counter - pr.consumer_counter) & prm::kCqConsumerIndexMask) >= size;
  };
  if (full())
    if (auto ci = LoadBe32(cq.dbr_addr + prm::MLX5_CQ_SET_CI * 4, pr.ci_dbr))
      pr.consumer_counter = *ci & prm::kCqConsumerIndexMask;
  auto fail = [&](uint32_t status) {
    pr.overflowed = true;
    ctx_.SetCqStatus(cqn, status);
    auto data = prm::EqeQueueData(0, cqn);
    data[prm::kEqeCqErrorSyndromeByte] = std::byte{kCqErrorOverflow};
    WriteEqe(cq.eqn, prm::MLX5_EVENT_TYPE_CQ_ERROR, data);
    return false;
  };
  if (full()) return fail(kCqStatusOverflow);

  // Written whole below by the one CQE layout that applies (each is the 64 bytes, zeroed
  // where it sets nothing): no zeroing of its own first.
  std::array<std::byte, 64> bytes;
  static_assert(sizeof(prm::pod::mlx5_err_cqe) == bytes.size() &&
                sizeof(prm::pod::mlx5_cqe64) == bytes.size());
  const bool owner = prm::CqeOwnerFor(pr.producer_counter, size);
  const bool error = f.syndrome != 0;
  uint8_t op_own;
  if (error) {
    prm::pod::mlx5_err_cqe e{};
    e.srqn = prm::Be32::FromHost(f.user_index);
    e.vendor_err_synd = f.vendor;
    e.syndrome = f.syndrome;
    e.s_wqe_opcode_qpn = prm::Be32::FromHost(uint32_t{f.wqe_opcode} << 24 | (f.qpn & 0xffffff));
    e.wqe_counter = prm::Be16::FromHost(f.wqe_counter);
    op_own = prm::CqeOpOwn(static_cast<prm::CqeOpcode>(f.opcode), owner);
    e.op_own = op_own;
    std::memcpy(bytes.data(), &e, sizeof e);
  } else {
    prm::pod::mlx5_cqe64 c{};
    c.srqn = prm::Be32::FromHost(f.user_index);
    c.immediate = prm::Be32::FromRaw(f.imm);
    c.flags_rqpn = prm::Be32::FromHost(f.flags_rqpn);
    c.slid = prm::Be16::FromHost(f.slid);
    c.byte_cnt = prm::Be32::FromHost(f.byte_cnt);
    const uint64_t ts = clock_.FastNowNs();
    c.timestamp_h = prm::Be32::FromHost(static_cast<uint32_t>(ts >> 32));
    c.timestamp_l = prm::Be32::FromHost(static_cast<uint32_t>(ts));
    c.sop_drop_qpn = prm::Be32::FromHost(uint32_t{f.wqe_opcode} << 24 | (f.qpn & 0xffffff));
    c.wqe_counter = prm::Be16::FromHost(f.wqe_counter);
    op_own = prm::CqeOpOwn(static_cast<prm::CqeOpcode>(f.opcode), owner) |
             (f.solicited ? prm::kCqeSolicitedBit : 0);
    c.op_own = op_own;
    std::memcpy(bytes.data(), &c, sizeof c);
  }
  const uint64_t offset = uint64_t{pr.producer_counter & (size - 1)} * cqe_bytes + (cqe_bytes - 64);
  {
    const auto bus = QueueAddress(cq.pas, cq.log_page_bytes, offset, 64);
    bytes[63] = std::byte{op_own};
    if (!bus) return fail(kCqStatusWriteFail);
    const uint64_t page = uint64_t{1} << cq.log_page_bytes;
    if (std::byte* host = QueuePage(*bus & ~(page - 1), page, &pr.ring_page))
      Iommu::StoreHandover(host + (*bus & (page - 1)), bytes);
    else if (!Iommu::Access(iommu_).WriteHandover(*bus, bytes))
      return fail(kCqStatusWriteFail);
  }
  ++pr.producer_counter;

  if (pr.armed && (!pr.solicited_only || f.solicited || error) && ModerationDue(cq, pr))
    FireCompletionEvent(cqn, cq);
  return true;
}

bool Engine::ModerationDue(const Cq& cq, CqProgress& pr) {
  const Bytes cqc(cq.cqc);
  const uint32_t max_count = static_cast<uint32_t>(prm::Get(cqc, prm::cqc::cq_max_count));
  const uint32_t period_us = static_cast<uint32_t>(prm::Get(cqc, prm::cqc::cq_period));
  if (max_count == 0 && period_us == 0) return true;
  ++pr.moderated;
  if (max_count != 0 && pr.moderated >= max_count) return true;
  if (period_us != 0 && pr.moderation_deadline_ns == 0) {
    pr.moderation_deadline_ns = clock_.FastNowNs() + uint64_t{period_us} * 1000;
    moderation_running_ = true;
  }
  return false;
}

void Engine::FireCompletionEvent(uint32_t cqn, const Cq& cq) {
  CqProgress& pr = state_.cq(cqn);
  pr.armed = false;
  pr.moderated = 0;
  pr.moderation_deadline_ns = 0;
  ctx_.SetCqState(cqn, prm::EQ_CQ_STATE_FIRED);
  WriteEqe(cq.eqn, prm::MLX5_EVENT_TYPE_COMP,
           prm::EqeQueueData(prm::kEqeCompletionCqnOffset, cqn));
}

uint64_t Engine::PollModeration(uint64_t now, bool* fired) {
  uint64_t next = 0;
  for (const auto& [cqn, cq] : live_cqs_) {
    const CqProgress& pr = state_.cq(cqn);
    const uint64_t deadline = pr.moderation_deadline_ns;
    if (deadline == 0 || !pr.armed) continue;
    if (deadline <= now) {
      FireCompletionEvent(cqn, *cq);
      *fired = true;
    } else if (next == 0 || deadline < next) {
      next = deadline;
    }
  }
  // The periods still running are the ones the next pass looks at again.
  moderation_running_ = next != 0;
  return next;
}

bool Engine::WriteEqe(uint32_t eqn, uint8_t type, std::span<const std::byte> data, uint8_t sub_type) {
  const Eq* found = ctx_.FindEq(eqn);
  if (found == nullptr) return false;
  const Eq& eq = *found;
  EqProgress& pr = state_.eq(eqn);
  // Events other than completions are delivered only where the EQ's mask asks for them.
  if (type != prm::MLX5_EVENT_TYPE_COMP && !((eq.event_bitmask[type / 64] >> (type % 64)) & 1))
    return false;
  const Bytes eqc(eq.eqc);
  const uint32_t log_size = static_cast<uint32_t>(prm::Get(eqc, prm::eqc::log_eq_size));
  const uint32_t size = uint32_t{1} << log_size;
  // A full EQ loses the event (the driver sized it for its CQs).
  if (((pr.producer_counter - pr.consumer_counter) & 0xffffff) >= size) return false;
  prm::pod::mlx5_eqe e{};
  e.type = type;
  e.sub_type = sub_type;
  std::memcpy(e.data, data.data(), std::min(data.size(), sizeof e.data));
  const uint8_t owner = (pr.producer_counter >> log_size) & 1;
  {
    const auto bus = QueueAddress(eq.pas, eq.log_page_bytes,
                                  uint64_t{pr.producer_counter & (size - 1)} * sizeof e, sizeof e);
    std::array<std::byte, sizeof e> bytes;
    std::memcpy(bytes.data(), &e, sizeof e);
    bytes[sizeof e - 1] = std::byte{owner};
    if (!bus || !Iommu::Access(iommu_).WriteHandover(*bus, bytes)) return false;
  }
  ++pr.producer_counter;
  const uint32_t st = static_cast<uint32_t>(prm::Get(eqc, prm::eqc::st));
  if (st == prm::EQ_CQ_STATE_ARMED || st == prm::EQ_STATE_ALWAYS_ARMED) {
    if (st == prm::EQ_CQ_STATE_ARMED) ctx_.SetEqState(eqn, prm::EQ_CQ_STATE_FIRED);
    SignalVector(static_cast<uint32_t>(prm::Get(eqc, prm::eqc::intr)));
  }
  return true;
}

void Engine::QpEvent(uint16_t uid, uint32_t number, uint8_t type) {
  auto subscriber = [&](uint16_t owner) -> std::optional<uint32_t> {
    for (const auto& [eqn, eq] : ctx_.eqs())
      if (eq.uid == owner && ((eq.event_bitmask[type / 64] >> (type % 64)) & 1)) return eqn;
    return std::nullopt;
  };
  std::optional<uint32_t> eqn = subscriber(uid);
  if (!eqn && uid != 0) eqn = subscriber(0);
  // Queue type byte 0: a QP; its number in the last word.
  if (eqn) WriteEqe(*eqn, type, prm::EqeQueueData(prm::kEqeCompletionCqnOffset, number));
}

void Engine::PortEvent(uint8_t sub_type) {
  std::array<std::byte, prm::kEqeDataBytes> data{};
  data[prm::kEqePortByte] = std::byte{1 << 4};  // port 1
  for (const auto& [eqn, eq] : ctx_.eqs())
    if ((eq.event_bitmask[prm::MLX5_EVENT_TYPE_PORT_CHANGE / 64] >> (prm::MLX5_EVENT_TYPE_PORT_CHANGE % 64)) & 1)
      WriteEqe(eqn, prm::MLX5_EVENT_TYPE_PORT_CHANGE, data, sub_type);
}

void Engine::SignalVector(uint32_t vector) {
  ++interrupts_;
  if (vector >= irq_fds_.size() || irq_fds_[vector] < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(irq_fds_[vector], &one, sizeof one);
}

void Engine::ArmCq(uint32_t cqn, const Cq& cq, uint32_t arm_word) {
  CqProgress& pr = state_.cq(cqn);
  pr.arm_word = arm_word;
  pr.armed = true;
  pr.moderated = 0;
  pr.moderation_deadline_ns = 0;
  pr.solicited_only = prm::CqArmCmd(arm_word) == prm::MLX5_CQ_DB_REQ_NOT_SOL;
  ctx_.SetCqState(cqn, pr.solicited_only ? prm::CQ_STATE_SOLICITED_ARMED : prm::EQ_CQ_STATE_ARMED);
  // Completions the consumer has not reached yet are reason for an event now.
  if (!pr.solicited_only &&
      (pr.producer_counter & prm::kCqConsumerIndexMask) != prm::CqArmCi(arm_word)) {
    pr.armed = false;
    ctx_.SetCqState(cqn, prm::EQ_CQ_STATE_FIRED);
    WriteEqe(cq.eqn, prm::MLX5_EVENT_TYPE_COMP,
             prm::EqeQueueData(prm::kEqeCompletionCqnOffset, cqn));
  }
}

bool Engine::PollArms() {
  bool moved = false;
  bool rung = false;
  for (const auto& [page, register_word] : cq_doorbells_) {
    auto doorbell = TakeUarWord64(register_word);
    if (!doorbell) continue;
    rung = true;
    const uint32_t arm_word = static_cast<uint32_t>(*doorbell >> 32);
    const uint32_t cqn = static_cast<uint32_t>(*doorbell) & 0xffffff;
    const Cq* cq = ctx_.FindCq(cqn);
    if (cq == nullptr || state_.cq(cqn).overflowed ||
        prm::Get(Bytes(cq->cqc), prm::cqc::uar_page) != page)
      continue;
    ArmCq(cqn, *cq, arm_word);
    moved = true;
  }
  // The record's arm word as well: a second arm store into the same UAR register before this
  // pass replaced the first, but each CQ's record still shows its own request. Only after a CQ
  // doorbell: an arm request is a UAR store (software writes the record first), so with none
  // rung since the last pass no record holds a request that pass did not already see.
  if (!rung) return moved;
  for (const auto& [cqn, cq] : live_cqs_) {
    CqProgress& pr = state_.cq(cqn);
    if (pr.overflowed) continue;
    auto word = LoadBe32(cq->dbr_addr + prm::MLX5_CQ_ARM_DB * 4, pr.arm_dbr);
    if (word && *word != pr.arm_word) {
      ArmCq(cqn, *cq, *word);
      moved = true;
    }
  }
  return moved;
}

bool Engine::PollEqDoorbells() {
  bool moved = false;
  // A doorbell an EQ of `page` wrote: the update-CI one, or the arm one.
  auto doorbell = [&](uint32_t page, bool arm, uint32_t word) {
    const uint32_t eqn = word >> 24;
    const Eq* found = ctx_.FindEq(eqn);
    if (found == nullptr) return;
    const Eq& eq = *found;
    const Bytes eqc(eq.eqc);
    if (prm::Get(eqc, prm::eqc::uar_page) != page) return;
    EqProgress& pr = state_.eq(eqn);
    const uint32_t consumer = word & 0xffffff;
    // A consumer index ahead of the producer counter (in the 24-bit counter's wrap-around sense)
    // names EQEs never written: a forged or buggy store. Taken, it would make the EQ look full
    // and lose every later event; it is ignored, arm and all.
    const uint32_t ahead = (consumer - pr.producer_counter) & 0xffffff;
    if (ahead != 0 && ahead < kEqCounterHalf) return;
    moved = true;
    pr.consumer_counter = consumer;
    if (!arm || prm::Get(eqc, prm::eqc::st) == prm::EQ_STATE_ALWAYS_ARMED) return;
    // Armed; EQEs past the new consumer index fire at once.
    const bool fire = (pr.producer_counter & 0xffffff) != pr.consumer_counter;
    ctx_.SetEqState(eqn, fire ? prm::EQ_CQ_STATE_FIRED : prm::EQ_CQ_STATE_ARMED);
    if (fire) SignalVector(static_cast<uint32_t>(prm::Get(eqc, prm::eqc::intr)));
  };
  for (const auto& [page, update_ci, arm_register] : eq_doorbells_) {
    if (auto word = TakeUarWord32(update_ci)) doorbell(page, false, *word);
    if (auto word = TakeUarWord32(arm_register)) doorbell(page, true, *word);
  }
  return moved;
}

}  // namespace onchip::sim
