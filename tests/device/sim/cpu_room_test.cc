// The device thread's spin rule (tools/sim/cpu_room.h): /proc/loadavg's running count against
// the CPUs, and the text it is read from.
#include "tools/sim/cpu_room.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <sys/sysinfo.h>

namespace onchip::sim {
namespace {

TEST(CpuRoomTest, ReadsTheRunningCountOfLoadavg) {
  EXPECT_EQ(CpuRoom::RunnableIn("0.50 0.40 0.30 3/150 1234\n"), 3);
  EXPECT_EQ(CpuRoom::RunnableIn("12.00 9.50 7.25 17/2048 99999\n"), 17);
  EXPECT_EQ(CpuRoom::RunnableIn("0.50 0.40 0.30 x/150 1234"), -1);
  EXPECT_EQ(CpuRoom::RunnableIn("0.50 0.40"), -1);
  EXPECT_EQ(CpuRoom::RunnableIn("0.50 0.40 0.30 3 1234"), -1);
  EXPECT_EQ(CpuRoom::RunnableIn(""), -1);
}

TEST(CpuRoomTest, NoRoomWhileEveryCpuHasASpinnerBesideThisThread) {
  // One spinner per CPU: with this thread, more runnable threads than CPUs.
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < get_nprocs(); ++i)
    spinners.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  CpuRoom room(std::chrono::microseconds(0));
  bool spare_seen = false;
  // A spinner may be between slices at one reading; none of ten readings may find room.
  int spare = 0;
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    spare += room.Spare(std::chrono::steady_clock::now()) ? 1 : 0;
  }
  spare_seen = spare > 5;
  stop.store(true);
  for (auto& t : spinners) t.join();
  EXPECT_FALSE(spare_seen) << spare << " of 10 readings found a CPU to spare";
}

TEST(CpuRoomTest, AReadingStandsForItsRefreshPeriod) {
  CpuRoom room(std::chrono::hours(1));
  const auto now = std::chrono::steady_clock::now();
  const bool first = room.Spare(now);
  // Whatever the machine does meanwhile, the hour-long reading is kept.
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < get_nprocs() + 1; ++i)
    spinners.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const bool later = room.Spare(now + std::chrono::minutes(1));
  stop.store(true);
  for (auto& t : spinners) t.join();
  EXPECT_EQ(first, later);
}

}  // namespace
}  // namespace onchip::sim
