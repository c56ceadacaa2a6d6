#!/usr/bin/env bash
# Fuzzes the software ConnectX's data engine (tools/sim/fuzz/engine_fuzz.cc: malformed WQEs,
# wrong ds, garbage doorbell records and UAR doorbells, keys and addresses outside mappings)
# for N seconds.
#
#   tools/sim/fuzz/run_engine_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/engine]
set -euo pipefail
exec "$(dirname "$0")/../../fuzz/run_fuzzer.sh" //tools/sim/fuzz:engine_fuzzer \
  tools/sim/fuzz/engine_corpus "${1:-600}" "${2:-/tmp/onchip-fuzz/engine}" '^tools/sim/.*,^uapi/.*'
