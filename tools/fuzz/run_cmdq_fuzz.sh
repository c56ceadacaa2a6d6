#!/usr/bin/env bash
# Fuzzes the cmdq mailbox decoder (uapi/cmdq/fuzz/mailbox_fuzz.cc) for N seconds.
#
#   tools/fuzz/run_cmdq_fuzz.sh [seconds=600] [out_dir=/tmp/onchip-fuzz/cmdq]
set -euo pipefail
exec "$(dirname "$0")/run_fuzzer.sh" //tools/fuzz:mailbox_fuzzer uapi/cmdq/fuzz/corpus \
  "${1:-600}" "${2:-/tmp/onchip-fuzz/cmdq}" '^uapi/.*'
