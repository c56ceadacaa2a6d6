// The driver on a real ConnectX bound to vfio-pci: bring-up, MEMIC bytes round trip, a DM MR,
// teardown. Set ONCHIP_VFIO_PCI=dddd:bb:dd.f (and run with access to /dev/vfio) to enable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "driver/context.h"

namespace onchip {
namespace {

std::optional<Context> OpenOrSkip() {
  const char* pci = std::getenv("ONCHIP_VFIO_PCI");
  if (pci == nullptr || *pci == '\0') return std::nullopt;
  auto ctx = Context::Open(driver::Locator::Vfio(pci));
  EXPECT_TRUE(ctx) << ctx.error().describe();
  if (!ctx) return std::nullopt;
  return std::move(*ctx);
}

TEST(VfioHardware, MemicRoundTripAndMr) {
  auto ctx = OpenOrSkip();
  if (!ctx) {
    if (!HasFailure())
      GTEST_SKIP() << "no ConnectX: set ONCHIP_VFIO_PCI to a ConnectX bound to vfio-pci";
    return;
  }
  if (ctx->device().max_dm_size() == 0) GTEST_SKIP() << "this ConnectX has no MEMIC";
  auto dm = ctx->AllocDm(4096);
  ASSERT_TRUE(dm) << dm.error().describe();
  std::vector<std::byte> src(4096), back(4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 13);
  ASSERT_TRUE(dm->Write(0, src));
  ASSERT_TRUE(dm->Read(0, back));
  EXPECT_EQ(back, src);
  auto pd = ctx->AllocPd();
  ASSERT_TRUE(pd) << pd.error().describe();
  auto mr = ctx->RegDmMr(*pd, *dm, 0, 4096, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ);
  ASSERT_TRUE(mr) << mr.error().describe();
  EXPECT_TRUE(mr->Deregister());
  EXPECT_TRUE(dm->Free());
  EXPECT_TRUE(pd->Free());
  const auto report = ctx->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.pages_still_held, 0u);
}

}  // namespace
}  // namespace onchip
