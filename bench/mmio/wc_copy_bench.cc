// Write-combined copy kernels against the vendor's copies and glibc memcpy, 4 B to 256 KiB, both
// directions, in one run; ends with the paired ratios (the report, tools/cli/report.py, judges
// them against the goals onchip's kernels are held to).
//
// There is no NIC on a build machine, so "device memory" here is an ordinary 64-byte aligned
// host buffer (write-back). The numbers measure what each algorithm costs the CPU (instruction
// count and width, fences), not PCIe: on a real MEMIC or BlueFlame mapping (write-combining)
// every store leaves through the fill buffers and the gap between 4-byte and 64-byte stores
// grows, since each partial line becomes its own TLP. Baselines (bench/baselines/vendor_mmio.h):
//   vendor_dm_4B   mlx5_memcpy_to_dm / _from_dm: relaxed 32-bit atomic per word, no fence
//   vendor_bf_8x8B mmio_memcpy_x64 (eight relaxed 64-bit stores per line) + mmio_flush_writes
//   memcpy         glibc memcpy (not usable on device memory: it may use overlapping or
//                  rep-movsb stores), the host-memory ceiling.
// Like the vendor's copy, an onchip to-device copy issues no fence of its own (the next doorbell's
// is its ordering point, mmio/README.md); nt and movdir64b end with one after their lines.
// The summary's "every size" column is the worst ratio over 4 B to 256 KiB against the vendor's
// 4-byte loop, with the size it occurs at: the small copies (sequence numbers, order fields)
// have to win as well as the large ones.
//
// The summary's ratios come from pairs (Pair/...), never from dividing two rows. Below a line a
// copy takes 5 to 10 cycles, and three things outweigh the algorithm there, each measured on an
// AMD EPYC (Zen 4) VM:
//  - time: rows run one after another see different moments of a shared machine (an SFENCE
//    cost 2 ns in one second and 6 ns in the next). A pair times the variant and its baseline
//    alternately, in rounds of a few microseconds, and takes each side's median over the rounds
//    (and, per repetition, the median of the rounds' ratios: the row's x_base).
//  - the caller's code placement: the same two copies called from one loop took 5 and 8 cycles,
//    or 8 and 5, as that loop moved by 8 bytes. A pair's rounds take turns over 8 placements.
//  - the process and the moment: a state neither side chooses holds for a repetition (tenths
//    of a second), then may change. At 4 B one state gave onchip 1.64 ns and the vendor 2.44 ns,
//    the other 2.17 ns and 1.90 ns, in the same process, from one repetition to the next (the
//    buffers' page offsets and where the function pointer is loaded from made no difference).
//    A median over repetitions or processes picks whichever state came up more often, a coin
//    toss. A program pays both states' times over its life, so the verdict is on the mean: the
//    active variants' pairs run in several processes (--onchip_pair_processes, default 5), and
//    the summary divides the vendor's mean time per copy by onchip's, over every repetition of
//    every process (each repetition's time being its rounds' median). It prints each process's
//    ratio's range beside it.
// The plain rows (ToDevice/..., FromDevice/..., BlueFlame64/...) stay for bytes/s and latency.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <regex.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/baselines/vendor_mmio.h"
#include "bench/row.h"
#include "mmio/barriers.h"
#include "mmio/wc_copy.h"

namespace onchip::mmio {
namespace {

constexpr std::size_t kMax = 256 << 10;

// The kernel in use for this bench's "device", a write-back host buffer: the driver's choice for
// write-back memory (ToDeviceFor), which is what the software ConnectX's DM window and BlueFlame
// page get (its BAR is a shared memfd). A real BAR mapped write-combining gets the
// write-combining choice, which this bench, without WC memory, cannot time as it runs there.
const ToDeviceVariant& InUseToDevice() { return ToDeviceFor(MemoryType::kWriteBack); }
std::string InUseReport() {
  return "to-device " + std::string(ToDeviceReport(MemoryType::kWriteBack)) + "; from-device " +
         std::string(FromDeviceReport());
}

unsigned char* AlignedBuffer() {
  void* p = std::aligned_alloc(4096, kMax + 4096);
  std::memset(p, 0x3c, kMax + 4096);
  return static_cast<unsigned char*>(p);
}
unsigned char* const g_host = AlignedBuffer();
unsigned char* const g_device = AlignedBuffer();

template <class Copy>
void Run(benchmark::State& state, Copy copy) {
  const auto len = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    copy(len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(len));
}

// Every size the suite copies, 4 B to kMax, doubling.
std::vector<std::size_t> AllSizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 4; n <= kMax; n *= 2) sizes.push_back(n);
  return sizes;
}

// A row's sizes: AllSizes from `from` on.
void Sizes(benchmark::internal::Benchmark* b, std::size_t from) {
  for (std::size_t n : AllSizes())
    if (n >= from) b->Arg(static_cast<int64_t>(n));
}

// Where a pair's calls sit in their 64-byte line of code: kPlacements positions, 8 bytes apart.
// At 4 to 16 bytes a copy is a handful of cycles, and on some cores which of two copies called
// from the same loop is faster depends on where that loop's call sits: on an AMD EPYC (Zen 4)
// the vendor's 4-byte loop and onchip's took 5 and 8 cycles, or 8 and 5, as the same loop moved
// by 8 bytes. A caller's placement is nobody's choice, so a pair measures them all.
constexpr int kPlacements = 8;

// One side of a pair: `batch` calls, timed as a whole (a clock read costs about as much as a
// 4-byte copy, so it must not sit between two calls), from a loop placed `Placement` x 8 bytes
// past a 64-byte boundary (the padding before it runs once per batch).
template <int Placement, class Copy>
[[gnu::noinline]] double TimeBatch(Copy& copy, std::size_t len, std::size_t batch) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  if constexpr (Placement == 0)
    asm volatile(".p2align 6");
  else
    asm volatile(".p2align 6\n.skip %c0, 0x90" ::"i"(Placement * 8));
  for (std::size_t i = 0; i < batch; ++i) {
    copy(len);
    benchmark::ClobberMemory();
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

template <class Copy, std::size_t... P>
constexpr auto PlacedBatches(std::index_sequence<P...>) {
  using TimeFn = double (*)(Copy&, std::size_t, std::size_t);
  return std::array<TimeFn, sizeof...(P)>{&TimeBatch<static_cast<int>(P), Copy>...};
}

double Median(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// A variant against its baseline, alternately, in rounds: each iteration times a batch of each,
// both from the same placement; placements take turns round by round, and every kPlacements
// rounds the side that goes first changes (so neither always runs on a warmer core). The batch
// is sized so that the faster side takes at least kRoundSide. Counters: x_base, the median over
// rounds of baseline time / variant time (> 1: the variant is faster), so a median over
// placements too; ns and base_ns, each side's median time per copy. The iteration time is the
// round's, so a row costs its min_time however the two sides compare.
constexpr double kRoundSide = 2e-6;

template <class Copy, class Base>
void RunPair(benchmark::State& state, Copy copy, Base base) {
  static constexpr auto copy_at = PlacedBatches<Copy>(std::make_index_sequence<kPlacements>());
  static constexpr auto base_at = PlacedBatches<Base>(std::make_index_sequence<kPlacements>());
  const auto len = static_cast<std::size_t>(state.range(0));
  std::size_t batch = 1;
  while (batch < (1u << 16) &&
         std::min(copy_at[0](copy, len, batch), base_at[0](base, len, batch)) < kRoundSide)
    batch *= 2;
  std::vector<double> ratio, ns, base_ns;
  std::size_t round = 0;
  for (auto _ : state) {
    const std::size_t at = round % kPlacements;
    double a = 0, b = 0;
    if ((round / kPlacements) % 2 == 0) {
      a = copy_at[at](copy, len, batch);
      b = base_at[at](base, len, batch);
    } else {
      b = base_at[at](base, len, batch);
      a = copy_at[at](copy, len, batch);
    }
    ++round;
    state.SetIterationTime(a + b);
    ratio.push_back(b / a);
    ns.push_back(a * 1e9 / static_cast<double>(batch));
    base_ns.push_back(b * 1e9 / static_cast<double>(batch));
  }
  if (ratio.empty()) return;
  state.counters["x_base"] = Median(ratio);
  state.counters["ns"] = Median(ns);
  state.counters["base_ns"] = Median(base_ns);
  state.counters["batch"] = static_cast<double>(batch);
}

constexpr std::string_view kProcessesFlag = "--onchip_pair_processes=";
constexpr std::string_view kChildFlag = "--onchip_pair_child=";

// Pair/<group>/<variant>~<baseline>, and with /<size> the run's name.
std::string PairName(std::string_view group, std::string_view variant, std::string_view baseline) {
  return "Pair/" + std::string(group) + "/" + std::string(variant) + "~" + std::string(baseline);
}
std::string PairName(std::string_view group, std::string_view variant, std::string_view baseline,
                     std::size_t size) {
  return PairName(group, variant, baseline) + "/" + std::to_string(size);
}

// The fields (bench/row.h) of group `group`'s row of copy `name` (a variant or a baseline): the
// variant in use is impl onchip, the vendor's copy that group's table divides by is vendor
// (its 4-byte loop, or for BlueFlame64 its 8 x 8-byte stores), memcpy is host memory's ceiling.
bench::Fields RowFields(std::string_view group, std::string_view name);

// Each pair's label at each size, by run name: the other processes' samples reach the report
// under it (OthersJson).
std::map<std::string, std::string>& PairLabels() {
  static std::map<std::string, std::string> labels;
  return labels;
}

// Registers a pair at each size; the summary reads its x_base. Returns the runs' names.
template <class Copy, class Base>
std::vector<std::string> RegisterPair(std::string_view group, std::string_view variant,
                                      std::string_view baseline, Copy copy, Base base,
                                      const std::vector<std::size_t>& sizes) {
  bench::Fields fields = RowFields(group, variant);
  fields.With("pair", RowFields(group, baseline).impl());
  auto* b = bench::Register(PairName(group, variant, baseline), fields,
                            [copy, base](benchmark::State& s) { RunPair(s, copy, base); });
  b->UseManualTime();
  std::vector<std::string> names;
  for (std::size_t n : sizes) {
    b->Arg(static_cast<int64_t>(n));
    names.push_back(PairName(group, variant, baseline, n));
    PairLabels()[names.back()] = fields.Label(static_cast<int64_t>(n));
  }
  return names;
}

// The copies the rows and pairs run, each a callable taking the length. A copy algorithm,
// onchip's or the vendor's DM copy, is called the one way both are in use: through a function
// pointer (ibv_memcpy_to_dm reaches the provider's copy as dm->memcpy_to_dm; onchip's kernels
// are dispatched by CPU), so at 4 bytes the call costs both sides the same. The vendor's
// BlueFlame copy and memcpy are inline, as they are where they are used.
struct ToDev {
  CopyFn fn;
  void operator()(std::size_t n) const { fn(g_device, g_host, n); }
};
struct FromDev {
  CopyFn fn;
  void operator()(std::size_t n) const { fn(g_host, g_device, n); }
};
// BlueFlame-sized stores bracketed like a post: the copy, then the flush.
struct BlueFlameLine {
  LineFn line;
  void operator()(std::size_t) const {
    line(g_device, g_host);
    WcFlush();
  }
};
struct VendorBf {
  void operator()(std::size_t n) const {
    bench::VendorBfCopy(g_device, g_host, n);
    bench::VendorFlushWrites();
  }
};
struct MemcpyTo {
  void operator()(std::size_t n) const {
    benchmark::DoNotOptimize(std::memcpy(g_device, g_host, n));
  }
};
struct MemcpyFrom {
  void operator()(std::size_t n) const {
    benchmark::DoNotOptimize(std::memcpy(g_host, g_device, n));
  }
};

bench::Fields RowFields(std::string_view group, std::string_view name) {
  const std::string_view active =
      group == "FromDevice" ? ActiveFromDevice().name : InUseToDevice().name;
  const std::string op = group == "ToDevice"     ? "wc_copy_to_device"
                         : group == "FromDevice" ? "wc_copy_from_device"
                                                 : "blueflame_copy";
  std::string impl(name);
  if (name == "vendor_dm_4B" || (name == "vendor_bf_8x8B" && group == "BlueFlame64"))
    impl = "vendor";
  else if (name == active)
    impl = "onchip";
  return bench::Fields(op, impl).Place(name == "memcpy" ? "host" : "dm").With("variant",
                                                                              std::string(name));
}

template <class Copy>
void RegisterRow(std::string_view group, std::string_view name, Copy copy, std::size_t from) {
  Sizes(bench::Register(std::string(group) + "/" + std::string(name), RowFields(group, name),
                        [copy](benchmark::State& s) { Run(s, copy); }),
        from);
}

// Registers the rows and the pairs; returns the names of the active variants' pairs.
std::vector<std::string> RegisterAll() {
  const CpuFeatures cpu = DetectCpuFeatures();
  for (const auto& v : ToDeviceVariants())
    if (CpuHas(v.needs, cpu)) RegisterRow("ToDevice", v.name, ToDev{v.copy}, 4);
  RegisterRow("ToDevice", "vendor_dm_4B", ToDev{bench::VendorCopyToDm}, 4);
  RegisterRow("ToDevice", "vendor_bf_8x8B", VendorBf{}, 64);
  RegisterRow("ToDevice", "memcpy", MemcpyTo{}, 4);

  // The BlueFlame primitive: one line, bracketed like a post (copy, then flush).
  for (const auto& v : ToDeviceVariants()) {
    if (!CpuHas(v.needs, cpu)) continue;
    const BlueFlameLine line{v.line64};
    bench::Register("BlueFlame64/" + std::string(v.name), RowFields("BlueFlame64", v.name),
                    [line](benchmark::State& s) { Run(s, line); })
        ->Arg(64);
  }
  bench::Register("BlueFlame64/vendor_bf_8x8B", RowFields("BlueFlame64", "vendor_bf_8x8B"),
                  [](benchmark::State& s) { Run(s, VendorBf{}); })
      ->Arg(64);

  for (const auto& v : FromDeviceVariants())
    if (CpuHas(v.needs, cpu)) RegisterRow("FromDevice", v.name, FromDev{v.copy}, 4);
  RegisterRow("FromDevice", "vendor_dm_4B", FromDev{bench::VendorCopyFromDm}, 4);
  RegisterRow("FromDevice", "memcpy", MemcpyFrom{}, 4);

  // The pairs the report judges the goals on (see the top of this file).
  std::vector<std::string> active;
  auto keep = [&](bool is_active, std::vector<std::string> names) {
    if (is_active) active.insert(active.end(), names.begin(), names.end());
  };
  for (const auto& v : ToDeviceVariants()) {
    if (!CpuHas(v.needs, cpu)) continue;
    const bool is_active = v.name == InUseToDevice().name;
    keep(is_active, RegisterPair("ToDevice", v.name, "vendor_dm_4B", ToDev{v.copy},
                                 ToDev{bench::VendorCopyToDm}, AllSizes()));
    keep(is_active, RegisterPair("ToDevice", v.name, "vendor_bf_8x8B", ToDev{v.copy}, VendorBf{}, {64}));
    keep(is_active, RegisterPair("ToDevice", v.name, "memcpy", ToDev{v.copy}, MemcpyTo{}, {kMax}));
    keep(is_active, RegisterPair("BlueFlame64", v.name, "vendor_bf_8x8B", BlueFlameLine{v.line64},
                                 VendorBf{}, {64}));
  }
  for (const auto& v : FromDeviceVariants()) {
    if (!CpuHas(v.needs, cpu)) continue;
    const bool is_active = v.name == ActiveFromDevice().name;
    keep(is_active, RegisterPair("FromDevice", v.name, "vendor_dm_4B", FromDev{v.copy},
                                 FromDev{bench::VendorCopyFromDm}, AllSizes()));
    keep(is_active, RegisterPair("FromDevice", v.name, "memcpy", FromDev{v.copy}, MemcpyFrom{},
                                 {kMax}));
  }
  return active;
}

// A pair's two sides in one process: each one's time per copy (the mean over the process's
// repetitions of each repetition's median over its rounds), in ns.
struct PairSample {
  double ns = 0;       // the variant
  double base_ns = 0;  // its baseline
};

// How many times faster the variant was than its baseline over `samples` (one per process, each
// over the same number of repetitions): the baseline's mean time per copy over the variant's
// (see the top of this file); 0 for none.
double MeanRatio(const std::vector<PairSample>& samples) {
  double ns = 0, base_ns = 0;
  for (const PairSample& s : samples) {
    ns += s.ns;
    base_ns += s.base_ns;
  }
  return ns > 0 ? base_ns / ns : 0.0;
}

// Keeps each pair's PairSample per run name ("Pair/ToDevice/sse~vendor_dm_4B/4096"): this
// process's, and those the other processes reported.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      auto ns = r.counters.find("ns");
      auto base_ns = r.counters.find("base_ns");
      if (ns == r.counters.end() || base_ns == r.counters.end() || r.error_occurred) continue;
      // The name without Google Benchmark's "/manual_time".
      const std::string name = r.run_name.function_name + "/" + r.run_name.args;
      const PairSample s{.ns = ns->second.value, .base_ns = base_ns->second.value};
      // A lone run is the sample; with repetitions their mean is (this reporter may be shown
      // the aggregates only).
      if (r.run_type == Run::RT_Iteration)
        own_.emplace(name, s);
      else if (r.aggregate_name == "mean")
        own_[name] = s;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // "name ns base_ns" lines, as a pair process hands them back.
  void Save(std::FILE* f) const {
    for (const auto& [name, s] : own_)
      std::fprintf(f, "%s %.6g %.6g\n", name.c_str(), s.ns, s.base_ns);
  }
  void Load(std::FILE* f) {
    char name[256];
    PairSample s;
    while (std::fscanf(f, "%255s %lg %lg", name, &s.ns, &s.base_ns) == 3)
      others_[name].push_back(s);
  }
  // The other processes' samples for the report, keyed by each pair's label (its fields): a
  // JSON object {"<label>": [[ns, base_ns], ...], ...}.
  std::string OthersJson() const {
    std::string text = "{";
    char x[64];
    for (const auto& [name, all] : others_) {
      auto label = PairLabels().find(name);
      if (label == PairLabels().end()) continue;
      text += (text.size() > 1 ? ", \"" : "\"") + label->second + "\": [";
      for (std::size_t i = 0; i < all.size(); ++i) {
        std::snprintf(x, sizeof x, "%s[%.4g, %.4g]", i ? ", " : "", all[i].ns, all[i].base_ns);
        text += x;
      }
      text += "]";
    }
    return text + "}";
  }

  // Whether no pair ran in this process (a filter left them all out).
  bool empty() const { return own_.empty(); }
  // One pair's samples, this process's first; empty when not measured.
  std::vector<PairSample> Samples(const std::string& group, const std::string& variant,
                                  const std::string& baseline, std::size_t size) const {
    const std::string name = PairName(group, variant, baseline, size);
    std::vector<PairSample> all;
    if (auto it = own_.find(name); it != own_.end()) all.push_back(it->second);
    if (auto it = others_.find(name); it != others_.end())
      all.insert(all.end(), it->second.begin(), it->second.end());
    return all;
  }
  // How many times faster `variant` was than `baseline` at `size`: MeanRatio over the processes;
  // 0 when not measured.
  double Ratio(const std::string& group, const std::string& variant, const std::string& baseline,
               std::size_t size) const {
    return MeanRatio(Samples(group, variant, baseline, size));
  }

 private:
  std::map<std::string, PairSample> own_;
  std::map<std::string, std::vector<PairSample>> others_;
};

// The worst ratio of `variant` against the vendor's 4-byte loop over every size, and its size.
struct Worst {
  double ratio = 0.0;
  std::size_t size = 0;
};
// Sizes a filter left out do not count; none measured leaves ratio 0.
Worst WorstOverSizes(const RecordingReporter& r, const std::string& group,
                     const std::string& variant) {
  Worst w;
  for (std::size_t n : AllSizes()) {
    const double x = r.Ratio(group, variant, "vendor_dm_4B", n);
    if (x > 0 && (w.size == 0 || x < w.ratio)) w = {x, n};
  }
  return w;
}
// A ratio as the table prints it, "-" when its pair was not measured (ratio 0: a filter left it
// out).
std::string RatioText(double ratio) {
  if (ratio == 0) return "-";
  char buf[24];
  std::snprintf(buf, sizeof buf, "%.3f", ratio);
  return buf;
}

std::string Cell(const Worst& w) {
  if (w.size == 0) return "-";
  const std::string ratio = RatioText(w.ratio);
  char buf[48];
  if (w.size >= 1024)
    std::snprintf(buf, sizeof buf, "%s (%zu KiB)", ratio.c_str(), w.size / 1024);
  else
    std::snprintf(buf, sizeof buf, "%s (%zu B)", ratio.c_str(), w.size);
  return buf;
}

// The spread of the active variant's pairs over processes at the sizes below a line, where it
// is widest: "4 B 0.63-1.61" per size.
void PrintSpread(const RecordingReporter& r, const char* group, const std::string& variant) {
  std::printf("  %-11s", group);
  for (std::size_t n = 4; n <= 64; n *= 2) {
    std::vector<double> each;  // each process's ratio
    for (const PairSample& s : r.Samples(group, variant, "vendor_dm_4B", n))
      each.push_back(MeanRatio({s}));
    if (each.empty()) continue;
    const auto [lo, hi] = std::minmax_element(each.begin(), each.end());
    std::printf(" %zu B %.2f-%.2f;", n, *lo, *hi);
  }
  std::printf("\n");
}

void PrintSummary(const RecordingReporter& r, int processes) {
  const std::string active_to(InUseToDevice().name);
  const std::string active_from(ActiveFromDevice().name);
  std::printf("\n== paired ratios, > 1 is faster; device = host WB memory (the goals are the report's "
              "to judge: tools/onchip bench) ==\n");
  std::printf("active: %s\n", InUseReport().c_str());
  // Which kernel each target takes, by the memory its window is mapped as (driver/copy_kernels.h).
  std::printf("kernel per target, chosen for the memory the window is mapped as:\n");
  std::printf("  %-58s %.*s\n", "write-back: the software ConnectX's DM and BlueFlame page,",
              static_cast<int>(ToDeviceReport(MemoryType::kWriteBack).size()),
              ToDeviceReport(MemoryType::kWriteBack).data());
  std::printf("  %-58s\n", "  and this bench's buffers (the active row below)");
  std::printf("  %-58s %.*s\n", "write-combining: a ConnectX BAR through resource0_wc",
              static_cast<int>(ToDeviceReport(MemoryType::kWriteCombining).size()),
              ToDeviceReport(MemoryType::kWriteCombining).data());
  std::printf("  %-58s %.*s\n", "uncached: a ConnectX BAR without resource0_wc",
              static_cast<int>(ToDeviceReport(MemoryType::kUncached).size()),
              ToDeviceReport(MemoryType::kUncached).data());
  if (r.empty()) {
    std::printf("no pair ran (the filter left them out)\n");
    return;
  }
  std::printf("A ratio is the baseline's mean time per copy over the variant's, over every "
              "repetition: the active variants' of %d process%s, the others' of this one.\n",
              processes, processes == 1 ? "" : "es");
  if (processes > 1) {
    std::printf("Each process's ratio against the vendor's 4-byte loop ranged over:\n");
    PrintSpread(r, "ToDevice", active_to);
    PrintSpread(r, "FromDevice", active_from);
  }
  std::printf("\n");
  std::printf("%-10s %22s %24s %22s %22s %24s\n", "to-device", "4KiB / vendor_dm_4B", "256KiB / memcpy",
              "64B / vendor_bf_8x8B", "BF64 / vendor_bf_8x8B", "every size / vendor_dm_4B");
  // 64B / vendor_bf_8x8B is information: the vendor's ibv_memcpy_to_dm of 64 bytes is its 4-byte
  // loop (the "every size" column), and its BlueFlame stores are matched by BlueFlameCopy64
  // (BF64), the copy a post makes.
  const CpuFeatures cpu = DetectCpuFeatures();
  for (const auto& v : ToDeviceVariants()) {
    if (!CpuHas(v.needs, cpu)) {
      std::printf("%-10.*s  (not on this CPU)\n", static_cast<int>(v.name.size()), v.name.data());
      continue;
    }
    const std::string n(v.name);
    std::printf("%-10s %22s %24s %22s %22s %24s%s\n", n.c_str(),
                RatioText(r.Ratio("ToDevice", n, "vendor_dm_4B", 4096)).c_str(),
                RatioText(r.Ratio("ToDevice", n, "memcpy", kMax)).c_str(),
                RatioText(r.Ratio("ToDevice", n, "vendor_bf_8x8B", 64)).c_str(),
                RatioText(r.Ratio("BlueFlame64", n, "vendor_bf_8x8B", 64)).c_str(),
                Cell(WorstOverSizes(r, "ToDevice", n)).c_str(), n == active_to ? "  <- active" : "");
  }
  std::printf("\n%-14s %28s %24s %24s\n", "from-device", "4KiB / vendor_dm_4B load", "256KiB / memcpy",
              "every size / vendor_dm_4B");
  for (const auto& v : FromDeviceVariants()) {
    if (!CpuHas(v.needs, cpu)) {
      std::printf("%-14.*s  (not on this CPU)\n", static_cast<int>(v.name.size()), v.name.data());
      continue;
    }
    const std::string n(v.name);
    std::printf("%-14s %28s %24s %24s%s\n", n.c_str(),
                RatioText(r.Ratio("FromDevice", n, "vendor_dm_4B", 4096)).c_str(),
                RatioText(r.Ratio("FromDevice", n, "memcpy", kMax)).c_str(),
                Cell(WorstOverSizes(r, "FromDevice", n)).c_str(),
                n == active_from ? "  <- active" : "");
  }
}

}  // namespace
}  // namespace onchip::mmio

namespace onchip::mmio {
namespace {

// Runs the active variants' pairs again in a new process of this binary and adds its repetitions
// to `r`. Below a line the copies take a handful of cycles, and on some cores (an AMD EPYC, Zen 4,
// here) the same two functions take 6 or 8 cycles each depending on a state that holds for a
// repetition (see the top of this file): more processes, more draws of it. Returns false if the
// process could not run.
bool RunPairsInAnotherProcess(const std::vector<std::string>& pass_on, RecordingReporter& r) {
  char path[] = "/tmp/onchip-wc-pairs-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return false;
  close(fd);
  const std::string filter = "--benchmark_filter=^Pair/(ToDevice|BlueFlame64)/" +
                             std::string(InUseToDevice().name) + "~|^Pair/FromDevice/" +
                             std::string(ActiveFromDevice().name) + "~";
  std::vector<std::string> args = {"wc_copy_bench", filter, std::string(kChildFlag) + path};
  args.insert(args.end(), pass_on.begin(), pass_on.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  bool ok = posix_spawn(&pid, "/proc/self/exe", &quiet, nullptr, argv.data(), environ) == 0;
  posix_spawn_file_actions_destroy(&quiet);
  int status = 0;
  ok = ok && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok) {
    std::FILE* f = std::fopen(path, "r");
    ok = f != nullptr;
    if (f) {
      r.Load(f);
      std::fclose(f);
    }
  }
  unlink(path);
  return ok;
}

// Whether this run measures any of the active variants' pairs: not when it only lists the
// benchmarks, nor when its --benchmark_filter leaves them all out (Google Benchmark's rule: an
// extended regex searched in the name, "all" for every one, a leading '-' negating it). Only
// then are other processes worth starting.
bool RunsActivePairs(const std::vector<char*>& args, const std::vector<std::string>& active_pairs) {
  std::string filter = "all";
  for (const char* a : args) {
    const std::string_view arg = a;
    if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true") return false;
    constexpr std::string_view kFilter = "--benchmark_filter=";
    if (arg.starts_with(kFilter)) filter = arg.substr(kFilter.size());
  }
  if (filter.empty() || filter == "all") return true;
  const bool negated = filter.front() == '-';
  if (negated) filter.erase(0, 1);
  // POSIX's regex, which Google Benchmark's own matching also falls back to (std::regex trips
  // GCC 12's maybe-uninitialized warning in the sanitizer build).
  struct Regex {
    regex_t re;
    bool ok;
    explicit Regex(const std::string& pattern)
        : ok(regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB) == 0) {}
    ~Regex() {
      if (ok) regfree(&re);
    }
    bool Search(const std::string& text) const {
      return regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
    }
  } const re(filter);
  if (!re.ok) return true;  // Google Benchmark reports the bad filter itself
  // Named as Google Benchmark filters them (with its "/manual_time").
  for (const std::string& name : active_pairs)
    if (re.Search(name + "/manual_time") != negated) return true;
  return false;
}

}  // namespace
}  // namespace onchip::mmio

int main(int argc, char** argv) {
  using namespace onchip::mmio;
  // This binary's own flags: --onchip_pair_processes=N, how many processes measure the active
  // variants' pairs (this one included; default 5); --onchip_pair_child=PATH, set on those it
  // starts: write the ratios to PATH, print no summary.
  int processes = 5;
  const char* child_out = nullptr;
  std::vector<char*> args = {argv[0]};
  std::vector<std::string> pass_on;  // the timing flags the other processes run with
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with(kProcessesFlag)) {
      processes = std::max(1, std::atoi(argv[i] + kProcessesFlag.size()));
    } else if (arg.starts_with(kChildFlag)) {
      child_out = argv[i] + kChildFlag.size();
    } else {
      args.push_back(argv[i]);
      if (arg.starts_with("--benchmark_min_time") || arg.starts_with("--benchmark_repetitions") ||
          arg.starts_with("--benchmark_enable_random_interleaving"))
        pass_on.emplace_back(arg);
    }
  }
  // Defaults for a shared 2-core machine: short runs, five repetitions, medians reported (the
  // summary pools the repetitions). Any --benchmark_min_time / _repetitions given overrides them.
  const std::vector<char*> given_args(args.begin() + 1, args.end());  // args grows below
  auto given = [&](std::string_view flag) {
    for (const char* a : given_args)
      if (std::string_view(a).starts_with(flag)) return true;
    return false;
  };
  static char kMinTime[] = "--benchmark_min_time=0.04";
  static char kRepetitions[] = "--benchmark_repetitions=5";
  if (!given("--benchmark_min_time")) pass_on.emplace_back(kMinTime);
  if (!given("--benchmark_repetitions")) pass_on.emplace_back(kRepetitions);
  static char kAggregatesOnly[] = "--benchmark_display_aggregates_only=true";
  if (!given("--benchmark_min_time")) args.insert(args.begin() + 1, kMinTime);
  if (!given("--benchmark_repetitions")) {
    args.insert(args.begin() + 1, kRepetitions);
    if (!given("--benchmark_display_aggregates_only")) args.insert(args.begin() + 1, kAggregatesOnly);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::AddCustomContext("onchip_wc_copy", InUseReport());
  benchmark::AddCustomContext("onchip_device_memory", "host WB buffer (no NIC): CPU cost, not PCIe");
  // The other processes measure first, so that their repetitions can go into this one's context
  // (onchip_pairs_elsewhere), where tools/onchip bench's report finds them.
  const std::vector<std::string> active_pairs = RegisterAll();
  RecordingReporter reporter;
  int measured = 1;
  if (child_out == nullptr && !RunsActivePairs(given_args, active_pairs)) processes = 1;
  if (child_out == nullptr) {
    for (int i = 1; i < processes; ++i) {
      std::printf("onchip: pairs of the active variants, process %d of %d\n", i + 1, processes);
      std::fflush(stdout);
      if (RunPairsInAnotherProcess(pass_on, reporter))
        ++measured;
      else
        std::printf("onchip: that process failed; its ratios are left out\n");
    }
    benchmark::AddCustomContext("onchip_pairs_elsewhere", reporter.OthersJson());
  }
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (child_out != nullptr) {
    std::FILE* f = std::fopen(child_out, "w");
    if (f == nullptr) return 1;
    reporter.Save(f);
    return std::fclose(f) == 0 ? 0 : 1;
  }
  PrintSummary(reporter, measured);
  benchmark::Shutdown();
  return 0;
}
