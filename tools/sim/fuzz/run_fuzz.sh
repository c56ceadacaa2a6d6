#!/usr/bin/env bash
# Builds the software ConnectX's fuzz target (tools/sim/fuzz/firmware_fuzz.cc: cmdq entries,
# mailbox chains and raw commands against the command queue and the firmware) with AFL++ plus
# ASan and UBSan, and fuzzes it for N seconds from the checked-in seed corpus.
#
#   tools/sim/fuzz/run_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/sim]
#
# Outside Bazel for the reasons tools/fuzz/run_cmdq_fuzz.sh gives (clang 14 cannot compile
# std::expected; Debian 12's afl-gcc-fast plugin does not load): afl-g++ classic instrumentation,
# one process per input, uapi/cmdq/fuzz/afl_main.cc as main(). AFL_CXX_WRAPPER=afl-g++-fast
# selects persistent mode where the plugin works.
# Exits non-zero if the run saved any crash or hang (under <out_dir>/default/{crashes,hangs});
# reproduce one with <out_dir>/firmware_fuzz <file>.
set -euo pipefail

seconds=${1:-600}
out=${2:-/tmp/onchip-fuzz/sim}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cxx=${AFL_CXX_WRAPPER:-afl-g++}
command -v "$cxx" >/dev/null || { echo "missing $cxx: apt-get install afl++" >&2; exit 2; }
if [[ $cxx == *-fast ]]; then
  main=/usr/lib/afl/libAFLDriver.a
  target_args=()
else
  main=uapi/cmdq/fuzz/afl_main.cc
  target_args=(@@)
fi

mkdir -p "$out"
bin="$out/firmware_fuzz"
srcs=(
  tools/sim/fuzz/firmware_fuzz.cc
  tools/sim/fuzz/fuzz_entry.cc
  tools/sim/bar.cc
  tools/sim/caps.cc
  tools/sim/command_queue.cc
  tools/sim/firmware.cc
  tools/sim/firmware_hca.cc
  tools/sim/firmware_memic.cc
  tools/sim/firmware_mkey.cc
  tools/sim/firmware_resources.cc
  tools/sim/firmware_sw_icm.cc
  tools/sim/iommu.cc
  tools/sim/outcome.cc
  uapi/cmdq/mailbox.cc
  uapi/cmd_status.cc
  uapi/result.cc
  uapi/prm/field.cc
)
echo "building $bin"
(cd "$root" && AFL_QUIET=1 AFL_USE_ASAN=1 AFL_USE_UBSAN=1 "$cxx" -std=c++2b -O2 -g \
  -fno-omit-frame-pointer -I. "${srcs[@]}" "$main" -o "$bin" -pthread)

input="$root/tools/sim/fuzz/corpus"
[[ -d $out/default/queue ]] && input=-

echo "fuzzing for ${seconds}s into $out"
AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
AFL_AUTORESUME=1 AFL_MAP_SIZE=${AFL_MAP_SIZE:-131072} \
  afl-fuzz -i "$input" -o "$out" -V "$seconds" -m none -t 2000 -- "$bin" "${target_args[@]}" \
  >"$out/afl.log" 2>&1 || {
  echo "afl-fuzz failed; tail of $out/afl.log:" >&2
  tail -20 "$out/afl.log" >&2
  exit 2
}

stats="$out/default/fuzzer_stats"
get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
crashes=$(get saved_crashes)
hangs=$(get saved_hangs)
echo "execs_done=$(get execs_done) execs_per_sec=$(get execs_per_sec) corpus_count=$(get corpus_count)" \
  "edges_found=$(get edges_found)/$(get total_edges) saved_crashes=$crashes saved_hangs=$hangs"
[[ ${crashes:-1} == 0 && ${hangs:-1} == 0 ]]
