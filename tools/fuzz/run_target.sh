#!/usr/bin/env bash
# Runs one fuzz target with the chosen fuzzer: FUZZER=persistent (default: the in-process loop of
# tools/fuzz/persistent_fuzz.cc, thousands of inputs a second) or FUZZER=afl (AFL++'s fork server
# through afl-g++, about 170 a second). Arguments as run_afl.sh / run_persistent.sh.
set -euo pipefail
here=$(dirname "$0")
case ${FUZZER:-persistent} in
  persistent) exec "$here/run_persistent.sh" "$@" ;;
  afl) exec "$here/run_afl.sh" "$@" ;;
  *) echo "FUZZER must be persistent or afl" >&2; exit 2 ;;
esac
