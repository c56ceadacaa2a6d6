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
]

# Enough 2 MiB pages for the tests and the hugepage benchmark (1 GiB working set).
HUGEPAGES_WANTED = 640
NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"


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


def reserve_hugepages():
    try:
        with open(NR_HUGEPAGES) as f:
            have = int(f.read().strip() or 0)
    except OSError as e:
        progress.note("hugepages: cannot read %s (%s); hugepage tests will skip" % (NR_HUGEPAGES, e))
        return
    if have >= HUGEPAGES_WANTED:
        progress.note("hugepages: %d x 2 MiB reserved" % have)
        return
    if os.geteuid() != 0:
        progress.note("hugepages: %d x 2 MiB reserved, %d wanted; not root, so tier2 tests skip "
                      "(as root: echo %d > %s)" % (have, HUGEPAGES_WANTED, HUGEPAGES_WANTED, NR_HUGEPAGES))
        return
    try:
        with open(NR_HUGEPAGES, "w") as f:
            f.write(str(HUGEPAGES_WANTED))
        with open(NR_HUGEPAGES) as f:
            now = int(f.read().strip() or 0)
    except OSError as e:
        progress.note("hugepages: could not reserve (%s); tier2 tests will skip" % e)
        return
    if now < HUGEPAGES_WANTED:
        progress.note("hugepages: asked for %d, the kernel gave %d (memory is fragmented); "
                      "what is missing falls back to 4 KiB pages" % (HUGEPAGES_WANTED, now))
    else:
        progress.note("hugepages: reserved %d x 2 MiB" % now)


def prepare():
    progress.step("checking Debian packages")
    missing = missing_packages()
    if missing:
        install(missing)
    else:
        progress.note("all %d packages present" % len(PACKAGES))
    if not shutil.which("bazel"):
        raise SystemExit("onchip: bazel is not on PATH after installing bazel-bootstrap")
    progress.step("hugepages")
    reserve_hugepages()
