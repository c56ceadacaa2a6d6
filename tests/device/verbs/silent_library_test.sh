#!/bin/sh
# The library says nothing unless asked (log/log.h): ibv_devinfo on the software ConnectX through
# onchip's provider leaves stderr empty, also when the allocator falls back from DPDK's
# hugepages, and ONCHIP_LOG=info brings the fallback's line back.
# The DPDK tier is made to fail whatever the machine has reserved: with no free hugepage the EAL
# is not attempted, with some, the option below makes rte_eal_init fail (and print, to its stream).
# Arguments: LAUNCH_PY PLUGIN
set -u
launch="$1"; plugin="$(readlink -f "$2")"
tmp="${TEST_TMPDIR:-/tmp}"
failures=0
broken_eal="--in-memory --no-pci --this-is-not-an-eal-option"

devinfo() {  # devinfo NAME ENV...: ibv_devinfo with ENV, its stderr in $tmp/NAME.err
  name="$1"; shift
  env -u ONCHIP_LOG "$@" /usr/bin/python3 "$launch" --plugin "$plugin" -- ibv_devinfo \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "not ok - $name: ibv_devinfo exited $rc"; cat "$tmp/$name.out" "$tmp/$name.err"
    failures=$((failures + 1))
  fi
}
silent() {  # silent NAME: nothing on stderr
  if [ -s "$tmp/$1.err" ]; then
    echo "not ok - $1: stderr is not empty:"; sed 's/^/    /' "$tmp/$1.err"; failures=$((failures + 1))
  else
    echo "ok - $1: stderr empty"
  fi
}
# With hugepages reserved the broken option makes rte_eal_init fail, and DPDK writes its fatal
# alert to stderr itself whatever its log stream (lib/eal/linux/eal.c rte_eal_init_alert): that
# one line is DPDK's answer to the arguments the user gave it, not the library talking.
silent_but_eal_alert() {  # silent_but_eal_alert NAME: nothing on stderr but that line
  grep -v "^EAL: FATAL: Invalid 'command line' arguments\.$" "$tmp/$1.err" >"$tmp/$1.rest"
  if [ -s "$tmp/$1.rest" ]; then
    echo "not ok - $1: stderr is not empty:"; sed 's/^/    /' "$tmp/$1.rest"; failures=$((failures + 1))
  else
    echo "ok - $1: stderr empty (but DPDK's own alert for the broken argument)"
  fi
}
says() {  # says NAME PATTERN: stderr has a line matching PATTERN
  if grep -Eq "$2" "$tmp/$1.err"; then
    echo "ok - $1: stderr has '$2'"
  else
    echo "not ok - $1: no line matching '$2' on stderr:"; sed 's/^/    /' "$tmp/$1.err"
    failures=$((failures + 1))
  fi
}

command -v ibv_devinfo >/dev/null || { echo "not ok - ibv_devinfo is not installed (ibverbs-utils)"; exit 1; }

devinfo default
silent default

devinfo fallback ONCHIP_EAL_ARGS="$broken_eal"
silent_but_eal_alert fallback
grep -q "^hca_id:[[:space:]]*onchip_0" "$tmp/fallback.out" && echo "ok - fallback: the device is listed" ||
  { echo "not ok - fallback: no hca_id line"; failures=$((failures + 1)); }

devinfo fallback_info ONCHIP_EAL_ARGS="$broken_eal" ONCHIP_LOG=info
says fallback_info "^onchip alloc: dpdk-hugepages unavailable: .*; using memfd-hugetlb$"

devinfo fallback_warn ONCHIP_EAL_ARGS="$broken_eal" ONCHIP_LOG=warn
silent_but_eal_alert fallback_warn

# DPDK's own words are the EAL's to say only at debug, and only when it ran (a free hugepage:
# with none reserved, or every one in use, the EAL is not attempted).
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
if [ "$free" -gt 0 ]; then
  devinfo eal_debug ONCHIP_EAL_ARGS="$broken_eal" ONCHIP_LOG=debug
  says eal_debug "^onchip alloc: dpdk: "
else
  echo "ok - eal_debug skipped: no free hugepage, the EAL is not attempted"
fi

echo "$failures failed"
[ "$failures" -eq 0 ]
