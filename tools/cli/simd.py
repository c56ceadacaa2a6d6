"""tools/onchip sim start|status|stop: the device daemon, one software ConnectX for many processes.

  tools/onchip sim start     build onchip-simd and start it in the background (two functions,
                             each its own MAC, IPv4 address and GIDs); a running daemon is kept
  tools/onchip sim status    the daemon's functions (firmware object counts, DMA mappings) and
                             its clients (pid, objects by kind, DMA mappings, device memory)
  tools/onchip sim stop      stop it: every client's objects are released first

The socket is $XDG_RUNTIME_DIR/onchip/simd.sock, else /run/onchip/simd.sock (--socket PATH
chooses another). tools/onchip run starts the daemon when none runs and lists its functions to
the program as onchip_0, onchip_1 (or ONCHIP_DEVICE=simd:<socket>#N names one for every device).
The daemon's log is simd.log beside the socket.
"""
import json
import os
import signal
import subprocess
import sys
import time

import bazel
import progress

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "verbs_env"))
from daemon_status import status  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = "//tools/simd:onchip-simd"

def default_socket():
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(xdg if xdg else "/run", "onchip", "simd.sock")


def build():
    progress.step("building the device daemon (%s)" % TARGET, file=sys.stderr)
    if bazel.run(["build", TARGET], cwd=ROOT, file=sys.stderr, terse=True) != 0:
        raise SystemExit("onchip sim: building %s failed (Bazel's errors are above)" % TARGET)
    bin_dir = bazel.info("bazel-bin", cwd=ROOT)
    return os.path.join(bin_dir, "tools", "simd", "onchip-simd")


def start(path):
    """Starts the daemon on `path` unless one answers there; returns its status."""
    st = status(path)
    if st is not None:
        return st
    binary = build()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    log = open(os.path.join(os.path.dirname(path), "simd.log"), "ab")
    # Its own session: it outlives the shell that started it and ignores that shell's Ctrl-C.
    subprocess.Popen([binary, "--socket", path], stdin=subprocess.DEVNULL, stdout=log,
                     stderr=log, start_new_session=True, close_fds=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        st = status(path)
        if st is not None:
            return st
        time.sleep(0.05)
    raise SystemExit("onchip sim: the daemon did not answer on %s (see %s)"
                     % (path, os.path.join(os.path.dirname(path), "simd.log")))


def stop(path):
    st = status(path)
    if st is None:
        return False
    os.kill(int(st["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and status(path) is not None:
        time.sleep(0.05)
    return True


def describe(st):
    lines = ["daemon pid %d on %s" % (st["pid"], st["socket"])]
    for f in st["functions"]:
        lines.append("function %d (onchip_%d under tools/onchip run): mac %s ipv4 %s"
                     % (f["index"], f["index"], f["mac"], f["ipv4"]))
        lines.append("  firmware: %d uar, %d pd, %d mkey, %d eq, %d cq, %d qp, %d srq, "
                     "%d memic; %d DMA mapping(s); %d command(s)"
                     % (f["uars"], f["pds"], f["mkeys"], f["eqs"], f["cqs"], f["qps"], f["srqs"],
                        f["memic_allocations"], f["dma_mappings"], f["commands"]))
    if not st["clients"]:
        lines.append("no clients")
    for c in st["clients"]:
        objects = ", ".join("%d %s" % (n, k) for k, n in sorted(c["objects"].items())) or "none"
        lines.append("client %d: pid %d on function %d: objects %s; %d DMA mapping(s) "
                     "(%d bytes); %d bytes of device memory"
                     % (c["id"], c["pid"], c["function"], objects, c["dma_mappings"],
                        c["dma_bytes"], c["memic_bytes"]))
    return "\n".join(lines)


def run(args):
    path = os.path.abspath(args.socket) if args.socket else default_socket()
    if args.action == "start":
        print(describe(start(path)))
        return 0
    if args.action == "status":
        st = status(path)
        if st is None:
            print("no device daemon answers on %s" % path)
            return 1
        print(json.dumps(st, indent=2) if args.json else describe(st))
        return 0
    if args.action == "stop":
        if not stop(path):
            print("no device daemon answers on %s" % path)
            return 1
        print("stopped the device daemon on %s" % path)
        return 0
    raise SystemExit("onchip sim: unknown action %s" % args.action)
