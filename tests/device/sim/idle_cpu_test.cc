// An idle software ConnectX must not burn a core: machines here have two. The target is under 2%
// of a core; the assertion is looser (5%) so a loaded CI machine does not flake, and the measured
// number is printed.
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/device/sim/sim_fixture.h"

namespace onchip::sim::testing {
namespace {

TEST(IdleCpuTest, IdleDeviceThreadUsesLittleCpu) {
  auto d = Device::Create();
  ASSERT_TRUE(d);
  Device& dev = **d;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // past start-up
  const auto cpu0 = dev.thread_cpu_time();
  const auto wall0 = std::chrono::steady_clock::now();
  const uint64_t wakeups0 = dev.wakeups();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto cpu = dev.thread_cpu_time() - cpu0;
  const auto wall = std::chrono::steady_clock::now() - wall0;
  const double share = double(cpu.count()) / double(std::chrono::nanoseconds(wall).count());
  std::printf("idle device thread: %.3f%% of a core, %llu wakeups/s\n", 100 * share,
              static_cast<unsigned long long>(dev.wakeups() - wakeups0));
  EXPECT_GT(dev.wakeups(), wakeups0);  // it is alive (polling, health counter)
  EXPECT_LT(share, 0.05);
}

}  // namespace
}  // namespace onchip::sim::testing
