"""tools/onchip run -- CMD ARGS: run an unmodified verbs program on the software ConnectX.

Builds onchip's libibverbs provider with Bazel (its progress on stderr, so CMD's output stays
clean; the first build takes a few minutes; skipped when nothing in the tree changed since the
last build, tools/cli/fingerprint.py), then runs CMD with what libibverbs needs to find
the device: a temporary sysfs tree (SYSFS_PATH) that lists one device per function (onchip_0,
onchip_1, ...), /dev/infiniband/uverbsN for each (mknod as root, else a private user and mount
namespace), and
RDMAV_DRIVERS naming the plugin. Everything made is removed afterwards, also on failure.
The exit status is CMD's.

  tools/onchip run -- ibv_devices
  tools/onchip run -- ibv_devinfo -v

The devices are the functions of the device daemon (tools/onchip sim): onchip_0 is function 0,
onchip_1 function 1, each with its own MAC, IPv4 address and GIDs. run starts the daemon when
none answers and leaves it running, so programs in two shells, each under tools/onchip run, see
the same devices, the same objects and the same GIDs (`ibv_rc_pingpong -d onchip_1` takes the
second function). --in-process gives the program one software ConnectX of its own instead.
Memory a program registers is reached by the daemon: pages of a memfd or hugetlbfs file the
program keeps open are mapped by the daemon itself, anonymous (malloc'd) memory is read and
written through the program's /proc/PID/mem (same user; the registration fails with the
kernel's reason when ptrace access is refused).
"""
import os
import subprocess
import sys

import bazel
import fingerprint
import progress
import simd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN_TARGET = "//tools/plugin:libonchip-rdmav34.so"
sys.path.insert(0, os.path.join(ROOT, "tools", "verbs_env"))

import launch  # noqa: E402
import sysfs_tree  # noqa: E402


def build_plugin():
    """Builds the plugin, showing Bazel's progress on stderr; returns its absolute path. Skips
    Bazel when nothing in the tree changed since the plugin's last build (fingerprint.py)."""
    tree = fingerprint.of_tree(ROOT)
    last = os.path.join(os.path.realpath(os.path.join(ROOT, "bazel-bin")), "tools", "plugin",
                        "libonchip-rdmav34.so")
    if fingerprint.up_to_date(last, tree):
        progress.step("the onchip provider is up to date (nothing changed since its build)",
                      file=sys.stderr)
        return last
    progress.step("building the onchip provider (%s)" % PLUGIN_TARGET, file=sys.stderr)
    if bazel.run(["build", PLUGIN_TARGET], cwd=ROOT, file=sys.stderr, terse=True) != 0:
        raise SystemExit("onchip run: building %s failed (Bazel's errors are above)" % PLUGIN_TARGET)
    try:
        bin_dir = bazel.info("bazel-bin", cwd=ROOT)
    except subprocess.CalledProcessError as e:
        raise SystemExit("onchip run: bazel info bazel-bin failed: %s" % (e.stderr or "").strip())
    plugin = os.path.join(bin_dir, "tools", "plugin", "libonchip-rdmav34.so")
    fingerprint.record(plugin, tree)
    return plugin


def run(args):
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise SystemExit("onchip run: no command (tools/onchip run -- CMD ARGS)")
    in_process = getattr(args, "in_process", False)
    if not in_process:
        path = os.path.abspath(args.socket) if getattr(args, "socket", "") else simd.default_socket()
        if simd.status(path) is None:
            simd.check_socket(path)  # before the build: a run that cannot start says so at once
    plugin = build_plugin()
    functions = [sysfs_tree.Function("sim")]
    if not in_process:
        st = simd.start(path)
        functions = [sysfs_tree.Function.from_status("simd:%s#%d" % (path, f["index"]), f)
                     for f in st["functions"]]
    progress.step("running %s on the software ConnectX (%s)"
                  % (" ".join(cmd), ", ".join("onchip_%d: %s" % (i, f.locator)
                                              for i, f in enumerate(functions))),
                  file=sys.stderr)
    return launch.run(plugin, cmd, args.dev_node, functions=functions)
