// The engine's pass: the wire, then every queue pair in turn, until nothing moves; and the
// queue-memory accessors the other engine files share.
#include "tools/sim/engine.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <utility>

#include <sys/eventfd.h>
#include <unistd.h>

#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim {

namespace {

// A token unique to the calling thread (the address of a thread-local).
const void* ThisThread() {
  static thread_local const char tag = 0;
  return &tag;
}

// Rounds of (wire, queues) one pass runs at most, and WQEs one QP runs in its turn of a round
// before the next QP has its own: the device thread still serves commands while traffic never
// stops (a pass runs at most 256 WQEs of each QP).
constexpr int kMaxRounds = 32;
constexpr int kWqesPerTurn = 8;

using Bytes = std::span<const std::byte>;

// A QP's own receive ring in the error state still completes, with WR_FLUSH_ERR, what software
// posts to it. A receive post writes only the doorbell record (no UAR doorbell: the responder
// reads the record when a packet arrives), which the lock-free look between passes cannot see,
// so while such a QP exists the pass asks to run again this much later (asleep, the thread then
// wakes at that deadline instead of every idle_poll_period).
constexpr uint64_t kErrorReceiveLookNs = 100'000;

// The page offsets of the send doorbells: both halves of every bfreg that fits the page.
std::vector<uint64_t> SendDoorbellOffsets(const DeviceConfig& config) {
  const uint32_t bf_reg_size = uint32_t{1} << config.log_bf_reg_size;
  std::vector<uint64_t> offsets;
  for (uint32_t k = 0; k < prm::MLX5_BFREGS_PER_UAR && prm::BfregsFit(k + 1, bf_reg_size); ++k)
    for (uint32_t half = 0; half < 2; ++half)
      offsets.push_back(prm::BfregOffset(k, bf_reg_size) + half * prm::BfregHalfBytes(bf_reg_size));
  return offsets;
}

// Whether `list` already holds an entry of UAR page `page`.
template <class List>
bool HasPage(const List& list, uint32_t page) {
  return std::any_of(list.begin(), list.end(), [page](const auto& e) { return e.page == page; });
}

}  // namespace

Engine::Engine(ContextsView contexts, EngineState& state, MkeyServices mkeys, Iommu& iommu,
               Bar0& bar, const DeviceConfig& config, std::function<void()> wake,
               std::chrono::steady_clock::time_point born)
    : ctx_(contexts),
      state_(state),
      mkeys_(mkeys),
      iommu_(iommu),
      bar_(bar),
      config_(config),
      clock_(born),
      gids_(DeviceGids(config)),
      l3_([&] {
        std::vector<L3Header> l3;
        for (const GidEntry& e : GidTable(config))
          l3.push_back(e.type != GidType::kRoceV2 ? L3Header::kGrh
                       : IsIpv4Mapped(e.gid)      ? L3Header::kIpv4
                                                  : L3Header::kIpv6);
        return l3;
      }()),
      own_gids_([&] {
        std::vector<Gid> own;
        for (const Gid& g : gids_)
          if (!IsZero(g) && std::find(own.begin(), own.end(), g) == own.end()) own.push_back(g);
        return own;
      }()),
      port_(std::move(wake), *this),
      send_doorbell_offsets_(SendDoorbellOffsets(config)) {
  // Every doorbell register starts consumed: a look finds nothing rung until software rings.
  for (uint32_t i = 0; i < config_.num_uars; ++i) {
    const uint32_t page = config_.first_uar_index + i;
    TakeUarWord64(UarRegister<uint64_t>(page, prm::MLX5_CQ_DOORBELL));
    TakeUarWord32(UarRegister<uint32_t>(page, prm::kEqDoorbellArm));
    TakeUarWord32(UarRegister<uint32_t>(page, prm::kEqDoorbellUpdateCi));
    for (uint64_t offset : send_doorbell_offsets_) TakeUarWord64(UarRegister<uint64_t>(page, offset));
  }
  for (uint32_t v = 0; v < config_.num_interrupt_vectors; ++v)
    irq_fds_.push_back(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  Fabric::Instance().Attach(&port_, gids_, config_.lid);
}

void Engine::Detach() { Fabric::Instance().Detach(&port_); }

Engine::~Engine() {
  Detach();
  for (int fd : irq_fds_)
    if (fd >= 0) close(fd);
}

int Engine::InterruptFd(uint32_t vector) const {
  return vector < irq_fds_.size() ? irq_fds_[vector] : -1;
}

template <class Word>
Word* Engine::UarRegister(uint32_t page, uint64_t offset) const {
  if (page < config_.first_uar_index || page - config_.first_uar_index >= config_.num_uars)
    return nullptr;
  return reinterpret_cast<Word*>(bar_.base() + prm::UarPageOffset(page) + offset);
}

Engine::PassResult Engine::Pass(std::chrono::steady_clock::time_point started) {
  std::lock_guard lock(ctx_.mutex());
  // One IOMMU window for the pass: every queue, doorbell record and buffer access runs inside it
  // and takes no lock of its own (an unmap waits for the pass to end).
  const Iommu::Access access(iommu_);
  pass_access_ = &access;
  running_on_.store(ThisThread(), std::memory_order_relaxed);
  const PassResult result = PassLocked(started);
  running_on_.store(nullptr, std::memory_order_relaxed);
  pass_access_ = nullptr;
  return result;
}

bool Engine::ReceiveNow(Packet& p) {
  // This engine's pass is up this thread's stack: the packet answers what the pass just sent,
  // and it joins the packets the pass handles as soon as the step that sent them returns, as
  // this device's own loopback packets do (no lock: only this thread touches the list now).
  if (running_on_.load(std::memory_order_relaxed) == ThisThread()) {
    looped_.push_back(std::move(p));
    return true;
  }
  // Otherwise requests only: a response arrives at once only when its request had waited in a
  // queue, and it may free the requester's next WQE, which only a pass sends. Packets already
  // queued keep their order: this one queues behind them.
  if (p.kind != PacketKind::kRequest || port_.Pending()) return false;
  std::unique_lock lock(ctx_.mutex(), std::try_to_lock);
  if (!lock.owns_lock()) return false;
  // What a pass does before it handles packets is left to a pass: the lists after a command, a
  // port event; and a port that is down, or an HCA without queues, receives nothing.
  if (ctx_.state() != HcaState::kInitialized || !ctx_.link_up() || ctx_.port_change_pending() ||
      ctx_.generation() != generation_seen_)
    return false;
  const Iommu::Access access(iommu_, std::try_to_lock);
  if (!access.held()) return false;
  pass_access_ = &access;
  running_on_.store(ThisThread(), std::memory_order_relaxed);
  // The arms and EQ doorbells rung before the packet arrived count before it, as in a pass.
  PollArms();
  PollEqDoorbells();
  const uint64_t errors = qps_moved_to_error_;
  HandleRequest(p);
  KeepPayloadBuffer(std::move(p.payload));
  // Only the serving thread counts: a load and a store, no locked increment.
  received_at_once_.store(received_at_once_.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
  // What only a pass finishes: a refused request moved the QP to error (its receive ring
  // flushes), or a CQE started a moderation period. The response went out at once.
  if (qps_moved_to_error_ != errors || moderation_running_ || !looped_.empty())
    wants_pass_.store(true, std::memory_order_relaxed);
  running_on_.store(nullptr, std::memory_order_relaxed);
  pass_access_ = nullptr;
  return true;
}

Engine::PassResult Engine::PassLocked(std::chrono::steady_clock::time_point started) {
  PassResult result;
  wants_pass_.store(false, std::memory_order_relaxed);
  if (ctx_.state() != HcaState::kInitialized) {
    // No queues exist: whatever arrives finds no QP.
    if (port_.Pending()) port_.Take(inbound_);
    looped_.clear();
    // Nothing is watched either (the lists are built again once the HCA is initialized).
    if (uar_watch_.size() != 0) {
      uar_watch_.Clear();
      generation_seen_ = ~uint64_t{0};
    }
    return result;
  }
  // Most passes follow no command: the lists stand, and the call is not made.
  if (ctx_.generation() != generation_seen_) RefreshQueues();
  // The send doorbells are noted before any doorbell record is read (uar_watch.h): a doorbell
  // rung from here on differs from what was noted and makes the next look run another pass.
  uar_watch_.NoteSend();
  if (ctx_.port_change_pending()) {
    PortEvent(ctx_.TakePortChange());
    result.progressed = true;
  }
  result.progressed |= PollArms();
  result.progressed |= PollEqDoorbells();
  // One clock reading serves every round: it ends RNR waits and ACK timeouts and starts ACK
  // timeouts (10 ms at least, where a pass lasts microseconds). RNR waits, which may be 10 us,
  // and CQE timestamps read the clock when they happen.
  const uint64_t now = DeviceNs(started);
  for (int round = 0; round < kMaxRounds; ++round) {
    bool moved = false;
    // Whether a queue stopped with work left (its turn's budget, or a flush): another round.
    bool unfinished = false;
    auto handle = [&](std::vector<Packet>& packets) {
      for (Packet& p : packets) {
        if (p.kind == PacketKind::kRequest)
          HandleRequest(p);
        else
          HandleResponse(p);
        KeepPayloadBuffer(std::move(p.payload));
      }
      moved |= !packets.empty();
    };
    // A packet the device sends to itself crosses no wire: it arrives at once, and so does what
    // it answers (a request's response; a response answers nothing, so this ends). So does the
    // answer of a device on this thread that took this pass's request at once (wire.h: it joins
    // the loopback list), and whatever else reached the port. A port whose link is down
    // receives nothing.
    // The port is emptied once per call: a peer that never stops sending does not hold a turn.
    auto arrive = [&] {
      bool port_taken = false;
      for (;;) {
        if (!looped_.empty()) {
          std::swap(looped_, looping_);
          if (ctx_.link_up()) handle(looping_);
          looping_.clear();
        } else if (!port_taken && port_.Pending()) {
          port_taken = true;
          port_.Take(inbound_);
          if (ctx_.link_up()) handle(inbound_);
        } else {
          return;
        }
      }
    };
    arrive();
    uint64_t deadline = 0;
    for (const auto& [qpn, qp, progress, requester] : live_qps_) {
      if (qp->state == prm::QP_STATE_ERR) {
        const bool flushed = FlushSend(qpn, *qp) | FlushRecv(qpn, *qp);
        moved |= flushed;
        unfinished |= flushed;
        // Receives posted to it later ring nothing: look at its record again soon.
        if (!qp->srqn && qp->rq_wqe_count != 0 && (deadline == 0 || now + kErrorReceiveLookNs < deadline))
          deadline = now + kErrorReceiveLookNs;
        // A QP in error takes no more receive WQEs from its SRQ: the PRM's last-WQE-reached
        // event tells software it may now destroy the QP without losing an SRQ WQE.
        if (qp->srqn && !progress->last_wqe_reached) {
          progress->last_wqe_reached = true;
          QpEvent(qp->uid, qpn, prm::MLX5_EVENT_TYPE_SRQ_LAST_WQE);
          moved = true;
        }
        continue;
      }
      // The QP's turn: its WQEs one after another, each one's looped packets (and their
      // answers) before the next, until it has nothing to send or waits for a response.
      for (int sent = 0; SendStep(qpn, *qp, *progress, requester, now, &deadline);) {
        moved = true;
        arrive();
        if (++sent == kWqesPerTurn) {
          unfinished = true;
          break;
        }
      }
    }
    result.next_deadline_ns = deadline;
    if (!moved) break;
    result.progressed = true;
    // Every QP has had its turn after this round's packets: unless one stopped with work left or
    // a packet waits, another round would find what this one found (a WQE posted meanwhile
    // rings its doorbell, which makes the next look run another pass).
    if (!unfinished && !port_.Pending()) break;
  }
  // Moderated completion events whose period ended; the thread wakes for the next one. Only
  // while some period runs: most passes have none, and need neither the walk nor the clock.
  if (moderation_running_) {
    bool fired = false;
    const uint64_t moderation =
        PollModeration(result.progressed ? clock_.FastNowNs() : now, &fired);
    result.progressed |= fired;
    if (moderation != 0 && (result.next_deadline_ns == 0 || moderation < result.next_deadline_ns))
      result.next_deadline_ns = moderation;
  }
  return result;
}

void Engine::RefreshQueues() {
  generation_seen_ = ctx_.generation();
  live_qps_.clear();
  for (const auto& [qpn, qp] : ctx_.qps())
    live_qps_.push_back({qpn, &qp, &state_.qp(qpn), DecodeRequesterContext(qp)});
  live_cqs_.clear();
  for (const auto& [cqn, cq] : ctx_.cqs()) live_cqs_.push_back({cqn, &cq});
  // Each distinct UAR page once (the lists keep their capacity: a pass allocates nothing once
  // the tables stop growing).
  cq_doorbells_.clear();
  for (const auto& [cqn, cq] : ctx_.cqs()) {
    const auto page = static_cast<uint32_t>(prm::Get(Bytes(cq.cqc), prm::cqc::uar_page));
    if (HasPage(cq_doorbells_, page)) continue;
    if (auto* word = UarRegister<uint64_t>(page, prm::MLX5_CQ_DOORBELL))
      cq_doorbells_.push_back({page, word});
  }
  eq_doorbells_.clear();
  for (const auto& [eqn, eq] : ctx_.eqs()) {
    const auto page = static_cast<uint32_t>(prm::Get(Bytes(eq.eqc), prm::eqc::uar_page));
    if (HasPage(eq_doorbells_, page)) continue;
    if (auto* update_ci = UarRegister<uint32_t>(page, prm::kEqDoorbellUpdateCi))
      eq_doorbells_.push_back({page, update_ci, UarRegister<uint32_t>(page, prm::kEqDoorbellArm)});
  }
  // The watch: the registers above, and the send doorbells of each page a QP rings.
  uar_watch_.Clear();
  for (const CqDoorbell& d : cq_doorbells_) uar_watch_.Add(d.word);
  for (const EqDoorbells& d : eq_doorbells_) {
    uar_watch_.Add(d.update_ci);
    uar_watch_.Add(d.arm);
  }
  send_pages_.clear();
  for (const LiveQp& live : live_qps_) {
    const Qp* qp = live.qp;
    if (qp->sq_wqebb_count == 0 || UarRegister<uint64_t>(qp->uar_page, 0) == nullptr ||
        std::find(send_pages_.begin(), send_pages_.end(), qp->uar_page) != send_pages_.end())
      continue;
    send_pages_.push_back(qp->uar_page);
    for (uint64_t offset : send_doorbell_offsets_)
      uar_watch_.AddSend(UarRegister<uint64_t>(qp->uar_page, offset));
  }
  // A command may have reset a QP's WQE counter: its next doorbell may repeat the last one.
  uar_watch_.ConsumeSend();
}

std::vector<std::byte> Engine::TakePayloadBuffer() {
  if (spare_payloads_.empty()) return {};
  std::vector<std::byte> buffer = std::move(spare_payloads_.back());
  spare_payloads_.pop_back();
  return buffer;
}

void Engine::KeepPayloadBuffer(std::vector<std::byte>&& buffer) {
  if (buffer.capacity() == 0 || buffer.capacity() > kSparePayloadBytes ||
      spare_payloads_.size() == kSparePayloads)
    return;
  buffer.clear();
  spare_payloads_.push_back(std::move(buffer));
}

bool Engine::ReadQueue(const std::vector<uint64_t>& pas, uint32_t log_page_bytes, uint64_t offset,
                       std::span<std::byte> out, Iommu::CachedTranslation* page_cache) const {
  const uint64_t page = uint64_t{1} << log_page_bytes;
  uint64_t done = 0;
  while (done < out.size()) {
    const uint64_t at = offset + done;
    const uint64_t index = at >> log_page_bytes;
    if (index >= pas.size()) return false;
    const uint64_t in_page = at & (page - 1);
    const uint64_t n = std::min<uint64_t>(out.size() - done, page - in_page);
    if (const std::byte* host = QueuePage(pas[index], page, page_cache)) {
      std::memcpy(out.data() + done, host + in_page, n);
    } else if (!iommu_.Read(pas[index] + in_page, out.subspan(done, n))) {
      return false;
    }
    done += n;
  }
  return true;
}

std::optional<uint32_t> Engine::LoadBe32(uint64_t bus) const {
  const auto raw = Iommu::Access(iommu_).LoadAcquire32(bus);
  if (!raw) return std::nullopt;
  if constexpr (std::endian::native == std::endian::little) return std::byteswap(*raw);
  return *raw;
}

}  // namespace onchip::sim
