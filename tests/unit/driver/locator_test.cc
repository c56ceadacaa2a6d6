// The opener seam without any software ConnectX linked in: locators parse as documented, and a
// software scheme nobody registered answers ENODEV instead of reaching for a device.
#include <gtest/gtest.h>

#include <cerrno>

#include "driver/open.h"

namespace onchip::driver {
namespace {

TEST(LocatorTest, ParsesTheThreeForms) {
  auto sim = Locator::Parse("sim");
  ASSERT_TRUE(sim.has_value());
  EXPECT_EQ(sim->scheme, Locator::Scheme::kSim);
  EXPECT_EQ(sim->str(), "sim");

  auto daemon = Locator::Parse("simd:/run/onchip/sim.sock");
  ASSERT_TRUE(daemon.has_value());
  EXPECT_EQ(daemon->scheme, Locator::Scheme::kSimDaemon);
  EXPECT_EQ(daemon->address, "/run/onchip/sim.sock");
  EXPECT_EQ(daemon->str(), "simd:/run/onchip/sim.sock");

  auto vfio = Locator::Parse("vfio:0000:3b:00.0");
  ASSERT_TRUE(vfio.has_value());
  EXPECT_EQ(vfio->scheme, Locator::Scheme::kVfio);
  EXPECT_EQ(vfio->address, "0000:3b:00.0");
}

TEST(LocatorTest, RefusesAnythingElseWithEinval) {
  for (const char* bad : {"", "Sim", "sim:", "simd:", "vfio:", "mlx5_0", "vfio0000:3b:00.0"}) {
    auto parsed = Locator::Parse(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_EQ(parsed.error().errno_value(), EINVAL) << bad;
  }
}

TEST(OpenTest, TheInProcessSchemeWithoutAMakerIsEnodev) {
  auto device = Open("sim");
  ASSERT_FALSE(device.has_value());
  EXPECT_EQ(device.error().errno_value(), ENODEV) << device.error().describe();
}

TEST(OpenTest, ADaemonSocketNobodyListensOnIsEnoent) {
  auto device = Open("simd:/nonexistent.sock");
  ASSERT_FALSE(device.has_value());
  EXPECT_EQ(device.error().errno_value(), ENOENT) << device.error().describe();
}

TEST(OpenTest, ADaemonFunctionMustBeANumber) {
  auto device = Open("simd:/nonexistent.sock#x");
  ASSERT_FALSE(device.has_value());
  EXPECT_EQ(device.error().errno_value(), EINVAL) << device.error().describe();
}

TEST(OpenTest, AVfioAddressWithoutSuchDeviceFailsCleanly) {
  auto device = Open("vfio:0000:ff:1f.7");
  ASSERT_FALSE(device.has_value());
  EXPECT_NE(device.error().errno_value(), 0);
}

}  // namespace
}  // namespace onchip::driver
