#!/usr/bin/env bash
# Builds one of onchip's fuzz targets with AFL++ plus ASan and UBSan, and fuzzes it for a while
# from its checked-in seed corpus. The per-target scripts (tools/fuzz/run_cmdq_fuzz.sh,
# tools/sim/fuzz/run_fuzz.sh) name the sources and the corpus; this script does the rest.
#
#   run_afl.sh NAME CORPUS_DIR SECONDS OUT_DIR MAP_SIZE -- SOURCE...   (paths from the repo root)
#
# Why outside Bazel, and why afl-g++: AFL++ instruments through its own compiler wrapper, and on
# Debian 12
#   - clang 14 cannot compile std::expected from GCC 12's libstdc++ (no conditionally trivial
#     destructors), so neither afl-clang-fast nor libFuzzer can build onchip;
#   - the afl-gcc-fast plugin refuses the installed GCC ("expected GCC 12.2.0, is 12.2.0": it was
#     built against another 12.2.0 package), so persistent mode (libAFLDriver) is out;
#   - afl-g++ (classic instrumentation, fork server, one process per input) works, with
#     uapi/cmdq/fuzz/afl_main.cc as main(). AFL_CXX_WRAPPER=afl-g++-fast selects persistent
#     mode where the plugin loads.
# Exits non-zero if the run saved any crash or hang (under OUT_DIR/default/{crashes,hangs});
# reproduce one with OUT_DIR/NAME <file>. A second run into the same OUT_DIR resumes.
set -euo pipefail

name=$1 corpus=$2 seconds=$3 out=$4 map_size=$5
shift 5
[[ ${1:-} == -- ]] && shift
srcs=("$@")
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
bin="$out/$name"
echo "building $bin"
(cd "$root" && AFL_QUIET=1 AFL_USE_ASAN=1 AFL_USE_UBSAN=1 "$cxx" -std=c++2b -O2 -g \
  -fno-omit-frame-pointer -I. "${srcs[@]}" "$main" -o "$bin" -pthread)

input="$root/$corpus"
[[ -d $out/default/queue ]] && input=-

echo "fuzzing for ${seconds}s into $out"
AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
AFL_AUTORESUME=1 AFL_MAP_SIZE=$map_size \
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
