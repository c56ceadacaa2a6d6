// The software ConnectX's data engine: it runs the queue pairs, shared receive queues,
// completion queues and event queues the device's context tables hold (tools/sim/contexts.h).
//
// One pass (Pass) does, under the contexts' mutex:
//   - the wire: request packets that reached this device's port (or that it sent itself, which
//     skip the port's lock) are executed by the responder (responder.h), responses
//     complete the requester's WQE (engine_requester.cc);
//   - every QP's send queue: the doorbell record's send counter says how far the driver posted;
//     WQEs up to it are fetched through the IOMMU from the QP's pages and executed in order;
//     RC keeps one message in flight per QP and retries it on RNR NAKs and ACK timeouts;
//   - queues in the error state complete what is posted with WR_FLUSH_ERR;
//   - CQ arm requests (the CQ doorbell record's arm word) and EQ doorbells (engine_completion.cc).
// As on a ConnectX, a UAR doorbell (or BlueFlame store) is what starts send work: the device
// thread, while awake, runs a pass only when its lock-free look (AnythingRung, uar_watch.h)
// finds a UAR register rung, and a sleeping engine is woken by the driver's Kick. The doorbell
// records say how far: a pass runs every WQE up to the send counter, and BlueFlame's copy of a
// WQE is the WQE in the ring. A record written without a doorbell is found by the next pass
// that runs for another reason; nothing runs a pass for it.
//
// Keys (engine_keys.cc): an lkey must name a live, non-free MR of the QP's PD with the local
// rights the use needs; an rkey a live MR or bound window of the responder QP's PD with the
// remote right, a type-2 window bound to that QP; [va, va + len) inside the key. Host MRs are
// reached through their MTT and the IOMMU, device-memory MRs (MEMIC, SW ICM; addressed from 0,
// as verbs registers them zero-based) through the firmware's mkey code (mkey_services.h).
//
// Threading: the device thread calls Pass; other devices' engines Push packets into this one's
// port. A device thread serving several devices lets one's pass hand a packet to another at
// once (ReceiveNow, wire.h): the receiver tries its locks and never waits for them, so a thread
// holding two contexts' mutexes never waits for a thread that waits for it.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "tools/sim/bar.h"
#include "tools/sim/config.h"
#include "tools/sim/contexts_view.h"
#include "tools/sim/device_clock.h"
#include "tools/sim/engine_state.h"
#include "tools/sim/iommu.h"
#include "tools/sim/mkey_services.h"
#include "tools/sim/queue_objects.h"
#include "tools/sim/uar_watch.h"
#include "tools/sim/wire.h"
#include "uapi/prm/cqe_syndrome.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::sim {

class Engine final : private Receiver {
 public:
  // `wake` is what a packet arriving from the wire calls while the engine sleeps (Device::Kick);
  // `born` is the device's time origin (the internal timer counts ns from it).
  // `contexts` is the device's context memory as the engine sees it; `state` is the engine's own
  // per-queue state (engine_state.h), which the firmware starts afresh with each queue; `mkeys`
  // is the firmware's code that executes the UMR WQEs and reaches mkeys' memory for it (the
  // calls made under contexts.mutex()).
  Engine(ContextsView contexts, EngineState& state, MkeyServices mkeys, Iommu& iommu, Bar0& bar,
         const DeviceConfig& config, std::function<void()> wake,
         std::chrono::steady_clock::time_point born);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  struct PassResult {
    bool progressed = false;       // something was executed, completed or changed
    uint64_t next_deadline_ns = 0;  // device time a retry is due (0: none)
  };
  // `now` is the caller's clock reading for this pass (the device thread reads it once per
  // wakeup); rounds that move work read the clock again.
  PassResult Pass(std::chrono::steady_clock::time_point now);
  PassResult Pass() { return Pass(std::chrono::steady_clock::now()); }

  // Leaves the wire: after this no packet reaches this engine (the device does it before it
  // closes what its wake-up writes to).
  void Detach();

  // Told before the device sleeps and after it wakes: a packet from the wire then wakes it.
  void SetSleeping(bool sleeping) { port_.SetSleeping(sleeping); }
  // The device thread that runs this engine's passes (nullptr: none), told under that thread's
  // lock when the device attaches and detaches: a pass of another device on that thread hands
  // this engine its packets at once (wire.h).
  void SetServer(const void* server) { port_.SetServer(server); }
  bool InboundPending() const { return port_.Pending() || !looped_.empty(); }

  // The device thread's look between passes while awake, without a lock (uar_watch.h says why
  // none is needed): whether a UAR doorbell of a live queue was rung since a pass looked (a
  // send doorbell or BlueFlame copy of a page a QP rings, a CQ arm, an EQ doorbell), or a
  // packet waits. What it cannot see, a pass reports in its PassResult: progress (work in
  // flight, a QP just moved to error), or a deadline (retries, moderation, a QP in error whose
  // receive ring may still be posted to), and a packet taken at once between passes asks for
  // one when it left work (wants_pass_). Called by the thread that runs the passes.
  bool AnythingRung() const {
    return uar_watch_.Rung() || InboundPending() || wants_pass_.load(std::memory_order_relaxed);
  }

  // Device time: ns since `born`, the value the init segment's internal timer shows.
  uint64_t NowNs() const { return clock_.NowNs(); }
  uint64_t DeviceNs(std::chrono::steady_clock::time_point t) const { return clock_.Ns(t); }
  // Port 1's GID table (gid_table.h), empty entries all zero.
  const std::vector<Gid>& gids() const { return gids_; }
  bool InfiniBand() const { return config_.port_type == DeviceConfig::PortType::kInfiniBand; }

  // Interrupts: the eventfd an EQ whose eqc.intr is `vector` signals (one count per interrupt),
  // or -1 past num_interrupt_vectors; and how many interrupts were raised.
  int InterruptFd(uint32_t vector) const;
  uint64_t interrupts() const { return interrupts_.load(); }
  // Requests another device's pass handed this engine at once (wire.h), not through its port.
  uint64_t received_at_once() const { return received_at_once_.load(std::memory_order_relaxed); }

 private:
  // Pass's work, under the contexts' mutex and inside the pass's IOMMU window.
  PassResult PassLocked(std::chrono::steady_clock::time_point started);
  // A request from another device's pass on the thread that serves this one (Receiver): handled
  // as a pass that finds only it would, when the locks can be had at once and nothing a pass
  // must do first is pending. What a pass must finish (a QP moved to error, a moderation
  // period) sets wants_pass_.
  bool ReceiveNow(Packet& p) override;
  // The thread running a pass or ReceiveNow of this engine (a thread-local's address), or
  // nullptr: a packet handed over on that thread meanwhile answers what it sent, and joins
  // looped_ (the thread already holds the contexts' mutex).
  std::atomic<const void*> running_on_{nullptr};
  // Set by ReceiveNow when a pass must follow; cleared when one starts.
  std::atomic<bool> wants_pass_{false};
  // How many QPs the engine has moved to error (MoveToError): ReceiveNow's sign of a flush due.
  uint64_t qps_moved_to_error_ = 0;
  std::atomic<uint64_t> received_at_once_{0};

  // ---- queue memory (engine.cc) ----
  // Bytes [offset, offset + out.size()) of a queue whose pages are `pas`.
  // With `page_cache`, a queue page of pointer memory keeps its translation there (a ring the
  // engine reads or writes every message: its WQEs or CQEs).
  bool ReadQueue(const std::vector<uint64_t>& pas, uint32_t log_page_bytes, uint64_t offset,
                 std::span<std::byte> out, Iommu::CachedTranslation* page_cache = nullptr) const;
  // The host pointer of the whole queue page at `bus` (`page` bytes) through `cache`, or nullptr
  // (process memory, no cache, outside a pass, or not wholly mapped: then copy through the IOMMU).
  // Inline: every WQE fetched, gather read and CQE written goes through it.
  [[gnu::always_inline]] std::byte* QueuePage(uint64_t bus, uint64_t page,
                                              Iommu::CachedTranslation* cache) const {
    if (cache == nullptr || pass_access_ == nullptr) return nullptr;
    return pass_access_->Translate(bus, page, *cache);
  }
  // The bus address of [offset, offset + len) of a queue, if the range lies in one page.
  // Inline: every CQE and EQE written asks it.
  [[gnu::always_inline]] std::optional<uint64_t> QueueAddress(const std::vector<uint64_t>& pas,
                                                              uint32_t log_page_bytes,
                                                              uint64_t offset,
                                                              uint64_t len) const {
    const uint64_t page = uint64_t{1} << log_page_bytes;
    const uint64_t index = offset >> log_page_bytes;
    if (index >= pas.size() || (offset & (page - 1)) + len > page) return std::nullopt;
    return pas[index] + (offset & (page - 1));
  }
  std::optional<uint32_t> LoadBe32(uint64_t bus) const;
  // A doorbell-record word the engine reads every pass, its translation kept in `cache`, read
  // inside the pass's IOMMU window.
  [[gnu::always_inline]] std::optional<uint32_t> LoadBe32(uint64_t bus,
                                                          Iommu::CachedTranslation& cache) const {
    if (pass_access_ == nullptr) return LoadBe32(bus);  // outside a pass: nothing remembered
    const auto raw = pass_access_->LoadAcquire32(bus, cache);
    if (!raw) return std::nullopt;
    if constexpr (std::endian::native == std::endian::little) return std::byteswap(*raw);
    return *raw;
  }

  // ---- requester (engine_requester.cc) ----
  // What the requester reads from a QP's context for every message it sends: the primary path
  // and the first PSN (RC, UC), the retry budget and the ACK timeout (RC). Decoded from the
  // context when the pass's lists are built (RefreshQueues), not for every WQE. Only firmware
  // commands write these fields (the QP transitions; the engine writes nothing of the context
  // but qpc.state), and the lists are built again after every command, so a pass always sees
  // the context's values.
  struct RequesterContext {
    uint32_t remote_qpn = 0;
    uint32_t next_send_psn = 0;
    Gid rgid{};  // primary_address_path.rgid_rip, in wire order
    Gid sgid{};  // SourceGid(primary_address_path.src_addr_index)
    L3Header l3 = L3Header::kGrh;  // SourceL3(primary_address_path.src_addr_index)
    uint32_t flow_label = 0;
    uint16_t rlid = 0;
    uint8_t tclass = 0;
    uint8_t hop_limit = 0;
    uint8_t sl = 0;     // InfiniBand only; 0 on RoCE
    bool grh = true;    // always on RoCE; the path's grh bit on InfiniBand
    uint8_t rnr_retry = 0;
    uint8_t retry_count = 0;
    uint64_t ack_timeout_ns = 0;  // AckTimeoutNs(primary_address_path.ack_timeout); 0: none
  };
  RequesterContext DecodeRequesterContext(const Qp& qp) const;
  // Inline: the pass calls it for every QP in every round, and most calls find nothing posted.
  // The requester's steps take the QP's progress (`pr`, EngineState's entry of qpn) from the
  // pass's list, looked up once.
  [[gnu::always_inline]] bool SendStep(uint32_t qpn, const Qp& qp, QpProgress& pr,
                                       const RequesterContext& ctx, uint64_t now,
                                       uint64_t* deadline) {
    if (qp.sq_wqebb_count == 0 || qp.state != prm::QP_STATE_RTS) return false;
    if (pr.awaiting)
      if (const std::optional<bool> done = AwaitResponse(qpn, qp, pr, now, deadline)) return *done;
    auto producer = LoadBe32(qp.dbr_addr + prm::MLX5_SND_DBR * 4, pr.sq_dbr);
    if (!producer || ((*producer ^ pr.sq_wqe_counter) & prm::kWqCounterMask) == 0)
      return false;
    return ExecuteSendWqe(qpn, qp, pr, ctx, now, deadline);
  }
  // SendStep for an RC QP whose WQE waits for its response: false while it may still come (the
  // resend time joins *deadline), true when the retries ran out and the WQE failed, nothing when
  // the WQE is to be sent again.
  std::optional<bool> AwaitResponse(uint32_t qpn, const Qp& qp, QpProgress& pr, uint64_t now,
                                    uint64_t* deadline);
  // SendStep's work once the doorbell record shows a WQE at sq_wqe_counter: the steps below.
  bool ExecuteSendWqe(uint32_t qpn, const Qp& qp, QpProgress& pr, const RequesterContext& ctx,
                      uint64_t now, uint64_t* deadline);
  // Records the WQE's opcode, size and CQ_UPDATE in the QP's progress and checks its ctrl
  // segment (transport, qpn, WQE index): the syndrome it fails with, or 0.
  prm::CqeSyndrome CheckSendWqe(uint32_t qpn, const Qp& qp, QpProgress& pr,
                                std::span<const std::byte> wqe);
  // NOP, UMR and LOCAL_INVAL run on the device: true (the WQE completed) when it was one.
  bool ExecuteLocalWqe(uint32_t qpn, const Qp& qp, QpProgress& pr, std::span<const std::byte> wqe);
  // The request's header from the WQE's segments (XRC, the UD AV or the QP's path, remote
  // address, atomic): the offset of its data segments, or nothing when one is cut short.
  std::optional<std::size_t> BuildRequest(uint32_t qpn, const Qp& qp, const QpProgress& pr,
                                          const RequesterContext& ctx,
                                          std::span<const std::byte> wqe, Packet& p) const;
  // A UD WQE's address vector: destination, Q_Key, source GID and header fields.
  void AddressFromAv(const Qp& qp, const prm::pod::mlx5_wqe_av& av, Packet& p) const;
  // The data segments: the payload gathered through lkeys, or (READ, atomics) the keys checked
  // where the response will land. The syndrome, or 0; records the message's length.
  prm::CqeSyndrome GatherRequest(uint32_t qpn, const Qp& qp, QpProgress& pr,
                                 std::span<const std::byte> wqe, std::size_t offset, Packet& p);
  // Puts the request on the wire: UC and UD complete, RC waits for its response.
  void SendRequest(uint32_t qpn, const Qp& qp, QpProgress& pr, const RequesterContext& ctx,
                   Packet&& p, uint64_t now, uint64_t* deadline);
  // The GID a packet carries as its source for a path's or an AV's GID index. An empty entry,
  // or an index past the table (an AV's 8-bit index), gives the zero GID: the packet goes out,
  // and nothing can answer it, as on a port whose entry holds no address.
  Gid SourceGid(uint64_t index) const;
  // The header a packet sent from GID entry `index` carries (L3Header, wire.h).
  L3Header SourceL3(uint64_t index) const;
  // Whether `gid` is one of this port's own (a packet to it stays on the device).
  bool OwnGid(const Gid& gid) const;
  // Puts a packet on the wire: to this device's own port when it owns the destination GID.
  void Transmit(Packet&& p);
  bool FlushSend(uint32_t qpn, const Qp& qp);
  void HandleResponse(Packet& p);
  // A read or atomic response: its data lands where the WQE's scatter list says.
  void LandResponse(uint32_t qpn, const Qp& qp, const Packet& p);
  // Completes the WQE at sq_wqe_counter: a CQE when signaled (or always for an error), then on
  // to the next WQE. A non-zero syndrome moves the QP to the error state.
  void CompleteSend(uint32_t qpn, const Qp& qp, QpProgress& pr, prm::CqeSyndrome syndrome,
                    uint8_t vendor, uint32_t byte_cnt);

  // ---- responder (responder.h, responder.cc) ----
  // One request through the IBTA responder's stages (a Responder per request).
  class Responder;
  void HandleRequest(Packet& p);
  bool FlushRecv(uint32_t qpn, const Qp& qp);

  // ---- keys and memory (engine_keys.cc) ----
  enum Rights : uint8_t {
    kLocalRead = 1,
    kLocalWrite = 2,
    kRemoteRead = 4,
    kRemoteWrite = 8,
    kRemoteAtomic = 16,
  };
  // A key that admitted one access (Admit): the mkey it names and the one holding the bytes
  // it reaches (a bound window's parent, else the same), looked up once for the check and the
  // copies. Valid while the pass holds the contexts' mutex, which keeps every mkey in place.
  struct AdmittedKey {
    uint32_t key = 0;
    const Mkey* mkey = nullptr;
    const Mkey* target = nullptr;
    // An MTT or device-memory key's mkc.start_addr, and an MTT key's mkc.log_page_size, decoded
    // once by Admit (a window's are not: its bytes go through its parent).
    uint64_t start = 0;
    uint32_t log_page_size = 0;
    bool in_device_memory() const { return target->memic_start || target->sw_icm_id; }
  };
  // `key` if it admits `rights` on [va, va + len) for a QP of `pd` (and, for a type-2 window,
  // number `qpn`), else nullopt. Windows are remote-only.
  std::optional<AdmittedKey> Admit(uint32_t key, uint64_t va, uint64_t len, uint8_t rights,
                                   uint32_t pd, uint32_t qpn) const;
  // The bus address of va through an admitted host key, and its MTT page size. Admit checked
  // the key and the range, and nothing changes an mkey while the pass holds the firmware's
  // mutex, so an MTT key goes straight to its entry; a window through its parent's MTT
  // (MkeyServices::MttTranslateLocked). Inline: every copy through a host key asks it.
  [[gnu::always_inline]] std::optional<uint64_t> KeyBusAddress(const AdmittedKey& k, uint64_t va,
                                                               uint64_t len,
                                                               uint64_t* page_bytes) const {
    if (k.mkey->window) return mkeys_.MttTranslateLocked(*k.mkey, k.key, va, len, page_bytes);
    return MkeyServices::MttLookup(*k.mkey, k.start, k.log_page_size, va, page_bytes);
  }
  // Copies through an admitted key; false if a byte cannot be reached (its mapping is gone).
  bool CopyFromKey(const AdmittedKey& k, uint64_t va, std::span<std::byte> out);
  // Appends `len` bytes read through `k` to `out`, growing it only after every page of the
  // range proved reachable (a key may span far more than the memory mapped behind it: a garbage
  // length must cost no memory). False, with `out` unchanged, if any byte is not.
  // With `page_cache`, a range inside one MTT page of pointer memory keeps that page's
  // translation there (a QP that sends from the same buffer again looks nothing up).
  bool AppendFromKey(const AdmittedKey& k, uint64_t va, uint64_t len, std::vector<std::byte>& out,
                     Iommu::CachedTranslation* page_cache = nullptr);
  bool CopyToKey(const AdmittedKey& k, uint64_t va, std::span<const std::byte> in);
  // Runs an 8-byte atomic at va on a word in host byte order, or big-endian when `big_endian`;
  // the value before it (as a number), or nullopt.
  std::optional<uint64_t> AtomicAtKey(const AdmittedKey& k, uint64_t va, bool compare_swap,
                                      uint64_t swap_add, uint64_t compare, bool big_endian);
  // The device-memory bytes [va, va + len) of a key whose target is MEMIC or SW ICM.
  std::optional<std::span<std::byte>> DeviceBytes(const AdmittedKey& k, uint64_t va, uint64_t len);
  // The responder's byte order for 8-byte atomics: the CUR atomic_req_8B_endianness_mode the
  // driver set (0, the reset value: big-endian; 1: host order).
  bool AtomicsBigEndian() const;
  // SEND_INV: invalidates `rkey` for a QP of `pd` / number `qpn` (a type-2 window bound to it).
  bool RemoteInvalidate(uint32_t rkey, uint32_t pd, uint32_t qpn);

  // ---- completions and events (engine_completion.cc) ----
  struct CqeFields {
    uint8_t opcode = 0;  // prm::CqeOpcode
    uint32_t qpn = 0;
    uint8_t wqe_opcode = 0;
    uint16_t wqe_counter = 0;
    uint32_t byte_cnt = 0;
    uint32_t user_index = 0;
    uint32_t imm = 0;  // raw big-endian bytes, as the WQE carried them
    uint32_t flags_rqpn = 0;
    uint16_t slid = 0;  // the sender's LID (InfiniBand; 0 on RoCE)
    bool solicited = false;
    prm::CqeSyndrome syndrome{};
    uint8_t vendor = 0;
  };
  // Writes one CQE to CQ `cqn` (`cq`, which its QP or SRQ holds: Qp::cq_snd / cq_rcv) and the
  // event its arming asks for. False when the CQ is full (it goes to error and reports a CQ
  // error event) or already in error.
  bool WriteCqe(uint32_t cqn, const Cq& cq, const CqeFields& f);
  bool WriteEqe(uint32_t eqn, uint8_t type, std::span<const std::byte> data, uint8_t sub_type = 0);
  // A PORT_CHANGE event of port 1 (the firmware's pending link change) on every EQ that
  // subscribes to it, as the kernel's async EQ does.
  void PortEvent(uint8_t sub_type);
  // An affiliated event (prm::MLX5_EVENT_TYPE_WQ_*, COMM_EST, the SRQ types) naming a QP (or an
  // SRQ) by number, on the first EQ of the queue's owner (`uid`) that subscribes to `type`, else
  // on the first of the function's own (uid 0) that does: never on another user context's EQ,
  // as the kernel hands an event only to the uverbs file that owns the queue.
  void QpEvent(uint16_t uid, uint32_t number, uint8_t type);
  bool PollArms();
  // An arm request PollArms found for CQ `cqn` (`arm_word` as the doorbell record spells it).
  // Out of line: most passes find none, and their loop stays small.
  [[gnu::noinline]] void ArmCq(uint32_t cqn, const Cq& cq, uint32_t arm_word);
  // An armed CQ's completion that asks for an event: true when moderation lets it fire now.
  bool ModerationDue(const Cq& cq, CqProgress& progress);
  // The completion EQE of an armed CQ; the CQ is no longer armed.
  void FireCompletionEvent(uint32_t cqn, const Cq& cq);
  // CQs whose moderation period ended fire; the earliest period still running, or 0.
  uint64_t PollModeration(uint64_t now, bool* fired);
  // Whether some armed CQ's moderation period may be running (CqProgress::
  // moderation_deadline_ns != 0), so that a pass walks the CQs for it. Only ModerationDue starts
  // a period, and it sets this; PollModeration, which walks every live CQ, sets it to what it
  // found still running. An arm or an event that ends a period, or a CQ destroyed, leaves it
  // true until that walk: one walk too many, never one too few.
  bool moderation_running_ = false;
  // A UAR page's doorbell register at `offset`, or nullptr for a page past the device's UARs (a
  // queue may name one; no driver can ring it).
  template <class Word>
  Word* UarRegister(uint32_t page, uint64_t offset) const;
  // What the device leaves in a doorbell register it has consumed: no driver stores it (an arm
  // word never sets bits 31:30, an EQ doorbell never names EQ 255 with consumer index 0xffffff).
  static constexpr uint64_t kConsumed64 = UarWatch::kConsumed64;
  static constexpr uint32_t kConsumed32 = UarWatch::kConsumed32;
  // A doorbell register, consumed: its value if a driver stored one since the last call. Inline:
  // every pass looks at every register, and most find nothing.
  static std::optional<uint64_t> TakeUarWord64(uint64_t* word) {
    std::atomic_ref<uint64_t> ref(*word);
    // Looked at with a plain load first: a locked exchange would cost every pass the cache line
    // the driver writes its doorbells into.
    if (ref.load(std::memory_order_relaxed) == kConsumed64) return std::nullopt;
    const uint64_t raw = ref.exchange(kConsumed64, std::memory_order_acq_rel);
    if (raw == kConsumed64) return std::nullopt;
    // Two big-endian words as they lie in memory: the first is the high half.
    if constexpr (std::endian::native == std::endian::little) return std::byteswap(raw);
    return raw;
  }
  static std::optional<uint32_t> TakeUarWord32(uint32_t* word) {
    std::atomic_ref<uint32_t> ref(*word);
    if (ref.load(std::memory_order_relaxed) == kConsumed32) return std::nullopt;  // as above
    const uint32_t raw = ref.exchange(kConsumed32, std::memory_order_acq_rel);
    if (raw == kConsumed32) return std::nullopt;
    if constexpr (std::endian::native == std::endian::little) return std::byteswap(raw);
    return raw;
  }
  void SignalVector(uint32_t vector);
  bool PollEqDoorbells();
  // A QP whose work failed enters ERR (ContextsView::QpToError); its request in flight is dropped.
  void MoveToError(uint32_t qpn);

  ContextsView ctx_;
  EngineState& state_;  // what it has consumed, produced and has in flight, per queue
  MkeyServices mkeys_;  // UMR WQEs and mkey memory (firmware_umr.cc, firmware_mkey.cc)
  Iommu& iommu_;
  Bar0& bar_;
  const DeviceConfig config_;
  // The pass reads it through FastNowNs (CQE timestamps, RNR waits, moderation periods).
  DeviceClock clock_;
  const std::vector<Gid> gids_;
  const std::vector<L3Header> l3_;  // per GID entry: SourceL3
  // The distinct GIDs the table holds (RoCE: two, each as v1 and v2; IB: one): what a packet
  // this port sends must name to come back to it.
  const std::vector<Gid> own_gids_;
  Port port_;
  // The IOMMU window Pass holds while it runs (every device access of a pass is inside it).
  const Iommu::Access* pass_access_ = nullptr;
  // The pass's window for a copy through a key; outside a pass, one opened in `own` (a nested
  // Access would be free of locks too, but not of its bookkeeping).
  const Iommu::Access& PassWindow(std::optional<Iommu::Access>& own) const {
    if (pass_access_ != nullptr) return *pass_access_;
    return own.emplace(iommu_);
  }
  std::vector<int> irq_fds_;  // by interrupt vector
  std::atomic<uint64_t> interrupts_{0};
  // What a pass walks, derived from the context tables: the live QPs and CQs in number order
  // as flat lists (walking a std::map costs more than looking at an idle queue), and the doorbell
  // registers of the distinct UAR pages the CQs and the EQs name. Only a firmware command
  // creates, destroys or changes a queue, and a map's entries stay where they are until erased,
  // so the lists are computed again only when the contexts' generation (bumped by every command
  // that succeeded and is not a query) moved since (generation_seen_): at the start of every
  // pass (RefreshQueues), before anything uses them.
  struct LiveQp {
    uint32_t qpn;
    const Qp* qp;
    // Its entry in EngineState, which stays in place until a command creates a queue (and with
    // it the lists are built again).
    QpProgress* progress;
    RequesterContext requester;  // decoded from qp->qpc when the list is built
  };
  struct LiveCq {
    uint32_t cqn;
    const Cq* cq;
  };
  // A UAR page's CQ doorbell register, and its two EQ doorbell registers (pages past the
  // device's UARs are left out: nothing rings them).
  struct CqDoorbell {
    uint32_t page;
    uint64_t* word;
  };
  struct EqDoorbells {
    uint32_t page;
    uint32_t* update_ci;
    uint32_t* arm;
  };
  std::vector<LiveQp> live_qps_;
  std::vector<LiveCq> live_cqs_;
  std::vector<CqDoorbell> cq_doorbells_;
  std::vector<EqDoorbells> eq_doorbells_;
  // Every UAR register above, and the send doorbells (both halves of every bfreg) of each UAR
  // page a live QP with a send queue names: what AnythingRung looks at. A QP does not say
  // which bfreg of its page it rings, so all of them are watched.
  UarWatch uar_watch_;
  // The page offsets of the send doorbell registers: the first 8 bytes of each half of each
  // bfreg (bf_reg_size = 1 << log_bf_reg_size; as many bfregs as fit, at most
  // MLX5_BFREGS_PER_UAR).
  const std::vector<uint64_t> send_doorbell_offsets_;
  std::vector<uint32_t> send_pages_;  // RefreshQueues' scratch: the pages already watched
  uint64_t generation_seen_ = ~uint64_t{0};
  // Builds the lists again; the pass calls it when generation_seen_ is behind the contexts'.
  void RefreshQueues();
  std::vector<Packet> inbound_;  // what the port handed over this round (Port::Take's buffer)
  // Packets this device sent to itself (a QP to another QP of the same port), and responses a
  // device on this thread sent while this pass ran (ReceiveNow), handled as soon as the step
  // that sent them returns. Only the thread running the pass touches them, so they skip the
  // port's lock; `looping_` is the buffer being handled, swapped with `looped_`.
  std::vector<Packet> looped_;
  std::vector<Packet> looping_;
  // The payload buffers of packets already handled, given to the next packets this engine
  // builds, so that a stream of messages stops allocating (at most kSparePayloads are kept,
  // none larger than kSparePayloadBytes).
  static constexpr std::size_t kSparePayloads = 64;
  static constexpr std::size_t kSparePayloadBytes = 64 << 10;
  std::vector<std::vector<std::byte>> spare_payloads_;
  std::vector<std::byte> TakePayloadBuffer();
  void KeepPayloadBuffer(std::vector<std::byte>&& buffer);
};

}  // namespace onchip::sim
