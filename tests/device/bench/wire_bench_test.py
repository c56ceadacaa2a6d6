"""bench/driver:wire_bench on the software ConnectX, with a device daemon of its own: each row
tools/onchip bench reports (latency with the remote or the local buffer in DM or host memory,
the floor, bandwidth, the goal's pairs; one process and two) runs and none fails, the counters
the report reads are there (their values are the bench's to judge, not a test's), and the suite
exits 0, which it does only when every device object it made was released.

argv: <wire_bench binary> <onchip-simd binary>
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import unittest_main

OPS = ("rdma_write", "rdma_read", "send_recv", "atomic_fetch_add", "atomic_cmp_swap")
SIZES = (8, 64, 512, 4096, 65536)
PLACES = (".onchip", ".host", "_local_dm.onchip", "_local_dm.host")


def sizes_of(op):
    return (8,) if op.startswith("atomic") else SIZES


class WireBenchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        sock = os.path.join(cls.tmp.name, "simd.sock")
        daemon = subprocess.Popen([SIMD, "--socket", sock, "--link-layer", "eth"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(sock) and time.monotonic() < deadline:
                time.sleep(0.02)
            out = os.path.join(cls.tmp.name, "wire.json")
            env = dict(os.environ, ONCHIP_BENCH_DAEMON=sock)
            cls.proc = subprocess.run(
                [BENCH, "--benchmark_min_time=0.001", "--benchmark_out=" + out,
                 "--benchmark_out_format=json"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=240)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)
        if not os.path.exists(out):
            cls.tmp.cleanup()
            raise AssertionError("wire_bench wrote no JSON (exit %d):\n%s"
                                 % (cls.proc.returncode, cls.proc.stdout[-3000:]))
        with open(out) as f:
            data = json.load(f)
        cls.context = data["context"]
        cls.rows = {b["run_name"]: b for b in data["benchmarks"] if b.get("run_type") == "iteration"}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def row(self, name):
        matches = [r for n, r in self.rows.items() if n == name or n.startswith(name + "/")]
        self.assertEqual(len(matches), 1, "%s: %s" % (name, sorted(self.rows)[:5]))
        return matches[0]

    def test_the_suite_exits_clean_with_the_daemon_in_its_context(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout[-3000:])
        self.assertEqual(self.context["onchip.daemon"], os.path.join(self.tmp.name, "simd.sock"))

    def test_no_row_failed(self):
        failed = {n: r.get("error_message") for n, r in self.rows.items() if r.get("error_occurred")}
        self.assertEqual(failed, {})

    def test_every_latency_row_runs_in_one_process_and_in_two(self):
        for op in OPS:
            for n in sizes_of(op):
                for place in PLACES:
                    for where in ("", "_2proc"):
                        r = self.row("%s%s%s/%d/real_time" % (op, place, where, n))
                        self.assertGreater(r["p50_ns"], 0)
                        self.assertLessEqual(r["p50_ns"], r["p99_ns"])
                        if not where:  # the device thread of this process
                            self.assertGreater(r["engine_cpu_ns"], 0)
                for where in ("", "_2proc"):
                    self.assertGreater(self.row("%s.floor%s/%d/real_time" % (op, where, n))["p50_ns"], 0)

    def test_bandwidth_of_every_operation_and_between_two_processes_but_send(self):
        for op in OPS:
            for n in sizes_of(op):
                for impl in ("onchip", "host", "onchip_2proc", "host_2proc"):
                    name = "%s_bw.%s/%d/real_time" % (op, impl, n)
                    if op == "send_recv" and impl.endswith("_2proc"):
                        self.assertFalse([k for k in self.rows if k.startswith(name)])
                        continue
                    self.assertGreater(self.row(name)["bytes_per_second"], 0)

    def test_the_goals_pairs_time_both_sides(self):
        # Their numbers are not asserted: the tests beside this one load the CPUs, and a floor
        # slowed that way is what report.py calls "not judged".
        for name in ("rdma_write.paired/8", "rdma_write.paired_2proc/8"):
            r = self.row(name + "/iterations:16/real_time")
            self.assertGreater(r["op_ns"], 0)
            self.assertGreater(r["floor_ns"], 0)
            self.assertGreater(r["x_floor"], 0)
        self.assertIn("8-byte RDMA WRITE into DM (two processes):", self.proc.stdout)


if __name__ == "__main__":
    BENCH, SIMD = sys.argv[1], sys.argv[2]
    del sys.argv[1:3]
    unittest_main.main()
