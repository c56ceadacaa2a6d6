// The data engine's cost per small operation, without a device thread: one software ConnectX's
// firmware and engine built directly (as the engine fuzz harness does), two RC QPs connected to
// each other through the device's own GID, and the benchmark thread playing both the driver and
// the device thread. Each iteration writes one signaled 8-byte RDMA WRITE WQE (an SGE on a host
// MR) into QP A's ring, moves its send doorbell record, and runs engine passes until the CQE is
// on A's CQ: the requester's WQE, the packet to the responder, the bytes written, the ACK back
// and the CQE. No thread hand-off is inside, so wall-clock time and an instruction count
// (callgrind) both measure the engine alone.
//
// Rows: EngineRdmaWrite/dm/8 (the remote buffer is a MEMIC MR, zero-based) and
// EngineRdmaWrite/host/8 (a host MR); passes_per_op counts engine passes.
// EngineRdmaWrite/between_queued/8 and /between_at_once/8 are the MEMIC row between two devices
// whose passes one thread runs, as a device daemon's functions: with every packet waiting for its
// receiver's pass (three passes per WRITE), and with the request taken at once inside the sender's
// pass (one; wire.h). EngineIdlePass is one pass that finds nothing rung (callgrind: Engine::Pass
// over its calls); DeviceIdleCheck is the lock-free look the awake device thread runs instead of it
// (callgrind: IdleCheck over its calls); DeviceAwakeLoop is the awake thread's whole loop in ns
// with nothing to do; DeviceClock/steady and DeviceClock/fast are one reading of the device clock
// each way (a CQE's timestamp takes the fast one). The names stay out of the report's wire table
// (tools/cli/report.py), which is the wire suite's, with its device thread and driver.
//   bazel run -c opt //bench/sim:engine_bench
//   valgrind --tool=callgrind engine_bench --benchmark_filter=host --benchmark_min_time=0.05
//   then Engine::Pass's inclusive count over the number of HandleRequest calls (the iterations
//   of every run Google Benchmark made).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tools/sim/bar.h"
#include "tools/sim/config.h"
#include "tools/sim/device.h"
#include "tools/sim/device_clock.h"
#include "tools/sim/engine.h"
#include "tools/sim/firmware.h"
#include "tools/sim/fuzz/direct_bring_up.h"
#include "tools/sim/iommu.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim {
namespace {

// Where things sit in the DMA arena (IOVA kArenaIova + offset).
constexpr uint64_t kArenaIova = 0x100000;
constexpr std::size_t kArenaBytes = 256 << 10;
constexpr uint64_t kEq = 0x0000;    // 128 EQEs, 2 pages
constexpr uint64_t kCq = 0x2000;    // CQ i at + i * 0x1000: 64 CQEs
constexpr uint64_t kQp = 0x4000;    // QP i at + i * 0x1000: RQ 16 x 64 B, then SQ 16 blocks
constexpr uint64_t kSqOffset = 1024;
constexpr uint64_t kDbr = 0x6000;   // CQ i at + i * 8, QP i at + 64 + i * 8
constexpr uint64_t kData = 0x10000;  // 64 KiB under one MTT key, VA = IOVA
constexpr uint32_t kDataBytes = 64 << 10;
constexpr uint64_t kPagesIova = 0x4000'0000;
constexpr uint32_t kLogCq = 6;
constexpr uint32_t kLogSq = 4;

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "engine_bench: %s\n", what.c_str());
  std::abort();
}

// Memory the device reaches through its IOMMU, page aligned.
struct Aligned {
  explicit Aligned(std::size_t bytes)
      : p(static_cast<std::byte*>(std::aligned_alloc(4096, bytes))) {
    std::memset(p, 0, bytes);
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  std::byte* p;
};

// One device without a device thread, its firmware brought up by command, an EQ, a CQ per QP,
// two RC QPs, a host MR over the data area and a MEMIC MR. MakeLoopback connects its QPs to each
// other; RdmaWriteBetween connects QP A of one device to QP A of another.
class DirectDevice {
 public:
  DirectDevice(Bar0 bar, const DeviceConfig& config)
      : config_(config),
        bar_(std::move(bar)),
        pages_((config_.boot_pages + config_.init_pages) * 4096),
        contexts_(config_, bar_.layout()),
        firmware_(contexts_, EngineStateControl(engine_state_), config_, bar_.layout(), bar_.Memic(),
                  bar_.SteeringTags(), iommu_),
        engine_(ContextsView(contexts_), engine_state_, MkeyServices(firmware_), iommu_, bar_,
                config_, [] {}, std::chrono::steady_clock::now()) {
    const uint32_t n = config_.boot_pages + config_.init_pages;
    if (!iommu_.Map({kArenaIova, kArenaBytes, arena_.p, -1, 0})) Broken("map arena");
    if (!iommu_.Map({kPagesIova, uint64_t{n} * 4096, pages_.p, -1, 0})) Broken("map pages");
    const auto hca = fuzz::BringUpDirect(firmware_, kPagesIova, n);
    if (!hca) Broken(hca.error().describe());
    uar_ = hca->uar;
    pd_ = hca->pd;
    NewEq();
    for (uint32_t i = 0; i < 2; ++i) cqn_[i] = NewCq(i);
    NewKeys();
    for (uint32_t i = 0; i < 2; ++i) qpn_[i] = NewQp(i);
  }

  // QP A and QP B to each other, through this device's own GID.
  void ConnectOwnQps() {
    for (uint32_t i = 0; i < 2; ++i) Connect(qpn_[i], qpn_[1 - i], engine_.gids()[3]);
  }
  // QP A to `peer`'s QP A, through the peer's GID.
  void ConnectTo(const DirectDevice& peer) {
    Connect(qpn_[0], peer.qpn_[0], peer.engine_.gids()[3]);
  }
  Engine& engine() { return engine_; }

  uint32_t host_rkey() const { return host_key_; }
  uint32_t memic_rkey() const { return memic_key_; }
  static constexpr uint64_t kSrcVa = kArenaIova + kData;
  static constexpr uint64_t kHostDstVa = kArenaIova + kData + 0x8000;
  static constexpr uint64_t kMemicDstVa = 0x100;  // zero-based

  // Posts a signaled RDMA WRITE of `len` bytes from kSrcVa to (raddr, rkey) on QP A.
  void PostWrite(uint64_t raddr, uint32_t rkey, uint32_t len) {
    std::byte* wqe = arena_.p + kQp + kSqOffset + (sq_counter_ & ((1u << kLogSq) - 1)) * 64;
    prm::pod::mlx5_wqe_ctrl_seg ctrl{};
    ctrl.opmod_idx_opcode = prm::Be32::FromHost(
        prm::OpmodIdxOpcode(0, static_cast<uint16_t>(sq_counter_), prm::MLX5_OPCODE_RDMA_WRITE));
    ctrl.qpn_ds = prm::Be32::FromHost(prm::QpnDs(qpn_[0], 3));
    ctrl.fm_ce_se = prm::MLX5_WQE_CTRL_CQ_UPDATE;
    prm::pod::mlx5_wqe_raddr_seg r{};
    r.raddr = prm::Be64::FromHost(raddr);
    r.rkey = prm::Be32::FromHost(rkey);
    prm::pod::mlx5_wqe_data_seg d{};
    d.byte_count = prm::Be32::FromHost(len);
    d.lkey = prm::Be32::FromHost(host_key_);
    d.addr = prm::Be64::FromHost(kSrcVa);
    std::memcpy(wqe, &ctrl, sizeof ctrl);
    std::memcpy(wqe + 16, &r, sizeof r);
    std::memcpy(wqe + 32, &d, sizeof d);
    sq_counter_ = (sq_counter_ + 1) & 0xffff;
    StoreBe32(kDbr + 64 + prm::MLX5_SND_DBR * 4, sq_counter_);
    // The UAR doorbell after the record, as a driver rings it: the WQE's first 8 bytes to bfreg
    // 0 of the QP's UAR page.
    uint64_t first8;
    std::memcpy(&first8, wqe, sizeof first8);
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(
                                  bar_.base() + prm::UarPageOffset(uar_) +
                                  prm::BfregOffset(0, 1u << config_.log_bf_reg_size)))
        .store(first8, std::memory_order_release);
  }

  // Runs engine passes until QP A's CQ holds the next CQE; consumes it. The passes it took, or
  // 0 when the CQE reports an error (or none came in 100 passes). With a `peer`, a pass of the
  // peer follows each of this device's until the CQE is there, as a device thread serving both
  // runs them, and both count.
  int CompleteOne(DirectDevice* peer = nullptr) {
    int passes = 0;
    while (passes < 100) {
      for (DirectDevice* d : {this, peer}) {
        if (d == nullptr) continue;
        d->engine_.Pass();
        ++passes;
        if (const std::optional<bool> ok = TakeCqe()) return *ok ? passes : 0;
      }
    }
    return 0;
  }

  // One engine pass with nothing rung and nothing on the wire.
  void IdlePass() { engine_.Pass(); }
  // The device thread's look while awake that finds nothing (Device::NeedsService's loads): the
  // command doorbell, then the engine's UAR registers and the port. The rest of that look is
  // the device's own flags (initializing, progress, deadline, kick): a few compares more.
  [[gnu::noinline]] bool IdleCheck() const { return bar_.CommandDoorbellRung() || engine_.AnythingRung(); }

  std::byte* src() { return arena_.p + kData; }
  std::byte* host_dst() { return arena_.p + kData + 0x8000; }
  std::byte* memic_dst() { return bar_.Memic().data() + memic_offset_ + kMemicDstVa; }

 private:
  // QP A's next CQE, consumed: whether it reports success; nothing while the CQ has none.
  std::optional<bool> TakeCqe() {
    std::byte* cqe = arena_.p + kCq + (ci_ & ((1u << kLogCq) - 1)) * 64;
    const auto op_own = std::to_integer<uint8_t>(
        std::atomic_ref<std::byte>(cqe[63]).load(std::memory_order_acquire));
    if (prm::CqeOpcodeOf(op_own) == prm::MLX5_CQE_INVALID ||
        prm::CqeOwner(op_own) != prm::CqeOwnerFor(ci_, 1u << kLogCq))
      return std::nullopt;
    ++ci_;
    StoreBe32(kDbr + prm::MLX5_CQ_SET_CI * 4, ci_ & prm::kCqConsumerIndexMask);
    return prm::CqeOpcodeOf(op_own) == prm::MLX5_CQE_REQ;
  }

  template <class M>
  std::vector<std::byte> Run(const M& m, std::size_t out_len, const char* what) {
    std::vector<std::byte> out(out_len);
    if (!firmware_.Execute(m.bytes(), out).ok()) Broken(what);
    return out;
  }
  template <class F>
  static uint32_t Get(const std::vector<std::byte>& out, F f) {
    return static_cast<uint32_t>(prm::Get(std::span<const std::byte>(out), f));
  }
  void StoreBe32(uint64_t offset, uint32_t v) {
    const uint32_t raw = prm::Be32::FromHost(v).raw();
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(arena_.p + offset))
        .store(raw, std::memory_order_release);
  }

  void NewEq() {
    for (int i = 0; i < 128; ++i) arena_.p[kEq + i * 64 + 63] = std::byte{1};
    using In = prm::create_eq_in;
    auto in = prm::CommandIn<In>(prm::CREATE_EQ, 0, 16);
    in.set(In::eq_context_entry.log_eq_size, 7)
        .set(In::eq_context_entry.uar_page, uar_)
        .set(In::eq_context_entry.st, prm::EQ_CQ_STATE_ARMED)
        .set(In::event_bitmask[0], 0x11)
        .set(In::pas[0], kArenaIova + kEq)
        .set(In::pas[1], kArenaIova + kEq + 4096);
    eqn_ = Get(Run(in, 16, "CREATE_EQ"), prm::create_eq_out::eq_number);
  }

  uint32_t NewCq(uint32_t i) {
    for (uint32_t e = 0; e < (1u << kLogCq); ++e)
      arena_.p[kCq + i * 0x1000 + e * 64 + 63] = std::byte{prm::kCqeInitialOpOwn};
    using In = prm::create_cq_in;
    auto in = prm::CommandIn<In>(prm::CREATE_CQ, 0, 8);
    in.set(In::cq_context.log_cq_size, kLogCq)
        .set(In::cq_context.uar_page, uar_)
        .set(In::cq_context.c_eqn_or_apu_element, eqn_)
        .set(In::cq_context.dbr_addr, kArenaIova + kDbr + i * 8)
        .set(In::pas[0], kArenaIova + kCq + i * 0x1000);
    return Get(Run(in, 16, "CREATE_CQ"), prm::create_cq_out::cqn);
  }

  void NewKeys() {
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    auto common = [&](prm::Message<In>& in, uint8_t mode, uint8_t variant) {
      in.set(mkc.access_mode_1_0, mode & 3).set(mkc.access_mode_4_2, mode >> 2)
          .set(mkc.qpn, 0xffffff).set(mkc.lr, 1).set(mkc.lw, 1).set(mkc.rr, 1).set(mkc.rw, 1)
          .set(mkc.pd, pd_).set(mkc.mkey_7_0, variant);
    };
    constexpr uint32_t pages = kDataBytes / 4096;
    auto mtt = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 8 * pages);
    common(mtt, prm::MKC_ACCESS_MODE_MTT, 0x21);
    mtt.set(mkc.start_addr, kArenaIova + kData).set(mkc.len, kDataBytes)
        .set(mkc.log_page_size, 12).set(mkc.translations_octword_size, pages / 2)
        .set(In::translations_octword_actual_size, pages / 2);
    prm::Bits mb(mtt.bytes().subspan(prm::size_bytes<In>));
    for (uint32_t i = 0; i < pages; ++i)
      mb.set(prm::Element<64>{i * 64, "mtt"}, kArenaIova + kData + uint64_t{i} * 4096);
    host_key_ = Get(Run(mtt, 16, "CREATE_MKEY mtt"), prm::create_mkey_out::mkey_index) << 8 | 0x21;
    auto memic = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
    memic.set(prm::alloc_memic_in::memic_size, 4096)
        .set(prm::alloc_memic_in::range_start_addr, bar_.layout().memic_start)
        .set(prm::alloc_memic_in::range_size, bar_.layout().memic_size);
    const uint64_t start = prm::Get(std::span<const std::byte>(Run(memic, 16, "ALLOC_MEMIC")),
                                    prm::alloc_memic_out::memic_start_addr);
    memic_offset_ = start - bar_.layout().memic_start;
    auto dm = prm::CommandIn<In>(prm::CREATE_MKEY);
    common(dm, prm::MKC_ACCESS_MODE_MEMIC, 0x22);
    dm.set(mkc.start_addr, start).set(mkc.len, 4096);
    memic_key_ = Get(Run(dm, 16, "CREATE_MKEY memic"), prm::create_mkey_out::mkey_index) << 8 | 0x22;
  }

  uint32_t NewQp(uint32_t i) {
    using In = prm::create_qp_in;
    auto in = prm::CommandIn<In>(prm::CREATE_QP, 0, 8);
    in.set(In::qpc.st, prm::QP_ST_RC)
        .set(In::qpc.pm_state, prm::QP_PM_MIGRATED)
        .set(In::qpc.pd, pd_)
        .set(In::qpc.uar_page, uar_)
        .set(In::qpc.cqn_snd, cqn_[i])
        .set(In::qpc.cqn_rcv, cqn_[i])
        .set(In::qpc.dbr_addr, kArenaIova + kDbr + 64 + i * 8)
        .set(In::qpc.log_sq_size, kLogSq)
        .set(In::qpc.log_rq_size, 4)
        .set(In::qpc.log_rq_stride, 2)
        .set(In::pas[0], kArenaIova + kQp + i * 0x1000);
    return Get(Run(in, 16, "CREATE_QP"), prm::create_qp_out::qpn);
  }

  void Connect(uint32_t qpn, uint32_t remote, const Gid& gid) {
    using Ctx = prm::qpc_bits<prm::rst2init_qp_in::qpc.bit_offset>;
    auto a = prm::CommandIn<prm::rst2init_qp_in>(prm::RST2INIT_QP);
    a.set(prm::rst2init_qp_in::qpn, qpn).set(Ctx::primary_address_path.vhca_port_num, 1)
        .set(Ctx::rre, 1).set(Ctx::rwe, 1);
    Run(a, 16, "RST2INIT");
    auto b = prm::CommandIn<prm::init2rtr_qp_in>(prm::INIT2RTR_QP);
    b.set(prm::init2rtr_qp_in::qpn, qpn).set(Ctx::mtu, 5).set(Ctx::log_msg_max, 30)
        .set(Ctx::remote_qpn, remote).set(Ctx::log_rra_max, 4).set(Ctx::min_rnr_nak, 12)
        .set(Ctx::primary_address_path.vhca_port_num, 1)
        .set(Ctx::primary_address_path.src_addr_index, 3)
        .set(Ctx::primary_address_path.hop_limit, 64);
    for (int i = 0; i < 16; ++i) b.set(Ctx::primary_address_path.rgid_rip[i], gid[i]);
    Run(b, 16, "INIT2RTR");
    auto c = prm::CommandIn<prm::rtr2rts_qp_in>(prm::RTR2RTS_QP);
    c.set(prm::rtr2rts_qp_in::qpn, qpn).set(Ctx::retry_count, 7).set(Ctx::rnr_retry, 7)
        .set(Ctx::log_sra_max, 4).set(Ctx::primary_address_path.ack_timeout, 14);
    Run(c, 16, "RTR2RTS");
  }

  const DeviceConfig config_;
  Bar0 bar_;
  Iommu iommu_;
  Aligned arena_{kArenaBytes};
  Aligned pages_;
  Contexts contexts_;
  EngineState engine_state_;
  Firmware firmware_;
  Engine engine_;
  uint32_t uar_ = 0, pd_ = 0, eqn_ = 0;
  uint32_t cqn_[2] = {}, qpn_[2] = {};
  uint32_t host_key_ = 0, memic_key_ = 0;
  uint64_t memic_offset_ = 0;
  uint32_t sq_counter_ = 0;
  uint32_t ci_ = 0;
};

// Device `index` of this process (NthDevice) with its queues and keys, its QPs not yet connected.
std::unique_ptr<DirectDevice> MakeDevice(uint32_t index) {
  const DeviceConfig config = NthDevice({}, index);
  auto bar = Bar0::Create(config);
  if (!bar) Broken("Bar0::Create: " + bar.error().describe());
  return std::make_unique<DirectDevice>(std::move(*bar), config);
}

std::unique_ptr<DirectDevice> MakeLoopback() {
  auto lb = MakeDevice(0);
  lb->ConnectOwnQps();
  return lb;
}

enum class Remote { kHost, kMemic };

// Signaled RDMA WRITEs of state.range(0) bytes from `from`'s QP A into `to`'s buffer, each run
// to its CQE (with `peer`, its passes too: CompleteOne); passes_per_op counts both devices'.
void Writes(benchmark::State& state, DirectDevice& from, DirectDevice& to, Remote remote,
            DirectDevice* peer) {
  const auto len = static_cast<uint32_t>(state.range(0));
  const bool memic = remote == Remote::kMemic;
  const uint64_t raddr = memic ? DirectDevice::kMemicDstVa : DirectDevice::kHostDstVa;
  const uint32_t rkey = memic ? to.memic_rkey() : to.host_rkey();
  std::byte* dst = memic ? to.memic_dst() : to.host_dst();
  uint64_t passes = 0;
  uint64_t seq = 0;
  for (auto _ : state) {
    ++seq;
    std::memcpy(from.src(), &seq, sizeof seq);
    from.PostWrite(raddr, rkey, len);
    const int n = from.CompleteOne(peer);
    if (n == 0) {
      state.SkipWithError("the WRITE did not complete successfully");
      return;
    }
    passes += static_cast<uint64_t>(n);
  }
  uint64_t landed = 0;
  std::memcpy(&landed, dst, sizeof landed);
  if (len >= sizeof seq && landed != seq) state.SkipWithError("the last WRITE's bytes did not land");
  state.counters["passes_per_op"] =
      benchmark::Counter(static_cast<double>(passes), benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * len);
}

void RdmaWrite(benchmark::State& state, Remote remote) {
  auto lb = MakeLoopback();
  Writes(state, *lb, *lb, remote, nullptr);
}

// Two devices, QP A of each connected to the other's, one thread running both engines' passes
// as a device daemon's thread runs its functions'. At once: the thread serves both ports
// (Engine::SetServer, Port::Serving: wire.h), so the receiver takes the request inside the
// sender's pass and the sender's pass takes the ACK. Queued: each packet waits in its
// receiver's port for that device's next pass, as between devices of different threads.
void RdmaWriteBetween(benchmark::State& state, bool at_once) {
  auto a = MakeDevice(1);
  auto b = MakeDevice(2);
  a->ConnectTo(*b);
  b->ConnectTo(*a);
  static const char server = 0;  // the thread's token: any address the devices share
  std::optional<Port::Serving> serving;
  if (at_once) {
    a->engine().SetServer(&server);
    b->engine().SetServer(&server);
    serving.emplace(&server);
  }
  Writes(state, *a, *b, Remote::kMemic, b.get());
  a->engine().SetServer(nullptr);
  b->engine().SetServer(nullptr);
}

// The WRITE rows' queues after one WRITE, at rest: what the idle rows measure against. Null,
// with the row's error set, when that WRITE fails.
std::unique_ptr<DirectDevice> AfterOneWrite(benchmark::State& state) {
  auto lb = MakeLoopback();
  lb->PostWrite(DirectDevice::kHostDstVa, lb->host_rkey(), 8);
  if (lb->CompleteOne() != 0) return lb;
  state.SkipWithError("the WRITE did not complete successfully");
  return nullptr;
}

// The pass that finds nothing: what the device thread spends, between two operations, noticing
// that no doorbell was rung (its cost is how late, on average, a doorbell is seen). The QPs,
// CQs and the EQ are the WRITE rows' own, after one WRITE.
void IdlePass(benchmark::State& state) {
  auto lb = AfterOneWrite(state);
  if (!lb) return;
  for (auto _ : state) lb->IdlePass();
}

// The look the awake device thread runs instead of a pass while nothing is rung (callgrind:
// IdleCheck over its calls; Engine::AnythingRung is inlined into it), with the WRITE rows'
// queues after one WRITE: the send doorbells of the one UAR page both QPs ring (4 bfregs, two
// halves each), its CQ and EQ doorbells, the command doorbell and the port.
void IdleCheck(benchmark::State& state) {
  auto lb = AfterOneWrite(state);
  if (!lb) return;
  for (auto _ : state) {
    const bool rung = lb->IdleCheck();
    benchmark::DoNotOptimize(rung);
    if (rung) {
      state.SkipWithError("the look found something rung with nothing posted");
      return;
    }
  }
}

// The awake device thread's loop with nothing to do, in wall-clock time: a device on a thread
// of its own kept awake (it always spins, and its idle period is longer than the run), its
// wakeups counted while the benchmark thread sleeps; ns_per_loop is how late, at most, a
// doorbell rung just after a look is looked at again. Its HCA is not initialized, so the look
// has no UAR page to watch and a pass no queue to walk (one with queues adds what
// DeviceIdleCheck and EngineIdlePass count).
void AwakeLoop(benchmark::State& state) {
  DeviceConfig config;
  config.engine_spin = DeviceConfig::Spin::kAlways;
  config.engine_idle_period = std::chrono::hours(1);
  auto device = Device::Create(config);
  if (!device) {
    state.SkipWithError(device.error().describe().c_str());
    return;
  }
  (*device)->Kick();
  while ((*device)->wakeups() < 2) std::this_thread::yield();
  const uint64_t before = (*device)->wakeups();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const uint64_t loops = (*device)->wakeups() - before;
  state.counters["ns_per_loop"] = loops != 0 ? ns / static_cast<double>(loops) : 0;
}

// The device clock (device_clock.h), read as the engine stamps a CQE: steady_clock through the
// vDSO, and the fast reading from the time-stamp counter once the rate is known. Their ratio
// is what each CQE saves.
void ClockReading(benchmark::State& state, bool fast) {
  DeviceClock clock(std::chrono::steady_clock::now());
  // 15 ms of readings measure the counter's rate.
  const auto warm = std::chrono::steady_clock::now() + std::chrono::milliseconds(15);
  while (std::chrono::steady_clock::now() < warm) benchmark::DoNotOptimize(clock.FastNowNs());
  if (fast && !clock.extrapolating()) {
    state.SkipWithError("no invariant time-stamp counter: FastNowNs reads steady_clock");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fast ? clock.FastNowNs() : clock.NowNs());
}

BENCHMARK_CAPTURE(ClockReading, steady, false)->Name("DeviceClock/steady");
BENCHMARK_CAPTURE(ClockReading, fast, true)->Name("DeviceClock/fast");
BENCHMARK(IdlePass)->Name("EngineIdlePass");
BENCHMARK(AwakeLoop)->Name("DeviceAwakeLoop")->Iterations(200);
BENCHMARK(IdleCheck)->Name("DeviceIdleCheck");
BENCHMARK_CAPTURE(RdmaWrite, dm, Remote::kMemic)->Name("EngineRdmaWrite/dm")->Arg(8);
BENCHMARK_CAPTURE(RdmaWrite, host, Remote::kHost)->Name("EngineRdmaWrite/host")->Arg(8);
BENCHMARK_CAPTURE(RdmaWriteBetween, queued, false)->Name("EngineRdmaWrite/between_queued")->Arg(8);
BENCHMARK_CAPTURE(RdmaWriteBetween, at_once, true)->Name("EngineRdmaWrite/between_at_once")->Arg(8);

}  // namespace
}  // namespace onchip::sim
