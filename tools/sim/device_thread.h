// The thread that runs software ConnectX devices: one thread serves every Device attached to it
// (a device daemon's functions, or the devices of one process that share a wire), so n devices
// cost one spinner, not n.
//
// Each wakeup services every attached device in turn (Device::Service): its command queue, a
// data-engine pass, its internal timer and health counter, and the end of its init delay. The
// awake/sleep policy is the thread's, not a device's (ThreadPolicy, thread_policy.h):
//   - after a pass that found work it runs the next pass at once; after a pass that found none
//     it keeps watching every device's doorbells without being kicked (spinning: each look is
//     lock-free, Device::NeedsService, and only a look that finds something runs the device's
//     full Service) only while that costs nobody a CPU (DeviceConfig::engine_spin; by default
//     while the machine has a CPU to spare, cpu_room.h) and for at most engine_idle_period;
//   - otherwise it sets every device's sleep word (uapi/vpci.h), looks once more at all of them
//     (a doorbell rung meanwhile is never slept through), and waits on all the words at once
//     (futex_waitv); the timeout is the shortest idle_poll_period, or an engine's retry deadline
//     if that is sooner. A driver's doorbell swaps its device's word to 0 and wakes the wait, so
//     the next doorbell after a sleep is served after one wake-up, not a timer;
//   - the thread runs SCHED_FIFO at priority 1 where permitted (DeviceConfig::engine_sched): its
//     wake-up preempts a spinning poller at once. Otherwise it asks for a short slice
//     (sched_setattr's sched_runtime, honoured by EEVDF kernels), so that its wake-up usually
//     preempts the poller instead of waiting for the poller's slice to end (kernel/sched/fair.c,
//     PREEMPT_SHORT); usually: a wake-up the scheduler finds ineligible still waits a slice.
// With several devices the policy is the most eager of theirs: the longest idle period and the
// most willing spin, the shortest idle poll period (a daemon configures its functions alike).
//
// A packet one attached device sends to another is seen by the same wakeup or the next one: no
// thread hand-off between them.
//
// Ownership: a Device holds a shared_ptr to its thread, and whoever made the thread may hold one
// too; the thread stops and is joined when the last holder lets go. A device attaches in its
// factory and detaches in its destructor, before any of its members go: Detach returns only
// when the thread is outside that device's service and will not enter it again.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <linux/futex.h>
#include <time.h>

#include "tools/sim/config.h"
#include "tools/sim/thread_policy.h"
#include "uapi/result.h"

namespace onchip::sim {

class Device;

class DeviceThread {
 public:
  // Starts the thread, with no device yet (it sleeps until one is attached).
  static Result<std::shared_ptr<DeviceThread>> Create();
  ~DeviceThread();
  DeviceThread(const DeviceThread&) = delete;
  DeviceThread& operator=(const DeviceThread&) = delete;

  // Wakeups of the thread (each one services every attached device once).
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  // The thread's CPU time so far, for idle-cost measurements: with several devices attached it
  // is their cost together.
  std::chrono::nanoseconds cpu_time() const;
  std::size_t device_count() const;
  // The thread's scheduling policy as the kernel has it now (SCHED_OTHER, SCHED_FIFO).
  int sched_policy() const;

 private:
  friend class Device;
  DeviceThread();

  // Device's factory and destructor. Attach starts serving `device` at the next wakeup (it
  // starts asleep, as a new device does). Detach waits until the thread is outside `device`'s
  // service; afterwards the thread never touches it, nor its sleep word, again.
  void Attach(Device& device);
  void Detach(Device& device);

  void Run();
  // Wakes the thread out of its wait so it sees a changed device set or stop_.
  void Nudge();
  // Sleeps until a device's sleep word is swapped, a Nudge, or `until` (max: no deadline but
  // the idle poll period). The words were set by TrySleepAll.
  void Wait(std::chrono::steady_clock::time_point until);
  // The policy from the attached devices' configs (under mu_).
  void RecomputePolicy();
  // Every device's sleep word set, one more look at each; false (and the words cleared) when
  // some device found work.
  bool TrySleepAll();

  // A private futex: Attach, Detach and the destructor bump it and wake the thread with it.
  std::atomic<uint32_t> control_{0};
  mutable std::mutex mu_;  // devices_ and the policy; held by the thread while it services
  std::vector<Device*> devices_;
  uint64_t generation_ = 0;  // bumped when devices_ changes, so the thread rebuilds its wait set
  ThreadPolicy policy_;            // spin or sleep, and the periods (under mu_)
  bool realtime_applied_ = false;  // what the thread set itself to (the thread's own)
  std::atomic<pid_t> tid_{0};      // the thread's id, once it runs
  // Attach and Detach calls waiting for mu_. A busy thread drops mu_ for only a moment between
  // wakeups and std::mutex is not fair, so it stands aside while this is non-zero: a device
  // can go while another one carries traffic.
  std::atomic<uint32_t> waiting_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> wakeups_{0};
  std::vector<struct futex_waitv> waiters_;  // the thread's own: Wait's set, kept to reuse
  std::atomic<clockid_t> thread_clock_{0};
  std::atomic<bool> thread_clock_valid_{false};
  std::thread thread_;
};

}  // namespace onchip::sim
