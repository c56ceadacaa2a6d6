"""tools/onchip env [--prefix P] [--socket PATH]: the shell variables for programs run directly.

  eval "$(tools/onchip env)"      then ibv_devinfo, perftest, your program: no tools/onchip run

Prints `export` lines: SYSFS_PATH (the tree tools/onchip sim start publishes beside the
daemon's socket), RDMAV_DRIVERS (the provider installed under P, default /usr/local) and
LD_PRELOAD (the provider first, for ibv_create_comp_channel, which libibverbs gives providers no
hook for; a program linked with `pkg-config --libs onchip` has it already). What is missing (the
daemon, the install, root for /dev/infiniband) is said on stderr in one line, with what to do.
"""
import os
import shlex
import sys

import install

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "verbs_env"))
import daemon_status  # noqa: E402
import published  # noqa: E402


class EnvError(Exception):
    pass


def variables(prefix, socket_path):
    """[(name, value)] for a shell, or EnvError saying what is missing."""
    plugin = install.layout(os.path.abspath(prefix))["plugin"]
    if not os.path.isfile(plugin):
        raise EnvError("no provider at %s: tools/onchip install --prefix %s first"
                       % (plugin, prefix))
    st = daemon_status.status(socket_path)
    if st is None:
        raise EnvError("no device daemon answers on %s: tools/onchip sim start first"
                       % socket_path)
    state = published.read_state(socket_path)
    if state is None or state.get("pid") != st["pid"]:
        raise EnvError("the daemon on %s is not published: run tools/onchip sim start "
                       "(it publishes a running daemon too)" % socket_path)
    preload = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p and p != plugin]
    return [("SYSFS_PATH", published.sysfs_root(socket_path)),
            ("RDMAV_DRIVERS", plugin[: -len("-rdmav34.so")]),
            ("LD_PRELOAD", ":".join([plugin] + preload))], state


def run(args, socket_path):
    pairs, state = variables(args.prefix, socket_path)
    for name, value in pairs:
        print("export %s=%s" % (name, shlex.quote(value)))
    if not state.get("nodes"):
        print("onchip env: not root, so no /dev/infiniband/uverbsN was made and libibverbs lists "
              "no onchip device outside tools/onchip run", file=sys.stderr)
    return 0
