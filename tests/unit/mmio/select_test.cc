// Which variant is chosen, and what the report says about why.
#include <cpuid.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mmio/wc_copy.h"

namespace onchip::mmio {
namespace {

// The choice for a BAR mapped write-combining (To) and for write-back memory (ToWb).
std::string To(const char* env, const CpuFeatures& cpu, std::string* why,
               MemoryType target = MemoryType::kWriteCombining) {
  char buf[256];
  const auto& v = SelectToDevice(env, cpu, target, buf, sizeof buf);
  *why = buf;
  return std::string(v.name);
}
std::string ToWb(const char* env, const CpuFeatures& cpu, std::string* why) {
  return To(env, cpu, why, MemoryType::kWriteBack);
}
std::string From(const char* env, const CpuFeatures& cpu, std::string* why) {
  char buf[256];
  const auto& v = SelectFromDevice(env, cpu, buf, sizeof buf);
  *why = buf;
  return std::string(v.name);
}

constexpr CpuFeatures kBaseline{};
constexpr CpuFeatures kAvx2{.sse41 = true, .avx2 = true};
constexpr CpuFeatures kAvx512{.sse41 = true, .avx2 = true, .avx512f = true};
constexpr CpuFeatures kAll{.sse41 = true, .avx2 = true, .avx512f = true, .movdir64b = true};
constexpr CpuFeatures kZen4{
    .sse41 = true, .avx2 = true, .avx512f = true, .split_512bit_stores = true};

TEST(SelectToDevice, AutoTakesTheWidestStoreTheCpuHas) {
  std::string why;
  EXPECT_EQ(To(nullptr, kBaseline, &why), "sse");
  EXPECT_EQ(why, "auto for write-combining memory: widest this CPU has (x86-64 baseline)");
  EXPECT_EQ(To(nullptr, kAvx2, &why), "avx2");
  EXPECT_EQ(To(nullptr, kAvx512, &why), "avx512");
  EXPECT_EQ(why, "auto for write-combining memory: widest this CPU has (AVX-512F)");
  EXPECT_EQ(To(nullptr, kAll, &why), "movdir64b");
  EXPECT_EQ(To("", kAll, &why), "movdir64b");  // empty = unset
}

// A core that splits 512-bit stores in two writes with AVX2 by default, and says why; AVX-512
// is still there to ask for, and reads keep their widest streaming loads.
TEST(SelectToDevice, ACoreThatSplits512BitStoresWritesWithAvx2) {
  std::string why;
  EXPECT_EQ(To(nullptr, kZen4, &why), "avx2");
  EXPECT_EQ(why, "auto for write-combining memory: widest this CPU has (AVX2; its 512-bit stores "
                 "split in two halves)");
  EXPECT_EQ(To("avx512", kZen4, &why), "avx512");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=avx512");
  EXPECT_EQ(From(nullptr, kZen4, &why), "avx512_stream");
  CpuFeatures with_movdir64b = kZen4;
  with_movdir64b.movdir64b = true;
  EXPECT_EQ(To(nullptr, with_movdir64b, &why), "movdir64b");
  EXPECT_EQ(why, "auto for write-combining memory: widest this CPU has (MOVDIR64B)");
}

TEST(SelectToDevice, OverrideWinsWhenTheCpuHasIt) {
  std::string why;
  EXPECT_EQ(To("movq8", kBaseline, &why), "movq8");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=movq8");
  EXPECT_EQ(To("nt", kAll, &why), "nt");
  EXPECT_EQ(To("avx2", kAll, &why), "avx2");
}

TEST(SelectToDevice, OverrideTheCpuLacksFallsBackAndSaysWhy) {
  std::string why;
  EXPECT_EQ(To("movdir64b", kAvx512, &why), "avx512");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=movdir64b ignored, this CPU lacks MOVDIR64B; "
                 "auto for write-combining memory: widest this CPU has (AVX-512F)");
  EXPECT_EQ(To("avx512", kBaseline, &why), "sse");
}

TEST(SelectToDevice, UnknownOverrideFallsBackAndSaysWhy) {
  std::string why;
  EXPECT_EQ(To("fastest", kAvx2, &why), "avx2");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=fastest ignored, no such variant; "
                 "auto for write-combining memory: widest this CPU has (AVX2)");
}

// Write-back memory (the software ConnectX's BAR, a shared memfd) takes the widest store that
// goes through the cache: MOVDIR64B (and nt) write around it, which cost 115 ns against the
// vendor loop's 8 ns for 64 bytes there.
TEST(SelectToDevice, WriteBackMemoryTakesTheWidestCachedStore) {
  std::string why;
  EXPECT_EQ(ToWb(nullptr, kAll, &why), "avx512");
  EXPECT_EQ(why, "auto for write-back memory: widest cached store this CPU has (AVX-512F; "
                 "MOVDIR64B passed over: it bypasses the cache)");
  CpuFeatures zen4_movdir64b = kZen4;
  zen4_movdir64b.movdir64b = true;
  EXPECT_EQ(ToWb(nullptr, zen4_movdir64b, &why), "avx2");
  EXPECT_EQ(why, "auto for write-back memory: widest cached store this CPU has (AVX2; its 512-bit "
                 "stores split in two halves; MOVDIR64B passed over: it bypasses the cache)");
  EXPECT_EQ(ToWb(nullptr, kAvx512, &why), "avx512");
  EXPECT_EQ(why, "auto for write-back memory: widest cached store this CPU has (AVX-512F)");
  EXPECT_EQ(ToWb(nullptr, kBaseline, &why), "sse");
  // The same CPU writes a BAR with MOVDIR64B, mapped write-combining or uncached.
  EXPECT_EQ(To(nullptr, zen4_movdir64b, &why), "movdir64b");
  EXPECT_EQ(To(nullptr, zen4_movdir64b, &why, MemoryType::kUncached), "movdir64b");
  EXPECT_EQ(why, "auto for uncached memory: widest this CPU has (MOVDIR64B)");
}

// ONCHIP_WC_COPY holds for every target, write-back memory too.
TEST(SelectToDevice, OverrideHoldsOnWriteBackMemory) {
  std::string why;
  EXPECT_EQ(ToWb("movdir64b", kAll, &why), "movdir64b");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=movdir64b");
  EXPECT_EQ(ToWb("movdir64b", kAvx2, &why), "avx2");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=movdir64b ignored, this CPU lacks MOVDIR64B; "
                 "auto for write-back memory: widest cached store this CPU has (AVX2)");
}

TEST(SelectFromDevice, AutoPrefersWideStreamingLoads) {
  std::string why;
  EXPECT_EQ(From(nullptr, kBaseline, &why), "sse");
  EXPECT_EQ(From(nullptr, CpuFeatures{.sse41 = true}, &why), "sse41_stream");
  EXPECT_EQ(From(nullptr, kAvx2, &why), "avx2_stream");
  EXPECT_EQ(From(nullptr, kAvx512, &why), "avx512_stream");
  EXPECT_EQ(From("sse", kAvx512, &why), "sse");
  EXPECT_EQ(why, "ONCHIP_DEV_READ=sse");
  EXPECT_EQ(From("avx512_stream", kAvx2, &why), "avx2_stream");
}

TEST(SelectToDevice, ReasonIsTruncatedNotOverflowed) {
  char buf[8];
  std::memset(buf, 'x', sizeof buf);
  SelectToDevice("movq8", kBaseline, MemoryType::kWriteCombining, buf, 6);
  EXPECT_STREQ(buf, "ONCHI");
  EXPECT_EQ(buf[6], 'x');
}

// What this CPU has, asked without mmio's DetectCpuFeatures: GCC's own CPU model (which also
// checks that the OS saves the AVX / AVX-512 register state, and knows AMD family 19h) and
// CPUID leaf 7 for MOVDIR64B (CPUID.(EAX=7,ECX=0):ECX[28], Intel SDM vol. 2).
struct ThisCpu {
  bool sse41, avx2, avx512f, movdir64b, amd_family_19h;
};
ThisCpu AskTheCpu() {
  __builtin_cpu_init();
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool leaf7 = __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0;
  return {__builtin_cpu_supports("sse4.1") != 0, __builtin_cpu_supports("avx2") != 0,
          __builtin_cpu_supports("avx512f") != 0, leaf7 && (c & (1u << 28)) != 0,
          __builtin_cpu_is("amdfam19h") != 0};
}

// With no override in the environment, the process choice is the documented preference order
// (wc_copy.h / mmio/README.md) applied to what the CPU reports: to a BAR MOVDIR64B, then
// AVX-512 (not on AMD family 19h, which splits 512-bit stores), AVX2, SSE; to write-back memory
// the same without MOVDIR64B; from device AVX-512, AVX2 and SSE4.1 streaming loads, then SSE.
TEST(Active, IsTheDocumentedOrderAppliedToThisCpu) {
  if (std::getenv("ONCHIP_WC_COPY") || std::getenv("ONCHIP_DEV_READ"))
    GTEST_SKIP() << "an override is set in this environment";
  const ThisCpu cpu = AskTheCpu();
  const std::string to = cpu.movdir64b ? "movdir64b"
                         : cpu.avx512f && !cpu.amd_family_19h ? "avx512"
                         : cpu.avx2    ? "avx2"
                                       : "sse";
  const std::string from = cpu.avx512f ? "avx512_stream"
                           : cpu.avx2  ? "avx2_stream"
                           : cpu.sse41 ? "sse41_stream"
                                       : "sse";
  // On write-back memory: the same without MOVDIR64B, which bypasses the cache.
  const std::string cached = cpu.avx512f && !cpu.amd_family_19h ? "avx512"
                             : cpu.avx2                         ? "avx2"
                                                                : "sse";
  EXPECT_EQ(std::string(ActiveToDevice().name), to);
  EXPECT_EQ(std::string(ToDeviceFor(MemoryType::kWriteCombining).name), to);
  EXPECT_EQ(std::string(ToDeviceFor(MemoryType::kUncached).name), to);
  EXPECT_EQ(std::string(ToDeviceFor(MemoryType::kWriteBack).name), cached);
  EXPECT_EQ(std::string(ActiveFromDevice().name), from);
  const std::string report(WcCopyReport());
  EXPECT_NE(report.find("to-device " + to + " ["), std::string::npos) << report;
  EXPECT_NE(report.find("from-device " + from + " ["), std::string::npos) << report;
  EXPECT_NE(report.find("auto for write-combining memory: widest this CPU has"), std::string::npos)
      << report;
  const std::string wb(ToDeviceReport(MemoryType::kWriteBack));
  EXPECT_EQ(wb.rfind(cached + " [", 0), 0u) << wb;
  EXPECT_NE(wb.find("auto for write-back memory: widest cached store this CPU has"),
            std::string::npos)
      << wb;
}

}  // namespace
}  // namespace onchip::mmio
