// Device-memory copies and allocation through the driver, on the in-process software ConnectX,
// or on a real ConnectX bound to vfio-pci when ONCHIP_VFIO_PCI names it (dddd:bb:dd.f), the same
// variable the tier3 tests read; tools/onchip bench sets it when it finds one.
//
// Copies: ibv_memcpy_to_dm / ibv_memcpy_from_dm on a 256 KiB MEMIC DM (the driver's checks plus
// the mmio kernel the driver chose for the MEMIC window's memory, driver/copy_kernels.h)
// against, on the very same bytes, the vendor's algorithm (bench/baselines: one relaxed 32-bit
// access per word) and glibc memcpy. The software device's
// MEMIC window is ordinary shared memory (write-back), so this measures the CPU cost of each
// algorithm; on a real write-combined mapping the 4-byte loop loses more (partial-line TLPs).
//
// Allocation: alloc_dm + free_dm of 64 bytes end to end (driver + command queue + device thread
// answering ALLOC_MEMIC / DEALLOC_MEMIC), against the driver's own part: the same MEMIC
// allocator and PRM encoding answered by an in-process firmware stand-in with no queue and no
// device thread. The difference is the time spent in the command queue round trip and device.
#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/baselines/vendor_mmio.h"
#include "bench/row.h"
#include "driver/context.h"
#include "driver/copy_kernels.h"
#include "driver/verbs/calls.h"
#include "mmio/wc_copy.h"
#include "tools/sim/device.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/memic.h"

namespace onchip {
namespace {

constexpr std::size_t kDmBytes = 256 << 10;

// The PCI function named by ONCHIP_VFIO_PCI, or nullptr for the software ConnectX.
const char* VfioPciName() {
  const char* name = std::getenv("ONCHIP_VFIO_PCI");
  return name != nullptr && *name != '\0' ? name : nullptr;
}

struct Fixture {
  std::unique_ptr<sim::Device> sim;  // only on the software ConnectX
  std::unique_ptr<Context> ctx;
  ibv_dm* dm = nullptr;
  std::byte* device_bytes = nullptr;
  std::vector<std::byte> host = std::vector<std::byte>(kDmBytes, std::byte{0x5a});

  Fixture() {
    Result<Context> c = VfioPciName() != nullptr
                            ? Context::Open(driver::Locator::Vfio(VfioPciName()))
                            : OpenSim();
    if (!c) Die("cannot open the device", c.error().describe());
    ctx = std::make_unique<Context>(std::move(*c));
    ibv_alloc_dm_attr attr{.length = kDmBytes, .log_align_req = 0, .comp_mask = 0};
    dm = driver::verbs::alloc_dm(ctx->verbs(), &attr);
    if (!dm) Die("alloc_dm of 256 KiB failed", std::strerror(errno));
    device_bytes = driver::Dm::From(dm)->start_va;
  }

  Result<Context> OpenSim() {
    sim::DeviceConfig config;
    config.memic_bar_size = 1 << 20;  // room for the copy DM and the allocation benchmark
    config.max_memic_size = 1 << 20;
    ONCHIP_TRY(sim, sim::Device::Create(config));
    return Context::Open(driver::Locator::Of(*sim));
  }

  // Frees the copy DM, then closes the device; false (said on stderr) when the close still found
  // objects, i.e. a benchmark left something allocated. The context's destructor would free them
  // too, but only with a warning nobody can act on, and after the exit status is decided.
  bool Close() {
    bool clean = true;
    if (dm != nullptr && driver::verbs::free_dm(dm) != 0) {
      std::fprintf(stderr, "onchip dm_bench: free_dm of the copy DM failed: %s\n", std::strerror(errno));
      clean = false;
    }
    dm = nullptr;
    device_bytes = nullptr;
    const driver::TeardownReport r = ctx->Close();
    if (r.first_error || r.objects() != 0 || r.pages_still_held) {
      std::fprintf(stderr, "onchip dm_bench: a benchmark left objects on the device: %s\n",
                   r.describe().c_str());
      clean = false;
    }
    return clean;
  }

  [[noreturn]] static void Die(const char* what, const std::string& why) {
    std::fprintf(stderr, "onchip dm_bench: %s on %s: %s\n", what,
                 VfioPciName() != nullptr ? VfioPciName() : "the software ConnectX", why.c_str());
    std::exit(1);
  }
};

// Opened by the first benchmark that needs it, closed by main after the run (CloseFixture).
std::unique_ptr<Fixture>& FixtureSlot() {
  static std::unique_ptr<Fixture> f;
  return f;
}

Fixture& F() {
  auto& f = FixtureSlot();
  if (!f) f = std::make_unique<Fixture>();
  return *f;
}

bool CloseFixture() {
  auto& f = FixtureSlot();
  const bool clean = !f || f->Close();
  f.reset();
  return clean;
}

void ToDm(benchmark::State& state) {
  Fixture& f = F();
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    if (ibv_memcpy_to_dm(f.dm, 0, f.host.data(), len) != 0) state.SkipWithError("copy failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
void ToDmVendor(benchmark::State& state) {
  Fixture& f = F();
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    bench::VendorCopyToDm(f.device_bytes, f.host.data(), len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
void ToDmMemcpy(benchmark::State& state) {
  Fixture& f = F();
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    std::memcpy(f.device_bytes, f.host.data(), len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
void FromDm(benchmark::State& state) {
  Fixture& f = F();
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    if (ibv_memcpy_from_dm(f.host.data(), f.dm, 0, len) != 0) state.SkipWithError("copy failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
void FromDmVendor(benchmark::State& state) {
  Fixture& f = F();
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    bench::VendorCopyFromDm(f.host.data(), f.device_bytes, len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
void FromDmMemcpy(benchmark::State& state) {
  Fixture& f = F();
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    std::memcpy(f.host.data(), f.device_bytes, len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}

// Host-memory equivalents for the report's "host" column: the same copy between two host
// buffers, and a 64-byte host allocation.
void HostCopy(benchmark::State& state) {
  Fixture& f = F();
  static std::vector<std::byte> other(kDmBytes, std::byte{0x33});
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    std::memcpy(other.data(), f.host.data(), len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
void HostAllocFree(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::aligned_alloc(64, static_cast<std::size_t>(state.range(0)));
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}

void RegDmMr(benchmark::State& state) {
  Fixture& f = F();
  ibv_pd* pd = driver::verbs::alloc_pd(f.ctx->verbs());
  if (pd == nullptr) {
    state.SkipWithError("alloc_pd failed");
    return;
  }
  const auto len = static_cast<std::size_t>(state.range(0));
  const unsigned access = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
                          IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  for (auto _ : state) {
    ibv_mr* mr = driver::verbs::reg_dm_mr(pd, f.dm, 0, len, access);
    if (mr == nullptr || driver::verbs::dereg_mr(mr) != 0) state.SkipWithError("reg/dereg failed");
  }
  driver::verbs::dealloc_pd(pd);
}

// The host-memory equivalent: registering (and deregistering) the same length of host memory,
// which maps its pages for the device and writes an MTT.
void RegHostMr(benchmark::State& state) {
  Fixture& f = F();
  ibv_pd* pd = driver::verbs::alloc_pd(f.ctx->verbs());
  if (pd == nullptr) {
    state.SkipWithError("alloc_pd failed");
    return;
  }
  const auto len = static_cast<std::size_t>(state.range(0));
  void* addr = f.host.data();
  const unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  for (auto _ : state) {
    ibv_mr* mr = driver::verbs::reg_mr(pd, addr, len, reinterpret_cast<uintptr_t>(addr), access);
    if (mr == nullptr || driver::verbs::dereg_mr(mr) != 0) state.SkipWithError("reg/dereg failed");
  }
  driver::verbs::dealloc_pd(pd);
}

void AllocFreeDm(benchmark::State& state) {
  Fixture& f = F();
  ibv_alloc_dm_attr attr{.length = static_cast<size_t>(state.range(0)), .log_align_req = 0,
                         .comp_mask = 0};
  for (auto _ : state) {
    ibv_dm* dm = driver::verbs::alloc_dm(f.ctx->verbs(), &attr);
    if (dm == nullptr || driver::verbs::free_dm(dm) != 0) state.SkipWithError("alloc/free failed");
  }
}

// The firmware stand-in for the driver-only measurement: answers ALLOC_MEMIC at the candidate
// range's start and DEALLOC_MEMIC with OK, in the caller's thread.
class InstantFirmware final : public driver::cmd::Commander {
 public:
  Result<void> Exec(std::span<const std::byte> in, std::span<std::byte> out) override {
    std::memset(out.data(), 0, out.size());
    if (prm::Get(in, prm::mbox_in::opcode) == prm::ALLOC_MEMIC)
      prm::Bits(out).set(prm::alloc_memic_out::memic_start_addr,
                         prm::Get(in, prm::alloc_memic_in::range_start_addr));
    return driver::cmd::CheckOutputStatus(in, out);
  }
};

void AllocFreeDmDriverOnly(benchmark::State& state) {
  Fixture& f = F();
  driver::MemicAllocator memic;
  memic.Configure(f.ctx->device().caps(), f.ctx->device().bus().bar0_size());
  InstantFirmware fw;
  for (auto _ : state) {
    auto a = memic.Alloc(fw, 64, 0);
    if (!a || !memic.Free(fw, *a)) state.SkipWithError("alloc/free failed");
  }
}

// Each row carries its fields (bench/row.h): the copies' impl onchip (the driver's kernel),
// vendor (the vendor's algorithm) or memcpy, and where the bytes are (dm or host).
void RegisterAll() {
  using bench::Fields;
  auto copies = [](benchmark::internal::Benchmark* b) { b->Arg(64)->Arg(4096)->Arg(kDmBytes); };
  for (const char* op : {"memcpy_to_dm", "memcpy_from_dm"}) {
    const bool to = op[7] == 't';
    const std::string n = op;
    copies(bench::Register(n + ".onchip", Fields(op, "onchip").Place("dm"),
                           to ? ToDm : FromDm));
    copies(bench::Register(n + ".vendor", Fields(op, "vendor").Place("dm"),
                           to ? ToDmVendor : FromDmVendor));
    copies(bench::Register(n + ".host", Fields(op, "memcpy").Place("host"), HostCopy));
    copies(bench::Register(n + (to ? ".glibc_memcpy_into_dm" : ".glibc_memcpy_from_dm"),
                           Fields(op, "memcpy").Place("dm"),
                           to ? ToDmMemcpy : FromDmMemcpy));
  }
  bench::Register("alloc_free_dm.onchip", Fields("alloc_free_dm", "onchip").Place("dm"),
                  AllocFreeDm)
      ->Arg(64)->UseRealTime();
  bench::Register("alloc_free_dm.host",
                  Fields("alloc_free_dm", "aligned_alloc").Place("host"), HostAllocFree)
      ->Arg(64)->UseRealTime();
  bench::Register("alloc_free_dm.driver_logic_only/64",
                  Fields("alloc_free_dm", "driver_logic_only").Place("dm").Bytes(64),
                  AllocFreeDmDriverOnly);
  bench::Register("reg_dereg_dm_mr.onchip", Fields("reg_dereg_dm_mr", "onchip").Place("dm"),
                  RegDmMr)
      ->Arg(64)->Arg(kDmBytes)->UseRealTime();
  bench::Register("reg_dereg_dm_mr.host", Fields("reg_dereg_dm_mr", "onchip").Place("host"),
                  RegHostMr)
      ->Arg(64)->Arg(kDmBytes)->UseRealTime();
}

class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns;  // real time per iteration
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Iteration && !r.error_occurred)
        ns[r.benchmark_name()] = r.GetAdjustedRealTime();
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
  onchip::RegisterAll();
  benchmark::AddCustomContext("onchip.device",
                              onchip::VfioPciName() != nullptr
                                  ? "ConnectX " + std::string(onchip::VfioPciName()) + " over VFIO"
                                  : std::string("software ConnectX (tools/sim, in-process)"));
  // Which copy kernel each target of this device takes, and why (driver/copy_kernels.h): the
  // device is opened here for it, before any benchmark.
  benchmark::AddCustomContext("onchip.copy_variant",
                              onchip::driver::DescribeCopyKernels(onchip::F().ctx->device().bus()));
  onchip::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n== speedups in this run (time of the other / time of onchip; > 1 = onchip faster) ==\n");
  for (const char* op : {"memcpy_to_dm", "memcpy_from_dm"})
    for (const char* n : {"64", "4096", "262144"}) {
      const std::string self = std::string(op) + ".onchip/" + n;
      const std::string memcpy_name =
          std::string(op) + (op[7] == 't' ? ".glibc_memcpy_into_dm/" : ".glibc_memcpy_from_dm/") + n;
      std::printf("%-26s vs vendor 4-byte loop %6.2fx   vs memcpy %6.2fx\n", self.c_str(),
                  reporter.Ratio(std::string(op) + ".vendor/" + n, self),
                  reporter.Ratio(memcpy_name, self));
    }
  const double total = reporter.ns["alloc_free_dm.onchip/64/real_time"];
  const double driver = reporter.ns["alloc_free_dm.driver_logic_only/64"];
  std::printf("alloc_dm+free_dm: %.0f ns end to end, %.0f ns driver logic, %.0f ns queue + device\n",
              total, driver, total - driver);
  benchmark::Shutdown();
  return onchip::CloseFixture() ? 0 : 1;
}
