// The device's free-running clock: nanoseconds since the device was born, as steady_clock counts
// them. The init segment's internal timer shows it, and every CQE carries it as its timestamp.
//
// Reading steady_clock costs about 60 ns in a virtual machine (the vDSO reads the paravirtual
// clock page), and the engine stamps every CQE on the way to software. FastNowNs reads the CPU's
// invariant time-stamp counter instead (a few ns) and converts it at a rate measured against
// steady_clock over the device's life. It reads steady_clock again to re-anchor every 100 us of
// counter, and every time until 10 ms of the device's life give the rate its precision, or
// always when the CPU does not say its counter is invariant.
//
// The conversion runs slow on purpose (1/512 under the measured rate), and each anchor's
// steady_clock reading is taken before its counter reading, so a fast reading is never ahead of
// steady_clock read afterwards on any thread: a CQE's timestamp is never later than a NowNs()
// read after the CQE was polled. It may be behind by about 200 ns (0.2% of 100 us) plus the
// cost of one steady_clock reading; readings never go backwards.
#pragma once

#include <chrono>
#include <cstdint>

namespace onchip::sim {

class DeviceClock {
 public:
  explicit DeviceClock(std::chrono::steady_clock::time_point born) : born_(born) {}

  // Device time at `t`.
  uint64_t Ns(std::chrono::steady_clock::time_point t) const {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - born_).count());
  }
  // Device time now, from steady_clock. Any thread.
  uint64_t NowNs() const { return Ns(std::chrono::steady_clock::now()); }
  // Device time now, cheaply. One thread at a time (the engine calls it inside a pass, under
  // the contexts' mutex).
  uint64_t FastNowNs();
  // Whether FastNowNs can read the counter on this CPU (x86-64 with an invariant counter);
  // without it every reading is steady_clock's.
  static bool CounterUsable();
  // Whether FastNowNs now reads the counter (a rate is known).
  bool extrapolating() const { return ns_per_tick_ != 0; }

 private:
  // A steady_clock reading and the counter read right after it.
  struct Anchor {
    uint64_t ns = 0;
    uint64_t tsc = 0;
  };
  // Reads steady_clock and re-anchors; keeps the anchor as the rate's first one, or measures
  // the rate against the first.
  uint64_t Reanchor();

  const std::chrono::steady_clock::time_point born_;
  Anchor first_{};       // the first anchor whose reading took few ticks (the rate's base)
  Anchor anchor_{};      // the latest anchor
  double ns_per_tick_ = 0;  // 0: no rate yet (or no invariant counter): every reading re-anchors
  uint64_t fresh_ticks_ = 0;  // ticks an anchor serves for (100 us at the rate)
  uint64_t last_ = 0;     // the last reading, so that none goes backwards
};

}  // namespace onchip::sim
