// The software ConnectX's fuzz target: random cmdq entries, mailbox chains and raw command
// messages against the command queue and the firmware, checking after every input that nothing
// crashed or hung and that the firmware's tables are consistent (Firmware::CheckInvariants).
//
// Input layout:
//   byte 0      flags: bit0 bring the HCA up first (ENABLE_HCA ... INIT_HCA, run directly);
//               bit1 also create one of each object (UAR, PD, TD, MEMIC, SW ICM, mkeys) so that
//               destroy and reference paths are reachable; bit2 raw mode (below)
//   cmdq mode (bit2 clear):
//     bytes 1-4   the command doorbell vector (big-endian)
//     then        the DMA arena's first bytes (at most kArenaBytes): the cmdq (32 x 64 B) at
//                 IOVA kArenaIova, mailbox blocks anywhere in the arena; one Poll() runs it
//   either mode: the same bytes also fill a second arena at kUserArenaIova, mapped for user
//                 context kUserUid, so that commands carrying that uid can name queue pages,
//                 doorbell records and MTT entries the firmware's owner checks accept
//   raw mode (bit2 set): repeated records {u16 in_len, u16 out_len, in_len bytes} (big-endian
//                 lengths), each run with Firmware::Execute
//
// Fuzz it: tools/sim/fuzz/run_fuzz.sh (//tools/sim/fuzz:firmware_fuzzer). The seed corpus (tools/sim/fuzz/corpus, made by
// //tools/sim/fuzz:make_seeds) is replayed by //tools/sim/fuzz:firmware_fuzz_replay_test.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onchip::sim::fuzz {

inline constexpr uint64_t kArenaIova = 0x100000;
inline constexpr std::size_t kArenaBytes = 64 * 1024;
inline constexpr uint64_t kUserArenaIova = 0x200000;
inline constexpr uint16_t kUserUid = 1;
inline constexpr uint8_t kFlagBringUp = 1;
inline constexpr uint8_t kFlagObjects = 2;
inline constexpr uint8_t kFlagRaw = 4;

struct FuzzResult {
  int commands = 0;   // commands that reached the firmware
  int completed = 0;  // cmdq entries completed
};

// Runs one input; aborts if an invariant breaks.
FuzzResult FuzzFirmware(const uint8_t* data, std::size_t size);

}  // namespace onchip::sim::fuzz
