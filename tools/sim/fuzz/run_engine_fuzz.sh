#!/usr/bin/env bash
# Fuzzes the software ConnectX's data engine (tools/sim/fuzz/engine_fuzz.cc: malformed WQEs,
# wrong ds, garbage doorbell records and UAR doorbells, keys and addresses outside mappings)
# for N seconds.
#
#   tools/sim/fuzz/run_engine_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/engine]
#
# FUZZER=persistent (default) or afl: tools/fuzz/run_target.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
sim_srcs=(tools/sim/bar.cc tools/sim/caps.cc tools/sim/command_dma.cc tools/sim/firmware*.cc tools/sim/iommu.cc
  tools/sim/outcome.cc tools/sim/engine*.cc tools/sim/wire.cc)
exec "$root/tools/fuzz/run_target.sh" engine_fuzz tools/sim/fuzz/engine_corpus "${1:-600}" \
  "${2:-/tmp/onchip-fuzz/engine}" "${AFL_MAP_SIZE:-131072}" -- \
  tools/sim/fuzz/engine_fuzz.cc tools/sim/fuzz/engine_fuzz_entry.cc tools/sim/fuzz/direct_bring_up.cc \
  "${sim_srcs[@]}" \
  uapi/cmdq/mailbox.cc uapi/cmd_status.cc uapi/result.cc uapi/prm/field.cc
