#!/usr/bin/env bash
# Fuzzes the software ConnectX (tools/sim/fuzz/firmware_fuzz.cc: cmdq entries, mailbox chains
# and raw commands against the command queue and the firmware) for N seconds.
#
#   tools/sim/fuzz/run_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/sim]
set -euo pipefail
exec "$(dirname "$0")/../../fuzz/run_fuzzer.sh" //tools/sim/fuzz:firmware_fuzzer \
  tools/sim/fuzz/corpus "${1:-600}" "${2:-/tmp/onchip-fuzz/sim}" '^tools/sim/.*,^uapi/.*'
