"""bench/driver:rings_bench's summary: every hot call beside its floor and its bound, as
information. The "within 2x of its floor" goal is retired: no verdict is printed, and the
report judges none (it reads each row's fields: a call names its floor and its bound). Its
structure, not its numbers.

argv: <rings_bench binary>
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import report
import unittest_main

CALLS = ("PostSend/blueflame", "PostSend/doorbell", "WrSend/blueflame", "PostRecv", "PollCq/one")


class RingsBenchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        proc = subprocess.run([BENCH, "--benchmark_min_time=0.001", "--benchmark_repetitions=1"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AssertionError("rings_bench exited %d:\n%s%s"
                                 % (proc.returncode, proc.stdout, proc.stderr))
        cls.stdout = proc.stdout
        cls.summary = proc.stdout[proc.stdout.index("\n== "):]

    def test_every_call_has_its_ratios_to_floor_and_bound_and_no_verdict(self):
        self.assertIn("information, no goal", self.summary)
        for call in CALLS:
            line = re.search(r"^%s +.*$" % re.escape(call), self.summary, re.M)
            self.assertIsNotNone(line, call)
            # ns, floor, ns, x floor | bound, ns, x floor, call/b: numbers only, nothing after.
            self.assertRegex(line.group(0), r"^\S+ +\d+\.\d +Floor/\S+ +\d+\.\d +\d+\.\d\d \| "
                                            r"Bound/\S+ +\d+\.\d +\d+\.\d\d +\d+\.\d\d$")
        self.assertNotIn("MISSED", self.stdout)
        self.assertNotRegex(self.summary, r"(?m)^goal")

    def test_the_report_finds_every_call_by_its_fields_and_judges_no_goal(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rings.json")
            proc = subprocess.run([BENCH, "--benchmark_min_time=0.001", "--benchmark_repetitions=1",
                                   "--benchmark_out=" + out], capture_output=True, text=True,
                                  timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            got = report.collect([out])
        self.assertEqual([p for p, _, _ in got["hot_paths"]], list(CALLS))
        hot = report.build_hot(got["hot"], got["errors"], got["hot_paths"])
        for r in hot:
            self.assertGreater(r["ns"], 0, r)
            self.assertGreater(r["floor_ns"], 0, r)
            self.assertGreater(r["bound_ns"], 0, r)
        self.assertEqual(report.goals([], [], [], got["fielded"]), [])

if __name__ == "__main__":
    BENCH = os.path.abspath(sys.argv.pop(1))
    unittest_main.main()
