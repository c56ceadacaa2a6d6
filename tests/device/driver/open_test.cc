// driver::Open("sim") with the embedded software ConnectX linked in (//tools/plugin:embedded_sim,
// as the libibverbs plugin links it): the device comes up, serves objects and tears down clean.
#include <gtest/gtest.h>

#include <cerrno>

#include "driver/open.h"
#include "driver/pd.h"

namespace onchip::driver {
namespace {

TEST(OpenSimTest, TheEmbeddedDeviceComesUpAndClosesClean) {
  auto device = Open("sim");
  ASSERT_TRUE(device.has_value()) << device.error().describe();
  auto pd = AllocPd(*device);
  ASSERT_TRUE(pd.has_value()) << pd.error().describe();
  EXPECT_TRUE(DeallocPd(*pd).has_value());
  const TeardownReport report = (*device)->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.objects(), 0u);
  EXPECT_EQ(report.pages_still_held, 0u);
}

TEST(OpenSimTest, EachOpenIsItsOwnFunction) {
  auto a = Open("sim");
  auto b = Open("sim");
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_NE(&(*a)->bus(), &(*b)->bus());
  auto pd = AllocPd(*a);
  ASSERT_TRUE(pd.has_value());
  // Closing one leaves the other serving.
  (void)(*b)->Close();
  auto pd2 = AllocPd(*a);
  ASSERT_TRUE(pd2.has_value());
  EXPECT_TRUE(DeallocPd(*pd).has_value());
  EXPECT_TRUE(DeallocPd(*pd2).has_value());
}

TEST(OpenSimTest, TheSimLocatorTakesNoAddress) {
  Locator odd{Locator::Scheme::kSim, "x"};
  auto device = Open(odd);
  ASSERT_FALSE(device.has_value());
  EXPECT_EQ(device.error().errno_value(), EINVAL);
}

}  // namespace
}  // namespace onchip::driver
