// The thread that runs software ConnectX devices: one thread serves every Device attached to it
// (a device daemon's functions, or the devices of one process that share a wire), so n devices
// cost one spinner, not n.
//
// Each wakeup services every attached device in turn (Device::Service): its command queue, a
// data-engine pass, its internal timer and health counter, and the end of its init delay. The
// awake/sleep policy is the thread's, not a device's:
//   - awake while any device progressed: it keeps watching every device's doorbells without
//     being kicked, spinning for engine_spin_period after the last work, then napping engine_nap
//     between looks; each look is lock-free (Device::NeedsService: the UAR and command
//     doorbells, the port, the engine's deadlines and progress), and only a look that finds
//     something runs the device's full Service;
//   - once every device has been idle for engine_idle_period it sets every device's sleep word
//     (uapi/vpci.h), looks once more at all of them (a doorbell rung meanwhile is never slept
//     through), and sleeps in poll(2) on all their kick eventfds; the timeout is the shortest
//     idle_poll_period, or an engine's retry deadline if that is sooner;
//   - any device's kick wakes the thread, which clears every sleep word and services them all.
// With several devices the periods are the most eager of theirs: the longest spin and idle
// periods, the shortest nap and idle poll period (a daemon configures its functions alike).
//
// A packet one attached device sends to another is seen by the same wakeup or the next one: no
// thread hand-off between them.
//
// Ownership: a Device holds a shared_ptr to its thread, and whoever made the thread may hold one
// too; the thread stops and is joined when the last holder lets go. A device attaches in its
// factory and detaches in its destructor, before any of its members go: Detach returns only
// when the thread is outside that device's service and will not enter it again.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <time.h>

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

 private:
  friend class Device;
  explicit DeviceThread(int control_fd);

  // Device's factory and destructor. Attach starts serving `device` at the next wakeup (it
  // starts asleep, as a new device does). Detach waits until the thread is outside `device`'s
  // service; afterwards the thread never touches it, nor its kick eventfd, again.
  void Attach(Device& device);
  void Detach(Device& device);

  void Run();
  // Wakes the thread out of poll(2) so it sees a changed device set or stop_.
  void Nudge();
  // The policy periods from the attached devices' configs (under mu_).
  void RecomputePeriods();
  // Every device's sleep word set, one more look at each; false (and the words cleared) when
  // some device found work.
  bool TrySleepAll();

  const int control_fd_;  // eventfd: Attach, Detach and the destructor wake the thread with it
  mutable std::mutex mu_;  // devices_ and the periods; held by the thread while it services
  std::vector<Device*> devices_;
  uint64_t generation_ = 0;  // bumped when devices_ changes, so the thread rebuilds its poll set
  std::chrono::microseconds spin_period_{0};
  std::chrono::microseconds nap_{0};
  std::chrono::microseconds idle_period_{0};
  std::chrono::milliseconds idle_poll_period_{0};
  // Attach and Detach calls waiting for mu_. A busy thread drops mu_ for only a moment between
  // wakeups and std::mutex is not fair, so it stands aside while this is non-zero: a device
  // can go while another one carries traffic.
  std::atomic<uint32_t> waiting_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> wakeups_{0};
  std::atomic<clockid_t> thread_clock_{0};
  std::atomic<bool> thread_clock_valid_{false};
  std::thread thread_;
};

}  // namespace onchip::sim
