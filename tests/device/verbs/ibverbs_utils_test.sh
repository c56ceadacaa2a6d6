#!/bin/sh
# Debian's ibverbs-utils (ibv_devices, ibv_devinfo -v) list and describe the software ConnectX
# through tools/verbs_env/launch.py, with the /dev node made both ways the launcher knows.
# Arguments: LAUNCH_PY PLUGIN
set -u
launch="$1"; plugin="$(readlink -f "$2")"
failures=0

expect() {  # expect OUTPUT_FILE WHAT PATTERN: the output holds a line matching PATTERN
  if grep -Eq "$3" "$1"; then echo "ok - $2"; else echo "not ok - $2 (no line matching '$3')"; failures=$((failures + 1)); fi
}

for mode in auto namespace; do
  for tool in ibv_devices ibv_devinfo; do
    command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed (ibverbs-utils)"; exit 1; }
  done
  out="${TEST_TMPDIR:-/tmp}/out.$mode"
  /usr/bin/python3 "$launch" --dev-node "$mode" --plugin "$plugin" -- ibv_devices >"$out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { echo "not ok - ibv_devices ($mode) exited $rc"; cat "$out"; failures=$((failures + 1)); }
  expect "$out" "ibv_devices ($mode) lists onchip_0 with its node GUID" "^[[:space:]]+onchip_0[[:space:]]+0c42a103004f0001$"

  /usr/bin/python3 "$launch" --dev-node "$mode" --plugin "$plugin" -- ibv_devinfo -v >"$out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { echo "not ok - ibv_devinfo -v ($mode) exited $rc"; cat "$out"; failures=$((failures + 1)); }
  expect "$out" "hca_id ($mode)" "^hca_id:[[:space:]]+onchip_0$"
  expect "$out" "vendor and part id" "^[[:space:]]+vendor_part_id:[[:space:]]+4125$"
  expect "$out" "firmware version" "^[[:space:]]+fw_ver:[[:space:]]+22\.39\.1002$"
  expect "$out" "board id from sysfs" "^[[:space:]]+board_id:[[:space:]]+ONCHIP_SIM_CX6DX$"
  expect "$out" "device memory" "^[[:space:]]+maximum available device memory:[[:space:]]+[1-9][0-9]*Bytes$"
  expect "$out" "port active" "^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$"
  expect "$out" "Ethernet link layer" "^[[:space:]]+link_layer:[[:space:]]+Ethernet$"
  expect "$out" "GID 0 link-local RoCE v1" "GID\[  0\]:[[:space:]]+fe80:0000:0000:0000:0e42:a1ff:fe4f:0001, RoCE v1$"
  expect "$out" "GID 3 IPv4-mapped RoCE v2" "GID\[  3\]:[[:space:]]+::ffff:127\.0\.0\.1, RoCE v2$"
done

echo "$failures failed"
[ "$failures" -eq 0 ]
