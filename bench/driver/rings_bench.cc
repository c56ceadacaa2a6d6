// The data path's hot calls against the bare stores and loads they cannot avoid, in one run, on
// a sink device: the rings, doorbell records and CQ are host memory, the BlueFlame register is a
// page of host memory (write-back, so this is the CPU cost, not PCIe), and the bus counts
// DoorbellRung. The "device" side of each loop is the least it can be: a send WQE is retired as
// soon as the queue allows, a CQE's owner byte is flipped before it is polled.
//
// Send WQEs are retired 32 at a time (one signaled completion per 32, as selective signaling
// does); each receive WQE is retired as its completion would.
//
//   PostSend/blueflame   ibv_post_send of one SEND with one SGE (ds 2: one BlueFlame line)
//   PostSend/doorbell    the same on a doorbell-only register (8-byte doorbell)
//   PostRecv             ibv_post_recv of one SGE
//   PollCq/one           ibv_poll_cq of one requester CQE
//   WrSend/blueflame     ibv_wr_start, ibv_wr_send, ibv_wr_set_sge, ibv_wr_complete
// and their floors:
//   Floor/wqe_bf         64-byte WQE to host memory, doorbell record, 64-byte WC copy, fences
//   Floor/wqe_db         64-byte WQE, doorbell record, fence, 8-byte doorbell, fence
//   Floor/rwqe           32-byte receive WQE (entry + terminator), doorbell record
//   Floor/cqe            owner check, load barrier, 64-byte CQE read, consumer index store
// and their bounds, the least a call can be (the floor's stores, plus being called, reading the
// request and keeping its wr_id; a poll finds the wr_id and fills the completion), with no
// check of any kind:
//   Bound/post_send_bf, Bound/post_send_db, Bound/post_recv, Bound/poll_cq
// The summary prints each call's time over its floor and its bound's, as information: no goal is
// judged on them (the goal of each within 2x of its floor is retired). A bound's own ratio to
// its floor is what any provider's call pays on this machine at least; one run alone may sit in
// the machine's slow mode.
#include <benchmark/benchmark.h>
#include <emmintrin.h>
#include <infiniband/verbs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/row.h"
#include "driver/rings/bfreg.h"
#include "driver/bus/bus.h"
#include "driver/rings/data_path.h"
#include "driver/rings/wqe_segment.h"
#include "mmio/barriers.h"
#include "mmio/wc_copy.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/uar_page.h"

namespace onchip {
namespace {

using driver::rings::QpTransport;

// The sink: no BAR worth the name, no DMA, doorbells counted.
class SinkBus final : public driver::bus::Bus {
 public:
  std::byte* bar0() const override { return bar_; }
  uint64_t bar0_size() const override { return sizeof(bar_); }
  Result<driver::bus::DmaMapping> MapHost(std::byte*, uint64_t) override {
    return Fail(EOPNOTSUPP, "sink bus: no DMA");
  }
  Result<uint64_t> Map(const alloc::Region&) override { return Fail(EOPNOTSUPP, "no DMA"); }
  void Unmap(const alloc::Region&, uint64_t) override {}
  void Notify() override {}
  void DoorbellRung() override { ++doorbells; }
  WindowMemory window_memory() const override {
    return {mmio::MemoryType::kWriteBack, "host memory (the sink)"};
  }
  uint64_t doorbells = 0;

 protected:
  Result<void> UnmapHost(uint64_t, uint64_t) override { return {}; }

 private:
  mutable std::byte bar_[64]{};
};

// The BlueFlame copy for the sink's page, write-back host memory: the one the driver picks for
// such a window (driver/copy_kernels.h), used by the calls and their floors and bounds alike.
mmio::LineFn SinkLine() { return mmio::ToDeviceFor(mmio::MemoryType::kWriteBack).line64; }

std::byte* AlignedZero(std::size_t n) {
  auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096));
  if (p == nullptr) std::abort();
  std::memset(p, 0, n);
  return p;
}

constexpr uint32_t kWqeCnt = 256;
constexpr uint32_t kCqeCnt = 256;
constexpr uint32_t kQpn = 0x77;

// One QP and one CQ on the sink. Leaked on purpose: the process ends after the run.
struct Sink {
  explicit Sink(bool blueflame) {
    sq_ring = AlignedZero(kWqeCnt * 64);
    rq_ring = AlignedZero(kWqeCnt * 64);
    cq_buf = AlignedZero(kCqeCnt * 64);
    uar = AlignedZero(4096);
    bf.reg = uar + prm::MLX5_BF_OFFSET;
    bf.buf_size = blueflame ? 256 : 0;
    bf.blueflame = blueflame;
    bf.need_lock = false;  // a thread domain's register
    bf.line64 = SinkLine();
    driver::rings::SendQueueDesc sd;
    sd.ring = sq_ring;
    sd.wqe_cnt = kWqeCnt;
    sd.max_post = 64;
    sd.db_counter = &dbr.snd_counter;
    sd.bf = &bf;
    sd.bus = &bus;
    sd.qpn = kQpn;
    sd.transport = QpTransport::kRc;
    sd.max_inline_data = 64;
    sd.max_send_sge = 2;
    sd.locked = false;
    driver::rings::RecvQueueDesc rd;
    rd.ring = rq_ring;
    rd.wqe_cnt = kWqeCnt;
    rd.wqe_shift = 5;
    rd.max_recv_sge = 2;
    rd.db_counter = &dbr.rcv_counter;
    rd.bus = &bus;
    rd.locked = false;
    driver::rings::CqRingDesc cd;
    cd.buf = cq_buf;
    cd.cqe_cnt = kCqeCnt;
    cd.dbr = &cq_dbr;
    cd.cqn = 1;
    cd.uar_cq_doorbell = uar + prm::MLX5_CQ_DOORBELL;
    cd.bus = &bus;
    cd.qpns = &table;
    cd.locked = false;
    if (!qp.sq.Init(sd) || !qp.rq.Init(rd) || !cq.ring.Init(cd)) std::abort();
    qp.queues = {&qp.sq, &qp.rq, nullptr};
    if (!table.Insert(kQpn, &qp.queues)) std::abort();
    if (!driver::rings::InstallWrOps(&qp.verbs.qp_ex, IBV_QP_EX_WITH_SEND, QpTransport::kRc))
      std::abort();
    // Every CQE names the QP's first WQE; the loop only flips owner bytes.
    for (uint32_t i = 0; i < kCqeCnt; ++i) {
      auto* cqe = reinterpret_cast<prm::pod::mlx5_cqe64*>(cq_buf + i * 64);
      cqe->sop_drop_qpn = prm::Be32::FromHost(uint32_t{prm::MLX5_OPCODE_SEND} << 24 | kQpn);
      cqe->wqe_counter = prm::Be16::FromHost(0);
    }
  }

  SinkBus bus;
  std::byte* sq_ring;
  std::byte* rq_ring;
  std::byte* cq_buf;
  std::byte* uar;
  prm::QpDoorbellRecord dbr{};
  prm::CqDoorbellRecord cq_dbr{};
  driver::Bfreg bf;
  driver::rings::QpnTable table;
  driver::rings::DataPathQp qp{};
  driver::rings::DataPathCq cq{};
};

std::vector<std::byte> g_buffer(4096);

void PostSendLoop(benchmark::State& state, bool blueflame) {
  static Sink* sinks[2] = {new Sink(false), new Sink(true)};
  Sink& s = *sinks[blueflame ? 1 : 0];
  ibv_sge sge{reinterpret_cast<uint64_t>(g_buffer.data()), 64, 1};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  uint32_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(driver::rings::PostSend(&s.qp.verbs.qp, &wr, &bad));
    // The sink completes every 32nd WQE (one signaled completion retires 32), as an
    // application that signals selectively does.
    if ((++n & 31) == 0) s.qp.sq.Retire(static_cast<uint16_t>(s.qp.sq.cur_post() - 1));
  }
  benchmark::DoNotOptimize(s.bus.doorbells);
}

void WrSendLoop(benchmark::State& state) {
  static Sink* sink = new Sink(true);
  ibv_qp_ex* qpx = &sink->qp.verbs.qp_ex;
  const uint64_t addr = reinterpret_cast<uint64_t>(g_buffer.data());
  uint32_t n = 0;
  for (auto _ : state) {
    ibv_wr_start(qpx);
    qpx->wr_id = n;
    qpx->wr_flags = 0;
    ibv_wr_send(qpx);
    ibv_wr_set_sge(qpx, 1, addr, 64);
    benchmark::DoNotOptimize(ibv_wr_complete(qpx));
    if ((++n & 31) == 0) sink->qp.sq.Retire(static_cast<uint16_t>(sink->qp.sq.cur_post() - 1));
  }
}

void PostRecvLoop(benchmark::State& state) {
  static Sink* sink = new Sink(true);
  ibv_sge sge{reinterpret_cast<uint64_t>(g_buffer.data()), 64, 1};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  for (auto _ : state) {
    benchmark::DoNotOptimize(driver::rings::PostRecv(&sink->qp.verbs.qp, &wr, &bad));
    benchmark::DoNotOptimize(sink->qp.rq.Retire());
  }
}

void PollCqLoop(benchmark::State& state) {
  static Sink* sink = new Sink(true);
  uint32_t produced = sink->cq.ring.consumer_index();
  ibv_wc wc;
  for (auto _ : state) {
    auto* cqe = reinterpret_cast<prm::pod::mlx5_cqe64*>(sink->cq_buf +
                                                        (produced & (kCqeCnt - 1)) * 64);
    cqe->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, prm::CqeOwnerFor(produced, kCqeCnt));
    ++produced;
    benchmark::DoNotOptimize(driver::rings::PollCq(&sink->cq.verbs.cq, 1, &wc));
  }
}

// ---- floors: the stores and loads the calls above cannot avoid ----

void FloorWqe(benchmark::State& state, bool blueflame) {
  std::byte* ring = AlignedZero(kWqeCnt * 64);
  std::byte* reg = AlignedZero(4096);
  prm::QpDoorbellRecord dbr{};
  alignas(64) std::byte wqe[64] = {};
  uint32_t post = 0;
  uint32_t half = 0;
  const mmio::LineFn line = SinkLine();
  for (auto _ : state) {
    std::byte* slot = ring + (post & (kWqeCnt - 1)) * 64;
    std::memcpy(slot, wqe, 64);
    ++post;
    mmio::ToDeviceBarrier();
    dbr.snd_counter = prm::Be32::FromHost(post & 0xffff);
    mmio::WcStart();
    if (blueflame) {
      line(reg + 0x800 + half, slot);
      half ^= 128;
    } else {
      uint64_t word;
      std::memcpy(&word, slot, 8);
      *reinterpret_cast<volatile uint64_t*>(reg + 0x800) = word;
    }
    mmio::WcFlush();
    benchmark::ClobberMemory();
  }
  std::free(ring);
  std::free(reg);
}

void FloorRecvWqe(benchmark::State& state) {
  std::byte* ring = AlignedZero(kWqeCnt * 32);
  prm::QpDoorbellRecord dbr{};
  alignas(16) std::byte wqe[32] = {};
  uint32_t head = 0;
  for (auto _ : state) {
    std::memcpy(ring + (head & (kWqeCnt - 1)) * 32, wqe, 32);
    ++head;
    mmio::ToDeviceBarrier();
    dbr.rcv_counter = prm::Be32::FromHost(head & 0xffff);
    benchmark::ClobberMemory();
  }
  std::free(ring);
}

void FloorCqe(benchmark::State& state) {
  std::byte* buf = AlignedZero(kCqeCnt * 64);
  prm::CqDoorbellRecord dbr{};
  uint32_t ci = 0;
  __m128i sink = _mm_setzero_si128();
  for (auto _ : state) {
    auto* cqe = reinterpret_cast<prm::pod::mlx5_cqe64*>(buf + (ci & (kCqeCnt - 1)) * 64);
    cqe->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, prm::CqeOwnerFor(ci, kCqeCnt));  // the device
    const uint8_t op_own = *static_cast<volatile uint8_t*>(&cqe->op_own);
    if (prm::CqeOwner(op_own) == prm::CqeOwnerFor(ci, kCqeCnt)) {
      ++ci;
      mmio::DmaReadBarrier();
      const auto* v = reinterpret_cast<const __m128i*>(cqe);
      sink = _mm_xor_si128(sink, _mm_xor_si128(_mm_xor_si128(_mm_load_si128(v), _mm_load_si128(v + 1)),
                                               _mm_xor_si128(_mm_load_si128(v + 2), _mm_load_si128(v + 3))));
      dbr.set_ci = prm::Be32::FromHost(ci & 0xffffff);
    }
    benchmark::DoNotOptimize(sink);
    benchmark::ClobberMemory();
  }
  std::free(buf);
}

// ---- bounds: the least a call can be ----
//
// Beyond its floor's stores, any provider's call must be called, read the request and keep the
// wr_id a completion returns (a poll: find it, and fill the work completion). These calls do
// only that, with no check at all (no room, opcode or SGE count, no lock, no QP lookup, no wake-up
// of a sleeping device), so no correct provider is cheaper: a goal below a bound's own ratio to
// its floor cannot be met by any implementation on this machine.

struct BoundQueue {
  std::byte* ring = AlignedZero(kWqeCnt * 64);
  std::byte* reg = AlignedZero(4096);
  uint64_t wr_ids[kWqeCnt] = {};
  prm::QpDoorbellRecord dbr{};
  prm::CqDoorbellRecord cq_dbr{};
  uint32_t head = 0;
  mmio::LineFn line = SinkLine();  // as the driver's Bfreg::line64
};

[[gnu::noinline]] int BoundPostSend(BoundQueue* q, ibv_send_wr* wr, bool blueflame) {
  const uint32_t idx = q->head & (kWqeCnt - 1);
  std::byte* wqe = q->ring + std::size_t{idx} * 64;
  const uint8_t opcode = wr->opcode == IBV_WR_SEND ? prm::MLX5_OPCODE_SEND : prm::MLX5_OPCODE_NOP;
  const uint64_t ctrl = driver::rings::Pair(
      prm::Be32::FromHost(prm::OpmodIdxOpcode(0, static_cast<uint16_t>(q->head), opcode)),
      prm::Be32::FromHost(prm::QpnDs(kQpn, 2)));
  const uint64_t fm_ce_se = (wr->send_flags & IBV_SEND_SIGNALED) ? prm::MLX5_WQE_CTRL_CQ_UPDATE : 0;
  driver::rings::StoreSegment(wqe, ctrl, fm_ce_se << 24);
  const ibv_sge& sge = wr->sg_list[0];
  driver::rings::StoreDataSegment(wqe + 16, sge.lkey, sge.addr, sge.length);
  q->wr_ids[idx] = wr->wr_id;
  ++q->head;
  mmio::ToDeviceBarrier();
  q->dbr.snd_counter = prm::Be32::FromHost(q->head & 0xffff);
  mmio::WcStart();
  if (blueflame)
    q->line(q->reg + 0x800 + (q->head & 1) * 128, wqe);
  else
    *reinterpret_cast<volatile uint64_t*>(q->reg + 0x800) = ctrl;
  mmio::WcFlush();
  return 0;
}

[[gnu::noinline]] int BoundPostRecv(BoundQueue* q, ibv_recv_wr* wr) {
  const uint32_t idx = q->head & (kWqeCnt - 1);
  const ibv_sge& sge = wr->sg_list[0];
  driver::rings::StoreDataSegment(q->ring + std::size_t{idx} * 32, sge.lkey, sge.addr, sge.length);
  q->wr_ids[idx] = wr->wr_id;
  ++q->head;
  mmio::ToDeviceBarrier();
  q->dbr.rcv_counter = prm::Be32::FromHost(q->head & 0xffff);
  return 0;
}

[[gnu::noinline]] int BoundPollCq(BoundQueue* q, ibv_wc* wc) {
  auto* cqe = reinterpret_cast<const prm::pod::mlx5_cqe64*>(q->ring + (q->head & (kCqeCnt - 1)) * 64);
  const uint8_t op_own = *static_cast<const volatile uint8_t*>(&cqe->op_own);
  if (prm::CqeOwner(op_own) != prm::CqeOwnerFor(q->head, kCqeCnt)) return 0;
  mmio::DmaReadBarrier();
  wc->wr_id = q->wr_ids[cqe->wqe_counter.host() & (kWqeCnt - 1)];
  wc->status = IBV_WC_SUCCESS;
  wc->opcode = IBV_WC_SEND;
  wc->byte_len = cqe->byte_cnt.host();
  wc->qp_num = prm::CqeQpn(cqe->sop_drop_qpn.host());
  ++q->head;
  q->cq_dbr.set_ci = prm::Be32::FromHost(q->head & 0xffffff);
  return 1;
}

void BoundSend(benchmark::State& state, bool blueflame) {
  BoundQueue* q = new BoundQueue;
  ibv_sge sge{reinterpret_cast<uint64_t>(g_buffer.data()), 64, 1};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  for (auto _ : state) benchmark::DoNotOptimize(BoundPostSend(q, &wr, blueflame));
}

void BoundRecv(benchmark::State& state) {
  BoundQueue* q = new BoundQueue;
  ibv_sge sge{reinterpret_cast<uint64_t>(g_buffer.data()), 64, 1};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  for (auto _ : state) benchmark::DoNotOptimize(BoundPostRecv(q, &wr));
}

void BoundPoll(benchmark::State& state) {
  BoundQueue* q = new BoundQueue;
  uint32_t produced = 0;
  ibv_wc wc;
  for (auto _ : state) {
    auto* cqe = reinterpret_cast<prm::pod::mlx5_cqe64*>(q->ring + (produced & (kCqeCnt - 1)) * 64);
    cqe->op_own = prm::CqeOpOwn(prm::MLX5_CQE_REQ, prm::CqeOwnerFor(produced, kCqeCnt));
    ++produced;
    benchmark::DoNotOptimize(BoundPollCq(q, &wc));
  }
}

// Each row carries its fields (bench/row.h): a call (impl onchip) names its floor and its bound,
// the rows it is set against; the floors and bounds are rows of their own.
void RegisterAll() {
  using bench::Fields;
  auto call = [](const char* name, const char* floor, const char* bound, auto fn) {
    bench::Register(name, Fields(name, "onchip").Bytes(Fields::kNone)
                              .With("floor", floor).With("bound", bound),
                    fn);
  };
  auto base = [](const char* name, const char* impl, auto fn) {
    bench::Register(name, Fields(name, impl).Bytes(Fields::kNone), fn);
  };
  call("PostSend/blueflame", "Floor/wqe_bf", "Bound/post_send_bf",
       [](benchmark::State& s) { PostSendLoop(s, true); });
  call("PostSend/doorbell", "Floor/wqe_db", "Bound/post_send_db",
       [](benchmark::State& s) { PostSendLoop(s, false); });
  call("WrSend/blueflame", "Floor/wqe_bf", "Bound/post_send_bf", WrSendLoop);
  call("PostRecv", "Floor/rwqe", "Bound/post_recv", PostRecvLoop);
  call("PollCq/one", "Floor/cqe", "Bound/poll_cq", PollCqLoop);
  base("Floor/wqe_bf", "floor", [](benchmark::State& s) { FloorWqe(s, true); });
  base("Floor/wqe_db", "floor", [](benchmark::State& s) { FloorWqe(s, false); });
  base("Floor/rwqe", "floor", FloorRecvWqe);
  base("Floor/cqe", "floor", FloorCqe);
  base("Bound/post_send_bf", "bound", [](benchmark::State& s) { BoundSend(s, true); });
  base("Bound/post_send_db", "bound", [](benchmark::State& s) { BoundSend(s, false); });
  base("Bound/post_recv", "bound", BoundRecv);
  base("Bound/poll_cq", "bound", BoundPoll);
}

// Keeps nanoseconds per iteration per run name, the median when there are repetitions.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const double ns = r.GetAdjustedCPUTime();  // CPU time: steadier on a shared machine
      if (r.run_type == Run::RT_Iteration)
        ns_.emplace(r.run_name.str(), ns);
      else if (r.aggregate_name == "median")
        ns_[r.run_name.str()] = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Ns(const std::string& name) const {
    auto it = ns_.find(name);
    return it == ns_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> ns_;
};

void PrintSummary(const RecordingReporter& r) {
  struct Row {
    const char* call;
    const char* floor;
    const char* bound;  // the least any provider's call can be (see "bounds")
  };
  const Row rows[] = {
      {"PostSend/blueflame", "Floor/wqe_bf", "Bound/post_send_bf"},
      {"PostSend/doorbell", "Floor/wqe_db", "Bound/post_send_db"},
      {"WrSend/blueflame", "Floor/wqe_bf", "Bound/post_send_bf"},
      {"PostRecv", "Floor/rwqe", "Bound/post_recv"},
      {"PollCq/one", "Floor/cqe", "Bound/poll_cq"},
  };
  // Information only: no verdict, so tools/onchip bench lists nothing of this suite as missed.
  std::printf("\n== the data path's calls over their floors and bounds (CPU time, same run; sink "
              "device; information, no goal) ==\n");
  std::printf("%-20s %8s %-14s %8s %7s | %-20s %8s %7s %7s\n", "call", "ns", "floor", "ns",
              "x floor", "bound", "ns", "x floor", "call/b");
  for (const Row& g : rows) {
    const double call = r.Ns(g.call), floor = r.Ns(g.floor), bound = r.Ns(g.bound);
    std::printf("%-20s %8.1f %-14s %8.1f %7.2f | %-20s %8.1f %7.2f %7.2f\n", g.call, call, g.floor,
                floor, floor > 0 ? call / floor : 0.0, g.bound, bound,
                floor > 0 ? bound / floor : 0.0, bound > 0 ? call / bound : 0.0);
  }
}

}  // namespace
}  // namespace onchip

int main(int argc, char** argv) {
  // Defaults as the other suites: short runs, five repetitions, medians.
  std::vector<char*> args(argv, argv + argc);
  auto given = [&](const char* flag) {
    for (int i = 1; i < argc; ++i)
      if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return true;
    return false;
  };
  static char kMinTime[] = "--benchmark_min_time=0.04";
  static char kRepetitions[] = "--benchmark_repetitions=5";
  static char kAggregatesOnly[] = "--benchmark_display_aggregates_only=true";
  if (!given("--benchmark_min_time")) args.insert(args.begin() + 1, kMinTime);
  if (!given("--benchmark_repetitions")) {
    args.insert(args.begin() + 1, kRepetitions);
    if (!given("--benchmark_display_aggregates_only")) args.insert(args.begin() + 1, kAggregatesOnly);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  using onchip::mmio::MemoryType;
  benchmark::AddCustomContext("onchip_wc_copy",
                              "to-device " + std::string(onchip::mmio::ToDeviceReport(MemoryType::kWriteBack)) +
                                  " into the sink's write-back BlueFlame page; from-device " +
                                  std::string(onchip::mmio::FromDeviceReport()));
  benchmark::AddCustomContext("onchip_device", "sink: rings, records and BlueFlame page in host WB memory");
  onchip::RegisterAll();
  onchip::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  onchip::PrintSummary(reporter);
  benchmark::Shutdown();
  return 0;
}
