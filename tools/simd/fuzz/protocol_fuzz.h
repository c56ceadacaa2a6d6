// The device daemon's socket protocol under malformed input: a fuzz target that drives a real
// daemon (tools/simd Server, two functions, in this process) through real UNIX-socket
// connections.
//
// One input is one client connection. Byte 0 chooses what rides with the bytes as SCM_RIGHTS
// (0: nothing, 1: a 64 KiB memfd, 2: an eventfd, 3: both, else nothing); byte 1 splits the rest
// into two sends at (byte 1 * rest / 256); the rest is sent as is: frames, parts of frames or
// garbage. Then the client half-closes and reads replies (closing any fd they carry) until the
// daemon closes the connection; a daemon that does not within a few seconds has hung, and the
// target aborts. Every so many inputs, and at the end of a replay, a status request must still be
// answered. The daemon releases what each connection created, so nothing builds up across
// inputs (the target checks the daemon's status text reports no client left).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace onchip::simd::fuzz {

struct ProtocolFuzzResult {
  std::size_t replies = 0;     // frames the daemon sent back
  bool closed_by_daemon = false;
};

ProtocolFuzzResult FuzzProtocol(const uint8_t* data, std::size_t size);

// The daemon's status JSON (a kStatus request on a fresh connection); empty if it did not answer.
std::string DaemonStatus();

}  // namespace onchip::simd::fuzz
