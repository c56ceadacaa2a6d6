"""Whether a built output is still what the tree would build: `tools/onchip run` skips Bazel (about
a second even with nothing to do) when the tree's fingerprint equals the one recorded beside the
output at its last build.

The fingerprint hashes the commit (HEAD, which the version stamp follows) and the path, size and
mtime of every file git tracks or would track (untracked but not ignored), plus user.bazelrc.
Outside a git clone there is none and the build always runs.
"""
import hashlib
import os
import subprocess

SUFFIX = ".fingerprint"


def of_tree(root):
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        files = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0 or files.returncode != 0:
        return None
    h = hashlib.sha256(head.stdout.encode())
    names = sorted(set(files.stdout.decode(errors="replace").split("\0")) - {""})
    for name in names + ["user.bazelrc"]:
        try:
            st = os.lstat(os.path.join(root, name))
            h.update(("%s %d %d\n" % (name, st.st_size, st.st_mtime_ns)).encode())
        except OSError:
            h.update(("%s -\n" % name).encode())
    return h.hexdigest()


def up_to_date(output, fingerprint):
    """Whether `output` exists and was recorded with `fingerprint` (None never is)."""
    if fingerprint is None or not os.path.isfile(output):
        return False
    try:
        with open(output + SUFFIX) as f:
            return f.read().strip() == fingerprint
    except OSError:
        return False


def record(output, fingerprint):
    if fingerprint is None:
        return
    try:
        with open(output + SUFFIX, "w") as f:
            f.write(fingerprint + "\n")
    except OSError:
        pass  # next time the build runs again
