"""tools/onchip test: build everything, run every test target, count test cases.

Steps: missing Debian packages, hugepages for the hugepage tier, `bazel build //...`
(benchmarks and tools included, so nothing rots), `bazel test` over every test target, then a
per-target summary read from each target's JUnit XML. The last line is
`N passed, N failed[, N skipped]`, counting test cases, not targets. A target that crashed before
writing its XML counts as one failed case; a target whose every case skipped is shown as
skipped (Bazel itself calls it PASSED).

Tiers (--tiers, comma-separated, either name): unit (tier0, needs nothing), device (tier1, the
software ConnectX), hugepages (tier2, reserved 2 MiB hugepages), hardware (tier3, a real ConnectX
bound to vfio-pci). A leading '-' leaves a tier out: --tiers=-hardware. A selection that matches
no test target is an error, never a pass.

--sanitize runs the unit and device tiers under ASan+UBSan (and builds every fuzzer, which links
only there), then the tests tagged tsan (the concurrency tests) under TSan.
"""
import os
import xml.etree.ElementTree as ET

import bazel
import progress

# The tier names the README and --help use, and the Bazel tags the BUILD files put on the tests
# (tools/build/defs.bzl).
TIERS = {"unit": "tier0", "device": "tier1", "hugepages": "tier2", "hardware": "tier3"}


class TierError(Exception):
    pass


def tier_filter(spec):
    """The Bazel tag filter for a --tiers value ('' when empty: every tier). Takes the names and
    the tags alike, each optionally with a leading '-' to exclude it; TierError for anything else."""
    tags = []
    for word in [w.strip() for w in (spec or "").split(",") if w.strip()]:
        sign, name = ("-", word[1:]) if word.startswith("-") else ("", word)
        tag = TIERS.get(name, name if name in TIERS.values() else None)
        if tag is None:
            raise TierError("unknown tier '%s' (tiers: %s; or %s)"
                            % (name, ", ".join(TIERS), "..".join([min(TIERS.values()),
                                                                  max(TIERS.values())])))
        if sign + tag not in tags:
            tags.append(sign + tag)
    return ",".join(tags)


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


def target_status(passed, failed, skipped):
    if failed:
        return "FAILED"
    if skipped and not passed:
        return "skipped"
    return "ok"


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
            status = target_status(p, f, s)
        for i in range(3):
            totals[i] += counts[i]
        print("  %-*s  %-9s %4d passed %3d failed %3d skipped" % (width, target, status, *counts))
        for n in names[:10]:
            print("      failed: %s" % n)
    return totals


def run_pass(label, config, tiers, targets):
    """Builds and runs one pass; returns (passed, failed, skipped, ok)."""
    under = " under " + label if label else ""
    selection = " (tags %s)" % tiers if tiers else ""
    tests = bazel.query_tests(targets, tiers)
    if tests is None:
        return 0, 0, 0, False
    if not tests:
        progress.fail("no test target under %s matches%s%s: nothing would be tested, so this "
                      "is not a pass" % (" ".join(targets), selection or " (any tier)", under))
        return 0, 0, 0, False
    filters = ["--test_tag_filters=" + tiers] if tiers else []
    build_filters = ["--build_tag_filters=" + tiers] if label == "TSan" else []
    build = list(targets)
    if label == "ASan+UBSan":
        # The fuzzers build only here (they link the sanitizer runtime); a fuzzer that no
        # longer links fails the pass, as a test that no longer builds does.
        fuzzers = bazel.query_fuzzers(targets)
        if fuzzers is None:
            return 0, 0, 0, False
        build += fuzzers
    progress.step("building %s%s" % (" ".join(targets), under))
    if bazel.run(["build"] + config + build_filters + ["--", *build]) != 0:
        progress.fail("build failed")
        return 0, 1, 0, False
    progress.step("running %d test targets%s%s" % (len(tests), selection, under))
    code = bazel.run(["test", "-k"] + config + filters + ["--", *targets])
    passed, failed, skipped = summarize(tests, bazel.info("bazel-testlogs", config))
    if code == 4:
        # Bazel found no test to run although the query above listed some: say so, never pass.
        progress.fail("Bazel ran no test target%s%s (exit 4, no test targets)" % (selection, under))
        return passed, failed, skipped, False
    if code != 0 and failed == 0:
        # A target can fail after its test cases all passed (a sanitizer's report at exit, a
        # crash in teardown): the count must say so, not only the exit status.
        progress.fail("bazel test exited %d with no failed test case: a target failed outside "
                      "its test cases (its log says why)" % code)
        failed = 1
    return passed, failed, skipped, failed == 0 and code == 0


def count_line(passed, failed, skipped):
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    return line


def passes(args):
    """(label, Bazel options, tag filter) of each pass `tools/onchip test` makes. TierError for an
    unknown tier or for --tiers with --sanitize (whose passes pick their own tiers)."""
    tiers = tier_filter(args.tiers)
    if args.sanitize:
        if tiers:
            raise TierError("--sanitize picks its own tiers (unit and device, then the tsan "
                            "tests); leave out --tiers")
        # ASan+UBSan over the unit and software-ConnectX tiers, then TSan over the tests tagged
        # "tsan" (the concurrency tests), each in its own output tree (--platform_suffix).
        return [("ASan+UBSan", ["--config=sanitize"],
                 "%s,%s,-nosanitize" % (TIERS["unit"], TIERS["device"])),
                ("TSan", ["--config=tsan"], "tsan")]
    return [("", [], tiers)]


def run(args, before_count=None):
    """Runs every pass; the count line is the run's last line: `before_count` (what the run set
    up to give back, e.g. hugepages, whose notes would otherwise follow it) runs just before."""
    targets = args.targets or ["//..."]
    totals = [0, 0, 0]
    ok = True
    for label, config, tiers in passes(args):
        p, f, s, pass_ok = run_pass(label, config, tiers, targets)
        totals = [totals[0] + p, totals[1] + f, totals[2] + s]
        ok = ok and pass_ok
    passed, failed, skipped = totals
    if before_count is not None:
        before_count()
    print()
    print(count_line(passed, failed, skipped), flush=True)
    return 0 if ok else 1
