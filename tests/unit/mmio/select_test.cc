// Which variant is chosen, and what the report says about why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mmio/wc_copy.h"

namespace onchip::mmio {
namespace {

std::string To(const char* env, const CpuFeatures& cpu, std::string* why) {
  char buf[256];
  const auto& v = SelectToDevice(env, cpu, buf, sizeof buf);
  *why = buf;
  return std::string(v.name);
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

TEST(SelectToDevice, AutoTakesTheWidestStoreTheCpuHas) {
  std::string why;
  EXPECT_EQ(To(nullptr, kBaseline, &why), "sse");
  EXPECT_EQ(why, "auto: widest this CPU has (x86-64 baseline)");
  EXPECT_EQ(To(nullptr, kAvx2, &why), "avx2");
  EXPECT_EQ(To(nullptr, kAvx512, &why), "avx512");
  EXPECT_EQ(why, "auto: widest this CPU has (AVX-512F)");
  EXPECT_EQ(To(nullptr, kAll, &why), "movdir64b");
  EXPECT_EQ(To("", kAll, &why), "movdir64b");  // empty = unset
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
                 "auto: widest this CPU has (AVX-512F)");
  EXPECT_EQ(To("avx512", kBaseline, &why), "sse");
}

TEST(SelectToDevice, UnknownOverrideFallsBackAndSaysWhy) {
  std::string why;
  EXPECT_EQ(To("fastest", kAvx2, &why), "avx2");
  EXPECT_EQ(why, "ONCHIP_WC_COPY=fastest ignored, no such variant; auto: widest this CPU has (AVX2)");
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
  SelectToDevice("movq8", kBaseline, buf, 6);
  EXPECT_STREQ(buf, "ONCHI");
  EXPECT_EQ(buf[6], 'x');
}

// With no override in the environment, the process choice is the auto choice for this CPU.
TEST(Active, MatchesAutoChoiceForThisCpu) {
  if (std::getenv("ONCHIP_WC_COPY") || std::getenv("ONCHIP_DEV_READ"))
    GTEST_SKIP() << "an override is set in this environment";
  char buf[256];
  EXPECT_EQ(&ActiveToDevice(), &SelectToDevice(nullptr, DetectCpuFeatures(), buf, sizeof buf));
  EXPECT_EQ(&ActiveFromDevice(), &SelectFromDevice(nullptr, DetectCpuFeatures(), buf, sizeof buf));
  const std::string report(WcCopyReport());
  EXPECT_NE(report.find("to-device " + std::string(ActiveToDevice().name) + " ["), std::string::npos)
      << report;
  EXPECT_NE(report.find("auto: widest this CPU has"), std::string::npos) << report;
}

}  // namespace
}  // namespace onchip::mmio
