#include "mmio/wc_copy.h"

#include <array>
#include <cstdio>
#include <cstdlib>

#include "mmio/wc_kernels.h"

namespace onchip::mmio {
namespace {

using namespace detail;

constexpr std::array<ToDeviceVariant, 6> kToDevice{{
    {"movq8", Isa::kBaseline, ToDeviceMovq8, LineMovq8, "8 x 8-byte MOV (vendor BlueFlame)", false},
    {"nt", Isa::kBaseline, ToDeviceNt, LineNt, "4 x 16-byte MOVNTDQ", true},
    {"sse", Isa::kBaseline, ToDeviceSse, LineSse, "4 x 16-byte MOVDQA", false},
    {"avx2", Isa::kAvx2, ToDeviceAvx2, LineAvx2, "2 x 32-byte VMOVDQA", false},
    {"avx512", Isa::kAvx512f, ToDeviceAvx512, LineAvx512, "1 x 64-byte VMOVDQA64", false},
    {"movdir64b", Isa::kMovdir64b, ToDeviceMovdir64b, LineMovdir64b, "1 x MOVDIR64B", true},
}};

constexpr std::array<FromDeviceVariant, 4> kFromDevice{{
    {"sse", Isa::kBaseline, FromDeviceSse, "4 x 16-byte MOVDQA"},
    {"sse41_stream", Isa::kSse41, FromDeviceSse41Stream, "4 x 16-byte MOVNTDQA"},
    {"avx2_stream", Isa::kAvx2, FromDeviceAvx2Stream, "2 x 32-byte VMOVNTDQA"},
    {"avx512_stream", Isa::kAvx512f, FromDeviceAvx512Stream, "1 x 64-byte VMOVNTDQA"},
}};

// Auto choice for writes to a BAR (write-combining or uncached): MOVDIR64B (the only
// architecturally whole 64-byte write), else the widest store, so that a line is written by as
// few instructions as possible. `nt` is never chosen automatically: on WC memory it is the same
// 16-byte store pattern as `sse`. GDRCopy found 16-byte stores faster than 64-byte ones on some
// Intel CPUs for GPU BARs; ONCHIP_WC_COPY is the knob for re-deciding on a given machine.
constexpr std::array<std::string_view, 4> kToDeviceAuto{"movdir64b", "avx512", "avx2", "sse"};
// On write-back memory (the software ConnectX's BAR): the widest store that goes through the
// cache. MOVDIR64B is a direct store, written to memory with the line evicted, whatever the
// destination's memory type; on an AMD EPYC (Zen 4) it took 115 ns for a 64-byte
// ibv_memcpy_to_dm into the software device's MEMIC window against the vendor loop's 8 ns, and
// 142 ns against 2 ns for a BlueFlame line (wc_copy_bench's movdir64b rows show it). The
// weakly ordered variants (`weak_lines`: nt, movdir64b) are the ones that bypass the cache.
constexpr std::array<std::string_view, 3> kToDeviceAutoCached{"avx512", "avx2", "sse"};
constexpr const char* kBypassNote = "; MOVDIR64B passed over: it bypasses the cache";
// A core that splits 512-bit stores in two (CpuFeatures::split_512bit_stores) passes avx512
// over: it writes a line with AVX2 as whole as with AVX-512, and measured faster with it. On an
// AMD EPYC (Zen 4), over eight processes, avx2 copied 8.1x the vendor's 4-byte loop at 4 KiB
// against 7.5x, and 1.06x the vendor's BlueFlame stores at 64 B against 0.82x.
constexpr std::string_view kSplit512PassedOver = "avx512";
constexpr const char* kSplit512Note = "; its 512-bit stores split in two halves";
constexpr std::array<std::string_view, 4> kFromDeviceAuto{"avx512_stream", "avx2_stream",
                                                          "sse41_stream", "sse"};

// The auto choice skips `passed_over` (none when empty); if the CPU could have run it and it
// would have been chosen, the reason says so with `note`. `rule` names the auto rule ("auto for
// write-back memory: widest cached store this CPU has"), `rule_note` ends it (or "").
template <class V, std::size_t N, std::size_t M>
const V& Select(const std::array<V, N>& table, const std::array<std::string_view, M>& auto_order,
                std::string_view passed_over, const char* note, const char* rule,
                const char* rule_note, const char* env_name, const char* override_name,
                const CpuFeatures& cpu, char* why, std::size_t why_len) {
  const V* chosen = nullptr;
  bool passed = false;
  for (std::string_view name : auto_order) {
    for (const V& v : table) {
      if (v.name != name || !CpuHas(v.needs, cpu)) continue;
      if (name == passed_over)
        passed = true;
      else
        chosen = &v;
    }
    if (chosen != nullptr) break;
  }
  char auto_why[192];
  std::snprintf(auto_why, sizeof auto_why, "%s (%.*s%s%s)", rule,
                static_cast<int>(IsaName(chosen->needs).size()), IsaName(chosen->needs).data(),
                passed ? note : "", rule_note);
  if (override_name == nullptr || *override_name == '\0') {
    std::snprintf(why, why_len, "%s", auto_why);
    return *chosen;
  }
  const std::string_view wanted(override_name);
  for (const V& v : table) {
    if (v.name != wanted) continue;
    if (CpuHas(v.needs, cpu)) {
      std::snprintf(why, why_len, "%s=%s", env_name, override_name);
      return v;
    }
    std::snprintf(why, why_len, "%s=%s ignored, this CPU lacks %.*s; %s", env_name,
                  override_name, static_cast<int>(IsaName(v.needs).size()),
                  IsaName(v.needs).data(), auto_why);
    return *chosen;
  }
  std::snprintf(why, why_len, "%s=%s ignored, no such variant; %s", env_name, override_name,
                auto_why);
  return *chosen;
}

constexpr std::array<MemoryType, 3> kMemoryTypes{MemoryType::kWriteBack,
                                                 MemoryType::kWriteCombining, MemoryType::kUncached};

struct Active {
  const ToDeviceVariant* to;  // for write-combining memory: what the globals dispatch to
  const FromDeviceVariant* from;
  char report[768];
  char from_report[256];  // "avx512_stream [1 x 64-byte VMOVNTDQA] (auto: ...)"
  struct PerType {
    const ToDeviceVariant* to;
    char report[320];  // "avx2 [2 x 32-byte VMOVDQA] (auto for write-back memory: ...)"
  } per_type[kMemoryTypes.size()];
};

const Active& GetActive() {
  static const Active active = [] {
    Active a{};
    const CpuFeatures cpu = DetectCpuFeatures();
    for (MemoryType t : kMemoryTypes) {
      char why[256];
      auto& p = a.per_type[static_cast<int>(t)];
      p.to = &SelectToDevice(std::getenv("ONCHIP_WC_COPY"), cpu, t, why, sizeof why);
      std::snprintf(p.report, sizeof p.report, "%.*s [%.*s] (%s)",
                    static_cast<int>(p.to->name.size()), p.to->name.data(),
                    static_cast<int>(p.to->stores.size()), p.to->stores.data(), why);
    }
    char from_why[200];
    const auto& wc = a.per_type[static_cast<int>(MemoryType::kWriteCombining)];
    a.to = wc.to;
    a.from = &SelectFromDevice(std::getenv("ONCHIP_DEV_READ"), cpu, from_why, sizeof from_why);
    std::snprintf(a.from_report, sizeof a.from_report, "%.*s [%.*s] (%s)",
                  static_cast<int>(a.from->name.size()), a.from->name.data(),
                  static_cast<int>(a.from->loads.size()), a.from->loads.data(), from_why);
    std::snprintf(a.report, sizeof a.report, "to-device %s; from-device %s", wc.report,
                  a.from_report);
    g_to_device.store(a.to->copy, std::memory_order_relaxed);
    g_line64.store(a.to->line64, std::memory_order_relaxed);
    g_from_device.store(a.from->copy, std::memory_order_relaxed);
    return a;
  }();
  return active;
}

// First calls land here, make the choice, and go through the chosen kernel; later calls go
// straight to it.
void ResolveToDevice(void* dst, const void* src, std::size_t len) { GetActive().to->copy(dst, src, len); }
void ResolveLine64(void* dst, const void* src) { GetActive().to->line64(dst, src); }
void ResolveFromDevice(void* dst, const void* src, std::size_t len) {
  GetActive().from->copy(dst, src, len);
}

}  // namespace

namespace detail {
constinit std::atomic<CopyFn> g_to_device{&ResolveToDevice};
constinit std::atomic<LineFn> g_line64{&ResolveLine64};
constinit std::atomic<CopyFn> g_from_device{&ResolveFromDevice};
}  // namespace detail

bool CpuHas(Isa isa, const CpuFeatures& cpu) {
  switch (isa) {
    case Isa::kBaseline: return true;
    case Isa::kSse41: return cpu.sse41;
    case Isa::kAvx2: return cpu.avx2;
    case Isa::kAvx512f: return cpu.avx512f;
    case Isa::kMovdir64b: return cpu.movdir64b;
  }
  return false;
}

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kBaseline: return "x86-64 baseline";
    case Isa::kSse41: return "SSE4.1";
    case Isa::kAvx2: return "AVX2";
    case Isa::kAvx512f: return "AVX-512F";
    case Isa::kMovdir64b: return "MOVDIR64B";
  }
  return "?";
}

std::span<const ToDeviceVariant> ToDeviceVariants() { return kToDevice; }
std::span<const FromDeviceVariant> FromDeviceVariants() { return kFromDevice; }

const ToDeviceVariant* FindToDevice(std::string_view name) {
  for (const auto& v : kToDevice)
    if (v.name == name) return &v;
  return nullptr;
}
const FromDeviceVariant* FindFromDevice(std::string_view name) {
  for (const auto& v : kFromDevice)
    if (v.name == name) return &v;
  return nullptr;
}

const ToDeviceVariant& SelectToDevice(const char* override_name, const CpuFeatures& cpu,
                                      MemoryType target, char* why, std::size_t why_len) {
  const std::string_view split = cpu.split_512bit_stores ? kSplit512PassedOver : "";
  if (target == MemoryType::kWriteBack)
    return Select(kToDevice, kToDeviceAutoCached, split, kSplit512Note,
                  "auto for write-back memory: widest cached store this CPU has",
                  cpu.movdir64b ? kBypassNote : "", "ONCHIP_WC_COPY", override_name, cpu, why,
                  why_len);
  const char* rule = target == MemoryType::kUncached
                         ? "auto for uncached memory: widest this CPU has"
                         : "auto for write-combining memory: widest this CPU has";
  return Select(kToDevice, kToDeviceAuto, split, kSplit512Note, rule, "", "ONCHIP_WC_COPY",
                override_name, cpu, why, why_len);
}
const FromDeviceVariant& SelectFromDevice(const char* override_name, const CpuFeatures& cpu,
                                          char* why, std::size_t why_len) {
  return Select(kFromDevice, kFromDeviceAuto, "", "", "auto: widest this CPU has", "",
                "ONCHIP_DEV_READ", override_name, cpu, why, why_len);
}

const ToDeviceVariant& ToDeviceFor(MemoryType target) {
  return *GetActive().per_type[static_cast<int>(target)].to;
}
std::string_view ToDeviceReport(MemoryType target) {
  return GetActive().per_type[static_cast<int>(target)].report;
}
std::string_view FromDeviceReport() { return GetActive().from_report; }

const ToDeviceVariant& ActiveToDevice() { return *GetActive().to; }
const FromDeviceVariant& ActiveFromDevice() { return *GetActive().from; }
std::string_view WcCopyReport() { return GetActive().report; }

}  // namespace onchip::mmio
