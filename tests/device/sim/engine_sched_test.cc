// The device thread's scheduling class (DeviceConfig::engine_sched, device_thread.h): SCHED_FIFO
// where the process may have it, a normal thread when a device asks for that or spins always.
// Its own target, outside Bazel's sandbox: in the sandbox's user namespace even root may not.
#include <pthread.h>
#include <sched.h>

#include <thread>

#include <gtest/gtest.h>

#include "tests/device/wait.h"
#include "tools/sim/device.h"
#include "tools/sim/device_thread.h"

namespace onchip::sim::testing {
namespace {

using onchip::testing::WaitUntil;

// The thread runs SCHED_FIFO where the process may (root, CAP_SYS_NICE or an RLIMIT_RTPRIO of
// at least 1), and stays a normal thread when a device asks for that or spins always.
TEST(EngineSchedTest, TheThreadIsRealtimeWherePermittedUnlessSpinningAlways) {
  // Whether this process may: a scratch thread asks (in a user namespace, as Bazel's sandbox
  // may run tests, even root is refused).
  bool permitted = false;
  std::thread([&] {
    sched_param p{};
    p.sched_priority = 1;
    permitted = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
  }).join();
  if (!permitted) GTEST_SKIP() << "this process may not run a SCHED_FIFO thread here";
  auto realtime = Device::Create(DeviceConfig{});
  ASSERT_TRUE(realtime);
  EXPECT_TRUE(WaitUntil([&] { return (*realtime)->thread().sched_policy() == SCHED_FIFO; }));
  // Devices of one process need addresses of their own.
  DeviceConfig normal;
  normal.mac[5] = 2;
  normal.ipv4 = 0x7f000002;
  normal.engine_sched = DeviceConfig::Sched::kNormal;
  DeviceConfig always;
  always.mac[5] = 3;
  always.ipv4 = 0x7f000003;
  always.engine_spin = DeviceConfig::Spin::kAlways;
  for (const DeviceConfig& c : {normal, always}) {
    auto d = Device::Create(c);
    ASSERT_TRUE(d);
    // A wakeup applies the policy (the idle poll period brings one).
    ASSERT_TRUE(WaitUntil([&] { return (*d)->thread().wakeups() > 1; }));
    EXPECT_EQ((*d)->thread().sched_policy(), SCHED_OTHER);
  }
}

}  // namespace
}  // namespace onchip::sim::testing
