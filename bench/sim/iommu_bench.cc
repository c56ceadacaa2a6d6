// The software ConnectX's IOMMU on the data path: a device read and write of 64 B (a WQE, a CQE)
// and 4 KiB (a payload) through Iommu::Read / Iommu::Write, on pointer memory (an in-process
// mapping: a lookup and a memcpy) and on process memory of this process's own pid (a lookup and
// process_vm_readv / process_vm_writev), among 64 mappings as a busy device holds them.
// bazel run -c opt //bench/sim:iommu_bench
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tools/sim/iommu.h"

namespace onchip::sim {
namespace {

constexpr uint64_t kIova = 1ull << 32;
constexpr uint64_t kRegion = 64 << 10;
constexpr int kRegions = 64;

struct Memory {
  Iommu iommu;
  std::byte* host;
  explicit Memory(bool process)
      : host(static_cast<std::byte*>(std::aligned_alloc(4096, kRegion * kRegions))) {
    std::memset(host, 1, kRegion * kRegions);
    for (int i = 0; i < kRegions; ++i) {
      const uint64_t iova = kIova + i * kRegion;
      std::byte* p = host + i * kRegion;
      const bool ok = process ? bool(iommu.MapProcess(iova, kRegion, getpid(),
                                                      reinterpret_cast<uint64_t>(p)))
                              : bool(iommu.Map({iova, kRegion, p, -1, 0}));
      if (!ok) std::abort();
    }
  }
  ~Memory() { std::free(host); }
};

// The i-th access of `len` bytes: in mapping i % kRegions, at an offset that moves on.
uint64_t At(uint64_t i, std::size_t len) {
  return kIova + (i % kRegions) * kRegion + (i * 64) % (kRegion - len);
}

void Read(benchmark::State& state, bool process) {
  Memory m(process);
  std::vector<std::byte> out(static_cast<std::size_t>(state.range(0)));
  uint64_t i = 0;
  for (auto _ : state) {
    if (!m.iommu.Read(At(i++, out.size()), out)) state.SkipWithError("read failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
}
void Write(benchmark::State& state, bool process) {
  Memory m(process);
  std::vector<std::byte> in(static_cast<std::size_t>(state.range(0)), std::byte{2});
  uint64_t i = 0;
  for (auto _ : state) {
    if (!m.iommu.Write(At(i++, in.size()), in)) state.SkipWithError("write failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

void PointerRead(benchmark::State& s) { Read(s, false); }
void PointerWrite(benchmark::State& s) { Write(s, false); }
void ProcessRead(benchmark::State& s) { Read(s, true); }
void ProcessWrite(benchmark::State& s) { Write(s, true); }

BENCHMARK(PointerRead)->Arg(64)->Arg(4096);
BENCHMARK(PointerWrite)->Arg(64)->Arg(4096);
BENCHMARK(ProcessRead)->Arg(64)->Arg(4096);
BENCHMARK(ProcessWrite)->Arg(64)->Arg(4096);

}  // namespace
}  // namespace onchip::sim
