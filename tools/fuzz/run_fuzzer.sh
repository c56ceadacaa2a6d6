#!/usr/bin/env bash
# Builds one of onchip's fuzzers from its Bazel target and fuzzes it for a while from its
# checked-in seed corpus with the in-process loop (tools/fuzz/persistent_fuzz.cc). The
# per-target scripts name the target, its corpus and the files to instrument:
#
#   run_fuzzer.sh LABEL CORPUS_DIR SECONDS OUT_DIR COVERAGE_REGEX   (paths from the repo root)
#
# The build is --config=sanitize (ASan + UBSan) with GCC's -fsanitize-coverage=trace-pc on the
# files COVERAGE_REGEX matches (a --per_file_copt pattern list; the loop's own main is never
# instrumented). Exits non-zero if the run saved a crash or a hang (OUT_DIR/{crashes,hangs});
# reproduce one with OUT_DIR/<target name> <file>. A second run into the same OUT_DIR starts
# again from the corpus and the earlier queue.
set -euo pipefail
label=$1 corpus=$2 seconds=$3 out=$4 coverage=$5
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
name=${label##*:}
mkdir -p "$out"
bazel build --config=sanitize "--per_file_copt=${coverage}@-fsanitize-coverage=trace-pc" "$label"
# per_file_copt keeps the configuration's output tree: the binary is under its bazel-bin.
package=${label#//}
package=${package%%:*}
cp -f "$(bazel info --config=sanitize bazel-bin 2>/dev/null)/$package/$name" "$out/$name"
seeds=("$corpus")
[[ -d $out/queue ]] && seeds+=("$out/queue")
echo "fuzzing for ${seconds}s into $out"
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=0:handle_abort=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$out/$name" -t "$seconds" "$out" "${seeds[@]}" >"$out/run.log" 2>"$out/fuzz.log"
rc=$?
set -e
tail -1 "$out/run.log" 2>/dev/null || true
crashes=$(find "$out/crashes" "$out/hangs" -type f 2>/dev/null | wc -l)
if [[ $rc -ne 0 || $crashes -ne 0 ]]; then
  echo "the run saved $crashes crash/hang input(s) (exit $rc); tail of $out/fuzz.log:" >&2
  tail -30 "$out/fuzz.log" >&2
  exit 1
fi
