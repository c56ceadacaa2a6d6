#!/usr/bin/env bash
# Fuzzes the cmdq mailbox decoder (uapi/cmdq/fuzz/mailbox_fuzz.cc) with AFL++ for N seconds.
#
#   tools/fuzz/run_cmdq_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/cmdq]
#
# How it builds and runs, and why with afl-g++: tools/fuzz/run_afl.sh.
set -euo pipefail
exec "$(dirname "$0")/run_afl.sh" mailbox_fuzz uapi/cmdq/fuzz/corpus "${1:-600}" \
  "${2:-/tmp/onchip-fuzz/cmdq}" "${AFL_MAP_SIZE:-65536}" -- \
  uapi/cmdq/fuzz/mailbox_fuzz.cc uapi/cmdq/mailbox.cc uapi/cmd_status.cc uapi/result.cc \
  uapi/prm/field.cc
