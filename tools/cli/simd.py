"""tools/onchip sim start|status|stop: the device daemon, one software ConnectX for many processes.

  tools/onchip sim start     build onchip-simd and start it in the background (two functions,
                             each its own MAC, IPv4 address and GIDs); a running daemon is kept
  tools/onchip sim start --link-layer ib
                             ... with InfiniBand ports instead of Ethernet (RoCE): each function
                             has a LID from the daemon's subnet manager (SM LID 1), and programs
                             may address peers by LID without a GRH (ibv_rc_pingpong's defaults)
  tools/onchip sim status    the daemon's functions (firmware object counts, DMA mappings) and
                             its clients (pid, objects by kind, DMA mappings, device memory)
  tools/onchip sim stop      stop it: every client's objects are released first

The socket is $XDG_RUNTIME_DIR/onchip/simd.sock, else /run/onchip/simd.sock as root and
/tmp/onchip-<uid>/simd.sock otherwise (--socket PATH chooses another); its directory is checked
before anything builds. start also publishes the functions for programs run without
tools/onchip run (a sysfs tree beside the socket and, as root, /dev/infiniband/uverbsN; see
tools/onchip env); stop removes them and the socket. tools/onchip run starts the daemon when none runs and lists its functions to
the program as onchip_0, onchip_1 (or ONCHIP_DEVICE=simd:<socket>#N names one for every device).
The daemon's log is simd.log beside the socket.
"""
import json
import os
import signal
import stat
import subprocess
import sys
import time

import bazel
import progress

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "verbs_env"))
from daemon_status import status  # noqa: E402
import published  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = "//tools/simd:onchip-simd"

def default_socket():
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "onchip", "simd.sock")
    if os.geteuid() == 0:
        return "/run/onchip/simd.sock"
    return "/tmp/onchip-%d/simd.sock" % os.geteuid()


class SocketError(Exception):
    """The socket's path cannot serve: the message says why and what to do."""


HINT = ("set XDG_RUNTIME_DIR to a directory of yours, pass --socket PATH in a writable "
        "directory, or use tools/onchip run --in-process")


def check_socket(path):
    """Makes the socket's directory (mode 0700) and checks that this user may use it and that
    nothing but a socket sits at `path`; raises SocketError with one line otherwise. Before any
    build, so a run that cannot work says so at once."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.stat(directory)
    except OSError as e:
        raise SocketError("cannot make %s for the daemon's socket (%s); %s"
                          % (directory, e.strerror, HINT))
    if not os.access(directory, os.W_OK | os.X_OK):
        raise SocketError("%s is not writable for the daemon's socket; %s" % (directory, HINT))
    if st.st_uid != os.geteuid() and directory.startswith("/tmp/"):
        raise SocketError("%s belongs to another user; %s" % (directory, HINT))
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as e:
        raise SocketError("cannot use %s: %s; %s" % (path, e.strerror, HINT))
    if not stat.S_ISSOCK(mode):
        raise SocketError("%s exists and is not a socket (left alone); pass --socket PATH "
                          "with another path" % path)
    return path


def build():
    progress.step("building the device daemon (%s)" % TARGET, file=sys.stderr)
    if bazel.run(["build", TARGET], cwd=ROOT, file=sys.stderr, terse=True) != 0:
        raise SystemExit("onchip sim: building %s failed (Bazel's errors are above)" % TARGET)
    bin_dir = bazel.info("bazel-bin", cwd=ROOT)
    return os.path.join(bin_dir, "tools", "simd", "onchip-simd")


LINK_LAYERS = {"eth": "Ethernet", "ib": "InfiniBand"}


def start(path, link_layer=None, quiet=False):
    """Starts the daemon on `path` unless one answers there; returns its status. `link_layer`
    ("eth" or "ib") is its ports' link layer, Ethernet when None; a running daemon is kept, with
    a word when it was asked for the other one. Either way its functions are published
    (published.py) unless they already are."""
    st = status(path)
    if st is not None:
        running = {f.get("link_layer", "Ethernet") for f in st["functions"]}
        if link_layer is not None and running != {LINK_LAYERS[link_layer]}:
            print("onchip sim: a daemon with %s ports already runs on %s (kept; stop it first "
                  "for %s)" % ("/".join(sorted(running)), path, LINK_LAYERS[link_layer]),
                  file=sys.stderr)
        return _published(path, st)
    check_socket(path)
    binary = build()
    log_path = os.path.join(os.path.dirname(path), "simd.log")
    log = open(log_path, "ab")
    # Its own session: it outlives the shell that started it and ignores that shell's Ctrl-C.
    daemon = subprocess.Popen([binary, "--socket", path, "--link-layer", link_layer or "eth"],
                              stdin=subprocess.DEVNULL, stdout=log,
                              stderr=log, start_new_session=True, close_fds=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and daemon.poll() is None:
        st = status(path)
        if st is not None:
            if not quiet:
                progress.step("started the device daemon (pid %d) on %s; its log: %s; "
                              "tools/onchip sim stop ends it" % (st["pid"], path, log_path),
                              file=sys.stderr)
            return _published(path, st)
        time.sleep(0.05)
    raise SystemExit("onchip sim: the daemon did not answer on %s (its log %s says why)"
                     % (path, log_path))


def _published(path, st):
    state = published.read_state(path)
    if state is None or state.get("pid") != st["pid"]:
        try:
            published.publish(path, st)
        except OSError as e:
            print("onchip sim: could not publish the devices beside %s: %s" % (path, e),
                  file=sys.stderr)
    return st


def stop(path):
    st = status(path)
    if st is None:
        published.unpublish(path)
        _remove_socket(path)
        return False
    os.kill(int(st["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and status(path) is not None:
        time.sleep(0.05)
    published.unpublish(path)
    _remove_socket(path)
    return True


def _remove_socket(path):
    """The socket of a daemon that no longer answers, and only a socket."""
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode) and status(path) is None:
            os.unlink(path)
    except OSError:
        pass


def describe(st):
    lines = ["daemon pid %d on %s" % (st["pid"], st["socket"])]
    for f in st["functions"]:
        lines.append("function %d (onchip_%d under tools/onchip run): mac %s ipv4 %s"
                     % (f["index"], f["index"], f["mac"], f["ipv4"]))
        if f.get("link_layer") == "InfiniBand":
            lines.append("  InfiniBand port: LID 0x%04x, SM LID 0x%04x" % (f["lid"], f["sm_lid"]))
        else:
            lines.append("  Ethernet (RoCE) port")
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
        check_socket(path)
        print(describe(start(path, getattr(args, "link_layer", "eth"))))
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
