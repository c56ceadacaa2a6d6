// Run with ONCHIP_WC_COPY=movq8 and ONCHIP_DEV_READ=sse in the environment (see BUILD): the
// process-wide choice follows them, the report says so, and the dispatched copies work.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mmio/wc_copy.h"

namespace onchip::mmio {
namespace {

TEST(EnvOverride, ChoiceFollowsTheEnvironment) {
  ASSERT_STREQ(std::getenv("ONCHIP_WC_COPY"), "movq8") << "BUILD sets the environment";
  EXPECT_EQ(ActiveToDevice().name, "movq8");
  EXPECT_EQ(ActiveFromDevice().name, "sse");
  const std::string report(WcCopyReport());
  EXPECT_NE(report.find("to-device movq8 [8 x 8-byte MOV (vendor BlueFlame)] (ONCHIP_WC_COPY=movq8)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("from-device sse [4 x 16-byte MOVDQA] (ONCHIP_DEV_READ=sse)"),
            std::string::npos)
      << report;
  // The override holds for every target, write-back memory too.
  for (MemoryType t : {MemoryType::kWriteBack, MemoryType::kWriteCombining, MemoryType::kUncached}) {
    EXPECT_EQ(ToDeviceFor(t).name, "movq8") << MemoryTypeName(t);
    EXPECT_EQ(std::string(ToDeviceReport(t)),
              "movq8 [8 x 8-byte MOV (vendor BlueFlame)] (ONCHIP_WC_COPY=movq8)");
  }
}

TEST(EnvOverride, DispatchedCopiesUseTheChosenKernelAndAreExact) {
  alignas(64) unsigned char dev[512];
  std::vector<unsigned char> src(512), back(512);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i ^ 0x5c);
  CopyToDevice(dev + 4, src.data() + 1, 500);
  EXPECT_EQ(std::memcmp(dev + 4, src.data() + 1, 500), 0);
  CopyFromDevice(back.data(), dev + 4, 500);
  EXPECT_EQ(std::memcmp(back.data(), src.data() + 1, 500), 0);
  EXPECT_EQ(detail::g_to_device.load(), ActiveToDevice().copy);
  EXPECT_EQ(detail::g_from_device.load(), ActiveFromDevice().copy);
}

}  // namespace
}  // namespace onchip::mmio
