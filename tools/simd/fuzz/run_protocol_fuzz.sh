#!/usr/bin/env bash
# Fuzzes the device daemon's socket protocol (tools/simd/fuzz/protocol_fuzz.h: frames, parts of
# frames, garbage and stray fds on real connections to a daemon in the fuzzing process) for N
# seconds, with the daemon, the driver and the software ConnectX under coverage.
#
#   tools/simd/fuzz/run_protocol_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/protocol]
set -euo pipefail
exec "$(dirname "$0")/../../fuzz/run_fuzzer.sh" //tools/simd/fuzz:protocol_fuzzer \
  tools/simd/fuzz/corpus "${1:-600}" "${2:-/tmp/onchip-fuzz/protocol}" \
  '^tools/simd/.*,^tools/sim/.*,^driver/.*'
