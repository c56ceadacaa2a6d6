#!/bin/bash
# Unmodified programs in pairs, a server and a client in two processes, on one software ConnectX
# served by the device daemon, as a user runs them in two shells: rdma-core's ibv_*_pingpong
# (ibv_rc_pingpong plain and with -e, -j, -N, -t, -c) and Debian's perftest latency and
# bandwidth tests. Each pair must exit 0 on both sides and print its result line. A second
# daemon serves InfiniBand functions (--link-layer ib): there ibv_rc_pingpong and ibv_ud_pingpong
# run with their default options (no -g: the peer addressed by LID, no GRH), as on an IB fabric.
# Arguments: LAUNCH_PY PLUGIN SIMD
set -u
launch="$(readlink -f "$1")"; plugin="$(readlink -f "$2")"; simd="$(readlink -f "$3")"
# Under /tmp: a UNIX socket's path must fit in 108 bytes, which Bazel's TEST_TMPDIR does not.
work="$(mktemp -d /tmp/onchip-pairs.XXXXXX)"
sock="$work/simd.sock"
"$simd" --socket "$sock" --functions 2 >"$work/simd.log" 2>&1 &
daemon=$!
ib_sock="$work/simd-ib.sock"
"$simd" --socket "$ib_sock" --functions 2 --link-layer ib >"$work/simd-ib.log" 2>&1 &
ib_daemon=$!
cleanup() {
  kill "$daemon" "$ib_daemon" 2>/dev/null; wait "$daemon" "$ib_daemon" 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT
for s in "$sock" "$ib_sock"; do
  for _ in $(seq 100); do [ -S "$s" ] && break; sleep 0.1; done
  [ -S "$s" ] || { echo "not ok - a daemon did not listen on $s"; cat "$work"/simd*.log; exit 1; }
done

failures=0 passes=0 port=
# A TCP port no one holds now, from the kernel (a port derived from $$ is the same in every
# sandbox of a PID namespace, so tests running side by side would collide).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# pair NAME PATTERN SERVER_ARGV... -- CLIENT_EXTRA...: the server, then the client (the server's
# argv plus the extras and 127.0.0.1, or HOST), each within 60 s; both must exit 0 and print
# PATTERN (the server SERVER_PATTERN instead when set: the passive side of a one-sided test prints
# no result). SOCK picks the daemon (default: the RoCE one).
pair() {
  local name="$1" pattern="$2"; shift 2
  local server=() extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  extra=("$@")
  port=$(free_port)
  local slog="$work/$name.server" clog="$work/$name.client"
  # DEVICES=both: every function listed (onchip_0, onchip_1), SERVER_DEVICE / CLIENT_DEVICE
  # picked with -d; otherwise both sides on function 0 alone.
  local daemon_sock="${SOCK:-$sock}"
  local where=(--device "simd:$daemon_sock#0") sdev=() cdev=()
  if [ "${DEVICES:-}" = both ]; then
    where=(--daemon "$daemon_sock"); sdev=(-d "$SERVER_DEVICE"); cdev=(-d "$CLIENT_DEVICE")
  fi
  timeout 60 /usr/bin/python3 "$launch" "${where[@]}" --plugin "$plugin" -- \
    "${server[@]}" "${sdev[@]}" -p "$port" >"$slog" 2>&1 &
  local spid=$!
  local crc=1
  for _ in $(seq 40); do  # the client retries until the server listens
    sleep 0.25
    timeout 60 /usr/bin/python3 "$launch" "${where[@]}" --plugin "$plugin" -- \
      "${server[@]}" "${extra[@]}" "${cdev[@]}" -p "$port" "${HOST:-127.0.0.1}" >"$clog" 2>&1
    crc=$?
    grep -qiE "couldn't connect|unable to open file descriptor" "$clog" || break
    kill -0 "$spid" 2>/dev/null || break
  done
  wait "$spid"; local src=$?
  if [ $src -eq 0 ] && [ $crc -eq 0 ] && grep -qE "${SERVER_PATTERN:-$pattern}" "$slog" &&
     grep -qE "$pattern" "$clog"; then
    echo "ok - $name"; passes=$((passes + 1))
  else
    echo "not ok - $name (server exit $src, client exit $crc)"
    echo "--- server"; tail -15 "$slog"; echo "--- client"; tail -15 "$clog"
    failures=$((failures + 1))
  fi
}

# RoCE needs a GRH: -g 1 is the port's RoCE v2 link-local GID.
for flags in "" "-e" "-j" "-N" "-t" "-c"; do
  # shellcheck disable=SC2086
  pair "ibv_rc_pingpong${flags:+ $flags}" "iters in" ibv_rc_pingpong -g 1 -n 20 $flags
done
# The server on the daemon's first function, the client on its second (onchip_1, its own MAC,
# IPv4 address and GIDs): -g 3 is each port's RoCE v2 IPv4-mapped GID.
DEVICES=both SERVER_DEVICE=onchip_0 CLIENT_DEVICE=onchip_1 \
  pair "ibv_rc_pingpong across two functions" "iters in" ibv_rc_pingpong -g 3 -n 20
pair ibv_uc_pingpong "iters in" ibv_uc_pingpong -g 1 -n 20
pair ibv_ud_pingpong "iters in" ibv_ud_pingpong -g 1 -n 20
pair ibv_srq_pingpong "iters in" ibv_srq_pingpong -g 1 -n 20

# The InfiniBand functions as ibv_devinfo sees them: the link layer, the LID the daemon's subnet
# manager gave (from 2) and its LID 1, and GID 0 = fe80::/64 + the port GUID.
ib_info="$work/ibv_devinfo.ib"
timeout 60 /usr/bin/python3 "$launch" --device "simd:$ib_sock#0" --plugin "$plugin" -- \
  ibv_devinfo -v >"$ib_info" 2>&1
if grep -qE "^[[:space:]]+link_layer:[[:space:]]+InfiniBand$" "$ib_info" &&
   grep -qE "^[[:space:]]+sm_lid:[[:space:]]+1$" "$ib_info" &&
   grep -qE "^[[:space:]]+port_lid:[[:space:]]+([2-9]|[1-9][0-9]+)$" "$ib_info" &&
   grep -qE "GID\[  0\]:[[:space:]]+fe80:0000:0000:0000:0c42:a103:004f:0001" "$ib_info"; then
  echo "ok - ibv_devinfo -v on an InfiniBand function"; passes=$((passes + 1))
else
  echo "not ok - ibv_devinfo -v on an InfiniBand function"; cat "$ib_info"
  failures=$((failures + 1))
fi

# InfiniBand: the defaults (1000 iterations of 4096 bytes, no GRH, the peer's LID from the
# exchange); only -p differs, so that concurrent tests never share a TCP port. Both sides print
# the bandwidth line ("... bytes in ... seconds = ... Mbit/sec").
SOCK="$ib_sock" HOST=localhost pair "ibv_rc_pingpong, InfiniBand, default options" "Mbit/sec" \
  ibv_rc_pingpong
SOCK="$ib_sock" HOST=localhost DEVICES=both SERVER_DEVICE=onchip_0 CLIENT_DEVICE=onchip_1 \
  pair "ibv_rc_pingpong, InfiniBand, across two functions by LID" "Mbit/sec" ibv_rc_pingpong
SOCK="$ib_sock" HOST=localhost pair "ibv_ud_pingpong, InfiniBand, default options" "Mbit/sec" \
  ibv_ud_pingpong

if command -v ib_write_lat >/dev/null; then
  table='^ *#bytes'
  for t in ib_send_lat ib_write_lat; do
    pair "$t" "$table" "$t" -x 1 -n 50
  done
  for t in ib_read_lat ib_atomic_lat; do
    SERVER_PATTERN="remote address" pair "$t" "$table" "$t" -x 1 -n 50
  done
  for t in ib_send_bw ib_write_bw ib_read_bw; do
    pair "$t" "$table" "$t" -x 1 -n 50
  done
  free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
  if [ "$free" -ge 64 ]; then
    pair "ib_write_lat --use_hugepages" "$table" ib_write_lat -x 1 -n 50 --use_hugepages
    pair "ib_read_bw --use_hugepages" "$table" ib_read_bw -x 1 -n 50 --use_hugepages
  else
    echo "ok - perftest --use_hugepages # SKIP fewer than 64 free 2 MiB hugepages"
  fi
else
  echo "not ok - perftest is not installed (apt-get install perftest; tools/onchip test installs it)"
  failures=$((failures + 1))
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
