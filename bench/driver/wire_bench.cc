// The main job over the wire: RDMA WRITE, RDMA READ, SEND/RECV and 8-byte atomics between two RC
// QPs of one process on the in-process software ConnectX, with device memory against host memory
// on either side, beside the software floor measured in the same run.
//
// Rows (report.py's `<op>.<impl>/<bytes>`; latency rows are one signaled operation at a time, from
// the post to its completion, so a WRITE's time includes the responder's acknowledgement; post
// and poll are the provider's own ops, the ones ibv_post_send and ibv_poll_cq call):
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
//   rdma_write_bw / rdma_read_bw  32 operations in flight, bytes per second
// for op in rdma_write, rdma_read, send_recv (8 B to 64 KiB) and atomic_fetch_add,
// atomic_cmp_swap (8 B). Latency rows carry the per-operation p50_ns and p99_ns counters (a
// steady_clock read per operation, about 20 ns, is inside them); a failed operation ends its row
// with the completion's status as the error.
//
// Where the bytes live: on the software ConnectX, device memory is host memory behind the
// device model, so DM against host measures the model and the driver, not a NIC; the header says
// so. The engine is a thread of this process: the floor is the cost of waking that thread.
#include <benchmark/benchmark.h>
#include <sys/prctl.h>
#include <time.h>
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
#include <string>
#include <thread>
#include <vector>

#include "driver/context.h"
#include "driver/rings/data_path.h"
#include "driver/verbs/calls.h"
#include "tools/sim/device.h"
#include "tools/sim/wire.h"

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

// A buffer of kMaxBytes either in host memory or in device memory, with its MR.
struct Buffer {
  ibv_mr* mr = nullptr;
  ibv_dm* dm = nullptr;
  std::byte* host = nullptr;  // host buffers only
  // The address an SGE or a remote address names: the VA for host memory, the offset for a
  // zero-based DM MR.
  uint64_t addr() const { return dm != nullptr ? 0 : reinterpret_cast<uint64_t>(host); }
};

constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct Fixture {
  std::unique_ptr<sim::Device> sim;
  std::unique_ptr<Context> ctx;
  ibv_pd* pd = nullptr;
  ibv_cq* cq[2] = {};
  ibv_qp* qp[2] = {};
  Buffer host[2];  // host[0] local, host[1] remote
  Buffer dm[2];    // dm[0] local, dm[1] remote
  ibv_gid gid{};

  Fixture() {
    sim::DeviceConfig config;
    config.memic_bar_size = 1 << 20;
    config.max_memic_size = 1 << 20;
    auto s = sim::Device::Create(config);
    if (!s) Die("cannot start the software ConnectX", s.error().describe());
    sim = std::move(*s);
    auto c = Context::Open(*sim);
    if (!c) Die("cannot open the device", c.error().describe());
    ctx = std::make_unique<Context>(std::move(*c));
    ibv_context* verbs = ctx->verbs();
    pd = v::alloc_pd(verbs);
    if (pd == nullptr) Die("alloc_pd", std::strerror(errno));
    const auto gids = sim::DeviceGids(sim->config());
    std::memcpy(gid.raw, gids[kRoceV2GidIndex].data(), sizeof gid.raw);
    for (int i = 0; i < 2; ++i) {
      cq[i] = v::create_cq(verbs, 2 * kQueueDepth, nullptr, 0);
      if (cq[i] == nullptr) Die("create_cq", std::strerror(errno));
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq[i];
      a.qp_type = IBV_QPT_RC;
      a.cap.max_send_wr = a.cap.max_recv_wr = kQueueDepth;
      a.cap.max_send_sge = a.cap.max_recv_sge = 1;
      qp[i] = v::create_qp(pd, &a);
      if (qp[i] == nullptr) Die("create_qp", std::strerror(errno));
      host[i].host = static_cast<std::byte*>(std::aligned_alloc(4096, kMaxBytes));
      if (host[i].host == nullptr) Die("aligned_alloc", "out of memory");
      std::memset(host[i].host, 0, kMaxBytes);
      host[i].mr = v::reg_mr(pd, host[i].host, kMaxBytes, reinterpret_cast<uintptr_t>(host[i].host), kAccess);
      if (host[i].mr == nullptr) Die("reg_mr", std::strerror(errno));
      ibv_alloc_dm_attr da{.length = kMaxBytes, .log_align_req = 6, .comp_mask = 0};
      dm[i].dm = v::alloc_dm(verbs, &da);
      if (dm[i].dm == nullptr) Die("alloc_dm", std::strerror(errno));
      dm[i].mr = v::reg_dm_mr(pd, dm[i].dm, 0, kMaxBytes, kAccess | IBV_ACCESS_ZERO_BASED);
      if (dm[i].mr == nullptr) Die("reg_dm_mr", std::strerror(errno));
    }
    Connect(qp[0], qp[1]->qp_num);
    Connect(qp[1], qp[0]->qp_num);
  }

  void Connect(ibv_qp* q, uint32_t dest) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (v::modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
      Die("modify_qp to INIT", std::strerror(errno));
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = dest;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = kRoceV2GidIndex;
    a.ah_attr.grh.hop_limit = 64;
    if (v::modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
      Die("modify_qp to RTR", std::strerror(errno));
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 16;
    if (v::modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
      Die("modify_qp to RTS", std::strerror(errno));
  }

  bool Close() {
    bool clean = true;
    auto check = [&](int rc, const char* what) {
      if (rc != 0) {
        std::fprintf(stderr, "onchip wire_bench: %s failed: %s\n", what, std::strerror(rc));
        clean = false;
      }
    };
    for (int i = 0; i < 2; ++i) {
      check(v::destroy_qp(qp[i]), "destroy_qp");
      check(v::dereg_mr(host[i].mr), "dereg_mr");
      check(v::dereg_mr(dm[i].mr), "dereg_mr of a DM MR");
      check(v::free_dm(dm[i].dm), "free_dm");
      std::free(host[i].host);
      check(v::destroy_cq(cq[i]), "destroy_cq");
    }
    check(v::dealloc_pd(pd), "dealloc_pd");
    const driver::TeardownReport r = ctx->Close();
    if (r.first_error || r.objects() != 0 || r.pages_still_held) {
      std::fprintf(stderr, "onchip wire_bench: the device still held objects: %s\n", r.describe().c_str());
      clean = false;
    }
    return clean;
  }

  [[noreturn]] static void Die(const char* what, const std::string& why) {
    std::fprintf(stderr, "onchip wire_bench: %s on the software ConnectX: %s\n", what, why.c_str());
    std::exit(1);
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

// One work request from QP 0 to QP 1 at a time; for a SEND, a receive is posted on QP 1 first and
// the operation ends when both the receive and the send completed.
void Latency(benchmark::State& state, Op op, Where where) {
  Fixture& f = F();
  const auto len = static_cast<uint32_t>(state.range(0));
  const Buffer& local = where == Where::kLocalDm ? f.dm[0] : f.host[0];
  const Buffer& remote = where == Where::kRemoteDm ? f.dm[1] : f.host[1];
  ibv_sge sge{.addr = local.addr(), .length = len, .lkey = local.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = OpcodeOf(op);
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op == Op::kFetchAdd || op == Op::kCmpSwap) {
    wr.wr.atomic = {.remote_addr = remote.addr(), .compare_add = 1, .swap = 2, .rkey = remote.mr->rkey};
  } else if (op != Op::kSend) {
    wr.wr.rdma = {.remote_addr = remote.addr(), .rkey = remote.mr->rkey};
  }
  ibv_sge rsge{.addr = remote.addr(), .length = len, .lkey = remote.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  Samples samples;
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    ibv_send_wr* bad = nullptr;
    ibv_recv_wr* rbad = nullptr;
    if (op == Op::kSend && rings::PostRecv(f.qp[1], &rwr, &rbad) != 0) {
      state.SkipWithError("ibv_post_recv failed");
      break;
    }
    if (rings::PostSend(f.qp[0], &wr, &bad) != 0) {
      state.SkipWithError("ibv_post_send failed");
      break;
    }
    if (op == Op::kSend && !PollOne(state, f.cq[1])) break;
    if (!PollOne(state, f.cq[0])) break;
    samples.Add(NowNs() - t0);
  }
  samples.Report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * len);
}

// kBwInFlight operations in flight, one completion each, as ib_write_bw keeps its queue full.
void Bandwidth(benchmark::State& state, Op op, Where where) {
  Fixture& f = F();
  const auto len = static_cast<uint32_t>(state.range(0));
  const Buffer& local = f.host[0];
  const Buffer& remote = where == Where::kRemoteDm ? f.dm[1] : f.host[1];
  ibv_sge sge{.addr = local.addr(), .length = len, .lkey = local.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = OpcodeOf(op);
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma = {.remote_addr = remote.addr(), .rkey = remote.mr->rkey};
  int in_flight = 0;
  std::array<ibv_wc, 16> wc;
  for (auto _ : state) {
    while (in_flight == kBwInFlight) {
      const int n = rings::PollCq(f.cq[0], static_cast<int>(wc.size()), wc.data());
      for (int i = 0; i < n; ++i)
        if (wc[i].status != IBV_WC_SUCCESS) {
          state.SkipWithError(("completion error: status " + std::to_string(wc[i].status)).c_str());
          return;
        }
      if (n < 0) {
        state.SkipWithError("ibv_poll_cq failed");
        return;
      }
      in_flight -= n;
    }
    ibv_send_wr* bad = nullptr;
    if (rings::PostSend(f.qp[0], &wr, &bad) != 0) {
      state.SkipWithError("ibv_post_send failed");
      return;
    }
    ++in_flight;
  }
  while (in_flight > 0) {
    const int n = rings::PollCq(f.cq[0], static_cast<int>(wc.size()), wc.data());
    if (n < 0) break;
    in_flight -= n;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * len);
}

// The software floor: this thread copies N bytes into a shared buffer and publishes a sequence
// number; a second thread, spinning on it, copies the bytes out and answers with the same number.
struct alignas(64) Mailbox {
  std::atomic<uint64_t> ping{0};
  alignas(64) std::atomic<uint64_t> pong{0};
  alignas(64) std::atomic<bool> stop{false};
};

void Floor(benchmark::State& state) {
  const auto len = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> src(kMaxBytes, std::byte{1}), shared(kMaxBytes), dst(kMaxBytes);
  Mailbox box;
  // The peer waits as the software ConnectX's engine thread does (sim::DeviceConfig): it spins
  // for engine_spin_period after its last work, then naps engine_nap between looks, so on a
  // small shared machine the floor pays the same scheduling the device does.
  const sim::DeviceConfig engine;
  std::thread peer([&] {
    prctl(PR_SET_TIMERSLACK, 1000UL);
    const timespec nap{.tv_sec = 0, .tv_nsec = static_cast<long>(std::chrono::nanoseconds(engine.engine_nap).count())};
    uint64_t seen = 0;
    auto last_work = std::chrono::steady_clock::now();
    while (!box.stop.load(std::memory_order_relaxed)) {
      const uint64_t s = box.ping.load(std::memory_order_acquire);
      if (s == seen) {
        if (std::chrono::steady_clock::now() - last_work >= engine.engine_spin_period) nanosleep(&nap, nullptr);
        continue;
      }
      std::memcpy(dst.data(), shared.data(), len);
      seen = s;
      box.pong.store(s, std::memory_order_release);
      last_work = std::chrono::steady_clock::now();
    }
  });
  Samples samples;
  uint64_t seq = 0;
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    std::memcpy(shared.data(), src.data(), len);
    box.ping.store(++seq, std::memory_order_release);
    while (box.pong.load(std::memory_order_acquire) != seq) {
    }
    samples.Add(NowNs() - t0);
  }
  box.stop.store(true);
  peer.join();
  samples.Report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(len));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {8, 64, 512, 4096, 65536}) b->Arg(n);
  b->UseRealTime();
}

void Register() {
  struct Row {
    const char* name;
    Op op;
  };
  for (const Row r : {Row{"rdma_write", Op::kWrite}, Row{"rdma_read", Op::kRead},
                      Row{"send_recv", Op::kSend}}) {
    const std::string n = r.name;
    const Op op = r.op;
    benchmark::RegisterBenchmark((n + ".onchip").c_str(), [op](benchmark::State& s) {
      Latency(s, op, Where::kRemoteDm);
    })->Apply(Sizes);
    benchmark::RegisterBenchmark((n + ".host").c_str(), [op](benchmark::State& s) {
      Latency(s, op, Where::kRemoteHost);
    })->Apply(Sizes);
    benchmark::RegisterBenchmark((n + ".floor").c_str(), Floor)->Apply(Sizes);
    benchmark::RegisterBenchmark((n + "_local_dm.onchip").c_str(), [op](benchmark::State& s) {
      Latency(s, op, Where::kLocalDm);
    })->Apply(Sizes);
    benchmark::RegisterBenchmark((n + "_local_dm.host").c_str(), [op](benchmark::State& s) {
      Latency(s, op, Where::kRemoteHost);
    })->Apply(Sizes);
  }
  for (const Row r : {Row{"atomic_fetch_add", Op::kFetchAdd}, Row{"atomic_cmp_swap", Op::kCmpSwap}}) {
    const std::string n = r.name;
    const Op op = r.op;
    benchmark::RegisterBenchmark((n + ".onchip").c_str(), [op](benchmark::State& s) {
      Latency(s, op, Where::kRemoteDm);
    })->Arg(8)->UseRealTime();
    benchmark::RegisterBenchmark((n + ".host").c_str(), [op](benchmark::State& s) {
      Latency(s, op, Where::kRemoteHost);
    })->Arg(8)->UseRealTime();
    benchmark::RegisterBenchmark((n + ".floor").c_str(), Floor)->Arg(8)->UseRealTime();
  }
  for (const Row r : {Row{"rdma_write_bw", Op::kWrite}, Row{"rdma_read_bw", Op::kRead}}) {
    const std::string n = r.name;
    const Op op = r.op;
    for (const Where w : {Where::kRemoteDm, Where::kRemoteHost})
      benchmark::RegisterBenchmark((n + (w == Where::kRemoteDm ? ".onchip" : ".host")).c_str(),
                                   [op, w](benchmark::State& s) { Bandwidth(s, op, w); })
          ->Arg(4096)
          ->Arg(65536)
          ->UseRealTime();
  }
}

// Remembers each row's time for the closing summary.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) {
        auto it = r.counters.find("p50_ns");
        ns[r.benchmark_name()] = it != r.counters.end() ? it->second.value : r.GetAdjustedRealTime();
      }
    ConsoleReporter::ReportRuns(runs);
  }
  double Ratio(const std::string& slow, const std::string& fast) const {
    auto a = ns.find(slow), b = ns.find(fast);
    return a == ns.end() || b == ns.end() || b->second == 0 ? 0 : a->second / b->second;
  }
};

}  // namespace
}  // namespace onchip

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("onchip.device", "software ConnectX (tools/sim, in-process)");
  benchmark::AddCustomContext("onchip.wire",
                              "two RC QPs of one process on one device, looped back by GID");
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
  const double write8 = reporter.Ratio("rdma_write.onchip/8/real_time", "rdma_write.floor/8/real_time");
  if (write8 > 0)
    std::printf("goal: 8-byte RDMA WRITE into DM within 3x of the floor: %.2fx: %s\n", write8,
                write8 <= 3.0 ? "met" : "MISSED");
  benchmark::Shutdown();
  // Closed and destroyed here, before static destruction takes the software ConnectX's fabric.
  auto& fixture = onchip::FixtureSlot();
  const bool clean = !fixture || fixture->Close();
  fixture.reset();
  return clean ? 0 : 1;
}
