#!/usr/bin/env bash
# Builds one of onchip's fuzz targets for the in-process coverage-guided loop
# (tools/fuzz/persistent_fuzz.cc) with ASan, UBSan and GCC's trace-pc coverage, and fuzzes it for
# a while from its checked-in seed corpus. Same arguments as run_afl.sh (the per-target scripts
# pass FUZZER=persistent through to here):
#
#   run_persistent.sh NAME CORPUS_DIR SECONDS OUT_DIR MAP_SIZE -- SOURCE...   (paths from the repo root)
#
# Why: AFL++ on Debian 12 only has its fork-server mode with GCC (one process, and ASan's start-up,
# per input); this loop runs every input in one process. MAP_SIZE is ignored (the map is 64 KiB).
# Exits non-zero if the run saved a crash or a hang (OUT_DIR/{crashes,hangs}); reproduce one with
# OUT_DIR/NAME <file>. A second run into the same OUT_DIR starts again from the corpus and the
# earlier queue.
set -euo pipefail

name=$1 corpus=$2 seconds=$3 out=$4
shift 5
[[ ${1:-} == -- ]] && shift
srcs=("$@")
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX:-g++}
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
flags=(-std=c++2b -O2 -g -fno-omit-frame-pointer -I. -pthread)

mkdir -p "$out/obj"
bin="$out/$name"
echo "building $bin"
objs=()
for src in "${srcs[@]}"; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  (cd "$root" && "$cxx" "${flags[@]}" "${san[@]}" -fsanitize-coverage=trace-pc -c "$src" -o "$obj")
  objs+=("$obj")
done
(cd "$root" && "$cxx" "${flags[@]}" "${san[@]}" -c tools/fuzz/persistent_fuzz.cc -o "$out/obj/main.o")
"$cxx" "${san[@]}" -pthread "${objs[@]}" "$out/obj/main.o" -o "$bin"

seeds=("$root/$corpus")
[[ -d $out/queue ]] && seeds+=("$out/queue")
echo "fuzzing for ${seconds}s into $out"
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=0:handle_abort=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$bin" -t "$seconds" "$out" "${seeds[@]}" >"$out/run.log" 2>"$out/fuzz.log"
rc=$?
set -e
tail -1 "$out/run.log" 2>/dev/null || true
crashes=$(find "$out/crashes" "$out/hangs" -type f 2>/dev/null | wc -l)
if [[ $rc -ne 0 || $crashes -ne 0 ]]; then
  echo "the run saved $crashes crash/hang input(s) (exit $rc); tail of $out/fuzz.log:" >&2
  tail -30 "$out/fuzz.log" >&2
  exit 1
fi
