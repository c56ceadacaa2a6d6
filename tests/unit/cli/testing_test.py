"""tools/cli/testing.py: the --tiers spellings, and how test cases are counted from the JUnit XML
GoogleTest 1.12 writes (the sample below is its real output for a pass, a GTEST_SKIP in the body
and in a fixture's SetUp, a failure and a DISABLED_ test)."""
import contextlib
import io
import os
import shutil
import tempfile
import unittest

import bazel
import main
import testing
import unittest_main

GTEST_1_12_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" failures="1" disabled="1" errors="0" time="0" timestamp="2026-11-23T14:53:25.141" name="AllTests">
  <testsuite name="A" tests="4" failures="1" disabled="1" skipped="1" errors="0" time="0" timestamp="2026-11-23T14:53:25.141">
    <testcase name="Pass" file="t.cc" line="2" status="run" result="completed" time="0" timestamp="2026-11-23T14:53:25.141" classname="A" />
    <testcase name="Skip" file="t.cc" line="3" status="run" result="skipped" time="0" timestamp="2026-11-23T14:53:25.141" classname="A">
      <skipped message="t.cc:3&#x0A;why"><![CDATA[t.cc:3
why]]></skipped>
    </testcase>
    <testcase name="Fail" file="t.cc" line="4" status="run" result="completed" time="0" timestamp="2026-11-23T14:53:25.141" classname="A">
      <failure message="t.cc:4&#x0A;Expected equality of these values:&#x0A;  1&#x0A;  2" type=""><![CDATA[t.cc:4
Expected equality of these values:
  1
  2]]></failure>
    </testcase>
    <testcase name="DISABLED_Off" file="t.cc" line="5" status="notrun" result="suppressed" time="0" timestamp="1970-01-01T00:00:00.000" classname="A" />
  </testsuite>
  <testsuite name="F" tests="1" failures="0" disabled="0" skipped="1" errors="0" time="0" timestamp="2026-11-23T14:53:25.141">
    <testcase name="X" file="t.cc" line="7" status="run" result="skipped" time="0" timestamp="2026-11-23T14:53:25.141" classname="F">
      <skipped message="t.cc:6&#x0A;fixture"><![CDATA[t.cc:6
fixture]]></skipped>
    </testcase>
  </testsuite>
</testsuites>
"""

# What the tier-3 hardware test writes on a machine without a ConnectX: Bazel reports the target
# PASSED, but its one case skipped.
HARDWARE_SKIPPED_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="0" disabled="0" errors="0" time="0" name="AllTests">
  <testsuite name="VfioHardware" tests="1" failures="0" disabled="0" skipped="1" errors="0" time="0">
    <testcase name="MemicRoundTripAndMr" file="tests/hardware/driver/vfio_dm_test.cc" line="22" status="run" result="skipped" time="0" classname="VfioHardware">
      <skipped message="no ConnectX"><![CDATA[no ConnectX]]></skipped>
    </testcase>
  </testsuite>
</testsuites>
"""

# What Bazel writes itself for a test that wrote no XML of its own and failed.
BAZEL_GENERATED_FAILED_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
<testsuite name="tests/x/y" tests="1" failures="0" errors="1">
<testcase name="tests/x/y" status="run" duration="0" time="0"><error message="exited with error code 1"></error></testcase>
<system-out></system-out>
</testsuite>
</testsuites>
"""


class CountCasesTest(unittest.TestCase):
    def count(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
            f.write(text)
        try:
            return testing.count_cases(f.name)
        finally:
            os.unlink(f.name)

    def test_gtest_pass_skip_fail_and_disabled_each_count_once(self):
        passed, failed, skipped, names = self.count(GTEST_1_12_XML)
        self.assertEqual((passed, failed, skipped), (1, 1, 3))
        self.assertEqual(names, ["A.Fail"])

    def test_a_target_whose_only_case_skipped_is_shown_skipped_not_ok(self):
        counts = self.count(HARDWARE_SKIPPED_XML)[:3]
        self.assertEqual(counts, (0, 0, 1))
        self.assertEqual(testing.target_status(*counts), "skipped")
        self.assertEqual(testing.target_status(1, 0, 1), "ok")
        self.assertEqual(testing.target_status(0, 1, 1), "FAILED")

    def test_bazels_own_xml_for_a_failed_test_counts_a_failure(self):
        self.assertEqual(self.count(BAZEL_GENERATED_FAILED_XML)[:3], (0, 1, 0))

    def test_count_line_names_skipped_only_when_there_are_some(self):
        self.assertEqual(testing.count_line(3, 0, 0), "3 passed, 0 failed")
        self.assertEqual(testing.count_line(3, 1, 2), "3 passed, 1 failed, 2 skipped")


class Args:
    def __init__(self, tiers="", sanitize=False):
        self.tiers = tiers
        self.sanitize = sanitize


class TiersTest(unittest.TestCase):
    def test_names_and_tags_are_the_same_tiers(self):
        self.assertEqual(testing.tier_filter("unit"), "tier0")
        self.assertEqual(testing.tier_filter("device,hugepages"), "tier1,tier2")
        self.assertEqual(testing.tier_filter("tier3"), "tier3")
        self.assertEqual(testing.tier_filter("unit, tier0"), "tier0")
        self.assertEqual(testing.tier_filter("-hardware"), "-tier3")
        self.assertEqual(testing.tier_filter(""), "")

    def test_the_tags_are_the_ones_the_build_macro_accepts(self):
        self.assertEqual(sorted(testing.TIERS.values()), ["tier0", "tier1", "tier2", "tier3"])

    def test_unknown_tier_is_refused_with_the_valid_ones_named(self):
        self.assertEqual(testing.tier_filter("unit,"), "tier0")  # an empty item is no tier
        for bad in ("nonsense", "tier4", "units", "-x"):
            with self.assertRaises(testing.TierError) as e:
                testing.tier_filter(bad)
            self.assertIn("unknown tier", str(e.exception))
            self.assertIn("unit, device, hugepages, hardware", str(e.exception))

    def test_sanitize_picks_its_own_tiers_and_refuses_a_selection(self):
        label, config, tiers = testing.passes(Args(sanitize=True))[0]
        self.assertEqual(tiers, "tier0,tier1,-nosanitize")
        with self.assertRaises(testing.TierError):
            testing.passes(Args(tiers="unit", sanitize=True))

    def test_hugepages_are_wanted_only_when_the_hugepage_tier_runs(self):
        self.assertTrue(main._selects("", "tier2"))
        self.assertTrue(main._selects("tier2", "tier2"))
        self.assertTrue(main._selects("-tier3", "tier2"))
        self.assertFalse(main._selects("tier0", "tier2"))
        self.assertFalse(main._selects("-tier2", "tier2"))


class NoTestsIsNotAPassTest(unittest.TestCase):
    """A selection with no test target fails before building, and Bazel's exit 4 never passes."""

    def setUp(self):
        self.calls = []
        self.saved = (testing.bazel.query_tests, testing.bazel.run, testing.bazel.info)

    def tearDown(self):
        testing.bazel.query_tests, testing.bazel.run, testing.bazel.info = self.saved

    def fake(self, tests, test_exit):
        testing.bazel.query_tests = lambda targets, tiers: tests
        testing.bazel.info = lambda key, config=(): "/nonexistent"

        def run(args, **_):
            self.calls.append(args[0])
            return test_exit if args[0] == "test" else 0
        testing.bazel.run = run

    def test_empty_selection_fails_without_building(self):
        self.fake([], 0)
        self.assertFalse(testing.run_pass("", [], "tier2", ["//nothing/..."])[3])
        self.assertEqual(self.calls, [])

    def test_bazel_exit_4_fails(self):
        self.fake(["//a:b"], 4)
        self.assertFalse(testing.run_pass("", [], "", ["//..."])[3])
        self.assertEqual(self.calls, ["build", "test"])

    def test_failed_query_fails(self):
        self.fake(None, 0)
        self.assertFalse(testing.run_pass("", [], "", ["//bad"])[3])


class SanitizePassBuildsTheFuzzersTest(unittest.TestCase):
    """The ASan+UBSan pass builds every fuzzer binary beside the tests (they link only there, so
    no other pass notices one that stopped linking); the other passes do not."""

    def setUp(self):
        self.builds = []
        self.saved = (testing.bazel.query_tests, testing.bazel.query_fuzzers, testing.bazel.run,
                      testing.bazel.info)
        testing.bazel.query_tests = lambda targets, tiers: ["//a:b"]
        testing.bazel.query_fuzzers = lambda targets: ["//f:fuzzer"]
        testing.bazel.info = lambda key, config=(): "/nonexistent"

        def run(args, **_):
            if args[0] == "build":
                self.builds.append(args[args.index("--") + 1:])
            return 0
        testing.bazel.run = run

    def tearDown(self):
        (testing.bazel.query_tests, testing.bazel.query_fuzzers, testing.bazel.run,
         testing.bazel.info) = self.saved

    def test_only_the_sanitize_pass_builds_them(self):
        testing.run_pass("ASan+UBSan", ["--config=sanitize"], "tier0", ["//..."])
        testing.run_pass("TSan", ["--config=tsan"], "tsan", ["//..."])
        testing.run_pass("", [], "", ["//..."])
        self.assertEqual(self.builds, [["//...", "//f:fuzzer"], ["//..."], ["//..."]])

    def test_a_failed_fuzzer_query_fails_the_pass(self):
        testing.bazel.query_fuzzers = lambda targets: None
        self.assertFalse(testing.run_pass("ASan+UBSan", ["--config=sanitize"], "tier0", ["//..."])[3])
        self.assertEqual(self.builds, [])


class CountLineIsLastTest(unittest.TestCase):
    """`tools/onchip test` ends with its count line: the hugepages it reserved are given back, and
    the note saying so printed, before it (main.main end to end, with Bazel, the package check
    and the kernel's hugepage files stood in for)."""

    def setUp(self):
        self.saved = (testing.bazel.query_tests, testing.bazel.run, testing.bazel.info,
                      main.setup.prepare, main.setup.Hugepages, os.getcwd())
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name

    def tearDown(self):
        (testing.bazel.query_tests, testing.bazel.run, testing.bazel.info,
         main.setup.prepare, main.setup.Hugepages, cwd) = self.saved
        os.chdir(cwd)

    def run_main(self, test_exit):
        nr, free = os.path.join(self.tmp, "nr_hugepages"), os.path.join(self.tmp, "free_hugepages")
        for path in (nr, free):
            with open(path, "w") as f:
                f.write("0\n")
        real = self.saved[4]
        main.setup.Hugepages = lambda keep=False: real(nr, keep=keep, is_root=True, free_path=free)
        main.setup.prepare = lambda hugepages=None, wanted=0, why="": hugepages.reserve(wanted, why)
        testlogs = os.path.join(self.tmp, "testlogs")
        os.makedirs(os.path.join(testlogs, "a", "b"))
        with open(os.path.join(testlogs, "a", "b", "test.xml"), "w") as f:
            f.write(GTEST_1_12_XML)
        testing.bazel.query_tests = lambda targets, tiers: ["//a:b"]
        testing.bazel.info = lambda key, config=(): testlogs
        testing.bazel.run = lambda args, **_: test_exit if args[0] == "test" else 0
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main.main(["test", "--tiers", "hugepages"])
        with open(nr) as f:
            left = int(f.read())
        return code, [l for l in out.getvalue().splitlines() if l.strip()], left

    def test_the_count_line_follows_the_hugepage_give_back(self):
        for test_exit, want_code in ((0, 1), (3, 1)):  # the sample XML holds a failed case
            code, lines, left = self.run_main(test_exit)
            self.assertEqual(code, want_code)
            self.assertEqual(left, 0, "the pages were given back")
            self.assertTrue(any("reserved 64 x 2 MiB" in l for l in lines), lines)
            self.assertTrue(any("gave back the reserved pages" in l for l in lines), lines)
            self.assertEqual(lines[-1], "1 passed, 1 failed, 3 skipped", lines)
            shutil.rmtree(os.path.join(self.tmp, "testlogs"))


class BazelOutputTest(unittest.TestCase):
    SANDBOX = "1795445449.37: src/main/tools/linux-sandbox-pid1.cc:441: child exited normally"

    def shown(self, view, lines):
        return [out for out in map(view, lines) if out is not None]

    def test_headers_without_output_and_sandbox_chatter_are_dropped(self):
        lines = ["INFO: From Compiling a.cc:", self.SANDBOX, "INFO: From Compiling b.cc:",
                 "b.cc:3: warning: unused", "[3 / 9] Compiling c.cc", "INFO: Build completed"]
        self.assertEqual(self.shown(bazel.Filter(), lines),
                         ["INFO: From Compiling b.cc:\nb.cc:3: warning: unused",
                          "[3 / 9] Compiling c.cc", "INFO: Build completed"])

    def test_terse_view_shows_progress_then_everything_from_the_first_error(self):
        lines = ["INFO: Analyzed 1 target", "[1 / 4] Compiling a.cc", self.SANDBOX,
                 "INFO: From Compiling a.cc:", "ERROR: a.cc failed", self.SANDBOX,
                 "a.cc:1: error: x", "INFO: Elapsed time"]
        self.assertEqual(self.shown(bazel.Terse(), lines),
                         ["[1 / 4] Compiling a.cc", "ERROR: a.cc failed", "a.cc:1: error: x",
                          "INFO: Elapsed time"])


if __name__ == "__main__":
    unittest_main.main()
