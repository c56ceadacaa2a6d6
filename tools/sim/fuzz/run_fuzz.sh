#!/usr/bin/env bash
# Fuzzes the software ConnectX (tools/sim/fuzz/firmware_fuzz.cc: cmdq entries, mailbox chains
# and raw commands against the command queue and the firmware) for N seconds.
#
#   tools/sim/fuzz/run_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/sim]
#
# FUZZER=persistent (default) or afl: tools/fuzz/run_target.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
# The firmware and what it reaches: every sim source but the device thread, the engine and the wire.
sim_srcs=(tools/sim/bar.cc tools/sim/caps.cc tools/sim/command_dma.cc tools/sim/command_queue.cc
  tools/sim/firmware*.cc tools/sim/iommu.cc tools/sim/outcome.cc)
exec "$root/tools/fuzz/run_target.sh" firmware_fuzz tools/sim/fuzz/corpus "${1:-600}" \
  "${2:-/tmp/onchip-fuzz/sim}" "${AFL_MAP_SIZE:-131072}" -- \
  tools/sim/fuzz/firmware_fuzz.cc tools/sim/fuzz/fuzz_entry.cc "${sim_srcs[@]}" \
  uapi/cmdq/mailbox.cc uapi/cmd_status.cc uapi/result.cc uapi/prm/field.cc
