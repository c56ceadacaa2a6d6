// The main job over the wire: RDMA WRITE, RDMA READ, SEND/RECV and 8-byte atomics between two RC
// QPs of one process on the in-process software ConnectX, with device memory against host memory
// on either side, beside the software floor measured in the same run.
//
// Rows (each carries its fields, bench/row.h, which the report reads; latency rows are one
// signaled operation at a time, from the post to its completion, so a WRITE's time includes the
// responder's acknowledgement; post and poll are the provider's own ops, the ones ibv_post_send
// and ibv_poll_cq call):
//   <op>.onchip/N           the REMOTE buffer is device memory (a zero-based DM MR); local host
//   <op>.host/N             the remote buffer is host memory; local host
//   <op>_local_dm.onchip/N  the LOCAL buffer (the SGE) is device memory; remote host
//   <op>_local_dm.host/N    the same with a host SGE (the same operation as <op>.host, measured
//                           again beside it)
//   <op>.floor/N            the same ping-pong of N bytes by bare shared memory between this
//                           thread and one other (copy N bytes, publish a sequence number, the
//                           other thread copies them out and answers; it waits between looks
//                           as the device's engine thread does): no RDMA on the software device
//                           can beat it, since its engine is such a thread
//   rdma_write.paired/8     the goal's pair: the 8-byte WRITE into DM and its floor timed by
//                           turns in rounds; x_floor is the median of the rounds' ratios
//                           (PairWithFloor says why)
//   <op>_bw.onchip/N, <op>_bw.host/N   32 operations in flight, bytes per second (remote DM or
//                           host), for every op; <op>_bw.onchip_2proc/N and host_2proc/N for
//                           rdma_write, rdma_read and the atomics between two processes
//   <op>.onchip_2proc/N, <op>.host_2proc/N, <op>_local_dm.onchip_2proc/N,
//   <op>_local_dm.host_2proc/N, <op>.floor_2proc/N, rdma_write.paired_2proc/8
//                           the same latency rows between two processes, each a client of one
//                           device daemon (function 0 here, function 1 in a forked peer), and
//                           the floor between the same two processes over a shared page; only
//                           when ONCHIP_BENCH_DAEMON names the daemon's socket (tools/onchip
//                           bench starts one), else the context says onchip.daemon=absent
// for op in rdma_write, rdma_read, send_recv (8 B to 64 KiB) and atomic_fetch_add,
// atomic_cmp_swap (8 B). Latency rows carry the per-operation p50_ns and p99_ns counters (a
// steady_clock read per operation, about 20 ns, is inside them); one-process latency and
// bandwidth rows also carry engine_cpu_ns, the device thread's CPU time per operation. A failed
// operation ends its row with the completion's status as the error.
//
// Where the bytes live: on the software ConnectX, device memory is host memory behind the
// device model, so DM against host measures the model and the driver, not a NIC; the header says
// so. The engine is a thread of this process: the floor is the cost of waking that thread.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/row.h"
#include "driver/context.h"
#include "driver/open.h"
#include "driver/rings/data_path.h"
#include "driver/verbs/calls.h"
#include "tools/sim/device.h"
#include "tools/sim/wire.h"
#include "tools/simd/server.h"
#include "tools/testing/rc_connect.h"

namespace onchip {
namespace {

namespace v = driver::verbs;
namespace rings = driver::rings;

constexpr std::size_t kMaxBytes = 64 << 10;
constexpr int kQueueDepth = 64;
constexpr int kBwInFlight = 32;
constexpr uint8_t kRoceV2GidIndex = 2;  // ::ffff:a.b.c.d, as tools/sim/wire.h advertises

// Per-operation samples of one benchmark row, in a fixed ring (no allocation while measuring):
// the percentiles come from the last kSamples operations.
class Samples {
 public:
  static constexpr std::size_t kSamples = 1 << 16;
  void Add(int64_t ns) { ns_[n_++ % kSamples] = ns; }
  void Report(benchmark::State& state) {
    const std::size_t n = std::min(n_, kSamples);
    if (n == 0) return;
    std::vector<int64_t> s(ns_.begin(), ns_.begin() + static_cast<std::ptrdiff_t>(n));
    std::sort(s.begin(), s.end());
    auto rank = [&](double q) {
      return static_cast<double>(s[std::min(n - 1, static_cast<std::size_t>(q * static_cast<double>(n)))]);
    };
    state.counters["p50_ns"] = rank(0.50);
    state.counters["p99_ns"] = rank(0.99);
  }

 private:
  std::vector<int64_t> ns_ = std::vector<int64_t>(kSamples);
  std::size_t n_ = 0;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The device thread's CPU time per operation over a row (counter engine_cpu_ns): what the device
// model costs each operation, idle passes between operations included. CPU time, so a busy
// machine inflates it far less than the wall-clock rows.
class EngineCpu {
 public:
  explicit EngineCpu(const sim::Device& device) : device_(device), start_(device.thread_cpu_time()) {}
  void Report(benchmark::State& state) const {
    if (state.iterations() == 0) return;
    const auto spent = device_.thread_cpu_time() - start_;
    state.counters["engine_cpu_ns"] =
        static_cast<double>(spent.count()) / static_cast<double>(state.iterations());
  }

 private:
  const sim::Device& device_;
  const std::chrono::nanoseconds start_;
};

[[noreturn]] void Die(const char* what, const std::string& why) {
  std::fprintf(stderr, "onchip wire_bench: %s on the software ConnectX: %s\n", what, why.c_str());
  std::exit(1);
}

// A buffer of kMaxBytes either in host memory or in device memory, with its MR.
struct Buffer {
  ibv_mr* mr = nullptr;
  ibv_dm* dm = nullptr;
  std::byte* host = nullptr;  // host buffers only
  int memfd = -1;             // host pages a device daemon maps too
  // The address an SGE or a remote address names: the VA for host memory, the offset for a
  // zero-based DM MR.
  uint64_t addr() const { return dm != nullptr ? 0 : reinterpret_cast<uint64_t>(host); }
};

constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// One end of an RC connection: a CQ, a QP, and a host and a device-memory buffer of kMaxBytes.
// Host memory comes from a memfd when a device daemon must reach it (the daemon maps the same
// pages), else from the heap.
struct End {
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  Buffer host, dm;

  void Open(ibv_context* verbs, ibv_pd* pd, bool shared_pages) {
    cq = v::create_cq(verbs, 2 * kQueueDepth, nullptr, 0);
    if (cq == nullptr) Die("create_cq", std::strerror(errno));
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = kQueueDepth;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    qp = v::create_qp(pd, &a);
    if (qp == nullptr) Die("create_qp", std::strerror(errno));
    if (shared_pages) {
      host.memfd = memfd_create("wire_bench", MFD_CLOEXEC);
      if (host.memfd < 0 || ftruncate(host.memfd, kMaxBytes) != 0) Die("memfd", std::strerror(errno));
      void* m = mmap(nullptr, kMaxBytes, PROT_READ | PROT_WRITE, MAP_SHARED, host.memfd, 0);
      if (m == MAP_FAILED) Die("mmap of the memfd", std::strerror(errno));
      host.host = static_cast<std::byte*>(m);
    } else {
      host.host = static_cast<std::byte*>(std::aligned_alloc(4096, kMaxBytes));
      if (host.host == nullptr) Die("aligned_alloc", "out of memory");
    }
    std::memset(host.host, 0, kMaxBytes);
    host.mr = v::reg_mr(pd, host.host, kMaxBytes, reinterpret_cast<uintptr_t>(host.host), kAccess);
    if (host.mr == nullptr) Die("reg_mr", std::strerror(errno));
    ibv_alloc_dm_attr da{.length = kMaxBytes, .log_align_req = 6, .comp_mask = 0};
    dm.dm = v::alloc_dm(verbs, &da);
    if (dm.dm == nullptr) Die("alloc_dm", std::strerror(errno));
    dm.mr = v::reg_dm_mr(pd, dm.dm, 0, kMaxBytes, kAccess | IBV_ACCESS_ZERO_BASED);
    if (dm.mr == nullptr) Die("reg_dm_mr", std::strerror(errno));
  }

  // Destroys what Open made; false (said on stderr) if any release failed.
  bool Close() {
    bool clean = true;
    auto check = [&](int rc, const char* what) {
      if (rc != 0) {
        std::fprintf(stderr, "onchip wire_bench: %s failed: %s\n", what, std::strerror(rc));
        clean = false;
      }
    };
    check(v::destroy_qp(qp), "destroy_qp");
    check(v::dereg_mr(host.mr), "dereg_mr");
    check(v::dereg_mr(dm.mr), "dereg_mr of a DM MR");
    check(v::free_dm(dm.dm), "free_dm");
    if (host.memfd >= 0) {
      munmap(host.host, kMaxBytes);
      close(host.memfd);
    } else {
      std::free(host.host);
    }
    check(v::destroy_cq(cq), "destroy_cq");
    return clean;
  }
};

// RESET -> INIT -> RTR -> RTS towards QP `dest` of the port with GID `dgid`, every operation
// the rows post allowed, 16 reads and atomics outstanding each way.
void Connect(ibv_qp* q, uint32_t dest, const ibv_gid& dgid) {
  const testing::RcPath path{.dgid = dgid,
                             .sgid_index = kRoceV2GidIndex,
                             .mtu = IBV_MTU_4096,
                             .rd_atomic = 16,
                             .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                       IBV_ACCESS_REMOTE_ATOMIC};
  if (const testing::RcConnectResult r = testing::ConnectRc(q, dest, path); !r)
    Die("modify_qp", r.describe());
}

ibv_gid GidOf(const sim::DeviceConfig& config) {
  ibv_gid gid{};
  const auto gids = sim::DeviceGids(config);
  std::memcpy(gid.raw, gids[kRoceV2GidIndex].data(), sizeof gid.raw);
  return gid;
}

// Two ends of one process on the in-process software ConnectX, connected to each other.
struct Fixture {
  std::unique_ptr<sim::Device> sim;
  std::unique_ptr<Context> ctx;
  ibv_pd* pd = nullptr;
  End end[2];  // end[0] posts, end[1] is the remote side

  Fixture() {
    sim::DeviceConfig config;
    config.memic_bar_size = 1 << 20;
    config.max_memic_size = 1 << 20;
    auto s = sim::Device::Create(config);
    if (!s) Die("cannot start the software ConnectX", s.error().describe());
    sim = std::move(*s);
    auto c = Context::Open(driver::Locator::Of(*sim));
    if (!c) Die("cannot open the device", c.error().describe());
    ctx = std::make_unique<Context>(std::move(*c));
    pd = v::alloc_pd(ctx->verbs());
    if (pd == nullptr) Die("alloc_pd", std::strerror(errno));
    for (End& e : end) e.Open(ctx->verbs(), pd, /*shared_pages=*/false);
    const ibv_gid gid = GidOf(sim->config());
    Connect(end[0].qp, end[1].qp->qp_num, gid);
    Connect(end[1].qp, end[0].qp->qp_num, gid);
  }

  bool Close() {
    bool clean = end[0].Close() & end[1].Close();
    if (const int rc = v::dealloc_pd(pd); rc != 0) {
      std::fprintf(stderr, "onchip wire_bench: dealloc_pd failed: %s\n", std::strerror(rc));
      clean = false;
    }
    const driver::TeardownReport r = ctx->Close();
    if (r.first_error || r.objects() != 0 || r.pages_still_held) {
      std::fprintf(stderr, "onchip wire_bench: the device still held objects: %s\n", r.describe().c_str());
      clean = false;
    }
    return clean;
  }
};

std::unique_ptr<Fixture>& FixtureSlot() {
  static std::unique_ptr<Fixture> f;
  return f;
}

Fixture& F() {
  auto& f = FixtureSlot();
  if (!f) f = std::make_unique<Fixture>();
  return *f;
}

enum class Op { kWrite, kRead, kSend, kFetchAdd, kCmpSwap };
enum class Where { kRemoteDm, kRemoteHost, kLocalDm };

ibv_wr_opcode OpcodeOf(Op op) {
  switch (op) {
    case Op::kWrite: return IBV_WR_RDMA_WRITE;
    case Op::kRead: return IBV_WR_RDMA_READ;
    case Op::kSend: return IBV_WR_SEND;
    case Op::kFetchAdd: return IBV_WR_ATOMIC_FETCH_AND_ADD;
    case Op::kCmpSwap: return IBV_WR_ATOMIC_CMP_AND_SWP;
  }
  return IBV_WR_SEND;
}

// Waits for one completion on `cq`; false (with the row's error set) if it is not a success.
bool PollOne(benchmark::State& state, ibv_cq* cq) {
  ibv_wc wc;
  int n;
  while ((n = rings::PollCq(cq, 1, &wc)) == 0) {
  }
  if (n < 0) {
    state.SkipWithError("ibv_poll_cq failed");
    return false;
  }
  if (wc.status != IBV_WC_SUCCESS) {
    state.SkipWithError(("completion error: status " + std::to_string(wc.status)).c_str());
    return false;
  }
  return true;
}

// Untimed operations before a row's timed loop. Google Benchmark interleaves the repetitions of
// all rows (tools/onchip bench), so each repetition may start with the device's engine asleep
// and the peer napping after another row ran: without this, a short repetition would time their
// wake-up (milliseconds) instead of the operation. False if an operation failed (its error set).
constexpr int kWarmUpOps = 64;
template <class Once>
bool WarmUp(Once&& once) {
  for (int i = 0; i < kWarmUpOps; ++i)
    if (!once()) return false;
  return true;
}

// Where a write, read or atomic lands: a remote buffer's address and rkey.
struct Remote {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

Remote RemoteOf(const Buffer& b) { return {b.addr(), b.mr->rkey}; }

// The signaled work request of one operation from `sge` to `remote`.
ibv_send_wr MakeWr(Op op, ibv_sge* sge, Remote remote) {
  ibv_send_wr wr{};
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.opcode = OpcodeOf(op);
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op == Op::kFetchAdd || op == Op::kCmpSwap) {
    wr.wr.atomic = {.remote_addr = remote.addr, .compare_add = 1, .swap = 2, .rkey = remote.rkey};
  } else if (op != Op::kSend) {
    wr.wr.rdma = {.remote_addr = remote.addr, .rkey = remote.rkey};
  }
  return wr;
}

// Where one operation goes: the QP that posts it and the CQ its completion lands on, its local
// buffer and its remote one, and for a SEND the receive it needs first (the QP it is posted on,
// the CQ its completion lands on, where it lands).
struct Route {
  ibv_qp* qp;
  ibv_cq* cq;
  ibv_sge local;
  Remote remote;
  ibv_qp* recv_qp;
  ibv_cq* recv_cq;
  ibv_sge receive;
};

// One signaled work request along a route, and its completion (for a SEND also the receive's).
// A call is one operation: false, with the row's error set, if it failed. Post alone leaves the
// completions to the caller (Bandwidth keeps many in flight).
class WireOp {
 public:
  WireOp(benchmark::State& state, Op op, const Route& route)
      : state_(state), op_(op), route_(route), wr_(MakeWr(op, &route_.local, route_.remote)) {
    rwr_.sg_list = &route_.receive;
    rwr_.num_sge = 1;
  }
  WireOp(const WireOp&) = delete;  // the work requests point into it

  bool operator()() {
    if (!Post()) return false;
    // A SEND's two completions, which come in either order when both land on one CQ.
    if (op_ == Op::kSend && !PollOne(state_, route_.recv_cq)) return false;
    return PollOne(state_, route_.cq);
  }
  // The receive a SEND needs, then the work request.
  bool Post() {
    ibv_send_wr* bad = nullptr;
    ibv_recv_wr* rbad = nullptr;
    if (op_ == Op::kSend && rings::PostRecv(route_.recv_qp, &rwr_, &rbad) != 0) {
      state_.SkipWithError("ibv_post_recv failed");
      return false;
    }
    if (rings::PostSend(route_.qp, &wr_, &bad) != 0) {
      state_.SkipWithError("ibv_post_send failed");
      return false;
    }
    return true;
  }
  uint32_t len() const { return route_.local.length; }

 private:
  benchmark::State& state_;
  const Op op_;
  Route route_;
  ibv_send_wr wr_;
  ibv_recv_wr rwr_{};
};

// From QP 0 to QP 1 of this process; a SEND's receive is posted on QP 1, into the remote buffer.
Route OneProcessRoute(const benchmark::State& state, Where where) {
  Fixture& f = F();
  const auto len = static_cast<uint32_t>(state.range(0));
  const Buffer& local = where == Where::kLocalDm ? f.end[0].dm : f.end[0].host;
  const Buffer& remote = where == Where::kRemoteDm ? f.end[1].dm : f.end[1].host;
  return {.qp = f.end[0].qp,
          .cq = f.end[0].cq,
          .local = {.addr = local.addr(), .length = len, .lkey = local.mr->lkey},
          .remote = RemoteOf(remote),
          .recv_qp = f.end[1].qp,
          .recv_cq = f.end[1].cq,
          .receive = {.addr = remote.addr(), .length = len, .lkey = remote.mr->lkey}};
}

// Each operation timed on its own; the row's p50 and p99 come from those times.
void Latency(benchmark::State& state, Op op, Where where) {
  WireOp once(state, op, OneProcessRoute(state, where));
  if (!WarmUp(once)) return;
  Samples samples;
  const EngineCpu engine(*F().sim);
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    if (!once()) break;
    samples.Add(NowNs() - t0);
  }
  samples.Report(state);
  engine.Report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * once.len());
}

// kBwInFlight operations in flight along a route, one completion each, as ib_write_bw keeps its
// queue full. A SEND's receive is posted just before it and reaped as it completes (at most
// kBwInFlight of each, within the receive queue's kQueueDepth). `engine` is the device whose
// thread's CPU time the row reports (none for the daemon's).
void Bandwidth(benchmark::State& state, Op op, const Route& route, const sim::Device* engine) {
  const bool send = op == Op::kSend;
  if (send && route.recv_cq == route.cq) {
    state.SkipWithError("a SEND's bandwidth needs its receives on a CQ of their own");
    return;
  }
  WireOp once(state, op, route);
  if (!WarmUp(once)) return;
  // Completions of one CQ: how many, or -1 with the row's error set.
  std::array<ibv_wc, 16> wc;
  auto reap = [&](ibv_cq* cq) {
    const int n = rings::PollCq(cq, static_cast<int>(wc.size()), wc.data());
    if (n < 0) {
      state.SkipWithError("ibv_poll_cq failed");
      return -1;
    }
    for (int i = 0; i < n; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) {
        state.SkipWithError(("completion error: status " + std::to_string(wc[i].status)).c_str());
        return -1;
      }
    return n;
  };
  // Operations and receives posted and not yet reaped.
  int in_flight = 0, receiving = 0;
  auto reap_all = [&] {
    const int n = reap(route.cq);
    if (n < 0) return false;
    in_flight -= n;
    if (send) {
      const int r = reap(route.recv_cq);
      if (r < 0) return false;
      receiving -= r;
    }
    return true;
  };
  std::optional<EngineCpu> cpu;
  if (engine != nullptr) cpu.emplace(*engine);
  for (auto _ : state) {
    while (in_flight == kBwInFlight || receiving == kBwInFlight)
      if (!reap_all()) return;
    if (!once.Post()) return;
    ++in_flight;
    if (send) ++receiving;
  }
  while (in_flight > 0 || receiving > 0)
    if (!reap_all()) return;
  if (cpu) cpu->Report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * route.local.length);
}

// The software floor: one side copies N bytes into a shared buffer and publishes a sequence
// number; the other, watching it, copies the bytes out and answers with the same number.
struct alignas(64) Mailbox {
  std::atomic<uint64_t> ping{0};
  std::atomic<uint32_t> len{0};
  alignas(64) std::atomic<uint64_t> pong{0};
  alignas(64) std::atomic<bool> stop{false};
};

// The answering side's step: true if there was a ping to answer.
bool AnswerFloor(Mailbox& box, uint64_t& seen, const std::byte* shared, std::byte* dst) {
  const uint64_t s = box.ping.load(std::memory_order_acquire);
  if (s == seen) return false;
  std::memcpy(dst, shared, box.len.load(std::memory_order_relaxed));
  seen = s;
  box.pong.store(s, std::memory_order_release);
  return true;
}

// The measuring side of the floor: N bytes in, a ping, wait for the pong.
class FloorPing {
 public:
  FloorPing(Mailbox& box, std::byte* shared, uint32_t len)
      : box_(box), shared_(shared), len_(len), seq_(box.pong.load(std::memory_order_acquire)) {
    box.len.store(len, std::memory_order_relaxed);
  }
  bool operator()() {
    std::memcpy(shared_, src_.data(), len_);
    box_.ping.store(++seq_, std::memory_order_release);
    while (box_.pong.load(std::memory_order_acquire) != seq_) {
    }
    return true;
  }

 private:
  Mailbox& box_;
  std::byte* const shared_;
  const uint32_t len_;
  uint64_t seq_;
  const std::vector<std::byte> src_ = std::vector<std::byte>(kMaxBytes, std::byte{1});
};

void PingFloor(benchmark::State& state, Mailbox& box, std::byte* shared) {
  const auto len = static_cast<uint32_t>(state.range(0));
  FloorPing ping(box, shared, len);
  WarmUp(ping);  // the peer may be napping, as the device's engine may be for the rows above
  Samples samples;
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    ping();
    samples.Add(NowNs() - t0);
  }
  samples.Report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * len);
}

// The floor's other thread in this process: it answers pings until it is destroyed, spinning
// on the mailbox as a user's poller spins, except while napping (Nap to Wake): a pair's WRITE
// turns run without it, as the plain rows do, since it is the harness and not the workload.
class FloorPeer {
 public:
  FloorPeer()
      : thread_([this] {
          uint64_t seen = 0;
          while (!box_.stop.load(std::memory_order_relaxed)) {
            awake_.wait(false, std::memory_order_acquire);
            AnswerFloor(box_, seen, shared_.data(), dst_.data());
          }
        }) {}
  ~FloorPeer() {
    box_.stop.store(true);
    Wake();
    thread_.join();
  }
  Mailbox& box() { return box_; }
  std::byte* shared() { return shared_.data(); }
  // Blocks the thread once it finishes the ping at hand (none is outstanding between turns).
  void Nap() { awake_.store(false, std::memory_order_release); }
  void Wake() {
    awake_.store(true, std::memory_order_release);
    awake_.notify_one();
  }

 private:
  std::vector<std::byte> shared_ = std::vector<std::byte>(kMaxBytes);
  std::vector<std::byte> dst_ = std::vector<std::byte>(kMaxBytes);
  Mailbox box_;
  std::atomic<bool> awake_{true};
  std::thread thread_;  // last: it starts once the members it uses exist
};

// The floor between this thread and one other of the same process.
void Floor(benchmark::State& state) {
  FloorPeer peer;
  PingFloor(state, peer.box(), peer.shared());
}

// ---- The goal's pair: the 8-byte WRITE and its floor, timed by turns ----
//
// The goal divides two times, and on a shared VM a cross-CPU exchange changes 3-4x when the
// hypervisor moves the vCPUs (two threads of one core, or two cores apart), often within a run:
// two rows timed a minute apart may each see another placement. The pair times the operation and
// the floor by turns, in rounds of a few milliseconds, and the ratio it reports (x_floor) is the
// median of the rounds' ratios: each compares the two under one placement.
//   <op>.paired/N, <op>.paired_2proc/N   counters x_floor, op_ns and floor_ns (medians over
//                                        rounds of each side's p50)
constexpr int kPairRounds = 16;
constexpr int kPairOps = 256;

// `napping`, when given, is the floor's thread of this process: it naps through the operation's
// turns (FloorPeer). A two-process pair has none: its peer polls its own CQ throughout, as
// users' programs do.
template <class Operation, class Ping>
void PairWithFloor(benchmark::State& state, Operation& operation, Ping& ping,
                   FloorPeer* napping = nullptr) {
  // Before a side is timed, the device's engine has settled into the policy a row that runs
  // alone after another finds (past its idle period, its CPU reading refreshed).
  const sim::DeviceConfig engine;
  const auto settle = engine.engine_idle_period + engine.engine_idle_period / 4;
  std::vector<int64_t> samples(kPairOps);
  // One side's p50, after it settled; 0 if an operation failed (the row's error is set).
  auto side = [&](auto& once) -> double {
    const auto until = std::chrono::steady_clock::now() + settle;
    for (int n = 0; n < kWarmUpOps || std::chrono::steady_clock::now() < until; ++n)
      if (!once()) return 0;
    for (int64_t& sample : samples) {
      const int64_t t0 = NowNs();
      if (!once()) return 0;
      sample = NowNs() - t0;
    }
    std::nth_element(samples.begin(), samples.begin() + kPairOps / 2, samples.end());
    return static_cast<double>(samples[kPairOps / 2]);
  };
  std::vector<double> ratios, op_ns, floor_ns;
  for (auto _ : state) {
    // The side that goes first changes every round.
    const bool op_first = ratios.size() % 2 == 0;
    auto op_turn = [&] {
      if (napping != nullptr) napping->Nap();
      return side(operation);
    };
    auto floor_turn = [&] {
      if (napping != nullptr) napping->Wake();
      return side(ping);
    };
    const double a = op_first ? op_turn() : floor_turn();
    const double b = op_first ? floor_turn() : op_turn();
    const double o = op_first ? a : b, f = op_first ? b : a;
    if (o == 0 || f == 0) return;
    ratios.push_back(o / f);
    op_ns.push_back(o);
    floor_ns.push_back(f);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  state.counters["x_floor"] = median(ratios);
  state.counters["op_ns"] = median(op_ns);
  state.counters["floor_ns"] = median(floor_ns);
}

// ---- Two processes, each a client of one device daemon ----

// A page both processes map (made before the fork): the floor's mailbox and shared bytes, and
// where the peer's receives land.
struct PeerPage {
  Mailbox box;
  alignas(64) std::atomic<bool> receive_into_dm{false};
  // Set while a two-process row runs (PeerAwake); between them the peer naps, so that it spins
  // against neither the one-process rows nor the device's engine. The peer echoes it in awake.
  alignas(64) std::atomic<bool> active{false};
  alignas(64) std::atomic<bool> awake{false};
  alignas(64) std::byte shared[kMaxBytes];
};

// What the peer tells this process once its end is open.
struct PeerHello {
  uint32_t qpn;
  uint32_t host_rkey;
  uint32_t dm_rkey;
  uint64_t host_addr;
};

std::string DaemonLocator(const std::string& socket, int function) {
  return "simd:" + socket + "#" + std::to_string(function);
}

bool WriteAll(int fd, const void* p, std::size_t n) { return write(fd, p, n) == static_cast<ssize_t>(n); }
bool ReadAll(int fd, void* p, std::size_t n) { return read(fd, p, n) == static_cast<ssize_t>(n); }

// The forked peer, on function 1: it keeps one receive posted and answers each SEND with one of
// the same size (a SEND row is a round trip, as ib_send_lat measures), answers the floor's pings,
// and leaves when the page says stop. Its return value is its exit status.
int RunPeer(const std::string& socket, int fd, PeerPage* page) {
  auto d = driver::Open(DaemonLocator(socket, 1));
  if (!d) Die("the peer cannot open function 1", d.error().describe());
  ibv_context* verbs = (*d)->verbs();
  ibv_pd* pd = v::alloc_pd(verbs);
  if (pd == nullptr) Die("alloc_pd in the peer", std::strerror(errno));
  End e;
  e.Open(verbs, pd, /*shared_pages=*/true);
  const PeerHello hello{e.qp->qp_num, e.host.mr->rkey, e.dm.mr->rkey, e.host.addr()};
  uint32_t parent_qpn = 0;
  if (!WriteAll(fd, &hello, sizeof hello) || !ReadAll(fd, &parent_qpn, sizeof parent_qpn))
    Die("the peer's handshake", "the benchmark process went away");
  Connect(e.qp, parent_qpn, GidOf(simd::FunctionConfig(0)));
  auto post_receive = [&] {
    const Buffer& into = page->receive_into_dm.load(std::memory_order_acquire) ? e.dm : e.host;
    ibv_sge sge{.addr = into.addr(), .length = kMaxBytes, .lkey = into.mr->lkey};
    ibv_recv_wr rwr{};
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (rings::PostRecv(e.qp, &rwr, &bad) != 0) Die("ibv_post_recv in the peer", std::strerror(errno));
  };
  post_receive();
  const char ready = 1;
  if (!WriteAll(fd, &ready, 1)) Die("the peer's handshake", "the benchmark process went away");

  std::vector<std::byte> floor_dst(kMaxBytes);
  // The peer spins on its CQ and the floor's mailbox, as a user's program polls its CQ.
  uint64_t seen = page->box.ping.load();
  std::array<ibv_wc, 8> wc;
  while (!page->box.stop.load(std::memory_order_relaxed)) {
    const bool active = page->active.load(std::memory_order_acquire);
    if (page->awake.load(std::memory_order_relaxed) != active) page->awake.store(active, std::memory_order_release);
    if (!active) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    AnswerFloor(page->box, seen, page->shared, floor_dst.data());
    const int n = rings::PollCq(e.cq, static_cast<int>(wc.size()), wc.data());
    if (n < 0) Die("ibv_poll_cq in the peer", "the device failed");
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) Die("a completion in the peer", ibv_wc_status_str(wc[i].status));
      if (wc[i].opcode != IBV_WC_RECV) continue;  // an answer's own completion
      post_receive();
      ibv_sge sge{.addr = e.host.addr(), .length = wc[i].byte_len, .lkey = e.host.mr->lkey};
      ibv_send_wr answer = MakeWr(Op::kSend, &sge, {});
      ibv_send_wr* bad = nullptr;
      if (rings::PostSend(e.qp, &answer, &bad) != 0) Die("ibv_post_send in the peer", std::strerror(errno));
    }
  }
  const bool clean = e.Close() && v::dealloc_pd(pd) == 0;
  (*d)->Close();
  return clean ? 0 : 1;
}

// This process's end on function 0, connected to the peer's on function 1.
struct TwoProcess {
  PeerPage* page = nullptr;
  pid_t peer = -1;
  std::shared_ptr<driver::Device> device;
  ibv_pd* pd = nullptr;
  End end;
  PeerHello hello{};

  // Forks the peer and connects to it; a failure ends the benchmark with the reason.
  void Start(const std::string& socket) {
    void* m = mmap(nullptr, sizeof(PeerPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) Die("mmap of the shared page", std::strerror(errno));
    page = new (m) PeerPage();
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) Die("socketpair", std::strerror(errno));
    peer = fork();
    if (peer < 0) Die("fork", std::strerror(errno));
    if (peer == 0) {
      close(fds[0]);
      _exit(RunPeer(socket, fds[1], page));
    }
    close(fds[1]);
    auto d = driver::Open(DaemonLocator(socket, 0));
    if (!d) Die("cannot open function 0 of the device daemon", d.error().describe());
    device = *d;
    pd = v::alloc_pd(device->verbs());
    if (pd == nullptr) Die("alloc_pd", std::strerror(errno));
    end.Open(device->verbs(), pd, /*shared_pages=*/true);
    const uint32_t qpn = end.qp->qp_num;
    char ready = 0;
    if (!ReadAll(fds[0], &hello, sizeof hello) || !WriteAll(fds[0], &qpn, sizeof qpn) ||
        !ReadAll(fds[0], &ready, 1))
      Die("the handshake with the peer process", "it exited (its error is above)");
    close(fds[0]);
    Connect(end.qp, hello.qpn, GidOf(simd::FunctionConfig(1)));
  }

  bool Close() {
    page->box.stop.store(true);
    int status = 0;
    waitpid(peer, &status, 0);
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean) std::fprintf(stderr, "onchip wire_bench: the peer process did not end cleanly\n");
    clean &= end.Close();
    clean &= v::dealloc_pd(pd) == 0;
    device->Close();
    munmap(page, sizeof(PeerPage));
    return clean;
  }
};

std::unique_ptr<TwoProcess>& TwoProcessSlot() {
  static std::unique_ptr<TwoProcess> t;
  return t;
}

// For the length of a two-process row: the peer spins on its CQ (as a user's program polls),
// and is spinning before the row's first operation.
struct PeerAwake {
  PeerAwake() {
    PeerPage& page = *TwoProcessSlot()->page;
    page.active.store(true, std::memory_order_release);
    while (!page.awake.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  ~PeerAwake() { TwoProcessSlot()->page->active.store(false, std::memory_order_release); }
};

// From this process to the peer: a write, read or atomic on the peer's buffer (DM or host), or a
// SEND and the peer's answer (a round trip: the answer's receive is posted here, and both
// completions land on this process's one CQ).
Route TwoProcessRoute(const benchmark::State& state, Where where) {
  TwoProcess& t = *TwoProcessSlot();
  const auto len = static_cast<uint32_t>(state.range(0));
  const Buffer& local = where == Where::kLocalDm ? t.end.dm : t.end.host;
  return {.qp = t.end.qp,
          .cq = t.end.cq,
          .local = {.addr = local.addr(), .length = len, .lkey = local.mr->lkey},
          .remote = where == Where::kRemoteDm ? Remote{0, t.hello.dm_rkey}
                                              : Remote{t.hello.host_addr, t.hello.host_rkey},
          .recv_qp = t.end.qp,
          .recv_cq = t.end.cq,
          .receive = {.addr = t.end.host.addr(), .length = kMaxBytes, .lkey = t.end.host.mr->lkey}};
}

// Before a SEND row: the peer's one posted receive lands where this row says from its next
// receive on, so one unmeasured exchange puts the row's receive in place. False if it failed.
bool PrepareTwoProcess(Op op, Where where, WireOp& once) {
  if (op != Op::kSend) return true;
  TwoProcessSlot()->page->receive_into_dm.store(where == Where::kRemoteDm, std::memory_order_release);
  return once();
}

void LatencyTwoProcess(benchmark::State& state, Op op, Where where) {
  const PeerAwake awake;
  WireOp once(state, op, TwoProcessRoute(state, where));
  if (!PrepareTwoProcess(op, where, once) || !WarmUp(once)) return;
  Samples samples;
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    if (!once()) break;
    samples.Add(NowNs() - t0);
  }
  samples.Report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * once.len());
}

// The floor between this process and the peer, over the shared page.
void FloorTwoProcess(benchmark::State& state) {
  const PeerAwake awake;
  TwoProcess& t = *TwoProcessSlot();
  PingFloor(state, t.page->box, t.page->shared);
}

// The goal's pairs (PairWithFloor): a WRITE into the peer's DM against the floor between the
// same two threads, or processes.
void PairedWrite(benchmark::State& state) {
  WireOp write(state, Op::kWrite, OneProcessRoute(state, Where::kRemoteDm));
  FloorPeer peer;
  FloorPing ping(peer.box(), peer.shared(), write.len());
  PairWithFloor(state, write, ping, &peer);
}

void PairedWriteTwoProcess(benchmark::State& state) {
  const PeerAwake awake;
  WireOp write(state, Op::kWrite, TwoProcessRoute(state, Where::kRemoteDm));
  TwoProcess& t = *TwoProcessSlot();
  FloorPing ping(t.page->box, t.page->shared, write.len());
  PairWithFloor(state, write, ping);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {8, 64, 512, 4096, 65536}) b->Arg(n);
  b->UseRealTime();
}

void AtomicSize(benchmark::internal::Benchmark* b) { b->Arg(8)->UseRealTime(); }
// The sizes an operation's rows run at: an atomic is 8 bytes.
void (*SizesOf(Op op))(benchmark::internal::Benchmark*) {
  return op == Op::kFetchAdd || op == Op::kCmpSwap ? AtomicSize : Sizes;
}

// A wire row's fields (bench/row.h): `place` dm or host, the buffer `side` it moves (remote or
// local), or none for the floor.
bench::Fields WireFields(const char* op, const char* impl, const char* place, const char* side,
                         int procs, const char* measure = "latency") {
  return bench::Fields(op, impl).Place(place).Side(side).Procs(procs).Measure(measure);
}

void Register() {
  struct Row {
    const char* name;
    Op op;
  };
  const Row rows[] = {{"rdma_write", Op::kWrite},
                      {"rdma_read", Op::kRead},
                      {"send_recv", Op::kSend},
                      {"atomic_fetch_add", Op::kFetchAdd},
                      {"atomic_cmp_swap", Op::kCmpSwap}};
  // The latency rows of an operation: where its buffers are (the header's list of rows).
  struct Variant {
    const char* op_suffix;
    const char* impl;
    Where where;
    const char* place;  // where the buffer `side` names is
    const char* side;
  };
  const Variant variants[] = {{"", "onchip", Where::kRemoteDm, "dm", "remote"},
                              {"", "host", Where::kRemoteHost, "host", "remote"},
                              {"_local_dm", "onchip", Where::kLocalDm, "dm", "local"},
                              {"_local_dm", "host", Where::kRemoteHost, "host", "local"}};
  const bool two_process = TwoProcessSlot() != nullptr;
  for (const Row r : rows) {
    const Op op = r.op;
    const auto sizes = SizesOf(op);
    for (const Variant v : variants) {
      const std::string name = std::string(r.name) + v.op_suffix + "." + v.impl;
      const Where w = v.where;
      bench::Register(name, WireFields(r.name, "onchip", v.place, v.side, 1),
                      [op, w](benchmark::State& s) { Latency(s, op, w); })
          ->Apply(sizes);
      if (two_process)
        bench::Register(name + "_2proc", WireFields(r.name, "onchip", v.place, v.side, 2),
                        [op, w](benchmark::State& s) { LatencyTwoProcess(s, op, w); })
            ->Apply(sizes);
    }
    bench::Register(std::string(r.name) + ".floor", WireFields(r.name, "floor", "", "", 1), Floor)
        ->Apply(sizes);
    if (two_process)
      bench::Register(std::string(r.name) + ".floor_2proc", WireFields(r.name, "floor", "", "", 2),
                      FloorTwoProcess)
          ->Apply(sizes);
  }
  bench::Register("rdma_write.paired", WireFields("rdma_write", "paired", "dm", "remote", 1),
                  PairedWrite)
      ->Arg(8)->Iterations(kPairRounds)->UseRealTime();
  if (two_process)
    bench::Register("rdma_write.paired_2proc", WireFields("rdma_write", "paired", "dm", "remote", 2),
                    PairedWriteTwoProcess)
        ->Arg(8)->Iterations(kPairRounds)->UseRealTime();
  // Bandwidth: every operation in one process; WRITE, READ and the atomics between two (the
  // peer answers each SEND it receives, so it cannot sink a stream of them).
  for (const Row r : rows) {
    const std::string n = std::string(r.name) + "_bw";
    const Op op = r.op;
    const auto sizes = SizesOf(op);
    for (const Where w : {Where::kRemoteDm, Where::kRemoteHost}) {
      const bool dm = w == Where::kRemoteDm;
      const std::string impl = dm ? ".onchip" : ".host";
      const char* place = dm ? "dm" : "host";
      bench::Register(n + impl, WireFields(r.name, "onchip", place, "remote", 1, "bandwidth"),
                      [op, w](benchmark::State& s) {
                        Bandwidth(s, op, OneProcessRoute(s, w), F().sim.get());
                      })
          ->Apply(sizes);
      if (two_process && op != Op::kSend)
        bench::Register(n + impl + "_2proc",
                        WireFields(r.name, "onchip", place, "remote", 2, "bandwidth"),
                        [op, w](benchmark::State& s) {
                          const PeerAwake awake;
                          Bandwidth(s, op, TwoProcessRoute(s, w), nullptr);
                        })
            ->Apply(sizes);
    }
  }
}

// Remembers each row's p50 of every repetition (a pair's x_floor) for the closing summary, which
// takes their median as the report does (tools/cli/report.py), so both print one number for the
// goal.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<double>> ns;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) {
        auto it = r.counters.find("p50_ns");
        if (it == r.counters.end()) it = r.counters.find("x_floor");
        ns[r.benchmark_name()].push_back(it != r.counters.end() ? it->second.value
                                                                : r.GetAdjustedRealTime());
      }
    ConsoleReporter::ReportRuns(runs);
  }
  double Ratio(const std::string& slow, const std::string& fast) const {
    const double a = Median(slow), b = Median(fast);
    return a == 0 || b == 0 ? 0 : a / b;
  }
  double Median(const std::string& name) const {
    auto it = ns.find(name);
    if (it == ns.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
};

}  // namespace
}  // namespace onchip

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // The two-process rows fork their peer first, before this process opens any device.
  const char* daemon = std::getenv("ONCHIP_BENCH_DAEMON");
  if (daemon != nullptr && *daemon != '\0') {
    auto& t = onchip::TwoProcessSlot();
    t = std::make_unique<onchip::TwoProcess>();
    t->Start(daemon);
  }
  benchmark::AddCustomContext("onchip.device", "software ConnectX (tools/sim, in-process)");
  benchmark::AddCustomContext("onchip.wire",
                              "two RC QPs of one process on one device, looped back by GID");
  benchmark::AddCustomContext("onchip.daemon", onchip::TwoProcessSlot() ? daemon : "absent");
  onchip::Register();
  onchip::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n== over the wire, p50 per operation, as a multiple of the shared-memory floor ==\n");
  for (const char* op : {"rdma_write", "rdma_read", "send_recv"})
    for (const char* n : {"8", "4096", "65536"}) {
      const std::string floor = std::string(op) + ".floor/" + n + "/real_time";
      std::printf("%-22s DM %6.2fx  host %6.2fx of the floor\n", (std::string(op) + "/" + n).c_str(),
                  reporter.Ratio(std::string(op) + ".onchip/" + n + "/real_time", floor),
                  reporter.Ratio(std::string(op) + ".host/" + n + "/real_time", floor));
    }
  if (onchip::TwoProcessSlot())
    for (const char* op : {"rdma_write", "rdma_read", "send_recv"})
      std::printf("%-22s DM %6.2fx  host %6.2fx of the floor (two processes)\n",
                  (std::string(op) + "/8").c_str(),
                  reporter.Ratio(std::string(op) + ".onchip_2proc/8/real_time", std::string(op) + ".floor_2proc/8/real_time"),
                  reporter.Ratio(std::string(op) + ".host_2proc/8/real_time", std::string(op) + ".floor_2proc/8/real_time"));
  // The goal is judged in one place, the report tools/onchip bench writes from this suite's JSON
  // (tools/cli/report.py), for the one- and the two-process rows alike.
  for (const char* where : {"", "_2proc"}) {
    const double x = reporter.Median(std::string("rdma_write.paired") + where + "/8/iterations:" +
                                     std::to_string(onchip::kPairRounds) + "/real_time");
    if (x > 0)
      std::printf("8-byte RDMA WRITE into DM%s: %.2fx of the floor, the two timed by turns (the "
                  "goal is judged by tools/onchip bench's report)\n",
                  *where ? " (two processes)" : "", x);
  }
  benchmark::Shutdown();
  // Closed and destroyed here, before static destruction takes the software ConnectX's fabric.
  auto& fixture = onchip::FixtureSlot();
  bool clean = !fixture || fixture->Close();
  fixture.reset();
  if (auto& t = onchip::TwoProcessSlot()) {
    clean &= t->Close();
    t.reset();
  }
  return clean ? 0 : 1;
}
