"""tools/cli/report.py on hand-written Google Benchmark JSON: the wire rows' ratios to the floor,
rows that timed each operation themselves (p50_ns/p99_ns counters), failed rows reported with
their error and never a number, the hot-path section, report.csv, the chart, and --compare."""
import csv
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

import report
import report_chart
import unittest_main

SVG = "{http://www.w3.org/2000/svg}"


def label(op, impl, **kw):
    """A row's fields as bench/row.h writes them."""
    words = ["op=" + op, "impl=" + impl] + ["%s=%s" % (k, v) for k, v in kw.items()]
    return " ".join(words)


def row(name, ns, p50=None, p99=None, bps=0.0, unit="ns", engine=None, fields=None):
    b = {"name": name, "run_name": name, "run_type": "iteration", "real_time": ns,
         "cpu_time": ns, "time_unit": unit}
    if fields:
        b["label"] = fields
    if bps:
        b["bytes_per_second"] = bps
    if p50 is not None:
        b.update(p50_ns=p50, p99_ns=p99)
    if engine is not None:
        b["engine_cpu_ns"] = engine
    return b


def failed(name, message, fields=None):
    b = {"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
         "error_message": message}
    if fields:
        b["label"] = fields
    return b


def wire(op, impl, size, procs=1, measure="latency", side="remote"):
    """A wire row's fields: impl dm, host (on the remote side, or local for *_local_dm), floor."""
    if impl == "floor":
        return label(op, "floor", procs=procs, bytes=size, measure=measure)
    return label(op, "onchip", place=impl, side=side, procs=procs, bytes=size, measure=measure)


def hot(name, impl, floor=None, bound=None):
    extra = {"floor": floor, "bound": bound} if floor else {}
    return label(name, impl, procs=1, measure="latency", **extra)


def copy(op, impl, variant, size, place="dm", pair=None):
    extra = {"pair": pair} if pair else {}
    return label(op, impl, place=place, procs=1, bytes=size, measure="latency", variant=variant,
                 **extra)


# The names are the suites'; the report reads only the fields (label), never a name.
WIRE = [
    # rdma_write at 8 B: the row's own per-operation timings (counters) win over real_time.
    row("rdma_write.onchip/8/real_time", 999.0, p50=300.0, p99=450.0, engine=1500.0,
        fields=wire("rdma_write", "dm", 8)),
    row("rdma_write.onchip/8/real_time", 999.0, p50=320.0, p99=500.0, engine=1700.0,
        fields=wire("rdma_write", "dm", 8)),
    row("rdma_write.onchip/8/real_time", 999.0, p50=310.0, p99=470.0, engine=1600.0,
        fields=wire("rdma_write", "dm", 8)),
    row("rdma_write.host/8/real_time", 400.0, fields=wire("rdma_write", "host", 8)),
    row("rdma_write.floor/8/real_time", 100.0, fields=wire("rdma_write", "floor", 8)),
    row("rdma_write.onchip/64/real_time", 0.5, unit="us", fields=wire("rdma_write", "dm", 64)),
    row("rdma_write.host/64/real_time", 600.0, fields=wire("rdma_write", "host", 64)),
    row("rdma_write.floor/64/real_time", 120.0, fields=wire("rdma_write", "floor", 64)),
    # rdma_read of DM failed: the host and floor rows stand, DM says why.
    failed("rdma_read.onchip/8/real_time", "ibv_post_send: Invalid argument",
           fields=wire("rdma_read", "dm", 8)),
    row("rdma_read.host/8/real_time", 700.0, fields=wire("rdma_read", "host", 8)),
    row("rdma_read.floor/8/real_time", 100.0, fields=wire("rdma_read", "floor", 8)),
    row("atomic_fetch_add.onchip/8/real_time", 350.0, fields=wire("atomic_fetch_add", "dm", 8)),
    row("atomic_fetch_add.host/8/real_time", 380.0, fields=wire("atomic_fetch_add", "host", 8)),
    row("atomic_fetch_add.floor/8/real_time", 90.0, fields=wire("atomic_fetch_add", "floor", 8)),
    row("rdma_write_bw.onchip/4096/real_time", 2000.0, bps=2.0e9, engine=1800.0,
        fields=wire("rdma_write", "dm", 4096, measure="bandwidth")),
    row("rdma_write_bw.host/4096/real_time", 2500.0, bps=1.6e9,
        fields=wire("rdma_write", "host", 4096, measure="bandwidth")),
    row("send_recv_bw.onchip/8/real_time", 350.0, bps=2.3e7, engine=340.0,
        fields=wire("send_recv", "dm", 8, measure="bandwidth")),
    row("send_recv_bw.host/8/real_time", 360.0, bps=2.2e7,
        fields=wire("send_recv", "host", 8, measure="bandwidth")),
]
HOT = [
    row("PostSend/blueflame", 40.0,
        fields=hot("PostSend/blueflame", "onchip", "Floor/wqe_bf", "Bound/post_send_bf")),
    row("Floor/wqe_bf", 10.0, fields=hot("Floor/wqe_bf", "floor")),
    row("Bound/post_send_bf", 16.0, fields=hot("Bound/post_send_bf", "bound")),
    row("PostRecv", 15.0, fields=hot("PostRecv", "onchip", "Floor/rwqe", "Bound/post_recv")),
    row("Floor/rwqe", 10.0, fields=hot("Floor/rwqe", "floor")),
    failed("PollCq/one", "ibv_create_cq: Cannot allocate memory",
           fields=hot("PollCq/one", "onchip", "Floor/cqe", "Bound/poll_cq")),
    row("Floor/cqe", 8.0, fields=hot("Floor/cqe", "floor")),
]
COPY = [
    row("ToDevice/avx2/8", 3.0, fields=copy("wc_copy_to_device", "onchip", "avx2", 8)),
    row("ToDevice/vendor_dm_4B/8", 4.0, fields=copy("wc_copy_to_device", "vendor", "vendor_dm_4B", 8)),
    row("ToDevice/memcpy/8", 2.0, fields=copy("wc_copy_to_device", "memcpy", "memcpy", 8, "host")),
    row("ToDevice/avx2/4096", 30.0, fields=copy("wc_copy_to_device", "onchip", "avx2", 4096)),
    row("ToDevice/vendor_dm_4B/4096", 600.0,
        fields=copy("wc_copy_to_device", "vendor", "vendor_dm_4B", 4096)),
    row("ToDevice/memcpy/4096", 40.0, fields=copy("wc_copy_to_device", "memcpy", "memcpy", 4096, "host")),
    row("ToDevice/sse/8", 1.0, fields=copy("wc_copy_to_device", "sse", "sse", 8)),  # not in use
    failed("memcpy_to_dm.onchip/64", "ibv_alloc_dm: Cannot allocate memory",
           fields=label("memcpy_to_dm", "onchip", place="dm", procs=1, bytes=64)),
]


def pair(name, ns, base_ns, fields):
    return dict(row(name + "/manual_time", 4000.0, fields=fields), run_name=name + "/manual_time",
                ns=ns, base_ns=base_ns, x_base=base_ns / ns)


ACTIVE_8 = copy("wc_copy_to_device", "onchip", "avx2", 8, pair="vendor")
# The rows at 8 B say 4/3 = 1.33x: that is x vendor, one method for every row. The pair, timed
# side by side, met two states: in one the vendor's loop took 1.8 ns against onchip's 2.0, in
# the other 3.0 against 1.0. This process's three repetitions average to 2.2 ns against 1.67
# (1.32x); three of the four other processes (their means, ns/base_ns) met mostly the first
# state. A median over the processes says 0.9x; over all of them onchip took 8.67 ns where the
# vendor took 10.6: 1.22x, the paired column.
PAIRS = [
    pair("Pair/ToDevice/avx2~vendor_dm_4B/8", 2.0, 1.8, ACTIVE_8),
    pair("Pair/ToDevice/avx2~vendor_dm_4B/8", 2.0, 1.8, ACTIVE_8),
    pair("Pair/ToDevice/avx2~vendor_dm_4B/8", 1.0, 3.0, ACTIVE_8),
    pair("Pair/ToDevice/sse~vendor_dm_4B/8", 1.0, 5.0,             # not the variant in use
         copy("wc_copy_to_device", "sse", "sse", 8, pair="vendor")),
    pair("Pair/ToDevice/avx2~vendor_bf_8x8B/64", 1.0, 5.0,         # no column of the table
         copy("wc_copy_to_device", "onchip", "avx2", 64, pair="vendor_bf_8x8B")),
]
# The same pairs in wc_copy_bench's other processes, keyed by label; entries that are not two
# numbers judge nothing.
ELSEWHERE = json.dumps({
    ACTIVE_8: [[2.0, 1.8], [2.0, 1.8], [1.0, 3.0], [2.0, 1.8]],
    copy("wc_copy_to_device", "sse", "sse", 8, pair="vendor"): [[1, 9], [1, 9]],
    copy("wc_copy_to_device", "onchip", "avx2", 16, pair="vendor"): "x",
    copy("wc_copy_to_device", "onchip", "avx2", 32, pair="vendor"): [[1.1]]})


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.paths = []
        for name, rows in (("wire", WIRE), ("rings", HOT), ("copy", COPY + PAIRS)):
            path = os.path.join(self.tmp.name, name + ".json")
            with open(path, "w") as f:
                context = {}
                if name == "copy":
                    context["onchip_pairs_elsewhere"] = ELSEWHERE
                json.dump({"context": context, "benchmarks": rows}, f)
            self.paths.append(path)

    def write(self, compare_with=None):
        text, chart, self.unmet = report.write(self.paths, self.tmp.name, [("device", "test")],
                                               compare_with)
        with open(os.path.join(self.tmp.name, "report.json")) as f:
            return text, chart, json.load(f)

    def test_wire_rows_carry_their_ratio_to_the_floor_and_dm_against_host(self):
        _, _, got = self.write()
        wire = {(e["op"], e["size"]): e for e in got["wire"]}
        w8 = wire[("rdma_write", 8)]
        self.assertEqual(w8["impls"]["onchip"]["median_ns"], 310.0)  # the counters' median
        self.assertEqual(w8["impls"]["onchip"]["p99_ns"], 470.0)
        self.assertAlmostEqual(w8["x_floor_onchip"], 3.1)
        self.assertAlmostEqual(w8["x_floor_host"], 4.0)
        self.assertAlmostEqual(w8["dm_vs_host"], 400.0 / 310.0)
        self.assertEqual(wire[("rdma_write", 64)]["impls"]["onchip"]["median_ns"], 500.0)  # us
        self.assertEqual(got["wire_2proc"], [])

    def test_a_failed_row_shows_its_error_and_no_number(self):
        text, _, got = self.write()
        read = [e for e in got["wire"] if e["op"] == "rdma_read"][0]
        self.assertNotIn("onchip", read["impls"])
        self.assertEqual(read["errors"], {"onchip": "ibv_post_send: Invalid argument"})
        self.assertIsNone(read["x_floor_onchip"])
        line = [l for l in text.splitlines() if l.startswith("rdma_read ")][0]
        self.assertRegex(line, r"^rdma_read\s+8 B \|\s+error\s+\|\s+700 ns")
        self.assertIn("rdma_read onchip 8 B failed: ibv_post_send: Invalid argument", text)
        self.assertIn("memcpy_to_dm.onchip/64: ibv_alloc_dm: Cannot allocate memory", text)
        hot = {r["path"]: r for r in got["hot"]}
        self.assertIsNone(hot["PollCq/one"]["ns"])
        self.assertIn("PollCq/one           failed: ibv_create_cq", text)

    def test_every_copy_row_has_one_method_for_x_vendor_and_the_pair_its_own_column(self):
        text, _, got = self.write()
        rows = {(e["op"], e["size"]): e for e in got["rows"]}
        # x vendor: the rows' medians, at every size, pair or not.
        self.assertAlmostEqual(rows[("wc_copy_to_device", 8)]["vs_vendor"], 4.0 / 3.0)
        self.assertAlmostEqual(rows[("wc_copy_to_device", 4096)]["vs_vendor"], 20.0)
        # paired x vendor: the pair over processes, apart.
        self.assertAlmostEqual(rows[("wc_copy_to_device", 8)]["vs_vendor_paired"],
                               (6.6 / 3 + 1.8 + 1.8 + 3.0 + 1.8) / (5.0 / 3 + 2.0 + 2.0 + 1.0 + 2.0))
        self.assertIsNone(rows[("wc_copy_to_device", 4096)]["vs_vendor_paired"])
        line = [l for l in text.splitlines() if l.startswith("wc_copy_to_device ") and " 8 B " in l][0]
        self.assertRegex(line, r"\|\s+1\.33x\s+0\.67x \|\s+1\.22x\s+-$")
        self.assertNotIn("Pair/", text)  # neither a copy row nor an "other" benchmark
        with open(os.path.join(self.tmp.name, "report.txt")) as f:
            self.assertIn("ToDevice/sse/8", f.read())  # a variant not in use: listed as it is

    def test_a_row_is_read_by_its_fields_never_by_its_name(self):
        renamed = [dict(b, name="x%d" % i, run_name="x%d" % i) for i, b in enumerate(WIRE)]
        path = os.path.join(self.tmp.name, "wire.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": renamed}, f)
        _, _, got = self.write()
        w8 = {(e["op"], e["size"]): e for e in got["wire"]}[("rdma_write", 8)]
        self.assertAlmostEqual(w8["x_floor_onchip"], 3.1)
        self.assertEqual(report.fields("op=a impl=b procs=2 bytes=8"),
                         {"op": "a", "impl": "b", "procs": 2, "bytes": 8, "measure": "latency"})
        for bad in ("", "tier0", "op=a", "op=a impl=b procs=x"):
            self.assertIsNone(report.fields(bad), bad)

    def test_a_hot_path_is_judged_by_cpu_time_as_its_suite_judges_it(self):
        preempted = dict(HOT[3], real_time=95.0)  # the thread lost its CPU
        path = os.path.join(self.tmp.name, "preempted.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": [preempted, HOT[4]]}, f)
        got = report.collect([path])
        got = report.build_hot(got["hot"], [], got["hot_paths"])
        self.assertAlmostEqual({r["path"]: r for r in got}["PostRecv"]["x_floor"], 1.5)

    def test_text_names_the_goal_the_two_process_gap_and_the_hot_path_ratios(self):
        text, _, got = self.write()
        self.assertIn("goal: an 8-byte RDMA WRITE into DM within 3x of the floor: 3.1x (missed)", text)
        self.assertIn("Over the wire, two processes: needs the device daemon", text)
        self.assertRegex(text, r"PostSend/blueflame\s+40 ns Floor/wqe_bf\s+10 ns\s+4.0x \| "
                               r"Bound/post_send_bf\s+16 ns\s+1.6x")
        # A run without a bound row (PostRecv here, or any older run) shows none.
        self.assertRegex(text, r"PostRecv\s+15 ns Floor/rwqe\s+10 ns\s+1.5x \| Bound/post_recv\s+-\s+-")
        self.assertRegex(text, r"rdma_write_bw\s+4 KiB \| DM 2.00 GB/s, host 1.60 GB/s \(32 in flight\); "
                               r"DM engine 1800 ns per operation")
        self.assertRegex(text, r"send_recv_bw\s+8 B \| DM 23.0 MB/s, host 22.0 MB/s \(32 in flight\); "
                               r"DM engine 340 ns per operation")

        # The device thread's CPU per operation closes the DM row (median of the repetitions);
        # rows that did not measure it say so.
        self.assertRegex(text, r"(?m)^rdma_write\s+8 B \|.*\| +1600 ns$")
        self.assertRegex(text, r"(?m)^atomic_fetch_add\s+8 B \|.*\| +-$")
        hot = {r["path"]: r for r in got["hot"]}
        self.assertAlmostEqual(hot["PostRecv"]["x_floor"], 1.5)

    def test_the_hot_paths_are_information_not_goals(self):
        # 4.0x its floor (PostSend/blueflame) was a missed 2x goal once; the goal is retired.
        text, _, _ = self.write()
        section = text[text.index("The driver's own cost"):]
        section = section[:section.index("\n\n")] if "\n\n" in section else section
        self.assertIn("information, no goal", section)
        self.assertNotIn("goal:", section)
        self.assertNotIn("MISSED", section)
        self.assertNotRegex(section, r"within \d+x")
        self.assertEqual(self.unmet, ["8-byte RDMA WRITE into DM within 3x of the floor, one "
                                      "process: 3.1x (missed)"])

    def test_bandwidth_between_two_processes_has_its_own_lines_without_an_engine_time(self):
        # The daemon's device thread is not this process's to time.
        path = os.path.join(self.tmp.name, "wire_2proc.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": [
                row("atomic_fetch_add_bw.onchip_2proc/8/real_time", 250.0, bps=3.2e7,
                    fields=wire("atomic_fetch_add", "dm", 8, 2, "bandwidth")),
                row("atomic_fetch_add_bw.host_2proc/8/real_time", 260.0, bps=3.1e7,
                    fields=wire("atomic_fetch_add", "host", 8, 2, "bandwidth"))]}, f)
        self.paths.append(path)
        text, _, got = self.write()
        self.assertEqual([(e["op"], e["size"]) for e in got["wire_2proc"]], [("atomic_fetch_add_bw", 8)])
        two = text.split("Over the wire, two processes", 1)[1]
        self.assertRegex(two, r"(?m)^atomic_fetch_add_bw\s+8 B \| DM 32.0 MB/s, host 31.0 MB/s "
                              r"\(32 in flight\)$")

    def test_peers_rows_show_the_tools_own_numbers_beside_the_two_process_floor(self):
        def peer(name, p50, mean, p999=None):
            b = dict(row(name + "/iterations:1/manual_time", p50 / 1e3, unit="us",
                         fields=label(name.split(".")[0], "peer", procs=2, bytes=8)),
                     mean_ns=mean, p50_ns=p50)
            if p999 is not None:
                b["p999_ns"] = p999
            return b
        path = os.path.join(self.tmp.name, "peers.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": [
                row("rdma_write.floor_2proc/8/real_time", 2000.0, fields=wire("rdma_write", "floor", 8, 2)),
                peer("ib_write_lat.peer/8", 11000.0, 20000.0, p999=1.8e6),
                peer("ib_write_lat.peer/8", 12000.0, 21000.0, p999=1.6e6),
                peer("ib_write_lat.peer/8", 13000.0, 22000.0, p999=1.7e6),
                peer("ucx_tag_lat.peer/8", 14000.0, 30000.0),
                failed("ib_send_lat.peer/8/iterations:1/manual_time", "ib_send_lat is not installed",
                       fields=label("ib_send_lat", "peer", procs=2, bytes=8))]}, f)
        self.paths.append(path)
        text, _, got = self.write()
        peers = {e["tool"]: e for e in got["peers"]}
        self.assertEqual(peers["ib_write_lat"]["typical_ns"], 12000.0)
        self.assertEqual(peers["ib_write_lat"]["p999_ns"], 1.7e6)
        self.assertAlmostEqual(peers["ib_write_lat"]["x_floor"], 12.0)  # over half the round trip
        self.assertIsNone(peers["ucx_tag_lat"]["p999_ns"])
        self.assertEqual(peers["ib_send_lat"]["error"], "ib_send_lat is not installed")
        section = text.split("Peers' tools", 1)[1]
        self.assertRegex(section, r"(?m)^  ib_write_lat\s+8 B\s+12\.0 us\s+1\.7 ms\s+21\.0 us\s+12\.0x$")
        self.assertRegex(section, r"(?m)^  ucx_tag_lat\s+8 B\s+14\.0 us\s+-\s+30\.0 us\s+14\.0x$")
        self.assertRegex(section, r"(?m)^  ib_send_lat\s+8 B\s+ib_send_lat is not installed$")
        self.assertNotIn("Failed rows", text.split("Peers' tools", 1)[0].split("Over the wire")[-1])

    def test_the_missed_wire_goal_is_returned_for_bench_to_list(self):
        self.write()
        self.assertEqual(self.unmet, ["8-byte RDMA WRITE into DM within 3x of the floor, one "
                                      "process: 3.1x (missed)"])

    def test_the_wire_goal_is_judged_by_its_pair_when_the_suite_timed_one(self):
        # The plain rows, timed apart, read 3.1x (missed); the WRITE and its floor timed by turns
        # read 2.6x, 2.8x and 3.4x over three repetitions: the goal takes their median. The
        # pair of two processes judges the two-process table alone.
        def wire_pair(name, x):
            procs = 2 if "2proc" in name else 1
            fields = label("rdma_write", "paired", place="dm", side="remote", procs=procs, bytes=8)
            return dict(row(name + "/iterations:16/real_time", 3e6, fields=fields), x_floor=x,
                        op_ns=420.0, floor_ns=150.0)
        path = os.path.join(self.tmp.name, "wire_pairs.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": [
                wire_pair("rdma_write.paired/8", 2.6), wire_pair("rdma_write.paired/8", 3.4),
                wire_pair("rdma_write.paired/8", 2.8), wire_pair("rdma_write.paired_2proc/8", 3.5)]}, f)
        self.paths.append(path)
        text, _, got = self.write()
        w8 = {(e["op"], e["size"]): e for e in got["wire"]}[("rdma_write", 8)]
        self.assertAlmostEqual(w8["x_floor_onchip"], 2.8)
        self.assertTrue(w8["x_floor_paired"])
        self.assertAlmostEqual(w8["x_floor_host"], 4.0)  # the host row has no pair
        self.assertFalse({(e["op"], e["size"]): e for e in got["wire"]}[("rdma_write", 64)]["x_floor_paired"])
        self.assertIn("goal: an 8-byte RDMA WRITE into DM within 3x of the floor: 2.8x (met); the "
                      "two timed by turns", text)
        self.assertEqual(self.unmet, ["8-byte RDMA WRITE into DM within 3x of the floor, two "
                                      "processes: 3.5x (missed)"])
        self.assertNotIn("rdma_write.paired", text)  # not listed among other benchmarks

    def test_a_floor_slower_than_the_operation_judges_nothing(self):
        self.assertEqual(report.wire_verdict(3.0), "met")
        self.assertEqual(report.wire_verdict(3.1), "missed")
        self.assertTrue(report.wire_verdict(0.1).startswith("not judged"))

    def test_csv_has_one_line_per_row_and_implementation_with_errors(self):
        self.write()
        with open(os.path.join(self.tmp.name, "report.csv")) as f:
            lines = list(csv.DictReader(f))
        self.assertEqual(list(lines[0]), ["op", "size", "impl", "p50_ns", "p99_ns", "bytes_per_s",
                                          "engine_cpu_ns", "error"])
        by = {(l["op"], l["size"], l["impl"]): l for l in lines}
        self.assertEqual(by[("rdma_write", "8", "onchip")]["p50_ns"], "310")
        self.assertEqual(by[("rdma_write", "8", "onchip")]["p99_ns"], "470")
        self.assertEqual(by[("rdma_write", "8", "onchip")]["engine_cpu_ns"], "1600")
        self.assertEqual(by[("rdma_write", "8", "host")]["engine_cpu_ns"], "")
        self.assertEqual(by[("rdma_read", "8", "onchip")]["p50_ns"], "")
        self.assertEqual(by[("rdma_read", "8", "onchip")]["error"], "ibv_post_send: Invalid argument")
        self.assertEqual(by[("wc_copy_to_device", "4096", "vendor")]["p50_ns"], "600")
        self.assertEqual(by[("PostSend/blueflame", "", "floor")]["p50_ns"], "10")
        self.assertEqual(by[("PostSend/blueflame", "", "bound")]["p50_ns"], "16")

    def test_chart_draws_wire_lines_copy_lines_and_hot_bars(self):
        _, chart, _ = self.write()
        root = ET.parse(chart).getroot()
        titles = [t.text for t in root.iter(SVG + "title")]
        self.assertIn("rdma_write latency (p50) DM 8 B: 310 ns", titles)
        self.assertIn("rdma_write latency (p50) floor 64 B: 120 ns", titles)
        self.assertIn("wc_copy_to_device: onchip kernel, vendor 4-byte loop, memcpy vendor 4 KiB: 600 ns", titles)
        self.assertIn("atomic_fetch_add DM 8 B: 350 ns", titles)
        self.assertIn("PostSend/blueflame driver: 40 ns", titles)
        self.assertIn("PostSend/blueflame Floor/wqe_bf: 10 ns", titles)
        self.assertIn("PostSend/blueflame Bound/post_send_bf: 16 ns", titles)
        self.assertFalse(any(t and t.startswith("rdma_read latency (p50) DM") for t in titles))
        self.assertGreater(int(root.get("height")), 600)

    def test_a_bar_panel_makes_room_for_its_longest_label(self):
        # Labels are drawn at 40 degrees below the bars: the next panel starts below the longest.
        def bottom(label):
            svg = report_chart.Svg(800)
            groups = [(label, {"onchip": (100.0, "tip")})]
            return report_chart.draw_bars(svg, 0, "t", groups, ["onchip"], report_chart.COLORS, {}, 600)
        self.assertGreater(bottom("atomic_cmp_swap_local_dm 8 B"), bottom("rdma_read 8 B"))

    def test_a_gridline_below_a_nanosecond_keeps_its_value(self):
        # A floor of 0.6 ns (a receive WQE's two stores) puts the hot-path axis below 1 ns.
        path = os.path.join(self.tmp.name, "fast_floor.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": [row("PostRecv", 5.0, fields=HOT[3]["label"]),
                                      row("Floor/rwqe", 0.6, fields=HOT[4]["label"])]}, f)
        self.paths = [path]
        _, chart, _ = self.write()
        labels = [t.text for t in ET.parse(chart).getroot().iter(SVG + "text")]
        self.assertIn("0.5 ns", labels)
        self.assertNotIn("0 ns", labels)

    def test_compare_sets_each_common_row_beside_the_old_one(self):
        _, _, old = self.write()
        old["wire"][0]["impls"]["onchip"]["median_ns"] = 620.0
        old["hot"] = [{"path": "PostSend/blueflame", "ns": 40.0}, {"path": "Gone", "ns": 1.0}]
        text, _, _ = self.write(compare_with=old)
        lines = text.split("Compared with the earlier run", 1)[1].splitlines()
        write8 = [l for l in lines if l.startswith("wire ") and " rdma_write " in l and " 8 B " in l
                  and " onchip " in l][0]
        self.assertRegex(write8, r"620 ns\s+310 ns\s+0.50x\s+faster$")
        post = [l for l in lines if "PostSend/blueflame" in l][0]
        self.assertRegex(post, r"1.00x\s+same$")
        self.assertIn("only in the earlier run: Gone onchip", text)
        self.assertEqual(report.compare({"rows": "junk", "hot": [3]}, old)[1], "  no row in common")

    def test_a_floor_outlier_is_rejected_and_no_ratio_reads_0_0x(self):
        # Three repetitions of the 8-byte floor, one 72 us (the machine, not the exchange): it is
        # left out, and the two others make the floor. The 64-byte floor ran slower than the
        # operation in every repetition: its ratio is said to judge nothing, never "0.0x".
        path = os.path.join(self.tmp.name, "wire.json")
        with open(path, "w") as f:
            json.dump({"benchmarks": [
                row("w", 300.0, fields=wire("rdma_write", "dm", 8)),
                row("f", 100.0, fields=wire("rdma_write", "floor", 8)),
                row("f", 72000.0, fields=wire("rdma_write", "floor", 8)),
                row("f", 110.0, fields=wire("rdma_write", "floor", 8)),
                row("w", 300.0, fields=wire("rdma_write", "dm", 64)),
                row("f", 72000.0, fields=wire("rdma_write", "floor", 64))]}, f)
        text, _, got = self.write()
        w = {(e["op"], e["size"]): e for e in got["wire"]}
        self.assertEqual(w[("rdma_write", 8)]["impls"]["floor"]["median_ns"], 105.0)
        self.assertEqual(w[("rdma_write", 8)]["floor_rejected"], 1)
        self.assertAlmostEqual(w[("rdma_write", 8)]["x_floor_onchip"], 300.0 / 105.0)
        self.assertIn("floor: 1 sample left out as outliers", text)
        self.assertNotIn("0.0x", text)
        self.assertRegex(text, r"(?m)^rdma_write\s+64 B \|.*\|\s+<1x!\s+-")
        self.assertIn("<1x!: the floor ran slower than the operation", text)

    def test_dm_gain_says_it_measures_the_model_on_the_software_connectx(self):
        text, _, _ = self.write()
        self.assertNotIn("measures the device model", text)  # device "test": no claim
        text, _, _ = report.write(self.paths, self.tmp.name,
                                  [("device", "software ConnectX (tools/sim, in-process)")])
        section = text.split("Over the wire, one process", 1)[1]
        self.assertIn("DM gain, on the software ConnectX: its device memory is host memory behind "
                      "the device model, so the gain measures", section.split("\n\n")[0])

    def test_the_chart_is_stamped_with_device_mode_and_date(self):
        header = [("device", "software ConnectX"), ("mode", "quick (--x)")]
        with open(self.paths[0]) as f:
            data = json.load(f)
        data["context"]["date"] = "2026-12-02T17:00:00+00:00"
        with open(self.paths[0], "w") as f:
            json.dump(data, f)
        _, chart, _ = report.write(self.paths, self.tmp.name, header)
        stamps = [t.text for t in ET.parse(chart).getroot().iter(SVG + "text")
                  if t.get("class") == "stamp"]
        self.assertEqual(stamps, ["device: software ConnectX; mode: quick (--x); "
                                  "2026-12-02T17:00:00+00:00"])

    def test_a_line_panels_legend_ends_before_the_next_panels_axis_labels(self):
        series = [(name, "#000", False, [(8, 1.0), (64, 2.0)])
                  for name in ("DM", "host", "floor", "DM 2proc", "host 2proc", "floor 2proc")]
        panels = [("a", series), ("b", series)]
        left0, left1 = report_chart.line_columns(panels)
        legend_right = left0 + report_chart.PANEL_WIDTH + report_chart.legend_width(
            [s[0] for s in series])
        self.assertLessEqual(legend_right, left1 - report_chart.TICK_LABEL_ROOM)
        # Wider labels push the next column further.
        wide = [("a", [("a much longer legend label", "#000", False, [(8, 1.0)])])]
        self.assertGreater(report_chart.line_columns(wide)[1], left1)

    def test_the_copy_and_allocator_goals_are_judged_here(self):
        path = os.path.join(self.tmp.name, "alloc.json")
        alloc = lambda impl, n: label("alloc_free", impl, place="host", procs=1, bytes=n)
        with open(path, "w") as f:
            json.dump({"benchmarks": [
                row("a", 100.0, fields=alloc("onchip", 64)),
                row("b", 900.0, fields=alloc("mmap_populate", 64)),
                row("a", 100.0, fields=alloc("onchip", 4096)),
                row("b", 300.0, fields=alloc("mmap_populate", 4096)),
                row("r", 10.0, fields=copy("wc_copy_from_device", "onchip", "avx2", 4096)),
                pair("p", 10.0, 60.0, copy("wc_copy_from_device", "onchip", "avx2", 4096,
                                           pair="vendor"))]}, f)
        self.paths.append(path)
        text, _, got = self.write()
        verdicts = {g["goal"]: (g["ratio"], g["verdict"]) for g in got["goals"]}
        self.assertEqual(verdicts["alloc_free: onchip >= 5x mmap_populate at every size (worst: "
                                  "4 KiB)"], (3.0, "missed"))
        self.assertEqual(verdicts["wc_copy_from_device 4 KiB: onchip >= 4x vendor (paired)"],
                         (6.0, "met"))
        self.assertIn("alloc_free: onchip >= 5x mmap_populate at every size (worst: 4 KiB): 3.0x "
                      "(missed)", self.unmet)
        self.assertIn("Performance goals (judged here", text)

    def test_an_interrupted_write_leaves_the_old_file(self):
        path = os.path.join(self.tmp.name, "report.txt")
        report.write_file(path, "old")
        with self.assertRaises(TypeError):
            report.write_file(path, None)  # fails while writing
        with open(path) as f:
            self.assertEqual(f.read(), "old")
        self.assertEqual(sorted(os.listdir(self.tmp.name)).count("report.txt.partial"), 0)

    def test_sections_keep_the_suites_order_whatever_order_the_rows_ran_in(self):
        # Random interleaving shuffles the runs; family_index is the order they were registered.
        rows = [dict(b, family_index=i) for i, b in enumerate(WIRE)]
        hot_rows = [dict(b, family_index=i) for i, b in enumerate(HOT)]
        for path, data in ((self.paths[0], rows), (self.paths[1], hot_rows)):
            with open(path, "w") as f:
                json.dump({"benchmarks": list(reversed(data))}, f)
        _, _, got = self.write()
        self.assertEqual([e["op"] for e in got["wire"] if e["size"] == 8],
                         ["rdma_write", "rdma_read", "atomic_fetch_add", "send_recv_bw"])
        self.assertEqual([r["path"] for r in got["hot"]], ["PostSend/blueflame", "PostRecv",
                                                          "PollCq/one"])

    def test_a_floor_that_changed_placement_is_not_an_outlier(self):
        # 3.5x between two placements of the vCPUs is the machine's state, which the floor shows.
        got, rejected = report.floor_stats([(100.0, 0, None, None), (350.0, 0, None, None),
                                            (110.0, 0, None, None), (360.0, 0, None, None)])
        self.assertEqual(rejected, 0)
        self.assertEqual(report.floor_stats([(100.0, 0, None, None), (72000.0, 0, None, None)])[1], 1)


if __name__ == "__main__":
    unittest_main.main()
