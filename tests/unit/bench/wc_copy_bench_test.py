"""bench/mmio:wc_copy_bench sums its pairs up from whatever its reporter is shown: a bare run
(its default: five repetitions, aggregates only on the console), several repetitions shown
whole, or one. Each way the summary has every 4-byte to-device pair's ratio and a range over the
two processes it ran, and no verdict (the goals are the report's to judge); every row carries
its fields, and the other process's samples reach the JSON context keyed by those fields, as
tools/cli/report.py reads them. The ratios themselves are the bench's.

argv: <wc_copy_bench binary>
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import report
import unittest_main

# Every to-device variant's pair against the vendor's loop at 4 B, the active one among them.
FILTER = "--benchmark_filter=^Pair/ToDevice/[a-z0-9_]+~vendor_dm_4B/4/"


class WcCopyBenchTest(unittest.TestCase):
    def run_bench(self, *flags):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "wc.json")
            proc = subprocess.run([BENCH, "--onchip_pair_processes=2", FILTER,
                                   "--benchmark_min_time=0.001", "--benchmark_out=" + out,
                                   *flags], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(out) as f:
                return proc.stdout, json.load(f)

    def assert_summed_up(self, stdout):
        self.assertNotIn("no pair ran", stdout)
        self.assertIn("the active variants' of 2 processes", stdout)
        # Both processes measured the active variant at 4 B: a range, each end a ratio.
        self.assertRegex(stdout, r"ToDevice +4 B \d+\.\d\d-\d+\.\d\d;")
        active = re.search(r"^active: to-device (\w+)", stdout, re.M).group(1)
        line = re.search(r"^%s +.*$" % re.escape(active), stdout, re.M).group(0)
        # The worst size over those measured (the other process measures every size), with a ratio.
        self.assertRegex(line, r"\d+\.\d+ \(\d+ (B|KiB)\)")
        self.assertNotRegex(stdout, r"(?m)MISSED|: met\b|^goal")

    def test_a_bare_run_is_summed_up_from_its_aggregates(self):
        stdout, got = self.run_bench()
        self.assert_summed_up(stdout)
        # Every row has its fields; the pair of the variant in use is onchip against the vendor.
        rows = [b for b in got["benchmarks"] if b.get("run_type") == "iteration"]
        self.assertTrue(rows)
        for b in rows:
            self.assertIsNotNone(report.fields(b.get("label")), b["name"])
        active = re.search(r"^active: to-device (\w+)", stdout, re.M).group(1)
        mine = [report.fields(b["label"]) for b in rows
                if b["name"].startswith("Pair/ToDevice/%s~vendor_dm_4B/4/" % active)]
        self.assertEqual([(f["op"], f["impl"], f["pair"], f["bytes"]) for f in mine[:1]],
                         [("wc_copy_to_device", "onchip", "vendor", 4)])
        # The other process's sample of each of its pairs, as report.py reads it.
        elsewhere = report.elsewhere_samples(got["context"]["onchip_pairs_elsewhere"])
        samples = elsewhere[("wc_copy_to_device", 4, "vendor")]
        self.assertEqual(len(samples), 1)  # one other process
        ns, base_ns = samples[0]
        self.assertGreater(ns, 0)
        self.assertGreater(base_ns, 0)

    def test_repetitions_shown_whole_are_summed_up(self):
        stdout, _ = self.run_bench("--benchmark_repetitions=3")
        self.assert_summed_up(stdout)

    def test_one_repetition_is_summed_up(self):
        stdout, _ = self.run_bench("--benchmark_repetitions=1")
        self.assert_summed_up(stdout)


if __name__ == "__main__":
    BENCH = os.path.abspath(sys.argv[1])
    del sys.argv[1]
    unittest_main.main()
