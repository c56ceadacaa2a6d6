#!/usr/bin/env bash
# Fuzzes the software ConnectX (tools/sim/fuzz/firmware_fuzz.cc: cmdq entries, mailbox chains
# and raw commands against the command queue and the firmware) with AFL++ for N seconds.
#
#   tools/sim/fuzz/run_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/sim]
#
# How it builds and runs, and why with afl-g++: tools/fuzz/run_afl.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
exec "$root/tools/fuzz/run_afl.sh" firmware_fuzz tools/sim/fuzz/corpus "${1:-600}" \
  "${2:-/tmp/onchip-fuzz/sim}" "${AFL_MAP_SIZE:-131072}" -- \
  tools/sim/fuzz/firmware_fuzz.cc tools/sim/fuzz/fuzz_entry.cc tools/sim/bar.cc \
  tools/sim/caps.cc tools/sim/command_queue.cc tools/sim/firmware.cc tools/sim/firmware_hca.cc \
  tools/sim/firmware_memic.cc tools/sim/firmware_mkey.cc tools/sim/firmware_resources.cc \
  tools/sim/firmware_sw_icm.cc tools/sim/firmware_umr.cc tools/sim/firmware_queue.cc \
  tools/sim/firmware_eq.cc tools/sim/firmware_cq.cc tools/sim/firmware_qp.cc \
  tools/sim/firmware_qp_transitions.cc tools/sim/firmware_srq.cc tools/sim/firmware_eth_queues.cc tools/sim/iommu.cc tools/sim/outcome.cc uapi/cmdq/mailbox.cc \
  uapi/cmd_status.cc uapi/result.cc uapi/prm/field.cc
