#!/usr/bin/env python3
"""Run a command against the software ConnectX through unmodified libibverbs.

  launch.py --plugin /abs/path/libonchip-rdmav34.so -- CMD ARGS

Prepares what libibverbs reads (sysfs_tree.py under a temporary SYSFS_PATH, the
/dev/infiniband/uverbsN node from uverbs_node.py, RDMAV_DRIVERS naming the plugin), runs CMD
with them, and removes everything it made, also when CMD fails or the run is interrupted. The
exit status is CMD's (128 + N when a signal N ended it). CMD dies with the launcher
(PR_SET_PDEATHSIG), and what a launcher killed by SIGKILL left behind (its temporary directory,
its /dev/infiniband nodes) is swept by the next run.
"""
import argparse
import ctypes
import fcntl
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import daemon_status  # noqa: E402
import sysfs_tree  # noqa: E402
import uverbs_node  # noqa: E402

SUFFIX = "-rdmav34.so"
SCRATCH_PREFIX = "onchip-run-"  # + the launcher's pid + "-" + mkdtemp's letters
_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """In a child before exec: SIGKILL when the launcher goes (prctl(2) PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def hold(path):
    """Locks the directory `path` for as long as this process lives (flock(2) on a descriptor
    kept open and not inherited); sweep_scratch leaves a locked directory alone."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def sweep_scratch(tmp=None, min_age=60):
    """Removes this user's temporary directories of launchers that are gone: no lock held on
    them (a pid would not do: a sandbox's launcher lives in another pid namespace) and older
    than `min_age` seconds (one just made is locked a moment later)."""
    swept = []
    for path in glob.glob(os.path.join(tmp or tempfile.gettempdir(), SCRATCH_PREFIX + "*-*")):
        try:
            st = os.lstat(path)
            if st.st_uid != os.geteuid() or time.time() - st.st_mtime < min_age:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its launcher still runs
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        swept.append(path)
    return swept


def sanitizer_runtimes(plugin):
    """The sanitizer runtimes a plugin built with --config=asan/ubsan/tsan needs loaded first:
    ASan refuses to start inside a process whose executable was not built with it unless its
    runtime is preloaded."""
    out = subprocess.run(["ldd", plugin], capture_output=True, text=True)
    libs = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[0].split(".so")[0] in (
                "libasan", "libubsan", "libtsan"):
            libs.append(parts[2])
    return libs


def environment(plugin, sysfs_root):
    env = dict(os.environ)
    # The plugin itself is preloaded: it defines ibv_create_comp_channel (libibverbs gives
    # providers no hook for it), which must come before libibverbs' in symbol lookup. Loading it
    # early costs nothing else: libibverbs' later dlopen of the same file finds it loaded.
    preload = sanitizer_runtimes(plugin) + [plugin]
    env["LD_PRELOAD"] = ":".join(preload + [p for p in env.get("LD_PRELOAD", "").split(":") if p])
    env["SYSFS_PATH"] = sysfs_root
    # libibverbs appends "-rdmav34.so" to an absolute RDMAV_DRIVERS entry.
    env["RDMAV_DRIVERS"] = plugin[: -len(SUFFIX)]
    env.pop("IBV_DRIVERS", None)
    return env


def _status(rc):
    return 128 - rc if rc < 0 else rc


def _raise_on_term(signum, _frame):
    raise SystemExit(128 + signum)


def run(plugin, cmd, dev_node="auto", locator="sim", functions=None):
    """Runs `cmd` with one device opening `locator`, or, with `functions` (sysfs_tree.Function
    each), one device per function: onchip_0, onchip_1, ..."""
    plugin = os.path.abspath(plugin)
    if not plugin.endswith(SUFFIX) or not os.path.isfile(plugin):
        print("onchip run: %s is not a built lib<name>%s" % (plugin, SUFFIX), file=sys.stderr)
        return 2
    functions = functions or [sysfs_tree.Function(locator)]
    signal.signal(signal.SIGTERM, _raise_on_term)
    signal.signal(signal.SIGHUP, _raise_on_term)
    sweep_scratch()
    if os.geteuid() == 0:
        uverbs_node.sweep()
    scratch = tempfile.mkdtemp(prefix="%s%d-" % (SCRATCH_PREFIX, os.getpid()))
    lock = hold(scratch)
    nodes = []
    try:
        namespace = dev_node == "namespace"
        names = ["uverbs%d" % n for n in range(len(functions))]
        if not namespace:
            try:
                names = []
                for _ in functions:
                    nodes.append(uverbs_node.HostNode())
                    names.append(nodes[-1].create())
            except OSError as e:
                if dev_node == "host":
                    print("onchip run: cannot mknod in %s: %s" % (uverbs_node.DEV_DIR, e.strerror),
                          file=sys.stderr)
                    return 1
                namespace = True
                names = ["uverbs%d" % n for n in range(len(functions))]
        sysfs_root = sysfs_tree.build_devices(
            os.path.join(scratch, "sys"),
            [(name, uverbs_node.CDEV, f) for name, f in zip(names, functions)])
        env = environment(plugin, sysfs_root)
        if namespace:
            dev = os.path.join(scratch, "dev")
            os.mkdir(dev)
            cmd = uverbs_node.unshare_prefix() + [
                sys.executable, os.path.abspath(__file__), "--inside-namespace", dev,
                "--nodes", str(len(functions)), "--"] + cmd
        try:
            return _status(subprocess.run(cmd, env=env, preexec_fn=die_with_parent).returncode)
        except FileNotFoundError as e:
            print("onchip run: %s: %s" % (e.filename, e.strerror), file=sys.stderr)
            return 127
    finally:
        for node in nodes:
            node.remove()
        shutil.rmtree(scratch, ignore_errors=True)
        os.close(lock)


def inside_namespace(dev, cmd, count=1):
    die_with_parent()  # again: entering the user namespace may have cleared it
    try:
        uverbs_node.replace_dev(dev, count)
    except OSError as e:
        print("onchip run: cannot prepare /dev in a mount namespace: %s" % e, file=sys.stderr)
        return 1
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        print("onchip run: %s: %s" % (cmd[0], e.strerror), file=sys.stderr)
        return 127


def main(argv):
    p = argparse.ArgumentParser(prog="launch.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plugin", help="absolute path of libonchip-rdmav34.so")
    p.add_argument("--dev-node", choices=["auto", "host", "namespace"], default="auto",
                   help="how to make /dev/infiniband/uverbsN: mknod on the host (root), a private "
                        "mount namespace, or the first that works (default)")
    p.add_argument("--device", default="sim", metavar="LOCATOR",
                   help="the device the plugin opens: sim (in-process, the default) or "
                        "simd:SOCKET#N (function N of a device daemon)")
    p.add_argument("--daemon", metavar="SOCKET",
                   help="one device per function of the device daemon on SOCKET (onchip_0, "
                        "onchip_1, ... with each function's addresses) instead of --device")
    p.add_argument("--inside-namespace", metavar="SCRATCH", help=argparse.SUPPRESS)
    p.add_argument("--nodes", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        p.error("no command given (launch.py --plugin PATH -- CMD ARGS)")
    if args.inside_namespace:
        return inside_namespace(args.inside_namespace, cmd, args.nodes)
    if not args.plugin:
        p.error("--plugin is required")
    functions = None
    if args.daemon:
        st = daemon_status.status(args.daemon)
        if st is None:
            print("onchip run: no device daemon answers on %s" % args.daemon, file=sys.stderr)
            return 1
        functions = [sysfs_tree.Function.from_status("simd:%s#%d" % (args.daemon, f["index"]), f)
                     for f in st["functions"]]
    elif args.device.startswith("simd:") and "#" in args.device:
        # One function of a daemon: described as the daemon reports it (its addresses, its
        # link layer and LID), else with the defaults.
        path, _, index = args.device[len("simd:"):].rpartition("#")
        st = daemon_status.status(path)
        entries = [f for f in (st or {}).get("functions", []) if str(f["index"]) == index]
        if entries:
            functions = [sysfs_tree.Function.from_status(args.device, entries[0])]
    return run(args.plugin, cmd, args.dev_node, args.device, functions)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
