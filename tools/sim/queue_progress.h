// What the data engine keeps per queue while it runs it: the counters it has consumed up to and
// the work it has in flight. The firmware creates these zeroed and zeroes them again when a
// queue returns to reset (QP_2RST); nothing but the engine writes them otherwise.
#pragma once

#include <cstdint>

namespace onchip::sim {

struct CqProgress {};

struct QpProgress {
  uint32_t sq_wqe_counter = 0;  // 16-bit wqe_counter of the next send WQE to execute
  uint32_t rq_counter = 0;      // receive WQEs consumed
};

struct SrqProgress {};

}  // namespace onchip::sim
