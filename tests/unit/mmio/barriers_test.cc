// WcLockGuard brackets its scope: the lock is taken on entry and released on exit, once each.
// (What the fences do is not observable in software; barriers.h states the contract.)
#include "mmio/barriers.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>

namespace onchip::mmio {
namespace {

struct RecordingLock {
  std::string log;
  void lock() { log += "L"; }
  void unlock() { log += "U"; }
};

TEST(WcLockGuard, LocksForExactlyItsScope) {
  RecordingLock lock;
  {
    WcLockGuard guard(lock);
    EXPECT_EQ(lock.log, "L");
  }
  EXPECT_EQ(lock.log, "LU");
}

TEST(WcLockGuard, WorksWithStdMutex) {
  std::mutex m;
  {
    WcLockGuard guard(m);
    EXPECT_FALSE(m.try_lock());
  }
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

TEST(Barriers, CallableInAnyOrder) {
  // Compile-and-run check that each barrier is usable as a plain statement.
  ToDeviceBarrier();
  FromDeviceBarrier();
  WcStart();
  WcFlush();
  SUCCEED();
}

}  // namespace
}  // namespace onchip::mmio
