// The cmdq mailbox fuzz target's entry point, shared by the fuzzer
// (tools/fuzz/run_cmdq_fuzz.sh, through LLVMFuzzerTestOneInput) and the corpus replay test.
//
// Input layout:
//   byte 0      flags: bit0 signatures on; bit1 addresses alias (only the low 32 bits select a
//               block, so distinct pointers reach the same memory); bit2 also run WriteOutput;
//               bit3 force type = PCI_CMD_XPORT (lets the fuzzer get past the first check)
//   bytes 1-2   reply length for WriteOutput (big-endian)
//   bytes 3-66  the cmdq entry
//   then        mailbox blocks, 576 bytes each (a short last one is zero-padded), block i at
//               bus address (i + 1) * 1024; at most 64 blocks
//
// Run it: tools/fuzz/run_cmdq_fuzz.sh; replayed on the seed corpus by
// //tests/unit/uapi:mailbox_fuzz_replay_test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "uapi/cmdq/mailbox.h"

namespace onchip::cmdq {

// What the device side answered (OK on success); nullopt when that step did not run.
struct FuzzOutcome {
  std::optional<prm::DeliveryStatus> read;
  std::optional<prm::DeliveryStatus> write;
};

// Runs one input; aborts if the codec breaks its contract (see mailbox_fuzz.cc).
FuzzOutcome FuzzMailbox(const uint8_t* data, std::size_t size);

}  // namespace onchip::cmdq
