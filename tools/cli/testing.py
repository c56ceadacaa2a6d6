"""tools/onchip test: build everything, run every test target, count test cases.

Steps: Debian packages and hugepages (see setup.py), `bazel build //...` (benchmarks and tools
included, so nothing rots), `bazel test` over every test target, then a per-target summary read
from each target's JUnit XML. The last line is `N passed, N failed, N skipped` counting test
cases, not targets. A target that crashed before writing its XML counts as one failed case.

--sanitize runs the tier0 (unit) and tier1 (software ConnectX) tests under ASan+UBSan, then the
tests tagged tsan (the concurrency tests) under TSan.
"""
import os
import subprocess
import xml.etree.ElementTree as ET

import bazel
import progress


def count_cases(xml_path):
    """(passed, failed, skipped, failure names) from one target's test.xml."""
    passed = failed = skipped = 0
    names = []
    root = ET.parse(xml_path).getroot()
    for case in root.iter("testcase"):
        name = "%s.%s" % (case.get("classname", ""), case.get("name", ""))
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            names.append(name)
        elif (case.get("result") in ("skipped", "suppressed") or case.get("status") == "notrun"
              or case.find("skipped") is not None):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, names


def summarize(targets, testlogs):
    totals = [0, 0, 0]
    width = max([len(t) for t in targets] + [10])
    print()
    progress.step("results by target (test cases)")
    for target in targets:
        rel = target.lstrip("/").replace(":", "/")
        xml_path = os.path.join(testlogs, rel, "test.xml")
        if not os.path.exists(xml_path):
            status, counts, names = "NO RESULT", (0, 1, 0), ["(did not run or crashed)"]
        else:
            try:
                p, f, s, names = count_cases(xml_path)
            except ET.ParseError:
                p, f, s, names = 0, 1, 0, ["(unreadable test.xml)"]
            counts = (p, f, s)
            status = "FAILED" if f else "ok"
        for i in range(3):
            totals[i] += counts[i]
        print("  %-*s  %-9s %4d passed %3d failed %3d skipped" % (width, target, status, *counts))
        for n in names[:10]:
            print("      failed: %s" % n)
    return totals


def run_pass(label, config, tiers, targets):
    """Builds and runs one pass; returns (passed, failed, skipped, bazel exit code)."""
    filters = ["--test_tag_filters=" + tiers] if tiers else []
    build_filters = ["--build_tag_filters=" + tiers] if label == "TSan" else []
    progress.step("building %s%s" % (" ".join(targets), " under " + label if label else ""))
    if bazel.run(["build"] + config + build_filters + ["--", *targets]) != 0:
        progress.fail("build failed")
        return 0, 1, 0, 1
    tests = bazel.query_tests(targets, tiers)
    progress.step("running %d test targets%s%s" % (len(tests), " (" + tiers + ")" if tiers else "",
                                                  " under " + label if label else ""))
    code = bazel.run(["test", "-k"] + config + filters + ["--", *targets])
    passed, failed, skipped = summarize(tests, bazel.info("bazel-testlogs", config))
    if code not in (0, 3, 4) and failed == 0:
        failed = 1  # Bazel failed outside any test case
    return passed, failed, skipped, code


def run(args):
    targets = args.targets or ["//..."]
    if args.sanitize:
        # ASan+UBSan over the unit and software-ConnectX tiers, then TSan over the tests tagged
        # "tsan" (the concurrency tests), each in its own output tree (--platform_suffix).
        passes = [("ASan+UBSan", ["--config=sanitize"], "tier0,tier1,-nosanitize"),
                  ("TSan", ["--config=tsan"], "tsan")]
    else:
        passes = [("", [], args.tiers)]
    totals = [0, 0, 0]
    ok = True
    for label, config, tiers in passes:
        p, f, s, code = run_pass(label, config, tiers, targets)
        totals = [totals[0] + p, totals[1] + f, totals[2] + s]
        ok = ok and f == 0 and code in (0, 4)
    passed, failed, skipped = totals
    print()
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line, flush=True)
    return 0 if ok else 1
