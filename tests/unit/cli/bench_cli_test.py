"""tools/onchip bench through its command line with stand-in suites (small scripts that write
Google Benchmark JSON), so no build, device or hugepage is needed: what it may write in --out,
how it reports misuse (one line, no traceback, non-zero), and Ctrl-C."""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import bench
import unittest_main

MAIN = os.path.join(os.path.dirname(os.path.abspath(bench.__file__)), "main.py")

# A stand-in suite: writes one iteration result to --benchmark_out; "missed" writes rows whose
# fields miss the allocator's goal (and prints a verdict of its own, which bench must ignore:
# goals are the report's); "sleep" sleeps (to be interrupted) with half its JSON written,
# leaving a pid file to show it was stopped; "partial" writes half its JSON and fails.
SUITE = """#!%(python)s
import json, os, sys, time
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out=")][0]
mode = %(mode)r
def run(name, ns, label=None):
    r = {"name": name, "run_name": name, "run_type": "iteration", "real_time": ns,
         "cpu_time": ns, "time_unit": "ns"}
    if label:
        r["label"] = label
    return r
rows = [run("standin/64", 12.5)]
if mode == "missed":
    print("goals of the active variants (to-device avx2): MISSED")  # not bench's to read
    rows = [run("a/64", 100.0, "op=alloc_free impl=onchip place=host bytes=64"),
            run("b/64", 200.0, "op=alloc_free impl=mmap_populate place=host bytes=64")]
text = json.dumps({"context": {}, "benchmarks": rows})
if mode in ("sleep", "partial"):
    with open(out, "w") as f:
        f.write(text[:len(text) // 2])
if mode == "partial":
    sys.exit(1)
if mode == "sleep":
    with open(os.environ["PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
    print("onchip stand-in: sleeping", flush=True)
    time.sleep(600)
with open(out, "w") as f:
    f.write(text)
"""


class BenchCommandLineTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.out = os.path.join(self.tmp.name, "out")

    def suite(self, name, mode="ok"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(SUITE % {"python": sys.executable, "mode": mode})
        os.chmod(path, stat.S_IRWXU)
        return path

    def bench(self, *args, **kwargs):
        env = dict(os.environ, ONCHIP_SYSFS_ROOT=os.path.join(self.tmp.name, "nosys"),
                   ONCHIP_DEV_ROOT=os.path.join(self.tmp.name, "nodev"),
                   PIDFILE=os.path.join(self.tmp.name, "pid"))
        return subprocess.run([sys.executable, MAIN, "bench", "--quick", *args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env, timeout=120, **kwargs)

    def assertCleanFailure(self, proc, code, message):
        self.assertEqual(proc.returncode, code, proc.stdout)
        self.assertNotIn("Traceback", proc.stdout)
        self.assertIn(message, proc.stdout)

    def test_files_bench_did_not_write_survive_in_out(self):
        os.makedirs(os.path.join(self.out, "keep"))
        mine = {"notes.json": '{"mine": 1}', "standin.json.bak": "x", "report.txt.old": "y",
                os.path.join("keep", "data.json"): "[]"}
        for name, text in mine.items():
            with open(os.path.join(self.out, name), "w") as f:
                f.write(text)
        proc = self.bench("--out", self.out, "--suite", self.suite("standin"))
        self.assertEqual(proc.returncode, 0, proc.stdout)
        for name, text in mine.items():
            with open(os.path.join(self.out, name)) as f:
                self.assertEqual(f.read(), text, name)
        self.assertEqual(sorted(os.listdir(self.out)),
                         sorted(["keep", "notes.json", "standin.json.bak", "report.txt.old",
                                 "standin.json", "report.txt", "report.json", "report.csv"]))
        self.assertIn("bench ok: 1 suites ran", proc.stdout)

    def test_a_stale_result_of_the_same_suite_is_not_reported_again(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "true.json"), "w") as f:
            f.write('{"benchmarks": [{"name": "old"}]}')
        proc = self.bench("--out", self.out, "--suite", "/bin/true")
        self.assertCleanFailure(proc, 1, "/bin/true produced no benchmark JSON")
        self.assertFalse(os.path.exists(os.path.join(self.out, "true.json")))
        self.assertFalse(os.path.exists(os.path.join(self.out, "report.txt")))

    def test_a_suite_that_writes_no_json_says_so(self):
        proc = self.bench("--out", self.out, "--suite", "/bin/true")
        self.assertCleanFailure(proc, 1, "produced no benchmark JSON")
        self.assertIn("bench FAILED", proc.stdout)

    def test_an_out_dir_that_cannot_be_made_is_one_line(self):
        proc = self.bench("--out", "/proc/nope", "--suite", self.suite("standin"))
        self.assertCleanFailure(proc, 2, "--out /proc/nope: cannot write there")
        self.assertNotIn("==>", proc.stdout)

    def test_an_unknown_device_is_refused_before_anything_runs(self):
        proc = self.bench("--device", "foo", "--out", self.out)
        self.assertCleanFailure(proc, 2, "--device foo: want sim, auto or vfio:dddd:bb:dd.f")
        self.assertNotIn("==>", proc.stdout)  # no packages, hugepages or build step
        self.assertFalse(os.path.exists(self.out))

    def test_a_suite_that_is_not_executable_is_refused(self):
        proc = self.bench("--out", self.out, "--suite", os.path.join(self.tmp.name, "absent"))
        self.assertCleanFailure(proc, 2, "--suite: not an executable file")

    def test_a_compare_file_that_is_absent_or_not_a_report_is_refused_before_running(self):
        proc = self.bench("--out", self.out, "--suite", self.suite("standin"),
                          "--compare", os.path.join(self.tmp.name, "old.json"))
        self.assertCleanFailure(proc, 2, "old.json: cannot read it")
        self.assertFalse(os.path.exists(self.out))
        bad = os.path.join(self.tmp.name, "bad.json")
        for text, message in (("{", "not JSON"), ('{"benchmarks": []}', "not a report.json")):
            with open(bad, "w") as f:
                f.write(text)
            proc = self.bench("--out", self.out, "--suite", self.suite("standin"), "--compare", bad)
            self.assertCleanFailure(proc, 2, message)

    def test_compare_prints_each_common_row_as_a_ratio(self):
        proc = self.bench("--out", self.out, "--suite", self.suite("standin"))
        self.assertEqual(proc.returncode, 0, proc.stdout)
        old = os.path.join(self.tmp.name, "old.json")
        with open(old, "w") as f:
            json.dump({"rows": [{"op": "memcpy_to_dm", "size": 64,
                                 "impls": {"onchip": {"median_ns": 10.0}}}],
                       "hot": [{"path": "PostRecv", "ns": 20.0}]}, f)
        proc = self.bench("--out", self.out, "--suite", self.suite("standin"), "--compare", old)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("Compared with the earlier run", proc.stdout)
        self.assertIn("no row in common", proc.stdout)  # the stand-in's row is in no section
        self.assertRegex(proc.stdout, r"only in the earlier run: .*memcpy_to_dm onchip 64 B")
        self.assertRegex(proc.stdout, r"only in the earlier run: .*PostRecv onchip")

    def test_a_missed_performance_goal_is_named_not_reported_ok(self):
        # Speed is measured, never asserted: the run succeeds, and the miss the report judged is
        # named; what the suite printed judges nothing.
        proc = self.bench("--out", self.out, "--suite", self.suite("standin", "missed"))
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("1 performance goal missed or not judged", proc.stdout)
        self.assertNotIn("Traceback", proc.stdout)
        self.assertIn("alloc_free: onchip >= 5x mmap_populate at every size (worst: 64 B): 2.0x "
                      "(missed)", proc.stdout)
        self.assertNotIn("standin: goals of the active variants", proc.stdout)
        self.assertNotIn("bench ok", proc.stdout)

    def test_a_suite_that_fails_half_way_leaves_no_json_in_out(self):
        proc = self.bench("--out", self.out, "--suite", self.suite("standin", "partial"))
        self.assertCleanFailure(proc, 1, "bench FAILED")
        self.assertEqual(os.listdir(self.out), [])

    def test_ctrl_c_stops_the_suite_and_exits_130_without_a_traceback(self):
        pidfile = os.path.join(self.tmp.name, "pid")
        proc = subprocess.Popen([sys.executable, MAIN, "bench", "--quick", "--out", self.out,
                                 "--suite", self.suite("standin", "sleep")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, PIDFILE=pidfile,
                                         ONCHIP_SYSFS_ROOT=os.path.join(self.tmp.name, "nosys")))
        deadline = time.monotonic() + 60
        while not os.path.exists(pidfile) or not os.path.getsize(pidfile):
            self.assertLess(time.monotonic(), deadline, "the stand-in suite never started")
            time.sleep(0.05)
        with open(pidfile) as f:
            child = int(f.read())
        proc.send_signal(signal.SIGINT)  # only to tools/onchip, as `timeout -s INT` does
        output, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, output)
        self.assertNotIn("Traceback", output)
        self.assertIn("interrupted", output)
        self.assertEqual(os.listdir(self.out), [])  # no truncated JSON of the stopped suite
        deadline = time.monotonic() + 30
        while os.path.exists("/proc/%d" % child) and not _zombie(child):
            self.assertLess(time.monotonic(), deadline, "the suite outlived tools/onchip")
            time.sleep(0.05)


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


if __name__ == "__main__":
    unittest_main.main()
