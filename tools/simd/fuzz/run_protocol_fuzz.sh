#!/usr/bin/env bash
# Fuzzes the device daemon's socket protocol (tools/simd/fuzz/protocol_fuzz.h: frames, parts of
# frames, garbage and stray fds on real connections to a daemon in the fuzzing process) with
# onchip's in-process loop (tools/fuzz/persistent_fuzz.cc) for N seconds.
#
#   tools/simd/fuzz/run_protocol_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/protocol]
#
# Built with Bazel under --config=sanitize (ASan + UBSan), the daemon, the driver and the
# software ConnectX under GCC's trace-pc coverage (the fuzzer's own main is not instrumented).
# Exits non-zero if the run saved a crash or a hang (OUT_DIR/{crashes,hangs}); reproduce one with
# OUT_DIR/protocol_fuzzer <file>.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
seconds=${1:-600} out=${2:-/tmp/onchip-fuzz/protocol}
mkdir -p "$out"
bazel build --config=sanitize \
  '--per_file_copt=^tools/simd/.*,^tools/sim/.*,^driver/.*@-fsanitize-coverage=trace-pc' \
  //tools/simd/fuzz:protocol_fuzzer
# per_file_copt keeps the configuration's output tree: the binary is under its bazel-bin.
bin="$(bazel info --config=sanitize bazel-bin 2>/dev/null)/tools/simd/fuzz/protocol_fuzzer"
cp -f "$bin" "$out/protocol_fuzzer"
seeds=(tools/simd/fuzz/corpus)
[[ -d $out/queue ]] && seeds+=("$out/queue")
echo "fuzzing for ${seconds}s into $out"
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=0:handle_abort=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$out/protocol_fuzzer" -t "$seconds" "$out" "${seeds[@]}" >"$out/run.log" 2>"$out/fuzz.log"
rc=$?
set -e
tail -1 "$out/run.log" 2>/dev/null || true
crashes=$(find "$out/crashes" "$out/hangs" -type f 2>/dev/null | wc -l)
if [[ $rc -ne 0 || $crashes -ne 0 ]]; then
  echo "the run saved $crashes crash/hang input(s) (exit $rc); tail of $out/fuzz.log:" >&2
  tail -30 "$out/fuzz.log" >&2
  exit 1
fi
