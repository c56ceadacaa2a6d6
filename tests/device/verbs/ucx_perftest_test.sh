#!/bin/bash
# Debian's unmodified UCX (ucx_perftest from ucx-utils) in two processes on the software ConnectX
# served by the device daemon, as a user runs it in two shells: tag_lat, tag_bw, ucp_put_lat,
# ucp_get and ucp_fadd over UCX_TLS=rc_verbs,ud_verbs,self, and tag_lat over ud_verbs,self alone,
# each with both processes on onchip_0 and with the server on onchip_0 and the client on
# onchip_1. UCX picks the GID itself (no UCX_IB_GID_INDEX). Each pair must exit 0 on both sides,
# the client print its "Final:" line, both sides' endpoint run over a verbs transport of the
# device they were given, and neither print a UCX warning or error (a teardown warning such as
# ibv_destroy_comp_channel's EBUSY fails the pair).
# Arguments: LAUNCH_PY PLUGIN SIMD
set -u
launch="$(readlink -f "$1")"; plugin="$(readlink -f "$2")"; simd="$(readlink -f "$3")"
if ! command -v ucx_perftest >/dev/null; then
  echo "not ok - ucx_perftest is not installed (apt-get install ucx-utils; tools/onchip test installs it)"
  echo "0 passed, 1 failed"
  exit 1
fi
# Under /tmp: a UNIX socket's path must fit in 108 bytes, which Bazel's TEST_TMPDIR does not.
work="$(mktemp -d /tmp/onchip-ucx.XXXXXX)"
sock="$work/simd.sock"
"$simd" --socket "$sock" --functions 2 >"$work/simd.log" 2>&1 &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "not ok - the daemon did not listen on $sock"; cat "$work/simd.log"; exit 1; }

failures=0 passes=0 port=
# A TCP port no one holds now, from the kernel (a port derived from $$ is the same in every
# sandbox of a PID namespace, so tests running side by side would collide).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# pair TLS TEST SERVER_DEVICE CLIENT_DEVICE
pair() {
  local tls="$1" test="$2" sdev="$3" cdev="$4"
  local name="ucx_perftest -t $test, UCX_TLS=$tls, $sdev <- $cdev"
  port=$(free_port)
  local slog="$work/$test.$sdev.$cdev.$tls.server" clog="$work/$test.$sdev.$cdev.$tls.client"
  # UCX_LOG_LEVEL=info: each side names the transport and device of its endpoint ("ep_cfg").
  local env=(UCX_TLS="$tls" UCX_LOG_LEVEL=info)
  env "${env[@]}" UCX_NET_DEVICES="$sdev:1" timeout 60 /usr/bin/python3 "$launch" \
    --daemon "$sock" --plugin "$plugin" -- ucx_perftest -t "$test" -n 1000 -p "$port" \
    >"$slog" 2>&1 &
  local spid=$!
  local crc=1
  for _ in $(seq 40); do  # the client retries until the server listens
    sleep 0.25
    env "${env[@]}" UCX_NET_DEVICES="$cdev:1" timeout 60 /usr/bin/python3 "$launch" \
      --daemon "$sock" --plugin "$plugin" -- ucx_perftest -t "$test" -n 1000 -p "$port" \
      127.0.0.1 >"$clog" 2>&1
    crc=$?
    grep -q "Connection refused" "$clog" || break
    kill -0 "$spid" 2>/dev/null || break
  done
  wait "$spid"; local src=$?
  local lane='ep_cfg\[[0-9]+\]: .*(rc|ud)_verbs/'
  if [ $src -eq 0 ] && [ $crc -eq 0 ] && grep -q "^Final:" "$clog" &&
     grep -qE "$lane$sdev:1" "$slog" && grep -qE "$lane$cdev:1" "$clog" &&
     ! grep -qE "UCX  (WARN|ERROR)" "$slog" "$clog"; then
    echo "ok - $name"; passes=$((passes + 1))
  else
    echo "not ok - $name (server exit $src, client exit $crc)"
    echo "--- server"; grep -v " UCX  INFO " "$slog" | tail -15
    echo "--- client"; grep -v " UCX  INFO " "$clog" | tail -15
    failures=$((failures + 1))
  fi
}

for devices in "onchip_0 onchip_0" "onchip_0 onchip_1"; do
  for test in tag_lat tag_bw ucp_put_lat ucp_get ucp_fadd; do
    # shellcheck disable=SC2086
    pair rc_verbs,ud_verbs,self "$test" $devices
  done
  # shellcheck disable=SC2086
  pair ud_verbs,self tag_lat $devices
done

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
