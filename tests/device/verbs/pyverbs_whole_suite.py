#!/usr/bin/env python3
"""Judges a whole-suite pyverbs run (run_tests.py -v with no module list) through onchip.

  pyverbs_whole_suite.py OUT_LOG RC {daemon|in-process}

OUT_LOG is the run's output, RC its exit status. Every module must run (no crash: the exact
number of tests ran); the tests that error or fail must be exactly the expected ones below; every
skip reason must be one of EXPECTED_SKIPS, each with its exact count. driver/verbs/README.md
("rdma-core's pyverbs tests") says, module by module, why each of these does not pass.
Prints "ok - ..." or "not ok - ..." lines; the exit status is the number of "not ok".
"""
import collections
import os
import re
import sys

EXPECTED_TESTS = 273

# Tests that error: they need what onchip does not offer and do not turn EOPNOTSUPP into a skip.
EXPECTED_ERRORS = {
    # ibv_create_wq: no receive work queues, indirection tables or RSS QPs.
    "tests.test_rss_traffic.RSSTrafficTest.test_rss_traffic",
}

# Tests that fail, by device: a forked child of a process with an in-process software ConnectX
# has no device (ENODEV), where a device daemon's client child opens its own connection.
EXPECTED_FAILURES = {
    "daemon": set(),
    "in-process": {"tests.test_device.DMTest.test_multi_process_alloc_dm"},
}

ROOT_SKIP = "To Create RAW QP must be done by root on Ethernet link layer"
HUGE_SKIP = "There are no huge pages of size 2M allocated"


def expected_skips(hugepages):
    """Each skip reason of the whole suite with its count (running as root)."""
    skips = {
        # pyverbs' mlx5 classes (Mlx5Context and everything built on it) open the device through
        # Debian's libmlx5, which takes only devices its own provider opened.
        "Could not open mlx5 context (This is not an MLX5 device)": 51,
        "Set LAG affinity is not supported on this device": 3,  # mlx5dv_*_lag_port of libmlx5
        "Matcher creation is not supported": 3,  # mlx5dv_create_flow_matcher of libmlx5
        "Could not find the PCI device of onchip_0": 2,  # test_mlx5_dr: no PCI device in sysfs
        "mlx5dv_query_port() isn't supported": 1,
        "VAR allocation is not supported": 1,
        "UAR allocation (with flag=0) is not supported": 1,
        "Modifying a QP UDP sport is not supported": 1,
        "Creation or usage of schedule elements is not supported": 1,
        "Create schedule elements is not supported": 1,
        "Alloc reserved QP number is not supported": 1,
        # mlx5dv_get_clock_info of libmlx5: the free-running timestamp test and the
        # ibv_query_rt_values_ex test (the query answers; converting its ticks does not).
        "Converting timestamp to nanoseconds is not supported": 2,
        # test_mlx5_timestamp's real-time CQEs (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK).
        "Create Extended CQ is not supported": 2,
        # Other devices, packages or input the machine does not have.
        "Can not run the test over non EFA device": 16,
        "Crypto login details must be supplied in /tmp/mlx5_crypto_test.txt": 7,
        "cuda-python 12.0+ must be installed to run CUDA tests": 2,
        "PCI device must be passed by the user": 2,  # test_mlx5_vfio
        "scapy package is needed in order to run DevX tests": 1,
        "Allocating dmabuf is not supported by /dev/dri/renderD128": 10,
        # What the device does not offer through onchip.
        "ODP is not supported - No ODP caps": 15,
        "Flow creation is not supported": 7,  # ibv_create_flow: no steering rules
        "Extended CQ is not supported": 4,  # test_tag_matching: no tag-matching CQ fields
        "Extended QP is not supported on this device": 1,  # IBV_QP_EX_WITH_ATOMIC_WRITE
        # librdmacm resolves addresses through the kernel's network interfaces.
        "Device onchip_0 doesn't have net interface": 11,
    }
    if hugepages:
        # The two ODP huge-page tests reach the ODP check; the parent-domain one runs.
        skips["ODP is not supported - No ODP caps"] += 2
    else:
        skips[HUGE_SKIP] = 3
    return skips


def main():
    out_path, rc, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    text = open(out_path, errors="replace").read()
    bad = []
    ran = re.search(r"^Ran (\d+) tests? in", text, re.M)
    if not ran:
        bad.append(f"the suite did not finish (exit status {rc}: a crash?)")
    elif int(ran.group(1)) != EXPECTED_TESTS:
        bad.append(f"{ran.group(1)} tests ran, expected {EXPECTED_TESTS}")
    errors = set(re.findall(r"^ERROR: \S+ \((tests\.[\w.]+)\)", text, re.M))
    failed = set(re.findall(r"^FAIL: \S+ \((tests\.[\w.]+)\)", text, re.M))
    want_failed = EXPECTED_FAILURES[device]
    if errors != EXPECTED_ERRORS:
        bad.append(f"errors {sorted(errors)}, expected {sorted(EXPECTED_ERRORS)}")
    if failed != want_failed:
        bad.append(f"failures {sorted(failed)}, expected {sorted(want_failed)}")
    want_rc = 1 if (EXPECTED_ERRORS or want_failed) else 0
    if rc != want_rc:
        bad.append(f"run_tests.py exited {rc}, expected {want_rc}")

    got = collections.Counter(
        m.group(2) for m in re.finditer(r"\.\.\. skipped (['\"])(.*)\1\s*$", text, re.M))
    root = os.geteuid() == 0
    with open("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") as f:
        hugepages = int(f.read()) > 0
    want = expected_skips(hugepages)
    if root:
        for reason in sorted(set(got) | set(want)):
            if got[reason] != want.get(reason, 0):
                bad.append(f"{got[reason]} skipped for {reason!r}, expected {want.get(reason, 0)}")
    else:
        # pyverbs skips its raw packet QP tests for a user who is not root, and the counts of the
        # reasons those tests would have reached change with it: only the reasons are judged.
        for reason in sorted(set(got) - set(want) - {ROOT_SKIP}):
            bad.append(f"{got[reason]} skipped for {reason!r}, a reason not expected")
    summary = re.search(r"^(?:OK|FAILED) \((.*)\)\s*$", text, re.M)
    skipped = int(re.search(r"skipped=(\d+)", summary.group(1)).group(1)) if summary else -1
    if skipped != sum(got.values()):
        bad.append(f"unittest counted {skipped} skips, the log shows {sum(got.values())}")

    for b in bad:
        print(f"not ok - {b}")
    if not bad:
        total = int(ran.group(1))
        passed = total - len(errors) - len(failed) - skipped
        print(f"ok - the whole pyverbs suite ran on {device}: {total} tests, {passed} passed, "
              f"{len(failed)} failed, {len(errors)} errors, {skipped} skipped (expected reasons "
              f"and counts{'' if root else '; counts not judged: not root'})")
    return len(bad)


if __name__ == "__main__":
    sys.exit(main())
