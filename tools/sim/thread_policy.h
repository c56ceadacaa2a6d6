// What the device thread does between passes, apart from serving the devices: after work, look
// again at once; after a pass that found nothing, spin (look again without being kicked) or
// sleep; how often a sleeping thread looks anyway; and whether it asks to be realtime
// (device_thread.h says why each). With several devices attached the most eager of their
// configs wins: the most willing spin, the longest idle period, the shortest idle poll period.
#pragma once

#include <chrono>
#include <span>

#include "tools/sim/config.h"
#include "tools/sim/cpu_room.h"

namespace onchip::sim {

class ThreadPolicy {
 public:
  // From the attached devices' configs (none: never spin, and no periodic look).
  void Recompute(std::span<const DeviceConfig* const> configs);

  // SCHED_FIFO wanted: some device asks for it, and the thread does not spin whatever the
  // machine runs (a realtime spinner would starve the poller on its CPU).
  bool realtime() const { return realtime_; }
  // How long a sleeping thread waits at most before it looks anyway (0 with no device).
  std::chrono::milliseconds idle_poll_period() const { return idle_poll_period_; }

  // A pass at `now` found work: the idle period runs from here.
  void Worked(std::chrono::steady_clock::time_point now) { last_work_ = now; }
  // After a pass that found nothing: whether to look again at once rather than sleep. The idle
  // period is checked first, so an idle wakeup (the idle poll period's) reads no CPU count.
  bool Spin(std::chrono::steady_clock::time_point now) {
    return now - last_work_ < idle_period_ &&
           (spin_ == DeviceConfig::Spin::kAlways ||
            (spin_ == DeviceConfig::Spin::kWhenCpuSpare && room_.Spare(now)));
  }

 private:
  DeviceConfig::Spin spin_ = DeviceConfig::Spin::kNever;
  bool realtime_ = false;
  std::chrono::microseconds idle_period_{0};
  std::chrono::milliseconds idle_poll_period_{0};
  CpuRoom room_;
  // The thread starts as if it had just worked: awake for the idle period after it starts.
  std::chrono::steady_clock::time_point last_work_ = std::chrono::steady_clock::now();
};

}  // namespace onchip::sim
