#!/usr/bin/env bash
# Builds the cmdq mailbox fuzz target (uapi/cmdq/fuzz/mailbox_fuzz.cc) with AFL++ plus ASan and
# UBSan, and fuzzes it for N seconds starting from the checked-in seed corpus.
#
#   tools/fuzz/run_cmdq_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/cmdq]
#
# Why outside Bazel: AFL++ instruments through its own compiler wrapper. Which one, on Debian 12:
#   - clang 14 cannot compile std::expected from GCC 12's libstdc++ (no conditionally trivial
#     destructors), so neither afl-clang-fast nor libFuzzer can build onchip;
#   - Debian 12's afl-gcc-fast plugin refuses the installed GCC ("GCC and plugin have
#     incompatible versions, expected GCC 12.2.0, is 12.2.0": built against another 12.2.0
#     package), so persistent mode (libAFLDriver) is out;
#   - afl-g++ (classic afl-as instrumentation, fork server, one process per input) works. That
#     is what runs by default, with uapi/cmdq/fuzz/afl_main.cc as main(). Set AFL_CXX_WRAPPER=
#     afl-g++-fast on a system whose plugin loads to get persistent mode through libAFLDriver.
# Exits non-zero if the run saved any crash or hang; they are under <out_dir>/default/crashes
# and .../hangs. Reproduce one with: <out_dir>/mailbox_fuzz <file>.
set -euo pipefail

seconds=${1:-600}
out=${2:-/tmp/onchip-fuzz/cmdq}
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${AFL_CXX_WRAPPER:-afl-g++}
command -v "$cxx" >/dev/null || { echo "missing $cxx: apt-get install afl++" >&2; exit 2; }
if [[ $cxx == *-fast ]]; then
  main=/usr/lib/afl/libAFLDriver.a  # persistent mode, input through shared memory
  target_args=()
else
  main=uapi/cmdq/fuzz/afl_main.cc   # one input file per process
  target_args=(@@)
fi

mkdir -p "$out"
bin="$out/mailbox_fuzz"
srcs=(
  uapi/cmdq/fuzz/mailbox_fuzz.cc
  uapi/cmdq/mailbox.cc
  uapi/cmd_status.cc
  uapi/result.cc
  uapi/prm/field.cc
)
echo "building $bin"
(cd "$root" && AFL_QUIET=1 AFL_USE_ASAN=1 AFL_USE_UBSAN=1 "$cxx" -std=c++2b -O2 -g \
  -fno-omit-frame-pointer -I. "${srcs[@]}" "$main" -o "$bin")

# Resume if this out_dir already holds a run, else start from the seeds.
input="$root/uapi/cmdq/fuzz/corpus"
[[ -d $out/default/queue ]] && input=-

echo "fuzzing for ${seconds}s into $out"
AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
AFL_AUTORESUME=1 AFL_MAP_SIZE=${AFL_MAP_SIZE:-65536} \
  afl-fuzz -i "$input" -o "$out" -V "$seconds" -m none -- "$bin" "${target_args[@]}" >"$out/afl.log" 2>&1 || {
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
