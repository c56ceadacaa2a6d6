"""Set-up shared by every subcommand: Debian packages and 2 MiB hugepages."""
import os
import shutil
import subprocess

import progress

# What onchip needs from Debian 12, by what it is for.
PACKAGES = [
    "bazel-bootstrap",    # Bazel 4.2.3, the build
    "bazel-rules-java",   # @rules_java for offline Bazel (WORKSPACE)
    "g++",
    "pkg-config",         # DPDK's compile flags
    "libgtest-dev", "libgmock-dev",  # GoogleTest and GoogleMock
    "libbenchmark-dev",   # Google Benchmark
    "libdpdk-dev", "libnuma-dev",    # DPDK's EAL for hugepage memory
    "libibverbs-dev", "rdma-core",   # kernel uverbs ABI headers, libibverbs
    "ibverbs-utils", "python3-pyverbs",  # peers' tools and tests run against onchip
    "perftest",           # ib_write_lat & co. between two processes through the device daemon
    "ucx-utils",          # ucx_perftest over onchip's rc_verbs and ud_verbs transports
]

NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
FREE_HUGEPAGES = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"

def missing_packages():
    missing = []
    for pkg in PACKAGES:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True,
                             text=True)
        if out.returncode != 0 or "install ok installed" not in out.stdout:
            missing.append(pkg)
    return missing


def install(missing):
    if os.geteuid() != 0:
        raise SystemExit("onchip: missing Debian packages %s; run as root (or: sudo apt-get install %s)"
                         % (" ".join(missing), " ".join(missing)))
    progress.step("installing %d Debian packages: %s" % (len(missing), " ".join(missing)))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    progress.note("apt-get update")
    if progress.run_streaming(["apt-get", "update", "-q"], lambda l: None, env=env) != 0:
        raise SystemExit("onchip: apt-get update failed")
    done = [0]

    def show(line):
        if line.startswith("Setting up "):
            done[0] += 1
            return "    [%d set up] %s" % (done[0], line[len("Setting up "):])
        if line.startswith("Get:") or line.startswith("Need to get") or line.startswith("E:"):
            return "    " + line
        return None

    code = progress.run_streaming(["apt-get", "install", "-y", "-q", "--no-install-recommends"]
                                  + missing, show, env=env)
    if code != 0:
        raise SystemExit("onchip: apt-get install failed")


def _read_count(path):
    with open(path) as f:
        return int(f.read().strip() or 0)


class Hugepages:
    """A temporary raise of the kernel's 2 MiB hugepage pool for one run: reserve() makes sure
    the run finds the free pages it needs (pages other processes hold do not count), raising
    nr_hugepages by what is missing and never lowering it; restore() puts back the value found,
    unless keep is set. Says on screen what it does either way."""

    def __init__(self, path=NR_HUGEPAGES, keep=False, is_root=None, free_path=FREE_HUGEPAGES):
        self.path = path
        self.free_path = free_path
        self.keep = keep
        self.is_root = (os.geteuid() == 0) if is_root is None else is_root
        self.previous = None  # the value to put back; None when nothing was changed

    def reserve(self, wanted, why):
        if wanted <= 0:
            return
        try:
            have = _read_count(self.path)
        except (OSError, ValueError) as e:
            progress.note("hugepages: cannot read %s (%s); what needs them skips or falls back "
                          "to 4 KiB pages" % (self.path, e))
            return
        try:
            free = min(_read_count(self.free_path), have)
        except (OSError, ValueError):
            free = have  # no per-size counters: take every reserved page as free
        if free >= wanted:
            progress.note("hugepages: %d x 2 MiB reserved, %d free (%s needs %d); left as they are"
                          % (have, free, why, wanted))
            return
        target = have + wanted - free
        if not self.is_root:
            progress.note("hugepages: %d x 2 MiB free, %s needs %d; not root, so what needs them "
                          "skips (as root: echo %d > %s)" % (free, why, wanted, target, self.path))
            return
        try:
            with open(self.path, "w") as f:
                f.write(str(target))
            self.previous = have
            now = _read_count(self.path)
        except (OSError, ValueError) as e:
            progress.note("hugepages: could not reserve %d (%s); what needs them skips" % (wanted, e))
            return
        then = ("kept afterwards (--keep-hugepages)" if self.keep
                else "given back when the run ends (--keep-hugepages keeps them)")
        if now < target:
            progress.note("hugepages: asked for %d x 2 MiB for %s, the kernel gave %d (memory is "
                          "fragmented; the rest falls back to 4 KiB pages); %s"
                          % (target, why, now, then))
        else:
            progress.note("hugepages: reserved %d x 2 MiB (%d MiB) for %s, was %d; %s"
                          % (now, now * 2, why, have, then))

    def restore(self):
        if self.previous is None or self.keep:
            return
        previous, self.previous = self.previous, None
        try:
            with open(self.path, "w") as f:
                f.write(str(previous))
            now = _read_count(self.path)
        except (OSError, ValueError) as e:
            progress.fail("hugepages: could not give back the reserved pages (%s); as root: "
                          "echo %d > %s" % (e, previous, self.path))
            return
        if now != previous:
            # Pages still mapped by a process are freed when it lets go of them.
            progress.note("hugepages: nr_hugepages set back to %d (now %d; pages still in use "
                          "are freed when released)" % (previous, now))
        else:
            progress.note("hugepages: gave back the reserved pages (nr_hugepages %d again)" % now)


def prepare(hugepages=None, wanted=0, why="this run"):
    """Installs missing packages, then, if `hugepages` (a Hugepages) is given, reserves `wanted`
    pages with it; the caller restores them when the run ends."""
    progress.step("checking Debian packages")
    missing = missing_packages()
    if missing:
        install(missing)
    else:
        progress.note("all %d packages present" % len(PACKAGES))
    if not shutil.which("bazel"):
        raise SystemExit("onchip: bazel is not on PATH after installing bazel-bootstrap")
    if hugepages is not None and wanted > 0:
        progress.step("hugepages")
        hugepages.reserve(wanted, why)
