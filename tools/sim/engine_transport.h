// Transport constants the engine's requester and responder share: the RNR timer table and the
// GRH size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/opcodes.h"

namespace onchip::sim {

// The reliable transports: acknowledged, sequenced, with RDMA READ and atomics. XRC is RC with
// the receive side split off (the target QP) and receives taken from an XRC SRQ.
inline bool Reliable(uint8_t st) { return st == prm::QP_ST_RC || st == prm::QP_ST_XRC; }

// qpc.rnr_retry 7: retry after RNR NAKs without limit.
inline constexpr uint8_t kRnrRetryForever = 7;

// The wait an RNR NAK's timer code asks for (IBTA table; code 0 is the longest, 655.36 ms).
constexpr uint64_t RnrTimerNs(uint8_t code) {
  constexpr uint32_t kTensOfMicroseconds[32] = {
      65536, 1,   2,    3,    4,    6,    8,    12,   16,    24,    32,    48,    64,    96,    128,   192,
      256,   384, 512,  768,  1024, 1536, 2048, 3072, 4096,  6144,  8192,  12288, 16384, 24576, 32768, 49152};
  return uint64_t{kTensOfMicroseconds[code & 31]} * 10'000;
}

// The bytes of a UD receive's GRH area: the 40 bytes in front of the payload.
inline constexpr std::size_t kGrhBytes = 40;

}  // namespace onchip::sim
