#include "tools/sim/thread_policy.h"

#include <algorithm>

namespace onchip::sim {
namespace {

// kAlways over kWhenCpuSpare over kNever.
int Eagerness(DeviceConfig::Spin s) {
  return s == DeviceConfig::Spin::kAlways ? 2 : s == DeviceConfig::Spin::kWhenCpuSpare ? 1 : 0;
}

}  // namespace

void ThreadPolicy::Recompute(std::span<const DeviceConfig* const> configs) {
  idle_period_ = {};
  idle_poll_period_ = {};
  spin_ = DeviceConfig::Spin::kNever;
  bool realtime = false;
  bool first = true;
  for (const DeviceConfig* c : configs) {
    if (Eagerness(c->engine_spin) > Eagerness(spin_)) spin_ = c->engine_spin;
    realtime |= c->engine_sched == DeviceConfig::Sched::kRealtimeWhenPermitted;
    idle_period_ = std::max(idle_period_, c->engine_idle_period);
    idle_poll_period_ = first ? c->idle_poll_period : std::min(idle_poll_period_, c->idle_poll_period);
    first = false;
  }
  realtime_ = realtime && spin_ != DeviceConfig::Spin::kAlways;
}

}  // namespace onchip::sim
