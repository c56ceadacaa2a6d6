#include "tools/sim/device_clock.h"

#include <algorithm>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace onchip::sim {

namespace {

constexpr uint64_t kAnchorServesNs = 100'000;       // how long one anchor serves: 100 us
constexpr uint64_t kRateBaselineNs = 10'000'000;    // the rate's anchors lie 10 ms apart at least
// An anchor whose steady_clock reading spans more ticks than this (the thread was interrupted
// in it) does not measure the rate: over 10 ms, 10,000 ticks (4 us at 2.5 GHz) err by 0.04%,
// well inside the slow bias below, which also covers NTP slewing steady_clock (up to 0.05%).
constexpr uint64_t kAnchorMaxSpreadTicks = 10'000;
constexpr double kSlowBias = 1.0 - 1.0 / 512;

#if defined(__x86_64__)
// CPUID 0x80000007, EDX bit 8: the counter runs at one rate in every power and sleep state.
bool InvariantCounter() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) != 0;
}
#endif

}  // namespace

uint64_t DeviceClock::FastNowNs() {
#if defined(__x86_64__)
  if (ns_per_tick_ != 0) {
    // A thread moved to a CPU whose counter is a little behind gives a huge difference, and
    // re-anchors.
    const uint64_t ticks = __rdtsc() - anchor_.tsc;
    if (ticks < fresh_ticks_) {
      const auto elapsed = static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick_);
      return last_ = std::max(last_, anchor_.ns + elapsed);
    }
  }
#endif
  return Reanchor();
}

bool DeviceClock::CounterUsable() {
#if defined(__x86_64__)
  static const bool invariant = InvariantCounter();
  return invariant;
#else
  return false;
#endif
}

uint64_t DeviceClock::Reanchor() {
#if defined(__x86_64__)
  if (CounterUsable()) {
    // A reading interrupted between steady_clock and the counter is taken again (a few times
    // at most): its anchor would lag by the interruption.
    uint64_t before = 0, ns = 0, after = 0;
    for (int tries = 0; tries < 4; ++tries) {
      before = __rdtsc();
      ns = NowNs();
      after = __rdtsc();
      if (after - before <= kAnchorMaxSpreadTicks) break;
    }
    anchor_ = {ns, after};
    if (after - before <= kAnchorMaxSpreadTicks) {
      if (first_.tsc == 0) {
        first_ = anchor_;
      } else if (ns - first_.ns >= kRateBaselineNs && after > first_.tsc) {
        const double measured =
            static_cast<double>(ns - first_.ns) / static_cast<double>(after - first_.tsc);
        ns_per_tick_ = measured * kSlowBias;
        fresh_ticks_ = static_cast<uint64_t>(static_cast<double>(kAnchorServesNs) / ns_per_tick_);
      }
    }
    return last_ = std::max(last_, ns);
  }
#endif
  return last_ = std::max(last_, NowNs());
}

}  // namespace onchip::sim
