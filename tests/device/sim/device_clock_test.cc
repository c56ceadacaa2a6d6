// The device clock's fast reading (device_clock.h): what a CQE's timestamp carries. It must
// never run ahead of steady_clock, never go backwards, and stay close behind; and it must
// really read the counter once the device has lived long enough to know its rate.
#include "tools/sim/device_clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace onchip::sim {
namespace {

using std::chrono::steady_clock;

// Reads fast and exact time side by side for `span`: every fast reading lies between the exact
// readings around it (never ahead of the one after it, at most `max_lag` behind the one before
// it) and never below the fast reading before it. Returns the largest lag seen.
uint64_t CheckAgainstSteady(DeviceClock& clock, std::chrono::milliseconds span) {
  uint64_t worst_lag = 0;
  uint64_t previous = 0;
  const auto end = steady_clock::now() + span;
  while (steady_clock::now() < end) {
    const uint64_t before = clock.NowNs();
    const uint64_t fast = clock.FastNowNs();
    const uint64_t after = clock.NowNs();
    EXPECT_LE(fast, after) << "a fast reading ran ahead of steady_clock";
    EXPECT_GE(fast, previous) << "a fast reading went backwards";
    previous = fast;
    if (before > fast) worst_lag = std::max(worst_lag, before - fast);
    if (::testing::Test::HasFailure()) break;
  }
  return worst_lag;
}

TEST(DeviceClockTest, ExactTimeCountsFromBirth) {
  const auto born = steady_clock::now() - std::chrono::milliseconds(5);
  DeviceClock clock(born);
  EXPECT_EQ(clock.Ns(born + std::chrono::microseconds(7)), 7'000u);
  EXPECT_GE(clock.NowNs(), 5'000'000u);
}

TEST(DeviceClockTest, FastReadingStaysJustBehindSteadyClock) {
  DeviceClock clock(steady_clock::now());
  // The first 10 ms read steady_clock (no rate yet), then the counter.
  CheckAgainstSteady(clock, std::chrono::milliseconds(15));
  if (!DeviceClock::CounterUsable())
    GTEST_SKIP() << "this CPU does not report an invariant time-stamp counter: FastNowNs reads "
                    "steady_clock";
  ASSERT_TRUE(clock.extrapolating()) << "15 ms of readings should have measured the rate";
  const uint64_t lag = CheckAgainstSteady(clock, std::chrono::milliseconds(60));
  // Behind by at most 0.2% of the 100 us an anchor serves plus a steady_clock reading (about
  // 260 ns), and by whatever preempts this thread between its two readings: 50 us is far above
  // the first and catches a wrong rate.
  EXPECT_LT(lag, 50'000u);
}

TEST(DeviceClockTest, FastReadingMovesWithTime) {
  DeviceClock clock(steady_clock::now());
  CheckAgainstSteady(clock, std::chrono::milliseconds(12));
  const uint64_t a = clock.FastNowNs();
  const auto until = steady_clock::now() + std::chrono::microseconds(40);
  while (steady_clock::now() < until) {
  }
  const uint64_t b = clock.FastNowNs();
  // 40 us passed (more if the thread was preempted): an anchor serves 100 us, so this may be
  // the counter's extrapolation, and it must see the time go by.
  EXPECT_GE(b - a, 39'000u);
}

}  // namespace
}  // namespace onchip::sim
