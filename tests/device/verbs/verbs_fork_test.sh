#!/bin/sh
# Runs a GoogleTest program through tools/verbs_env/launch.py against a device daemon this script
# starts (its functions as onchip_0, onchip_1, as `tools/onchip run` gives them), with
# ONCHIP_TEST_SIMD naming the daemon's socket so the program can read its per-client counters.
# Arguments: LAUNCH_PY PLUGIN SIMD PROGRAM [ARGS...]
set -u
launch="$(readlink -f "$1")"; plugin="$(readlink -f "$2")"; simd="$(readlink -f "$3")"
program="$(readlink -f "$4")"; shift 4
# Under /tmp: a UNIX socket's path must fit in 108 bytes, which Bazel's TEST_TMPDIR does not.
work="$(mktemp -d /tmp/onchip-fork.XXXXXX)"
sock="$work/simd.sock"
"$simd" --socket "$sock" >"$work/simd.log" 2>&1 &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "not ok - the daemon did not listen on $sock"; cat "$work/simd.log"; exit 1; }
ONCHIP_TEST_SIMD="$sock" /usr/bin/python3 "$launch" --plugin "$plugin" --daemon "$sock" -- \
  "$program" "$@"
rc=$?
echo "--- the daemon's log"
cat "$work/simd.log"
exit $rc
