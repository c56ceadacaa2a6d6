#!/usr/bin/env bash
# Fuzzes the cmdq mailbox decoder (uapi/cmdq/fuzz/mailbox_fuzz.cc) for N seconds.
#
#   tools/fuzz/run_cmdq_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/cmdq]
#
# FUZZER=persistent (default) or afl: tools/fuzz/run_target.sh.
set -euo pipefail
exec "$(dirname "$0")/run_target.sh" mailbox_fuzz uapi/cmdq/fuzz/corpus "${1:-600}" \
  "${2:-/tmp/onchip-fuzz/cmdq}" "${AFL_MAP_SIZE:-65536}" -- \
  uapi/cmdq/fuzz/mailbox_fuzz.cc uapi/cmdq/mailbox.cc uapi/cmd_status.cc uapi/result.cc \
  uapi/prm/field.cc
