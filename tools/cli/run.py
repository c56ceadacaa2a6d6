"""tools/onchip run -- CMD ARGS: run an unmodified verbs program on the software ConnectX.

Builds libonchip-rdmav34.so with Bazel, then runs CMD with what libibverbs needs to find the
device (tools/verbs_env/launch.py): a temporary sysfs tree (SYSFS_PATH) that lists onchip_0,
/dev/infiniband/uverbsN (mknod as root, else a private user and mount namespace), and
RDMAV_DRIVERS naming the plugin. Everything made is removed afterwards, also on failure.
The exit status is CMD's.

  tools/onchip run -- ibv_devices
  tools/onchip run -- ibv_devinfo -v

One process per device: each ibv_open_device starts its own software ConnectX inside the
process that opens it; nothing is shared between processes yet.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN_TARGET = "//tools/plugin:libonchip-rdmav34.so"
sys.path.insert(0, os.path.join(ROOT, "tools", "verbs_env"))

import launch  # noqa: E402


def build_plugin():
    """Builds the plugin quietly (Bazel's output only on failure); returns its absolute path."""
    out = subprocess.run(["bazel", "build", PLUGIN_TARGET], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit("onchip run: building %s failed" % PLUGIN_TARGET)
    info = subprocess.run(["bazel", "info", "bazel-bin"], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    return os.path.join(info.stdout.strip(), "tools", "plugin", "libonchip-rdmav34.so")


def run(args):
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise SystemExit("onchip run: no command (tools/onchip run -- CMD ARGS)")
    return launch.run(build_plugin(), cmd, args.dev_node)
