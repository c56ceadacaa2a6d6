"""The version every onchip program reports: the commit it comes from.

The CLI asks git at run time; the daemon and the provider carry the same words, stamped at
build time (tools/build/workspace_status.sh, //log:version). Outside a git clone: "unknown".
"""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def commit(root=ROOT):
    """`git describe --always --dirty` of `root` ("7adde42", "7adde42-dirty"), else "unknown"."""
    try:
        out = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty",
                              "--exclude", "*"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
