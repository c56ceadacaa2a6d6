"""The device-memory-versus-host-memory report, built from Google Benchmark JSON.

Benchmarks that take part are named `<operation>.<implementation>/<bytes>`, for example
`memcpy_to_dm.onchip/4096`, `memcpy_to_dm.vendor/4096` and `memcpy_to_dm.host/4096`:
  onchip  what onchip does (its copy kernel, its allocator, ...; over the wire: device memory)
  vendor  the vendor provider's documented algorithm, written in bench/baselines as a baseline
  host    the same operation on host memory
  floor   the same exchange done by bare shared memory (over the wire: nothing can beat it)
  onchip_2proc, host_2proc, floor_2proc: the wire rows between two processes
  paired, paired_2proc: an operation into DM and its floor timed by turns (x_floor, the median
          of the rounds' ratios), which judges the wire goal in place of dividing two rows
Each is run with repetitions, which bench.py interleaves at random across a suite's rows, so a row
and the baseline it is divided by sample the same stretch of a shared machine's noise; latency is
the time of one operation (one iteration), reported as
the median and the 99th percentile (nearest rank) over repetitions, or, where a row measured each
operation itself (the p50_ns and p99_ns counters), the median of those; throughput is the median
of bytes per second. The data path's hot-path rows (rings_bench: `PostSend/blueflame` against
`Floor/wqe_bf`, ...) form their own section. A row that failed is reported with its error, never
with a number. Other benchmarks are listed as they are.

Sections: the copy and allocation table (report.txt's first table), over the wire (one process,
then two), the driver's own cost, errors. report.json holds all of it, report.csv one line per
row and implementation, report.svg the chart; compare() sets a report.json beside a new run.
"""
import collections
import html
import json
import math
import os
import re

IMPLS = ("onchip", "vendor", "host")
WIRE_IMPLS = ("onchip", "host", "floor")
TWO_PROC = "_2proc"
NAME = re.compile(r"^(?P<op>[A-Za-z0-9_]+)\.(?P<impl>[A-Za-z0-9_]+)/(?P<size>\d+)")
# The wire suite's operations (bench/driver/wire_bench.cc).
WIRE_OPS = ("rdma_write", "rdma_read", "send_recv", "atomic_fetch_add", "atomic_cmp_swap",
            "rdma_write_local_dm", "rdma_read_local_dm", "send_recv_local_dm",
            "atomic_fetch_add_local_dm", "atomic_cmp_swap_local_dm", "rdma_write_bw",
            "rdma_read_bw", "send_recv_bw", "atomic_fetch_add_bw", "atomic_cmp_swap_bw")
# The data path's hot paths, the bare stores each is measured against, and the least any
# provider's call can be (its bound: the floor plus being called, reading the request and keeping
# its wr_id, with no check), all from bench/driver/rings_bench.cc.
HOT_PATHS = (("PostSend/blueflame", "Floor/wqe_bf", "Bound/post_send_bf"),
             ("PostSend/doorbell", "Floor/wqe_db", "Bound/post_send_db"),
             ("WrSend/blueflame", "Floor/wqe_bf", "Bound/post_send_bf"),
             ("PostRecv", "Floor/rwqe", "Bound/post_recv"),
             ("PollCq/one", "Floor/cqe", "Bound/poll_cq"))
# The hot paths' "x floor" and "x bound" are information: the goal of each within 2x of its
# floor is retired, and nothing judges them.
WIRE_GOAL = 3.0   # 8-byte RDMA WRITE into DM within 3x of the floor
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


MMIO = re.compile(r"^(?P<dir>ToDevice|FromDevice)/(?P<variant>[A-Za-z0-9_]+)/(?P<size>\d+)")
BF = re.compile(r"^BlueFlame64/(?P<variant>[A-Za-z0-9_]+)")
# wc_copy_bench's pairs: a variant and its baseline timed alternately; each repetition's ns and
# base_ns are the two sides' times per copy, measured side by side (steadier than dividing two
# rows' medians).
PAIR = re.compile(r"^Pair/(?P<group>ToDevice|FromDevice|BlueFlame64)/(?P<variant>[A-Za-z0-9_]+)"
                  r"~(?P<base>[A-Za-z0-9_]+)/(?P<size>\d+)")
PAIR_OP = {"ToDevice": "wc_copy_to_device", "FromDevice": "wc_copy_from_device",
           "BlueFlame64": "blueflame_copy"}
# wire_bench's pairs: an operation into DM and the floor timed by turns, in rounds; x_floor is the
# median of the rounds' ratios, each taken under one placement of the vCPUs.
# peers_bench: a peer's own tool between two processes, its numbers as it printed them.
PEER = re.compile(r"^(?P<tool>[A-Za-z0-9_]+)\.peer/(?P<size>\d+)")
WIRE_PAIR = re.compile(r"^(?P<op>[A-Za-z0-9_]+)\.paired(?P<two>_2proc)?/(?P<size>\d+)")


def active_variants(context):
    """The copy kernels mmio chose, from its report: 'to-device avx512 [...]; from-device ...'."""
    text = context.get("onchip_wc_copy") or context.get("onchip.copy_variant") or ""
    found = dict(re.findall(r"(to-device|from-device) ([A-Za-z0-9_]+)", text))
    return found.get("to-device"), found.get("from-device")


def classify(name, context):
    """(operation, implementation, bytes) for a report row, or None."""
    m = NAME.match(name)
    if m and m.group("impl") in IMPLS:
        return m.group("op"), m.group("impl"), int(m.group("size"))
    to_dev, from_dev = active_variants(context)
    m = MMIO.match(name)
    if m:
        active = to_dev if m.group("dir") == "ToDevice" else from_dev
        impl = {active: "onchip", "vendor_dm_4B": "vendor", "memcpy": "host"}.get(m.group("variant"))
        op = "wc_copy_to_device" if m.group("dir") == "ToDevice" else "wc_copy_from_device"
        return (op, impl, int(m.group("size"))) if impl else None
    m = BF.match(name)
    if m:
        impl = {to_dev: "onchip", "vendor_bf_8x8B": "vendor"}.get(m.group("variant"))
        return ("blueflame_copy", impl, 64) if impl else None
    return None


def pair_sample(text):
    """'ns/base_ns', a pair in another process (the means over its repetitions), as a tuple."""
    ns, sep, base_ns = text.partition("/")
    if not sep:
        raise ValueError(text)
    return float(ns), float(base_ns)


def pair_where(name, context):
    """(op, size) of a pair row that sets the active variant beside the vendor's copy, or None;
    False for any other pair row (not the report's to show)."""
    m = PAIR.match(name)
    if not m:
        return None
    to_dev, from_dev = active_variants(context)
    active = from_dev if m.group("group") == "FromDevice" else to_dev
    vendor = "vendor_bf_8x8B" if m.group("group") == "BlueFlame64" else "vendor_dm_4B"
    if m.group("variant") != active or m.group("base") != vendor:
        return False
    return PAIR_OP[m.group("group")], int(m.group("size"))


def wire_where(name):
    """(op, impl, bytes) of a wire-suite row, or None."""
    m = NAME.match(name)
    if not m or m.group("op") not in WIRE_OPS:
        return None
    impl = m.group("impl")
    base = impl[:-len(TWO_PROC)] if impl.endswith(TWO_PROC) else impl
    return (m.group("op"), impl, int(m.group("size"))) if base in WIRE_IMPLS else None


def hot_name(name):
    """The hot-path or floor row a benchmark name is (rings_bench), or None."""
    base = name.split("/real_time")[0]
    names = {n for pair in HOT_PATHS for n in pair}
    return base if base in names else None


def collect(paths):
    """Everything the report shows, from the suites' JSON files: a dict with
    context, copy (rows[(op, size)][impl] = samples), wire (the same for the wire rows),
    hot (name -> samples), errors ([(name, message)]) and other (name -> samples).
    A sample is (ns per operation, bytes per second, p99 ns or None). paired[(op, size)] holds
    (ns, base_ns) of each repetition of the pair that judges the row against the vendor;
    elsewhere[(op, size)] the same, each the mean over the repetitions of one of the other
    processes wc_copy_bench ran it in;
    wire_paired[(op, size, two_proc)] the x_floor of each repetition of a wire pair."""
    got = {"context": {}, "errors": [], "paired": collections.defaultdict(list),
           "wire_paired": collections.defaultdict(list),
           "elsewhere": collections.defaultdict(list),
           "copy": collections.defaultdict(lambda: collections.defaultdict(list)),
           "wire": collections.defaultdict(lambda: collections.defaultdict(list)),
           "hot": collections.defaultdict(list), "other": collections.defaultdict(list),
           "peers": collections.defaultdict(list)}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for k, v in data.get("context", {}).items():
            got["context"].setdefault(k, v)
        for item in filter(None, data.get("context", {}).get("onchip_pairs_elsewhere", "").split(";")):
            name, _, values = item.partition("=")
            pair = pair_where(name, data.get("context", {}))
            if pair:
                try:
                    got["elsewhere"][pair] += [pair_sample(x) for x in values.split(",") if x]
                except ValueError:
                    pass  # not two numbers: that entry judges nothing
        seen_errors = set()
        for b in data.get("benchmarks", []):
            name = b.get("run_name", b["name"])
            if b.get("error_occurred"):
                if name not in seen_errors:
                    seen_errors.add(name)
                    got["errors"].append((name, b.get("error_message", "failed")))
                continue
            if b.get("run_type") == "aggregate":
                continue
            pair = pair_where(name, data.get("context", {}))
            if pair is not None:
                if pair and all(isinstance(b.get(k), (int, float)) for k in ("ns", "base_ns")):
                    got["paired"][pair].append((float(b["ns"]), float(b["base_ns"])))
                continue
            peer = PEER.match(name)
            if peer:
                if isinstance(b.get("p50_ns"), (int, float)) and b["p50_ns"] > 0:
                    p999 = b.get("p999_ns")
                    got["peers"][(peer.group("tool"), int(peer.group("size")))].append(
                        (float(b["p50_ns"]), float(p999) if isinstance(p999, (int, float)) else None,
                         float(b.get("mean_ns") or 0)))
                continue
            wire_pair = WIRE_PAIR.match(name)
            if wire_pair and wire_pair.group("op") in WIRE_OPS:
                if isinstance(b.get("x_floor"), (int, float)) and b["x_floor"] > 0:
                    got["wire_paired"][(wire_pair.group("op"), int(wire_pair.group("size")),
                                        bool(wire_pair.group("two")))].append(float(b["x_floor"]))
                continue
            unit = UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
            hot = hot_name(name)
            # A hot path is one single-threaded call on a sink: its CPU time, which a preemption
            # does not inflate, as rings_bench's own summary divides it (real time would make the
            # two verdicts of one run disagree).
            ns = (b["cpu_time"] if hot and "cpu_time" in b else b["real_time"]) * unit
            p99_ns = None
            # A row that timed each operation itself (p50_ns/p99_ns counters, always in ns).
            if isinstance(b.get("p50_ns"), (int, float)) and b["p50_ns"] > 0:
                ns = float(b["p50_ns"])
                p99_ns = float(b.get("p99_ns") or ns)
            # The device thread's CPU time per operation (wire rows of one process).
            engine = b.get("engine_cpu_ns")
            engine_ns = float(engine) if isinstance(engine, (int, float)) and engine > 0 else None
            sample = (ns, b.get("bytes_per_second", 0.0), p99_ns, engine_ns)
            wire = wire_where(name)
            where = None if wire or hot else classify(name, data.get("context", {}))
            if wire:
                got["wire"][(wire[0], wire[2])][wire[1]].append(sample)
            elif hot:
                got["hot"][hot].append(sample)
            elif where:
                got["copy"][(where[0], where[2])][where[1]].append(sample)
            else:
                got["other"][name].append(sample)
    return got


def load(paths):
    """(context, rows, others): rows[(op, size)][impl] = samples of the copy table; others the
    benchmarks no section claims, as (name, median ns, median bytes/s)."""
    got = collect(paths)
    others = [(name, median([x[0] for x in v]), median([x[1] for x in v]))
              for name, v in sorted(got["other"].items())]
    return got["context"], got["copy"], others


def median(xs):
    s = sorted(xs)
    n = len(s)
    return (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2) if n else float("nan")


def p99(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(0.99 * len(s)) - 1))] if s else float("nan")


def stats(samples):
    lat = [s[0] for s in samples]
    bw = [s[1] for s in samples]
    own_p99 = [s[2] for s in samples if len(s) > 2 and s[2] is not None]
    engine = [s[3] for s in samples if len(s) > 3 and s[3] is not None]
    out = {"median_ns": median(lat), "p99_ns": median(own_p99) if own_p99 else p99(lat),
           "bytes_per_s": median(bw), "reps": len(samples)}
    if engine:  # the wire rows of one process: the device thread's CPU per operation
        out["engine_cpu_ns"] = median(engine)
    return out


def human_size(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def human_rate(bps):
    if not bps:
        return "-"
    return "%.2f GB/s" % (bps / 1e9) if bps >= 1e8 else "%.1f MB/s" % (bps / 1e6)


def human_ns(ns):
    if ns != ns:
        return "-"
    if ns >= 1e6:
        return "%.1f ms" % (ns / 1e6)
    return "%.0f ns" % ns if ns < 1e4 else "%.1f us" % (ns / 1e3)


def mean_ratio(samples):
    """The baseline's mean time over the variant's, from (ns, base_ns) samples of equal weight;
    None without."""
    ns = sum(s[0] for s in samples)
    return sum(s[1] for s in samples) / ns if ns > 0 else None


def process_sample(repetitions):
    """One process's (ns, base_ns) from its repetitions' (the means), as wc_copy_bench hands the
    other processes' samples over."""
    n = len(repetitions)
    return sum(r[0] for r in repetitions) / n, sum(r[1] for r in repetitions) / n


def build(rows, paired=None, elsewhere=None):
    """The copy table. x vendor comes from the row's pair when the suite measured one (the two
    timed side by side): the vendor's mean time per copy over onchip's, over every repetition of
    every process (this one's repetitions, each other process's mean), as the suite's own summary
    takes it. Else from the two rows' medians."""
    table = []
    for (op, size) in sorted(rows, key=lambda k: (k[0], k[1])):
        impls = {impl: stats(samples) for impl, samples in rows[(op, size)].items()}
        entry = {"op": op, "size": size, "impls": impls, "vs_vendor_paired": False}
        on = impls.get("onchip")
        for base in ("vendor", "host"):
            b = impls.get(base)
            entry["vs_" + base] = (b["median_ns"] / on["median_ns"]) if on and b and on["median_ns"] else None
        pair = (paired or {}).get((op, size))
        others = list((elsewhere or {}).get((op, size), []))
        x = mean_ratio([process_sample(pair)] + others) if pair else None
        if x is not None:
            entry["vs_vendor"] = x
            entry["vs_vendor_paired"] = True
        table.append(entry)
    return table


def build_wire(wire, errors, two_proc, paired=None):
    """One wire section's rows: per (op, size) the stats of onchip (remote DM, or local DM for the
    *_local_dm operations), host and floor, how many times the floor each takes, DM against host,
    and the error of each implementation that failed. Where the suite timed the DM operation and
    the floor by turns (paired[(op, size, two_proc)]), DM's times-the-floor is that pair's median
    over repetitions (x_floor_paired)."""
    suffix = TWO_PROC if two_proc else ""
    failed = collections.defaultdict(dict)
    for name, message in errors:
        w = wire_where(name)
        if w and w[1].endswith(TWO_PROC) == two_proc:
            failed[(w[0], w[2])][w[1][:-len(TWO_PROC)] if two_proc else w[1]] = message
    keys = set(failed) | {(op, size) for op, size, two in (paired or {}) if two == two_proc}
    for key, impls in wire.items():
        if any(impl + suffix in impls for impl in WIRE_IMPLS):
            keys.add(key)
    table = []
    for op, size in sorted(keys, key=lambda k: (WIRE_OPS.index(k[0]), k[1])):
        impls = {impl: stats(wire[(op, size)][impl + suffix]) for impl in WIRE_IMPLS
                 if wire.get((op, size), {}).get(impl + suffix)}
        entry = {"op": op, "size": size, "impls": impls, "errors": failed.get((op, size), {})}
        fl = impls.get("floor")
        for impl in ("onchip", "host"):
            x = impls.get(impl)
            entry["x_floor_" + impl] = (x["median_ns"] / fl["median_ns"]
                                        if x and fl and fl["median_ns"] else None)
        entry["x_floor_paired"] = bool(paired and paired.get((op, size, two_proc)))
        if entry["x_floor_paired"]:
            entry["x_floor_onchip"] = median(paired[(op, size, two_proc)])
        on, ho = impls.get("onchip"), impls.get("host")
        entry["dm_vs_host"] = ho["median_ns"] / on["median_ns"] if on and ho and on["median_ns"] else None
        table.append(entry)
    return table


def build_hot(hot, errors):
    """The driver's own cost: each hot path's time beside its floor's and its bound's, and the
    ratios to the floor (an older run without bound rows leaves the bound out)."""
    failed = {hot_name(name): message for name, message in errors if hot_name(name)}
    rows = []
    for path, floor, bound in HOT_PATHS:
        if path not in hot and path not in failed:
            continue
        p, f, b = (stats(hot[n]) if n in hot else None for n in (path, floor, bound))
        over = lambda x: x["median_ns"] / f["median_ns"] if x and f and f["median_ns"] else None
        rows.append({"path": path, "floor": floor, "bound": bound,
                     "ns": p["median_ns"] if p else None,
                     "floor_ns": f["median_ns"] if f else None,
                     "bound_ns": b["median_ns"] if b else None,
                     "x_floor": over(p), "bound_x_floor": over(b),
                     "error": failed.get(path) or failed.get(floor)})
    return rows


# The sizes shown on screen and in the chart for operations measured at many sizes; report.txt
# and report.json keep every size.
KEY_SIZES = {8, 64, 4096, 262144, 2097152}


def key_rows(table):
    sizes = collections.Counter(e["op"] for e in table)
    return [e for e in table if sizes[e["op"]] <= 4 or e["size"] in KEY_SIZES]


def ratio_text(r):
    if not r:
        return "-"
    return "%.2fx" % r if r >= 0.1 else "%.3fx" % r


def render_text(header, table, other, with_other=True):
    out = []
    for k, v in header:
        out.append("%-14s %s" % (k + ":", v))
    out.append("")
    cols = "%-20s %8s | %9s %9s %10s | %9s %9s | %9s | %8s %8s"
    out.append(cols % ("operation", "size", "onchip", "p99", "onchip/s", "vendor", "p99",
                       "host", "x vendor", "x host"))
    out.append("-" * 122)
    for e in table:
        on, ve, ho = (e["impls"].get(i) for i in IMPLS)
        out.append(cols % (
            e["op"], human_size(e["size"]),
            human_ns(on["median_ns"]) if on else "-", human_ns(on["p99_ns"]) if on else "-",
            human_rate(on["bytes_per_s"]) if on else "-",
            human_ns(ve["median_ns"]) if ve else "-", human_ns(ve["p99_ns"]) if ve else "-",
            human_ns(ho["median_ns"]) if ho else "-",
            ratio_text(e["vs_vendor"]), ratio_text(e["vs_host"])))
    out.append("")
    out.append("Latency is per operation: median and p99 over repetitions. x vendor / x host: how many")
    out.append("times faster onchip is than the vendor algorithm / than host memory (> 1 is faster);")
    out.append("for the mmio kernels x vendor is timed side by side with the vendor's copy (wc_copy_bench's")
    out.append("pairs), not divided from two rows measured at different moments: the vendor's mean time")
    out.append("per copy over onchip's, over every repetition in every process the suite ran them in.")
    out.append("wc_copy_* and blueflame_copy are the mmio kernels alone (onchip = the variant in use);")
    out.append("memcpy_*_dm, alloc_free_dm and reg_dereg_dm_mr go through the driver and the device.")
    if other and with_other:
        out.append("")
        out.append("Other benchmarks (median over repetitions):")
        for name, ns, bps in other:
            out.append("  %-60s %12s %14s" % (name, human_ns(ns), human_rate(bps)))
    return "\n".join(out)


def times_text(r):
    return "%.1fx" % r if r else "-"


def engine_text(x):
    """The device thread's CPU time per operation of a wire row, or '-' where none was measured."""
    return human_ns(x["engine_cpu_ns"]) if x and x.get("engine_cpu_ns") else "-"


def render_wire(title, table):
    out = [title]
    cols = "%-25s %8s | %9s %9s | %9s %9s | %9s | %9s %9s | %7s | %9s"
    out.append(cols % ("operation", "size", "DM p50", "p99", "host p50", "p99", "floor",
                       "DM/floor", "host/floor", "DM gain", "DM engine"))
    out.append("-" * 135)
    bandwidth = []
    for e in table:
        if e["op"].endswith("_bw"):
            bandwidth.append(e)
            continue
        cell = {}
        for impl in WIRE_IMPLS:
            x = e["impls"].get(impl)
            err = e["errors"].get(impl)
            cell[impl] = ((human_ns(x["median_ns"]), human_ns(x["p99_ns"])) if x
                          else ("error", "") if err else ("-", "-"))
        out.append(cols % (e["op"], human_size(e["size"]), cell["onchip"][0], cell["onchip"][1],
                           cell["host"][0], cell["host"][1], cell["floor"][0],
                           times_text(e["x_floor_onchip"]), times_text(e["x_floor_host"]),
                           ratio_text(e["dm_vs_host"]), engine_text(e["impls"].get("onchip"))))
    for e in bandwidth:
        rates = {impl: human_rate(e["impls"][impl]["bytes_per_s"]) if impl in e["impls"]
                 else "error" if impl in e["errors"] else "-" for impl in ("onchip", "host")}
        engine = e["impls"].get("onchip", {}).get("engine_cpu_ns")
        out.append("%-25s %8s | DM %s, host %s (32 in flight)%s"
                   % (e["op"], human_size(e["size"]), rates["onchip"], rates["host"],
                      "; DM engine %s per operation" % engine_text(e["impls"]["onchip"])
                      if engine else ""))
    for e in table:
        for impl, message in sorted(e["errors"].items()):
            out.append("  %s %s %s failed: %s" % (e["op"], impl, human_size(e["size"]), message))
    goal = wire_goal(table)
    if goal:
        paired = any(e.get("x_floor_paired") for e in table if e["op"] == "rdma_write" and e["size"] == 8)
        out.append("goal: an 8-byte RDMA WRITE into DM within %.0fx of the floor: %.1fx (%s)%s"
                   % (WIRE_GOAL, goal[0], goal[1],
                      "; the two timed by turns, the median of the rounds' ratios" if paired else ""))
    return out


def wire_goal(table):
    """(ratio, verdict) of the wire goal in one wire table, None when its row has no ratio. The
    one place the goal is judged: the report's text and bench's list of missed goals both ask."""
    row = [e for e in table if e["op"] == "rdma_write" and e["size"] == 8 and e["x_floor_onchip"]]
    if not row:
        return None
    r = row[0]["x_floor_onchip"]
    return r, wire_verdict(r)


def unmet_wire_goals(wire1, wire2):
    """One line per wire table whose goal was missed or could not be judged."""
    out = []
    for where, table in (("one process", wire1), ("two processes", wire2)):
        goal = wire_goal(table)
        if goal and goal[1] != "met":
            out.append("8-byte RDMA WRITE into DM within %.0fx of the floor, %s: %.1fx (%s)"
                       % (WIRE_GOAL, where, goal[0], goal[1]))
    return out


def wire_verdict(ratio):
    """The goal's verdict. No operation on the software ConnectX can beat the floor (the engine is
    such a thread), so a ratio below 1 says the floor itself was slowed, by CPUs busy with other
    work, and this run cannot judge the goal."""
    if ratio < 1.0:
        return "not judged: the floor ran slower than the operation, the CPUs were busy"
    return "met" if ratio <= WIRE_GOAL else "missed"



def render_hot(rows, copy_table):
    out = ["The driver's own cost: one call on a sink device against the bare stores it must make, "
           "in CPU time (information, no goal),",
           "and against its bound, the least any provider's call can be (no check at all): "
           "what any provider pays beyond the floor on this machine"]
    cols = "%-20s %9s %-13s %9s %8s | %-19s %9s %8s"
    out.append(cols % ("path", "time", "its floor", "time", "x floor", "its bound", "time", "x floor"))
    out.append("-" * 104)
    ns = lambda v: human_ns(v) if v else "-"
    for r in rows:
        if r["error"]:
            out.append("%-20s failed: %s" % (r["path"], r["error"]))
            continue
        out.append(cols % (r["path"], ns(r["ns"]), r["floor"], ns(r["floor_ns"]),
                           times_text(r["x_floor"]), r["bound"], ns(r.get("bound_ns")),
                           times_text(r.get("bound_x_floor"))))
    for e in copy_table:
        if e["op"] == "blueflame_copy" and "onchip" in e["impls"] and "vendor" in e["impls"]:
            out.append("%-20s %9s against the vendor's 8 x 8-byte stores %s: %s faster"
                       % ("BlueFlame 64 B copy", human_ns(e["impls"]["onchip"]["median_ns"]),
                          human_ns(e["impls"]["vendor"]["median_ns"]), ratio_text(e["vs_vendor"])))
    return out


def build_peers(peers, errors, wire2):
    """The peers' rows: per (tool, size) the medians over repetitions of the tool's typical,
    99.9% (None where the tool prints none) and mean, times the two-process floor's one way (half
    its round trip of the same size, as the tools print half theirs), and the row's error."""
    failed = {}
    for name, message in errors:
        m = PEER.match(name)
        if m:
            failed[(m.group("tool"), int(m.group("size")))] = message
    floors = {e["size"]: e["impls"]["floor"]["median_ns"] / 2 for e in wire2
              if e["op"] == "rdma_write" and "floor" in e["impls"]}
    table = []
    for tool, size in sorted(set(peers) | set(failed)):
        samples = peers.get((tool, size), [])
        p999 = [x[1] for x in samples if x[1] is not None]
        entry = {"tool": tool, "size": size, "error": failed.get((tool, size)),
                 "typical_ns": median([x[0] for x in samples]) if samples else None,
                 "p999_ns": median(p999) if p999 else None,
                 "mean_ns": median([x[2] for x in samples]) if samples else None}
        fl = floors.get(size)
        entry["x_floor"] = entry["typical_ns"] / fl if entry["typical_ns"] and fl else None
        table.append(entry)
    return table


def render_peers(table):
    out = ["Peers' tools, two processes (each a client of the device daemon; their own numbers, "
           "one way):",
           "  %-14s %6s %10s %10s %10s %9s" % ("tool", "bytes", "typical", "99.9%", "mean", "x floor")]
    for e in table:
        if e["error"]:
            out.append("  %-14s %6s   %s" % (e["tool"], human_size(e["size"]), e["error"]))
            continue
        out.append("  %-14s %6s %10s %10s %10s %9s" % (
            e["tool"], human_size(e["size"]), human_ns(e["typical_ns"]),
            human_ns(e["p999_ns"]) if e["p999_ns"] else "-", human_ns(e["mean_ns"]),
            "%.1fx" % e["x_floor"] if e["x_floor"] else "-"))
    out.append("x floor: the typical over half the two-process floor's round trip of the same "
               "size (the wire suite's).")
    return out


def render_sections(got, copy_table, wire1, wire2, hot, peers=()):
    """The sections after the copy table: over the wire (one process, two processes), the
    driver's own cost, and the errors no section showed."""
    out = []
    if wire1:
        out.append("")
        out += render_wire("Over the wire, one process (two RC QPs of one device; latency per "
                           "operation, p50 and p99):", wire1)
    if wire2:
        out.append("")
        out += render_wire("Over the wire, two processes (each a client of one device daemon):", wire2)
        cpus = got["context"].get("num_cpus")
        out.append("Between two processes each client's poller spins; the daemon's engine (one "
                   "thread for all its functions) spins only")
        out.append("while a CPU is spare%s, else sleeps until a doorbell wakes it: a wake-up the "
                   "floor (two spinning threads) never pays." % (" of %s" % cpus if cpus else ""))
    elif wire1:
        out.append("")
        out.append("Over the wire, two processes: needs the device daemon (tools/onchip bench "
                   "starts one; with --suite, set ONCHIP_BENCH_DAEMON to a daemon's socket)")
    if peers:
        out.append("")
        out += render_peers(peers)
    if hot:
        out.append("")
        out += render_hot(hot, copy_table)
    rest = [(n, m) for n, m in got["errors"]
            if (wire_where(n) or hot_name(n) or PEER.match(n)) is None]
    if rest:
        out.append("")
        out.append("Failed rows:")
        out += ["  %s: %s" % (n, m) for n, m in rest]
    if wire1 or wire2:
        out.append("")
        out.append("DM/floor, host/floor: how many times the shared-memory floor the operation "
                   "takes (lower is better;")
        out.append("nothing on the software ConnectX can go below 1x). DM gain: host time over DM "
                   "time (> 1: faster when")
        out.append("the buffer is device memory: the remote one, or the local one for *_local_dm).")
        out.append("DM engine: the software ConnectX's CPU time per operation (its device thread, "
                   "idle passes between")
        out.append("operations included): what the device model itself costs, measured in CPU "
                   "time, steadier than p50.")
    return out


def csv_lines(copy_table, wire1, wire2, hot, errors):
    """report.csv: op,size,impl,p50_ns,p99_ns,bytes_per_s,engine_cpu_ns,error."""
    lines = ["op,size,impl,p50_ns,p99_ns,bytes_per_s,engine_cpu_ns,error"]
    fmt = lambda v: "" if v is None or v != v else ("%.3f" % v).rstrip("0").rstrip(".")
    for table, suffix in ((copy_table, ""), (wire1, ""), (wire2, TWO_PROC)):
        for e in table:
            for impl, x in sorted(e["impls"].items()):
                lines.append("%s,%d,%s,%s,%s,%s,%s," % (e["op"], e["size"], impl + suffix,
                                                        fmt(x["median_ns"]), fmt(x["p99_ns"]),
                                                        fmt(x["bytes_per_s"]),
                                                        fmt(x.get("engine_cpu_ns"))))
            for impl, message in sorted(e.get("errors", {}).items()):
                lines.append("%s,%d,%s,,,,,%s" % (e["op"], e["size"], impl + suffix,
                                                  '"%s"' % message.replace('"', "'")))
    for r in hot:
        lines.append("%s,,onchip,%s,,,,%s" % (r["path"], fmt(r["ns"]),
                                              '"%s"' % r["error"] if r["error"] else ""))
        lines.append("%s,,floor,%s,,,," % (r["path"], fmt(r["floor_ns"])))
        lines.append("%s,,bound,%s,,,," % (r["path"], fmt(r.get("bound_ns"))))
    return lines


def comparable(report):
    """{(section, op, size, impl): median ns} of a report.json; entries it cannot read are left out."""
    rows = {}
    for section in ("rows", "wire", "wire_2proc"):
        for e in report.get(section) or []:
            if not isinstance(e, dict) or not isinstance(e.get("impls"), dict):
                continue
            for impl, x in e["impls"].items():
                ns = x.get("median_ns") if isinstance(x, dict) else None
                if isinstance(ns, (int, float)) and ns > 0:
                    rows[(section, str(e.get("op")), int(e.get("size") or 0), impl)] = float(ns)
    for r in report.get("hot") or []:
        if isinstance(r, dict) and isinstance(r.get("ns"), (int, float)) and r["ns"] > 0:
            rows[("hot", str(r.get("path")), 0, "onchip")] = float(r["ns"])
    return rows


def row_label(key):
    section, op, size, impl = key
    return " ".join([op, impl] + ([human_size(size)] if size else []))


def compare(old, new):
    """Lines setting each row of the `new` report.json beside the `old` one: new time / old time."""
    a, b = comparable(old), comparable(new)
    common = sorted(set(a) & set(b))
    out = ["Compared with the earlier run (new time / old time; < 1 is faster now):"]
    cols = "%-11s %-22s %8s %-13s %10s %10s %7s  %s"
    if common:
        out.append(cols % ("section", "operation", "size", "impl", "old", "new", "ratio", ""))
    else:
        out.append("  no row in common")
    for key in common:
        section, op, size, impl = key
        r = b[key] / a[key]
        verdict = "faster" if r < 0.95 else "slower" if r > 1.05 else "same"
        out.append(cols % (section, op, human_size(size) if size else "", impl, human_ns(a[key]),
                           human_ns(b[key]), "%.2fx" % r, verdict))
    for what, keys in (("only in the earlier run", set(a) - set(b)), ("only in this run", set(b) - set(a))):
        if keys:
            out.append("%s: %s" % (what, ", ".join(row_label(k) for k in sorted(keys))))
    return out


COLORS = {"onchip": "#1b7837", "vendor": "#b2182b", "host": "#2166ac", "floor": "#777777",
          "bound": "#d9a400",
          "onchip_2proc": "#7fbf7b", "host_2proc": "#92c5de", "floor_2proc": "#bbbbbb"}
WIRE_LABEL = {"onchip": "DM", "host": "host", "floor": "floor"}


class Svg:
    """A page of chart panels stacked top to bottom; each panel draws at (left, top)."""

    def __init__(self, width):
        self.width = width
        self.height = 0
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, anchor="start", size=None, extra=""):
        self.add('<text x="%.1f" y="%.1f"%s%s%s>%s</text>'
                 % (x, y, ' text-anchor="%s"' % anchor if anchor != "start" else "",
                    ' font-size="%d"' % size if size else "", extra, html.escape(s)))

    def done(self):
        head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                'font-family="sans-serif" font-size="11">' % (self.width, self.height + 10))
        return "\n".join([head, '<rect width="100%" height="100%" fill="white"/>']
                         + self.parts + ["</svg>"])


def log_axis(lo, hi, length):
    """A function mapping a value to its offset along a log axis of `length` pixels."""
    a, b = math.log10(lo), math.log10(hi)
    if b - a < 0.5:
        a, b = a - 0.25, b + 0.25
    return lambda v: (math.log10(v) - a) / (b - a) * length, (a, b)


def tick_text(v):
    """A gridline's label: below 1 ns human_ns would round 0.5 or 0.2 to "0 ns"."""
    return "%g ns" % v if v < 1 else human_ns(v)


def ticks(a, b):
    """Gridline values between 10**a and 10**b: the decades, and 2x and 5x of each when the axis
    spans less than two decades."""
    steps = (1, 2, 5) if b - a < 2 else (1,)
    return [m * 10 ** d for d in range(math.floor(a), math.ceil(b) + 1) for m in steps
            if a <= math.log10(m * 10 ** d) <= b]


def draw_bars(svg, top, title, groups, impls, colors, labels, legend_x):
    """Grouped bars with a log latency axis: groups = [(label, {impl: (ns, tooltip)})]."""
    bar, gap, left, height = 12, 18, 70, 260
    vals = [ns for _, g in groups for ns, _ in g.values() if ns and ns > 0]
    if not vals:
        return top
    y_of, (a, b) = log_axis(min(vals) / 1.5, max(vals) * 1.5, height)
    y = lambda v: top + 44 + height - y_of(v)
    svg.text(left, top + 18, title, size=14)
    svg.text(left, top + 32, "median time per operation, log scale: lower is better", size=10)
    for v in ticks(a, b):
        yy = y(v)
        svg.add('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, legend_x - 10, yy, yy))
        svg.text(left - 4, yy + 4, tick_text(v), anchor="end")
    x = left + gap / 2
    base = top + 44 + height
    for label, g in groups:
        for i, impl in enumerate(impls):
            ns, tip = g.get(impl, (None, None))
            if ns and ns > 0:
                svg.add('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s</title></rect>'
                        % (x + i * bar, y(ns), bar - 1, base - y(ns), colors[impl], html.escape(tip)))
        cx = x + len(impls) * bar / 2
        svg.text(cx, base + 14, label, extra=' transform="rotate(40 %.1f %d)"' % (cx, base + 14))
        x += len(impls) * bar + gap
    for i, impl in enumerate(impls):
        svg.add('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (legend_x, top + 44 + i * 18, colors[impl]))
        svg.text(legend_x + 18, top + 54 + i * 18, labels.get(impl, impl))
    # Below the bars, room for the longest label, drawn at 40 degrees (about 6.5 px a character,
    # 0.64 of it downwards).
    return base + max(110, 30 + int(4.2 * max(len(label) for label, _ in groups)))


def draw_lines(svg, left, top, title, series, width=360, height=200):
    """A log-log panel of latency against size: series = [(label, color, dashed, [(bytes, ns)])]."""
    pts = [(n, ns) for _, _, _, line in series for n, ns in line if ns and ns > 0]
    if not pts:
        return
    x_of, _ = log_axis(min(n for n, _ in pts), max(n for n, _ in pts), width)
    y_of, (a, b) = log_axis(min(ns for _, ns in pts) / 1.3, max(ns for _, ns in pts) * 1.3, height)
    x = lambda n: left + x_of(n)
    y = lambda v: top + 24 + height - y_of(v)
    svg.text(left, top + 14, title, size=13)
    svg.add('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#bbb"/>'
            % (left, top + 24, width, height))
    for v in ticks(a, b):
        yy = y(v)
        svg.add('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, left + width, yy, yy))
        svg.text(left - 4, yy + 4, tick_text(v), anchor="end")
    last = None
    for n in sorted({n for n, _ in pts}):  # as many size labels as fit side by side
        if last is None or x(n) - last >= 44:
            svg.text(x(n), top + 24 + height + 14, human_size(n), anchor="middle", size=10)
            last = x(n)
    for i, (label, color, dashed, line) in enumerate(series):
        line = sorted((n, ns) for n, ns in line if ns and ns > 0)
        if not line:
            continue
        path = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", x(n), y(ns)) for j, (n, ns) in enumerate(line))
        svg.add('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                % (path, color, ' stroke-dasharray="5,3"' if dashed else ""))
        for n, ns in line:
            svg.add('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %s %s: %s</title></circle>'
                    % (x(n), y(ns), color, html.escape(title), label, human_size(n), human_ns(ns)))
        lx, ly = left + width + 10, top + 34 + i * 16
        svg.add('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                % (lx, lx + 18, ly - 4, ly - 4, color, ' stroke-dasharray="5,3"' if dashed else ""))
        svg.text(lx + 22, ly, label, size=10)


def render_svg(title, table, wire1=(), wire2=(), hot=()):
    """The chart: the copy table's key rows as bars (onchip, vendor, host); the copy kernels' latency against
    size; over the wire, latency against size per operation with DM, host and the floor as lines
    (two-process lines dashed), single-size operations as bars; the hot paths as bars beside their
    floors."""
    svg = Svg(1000)
    top = 10
    groups = [("%s %s" % (e["op"], human_size(e["size"])),
               {impl: (s["median_ns"], "%s %s %s: %s" % (e["op"], impl, human_size(e["size"]),
                                                        human_ns(s["median_ns"])))
                for impl, s in e["impls"].items()}) for e in key_rows(table) if e["impls"]]
    if groups:
        svg.width = max(svg.width, 70 + len(groups) * (len(IMPLS) * 12 + 18) + 160)
        top = draw_bars(svg, top, title, groups, IMPLS, COLORS, {}, svg.width - 140)
    panels = []
    # The copy kernels at every size, to and from device memory.
    by_op = collections.defaultdict(dict)
    for e in table:
        by_op[e["op"]][e["size"]] = e["impls"]
    for op in ("wc_copy_to_device", "wc_copy_from_device"):
        sizes = by_op.get(op, {})
        if len(sizes) > 1:
            panels.append((op + ": onchip kernel, vendor 4-byte loop, memcpy",
                           [(impl, COLORS[impl], False,
                             [(n, imp[impl]["median_ns"]) for n, imp in sizes.items() if impl in imp])
                            for impl in IMPLS]))
    singles = []
    wire_ops = [op for op in WIRE_OPS if not op.endswith("_bw")]
    for op in wire_ops:
        rows1 = {e["size"]: e["impls"] for e in wire1 if e["op"] == op}
        rows2 = {e["size"]: e["impls"] for e in wire2 if e["op"] == op}
        if len(rows1) + len(rows2) == 0:
            continue
        if len(set(rows1) | set(rows2)) == 1:
            singles.append((op, rows1, rows2))
            continue
        series = []
        for rows, suffix, dashed in ((rows1, "", False), (rows2, " 2proc", True)):
            for impl in WIRE_IMPLS:
                line = [(n, imp[impl]["median_ns"]) for n, imp in rows.items() if impl in imp]
                if line:
                    series.append((WIRE_LABEL[impl] + suffix, COLORS[impl], dashed, line))
        panels.append((op + " latency (p50)", series))
    for i, (ptitle, series) in enumerate(panels):
        col, row = i % 2, i // 2
        draw_lines(svg, 70 + col * 490, top + row * 260, ptitle, series)
    if panels:
        top += ((len(panels) + 1) // 2) * 260 + 20
    if singles:
        impls = [impl + sfx for sfx in ("", TWO_PROC) for impl in WIRE_IMPLS]
        labels = {impl + sfx: WIRE_LABEL[impl] + (" 2proc" if sfx else "")
                  for sfx in ("", TWO_PROC) for impl in WIRE_IMPLS}
        groups = []
        for op, rows1, rows2 in singles:
            n = next(iter(set(rows1) | set(rows2)))
            g = {}
            for rows, sfx in ((rows1, ""), (rows2, TWO_PROC)):
                for impl, s in rows.get(n, {}).items():
                    g[impl + sfx] = (s["median_ns"], "%s %s %s: %s" % (op, labels[impl + sfx],
                                                                       human_size(n), human_ns(s["median_ns"])))
            groups.append(("%s %s" % (op, human_size(n)), g))
        top = draw_bars(svg, top, "Over the wire at one size: DM, host, floor (2proc: two processes)",
                        groups, impls, COLORS, labels, 70 + len(groups) * (len(impls) * 12 + 18) + 30)
    if hot:
        groups = [(r["path"], {k: (v, "%s %s: %s" % (r["path"], lab, human_ns(v)))
                               for k, v, lab in (("onchip", r["ns"], "driver"),
                                                 ("bound", r.get("bound_ns"), r.get("bound")),
                                                 ("floor", r["floor_ns"], r["floor"])) if v})
                  for r in hot if not r["error"]]
        if groups:
            top = draw_bars(svg, top, "The driver's own cost against the least any call can be and the "
                            "bare stores", groups,
                            ("onchip", "bound", "floor"), COLORS,
                            {"onchip": "driver", "bound": "bound", "floor": "floor"},
                            70 + len(groups) * 54 + 30)
    if top <= 10:
        return None
    svg.height = top
    return svg.done()


def write(paths, out_dir, header, compare_with=None):
    """Writes report.txt, report.json, report.csv and report.svg into out_dir; returns the text to
    print (the key rows and every section), the chart's path (None when nothing to draw) and the
    wire goals missed or not judged (unmet_wire_goals)."""
    got = collect(paths)
    context = got["context"]
    other = [(name, median([x[0] for x in v]), median([x[1] for x in v]))
             for name, v in sorted(got["other"].items())]
    table = build(got["copy"], got["paired"], got["elsewhere"])
    wire1 = build_wire(got["wire"], got["errors"], two_proc=False, paired=got["wire_paired"])
    wire2 = build_wire(got["wire"], got["errors"], two_proc=True, paired=got["wire_paired"])
    hot = build_hot(got["hot"], got["errors"])
    peers = build_peers(got["peers"], got["errors"], wire2)
    sections = render_sections(got, table, wire1, wire2, hot, peers)
    with open(os.path.join(out_dir, "report.txt"), "w") as f:
        f.write("\n".join([render_text(header, table, other)] + sections) + "\n")
    text = "\n".join([render_text(header, key_rows(table), other, with_other=False)] + sections)
    new = {"header": dict(header), "rows": table, "wire": wire1, "wire_2proc": wire2, "hot": hot,
           "peers": peers,
           "errors": [{"name": n, "message": m} for n, m in got["errors"]], "context": context}
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(new, f, indent=1)
    with open(os.path.join(out_dir, "report.csv"), "w") as f:
        f.write("\n".join(csv_lines(table, wire1, wire2, hot, got["errors"])) + "\n")
    if compare_with is not None:
        text += "\n\n" + "\n".join(compare(compare_with, new))
    svg = render_svg("onchip: device memory vs host memory, onchip vs the vendor algorithm",
                     table, wire1, wire2, hot)
    chart = None
    if svg:
        chart = os.path.join(out_dir, "report.svg")
        with open(chart, "w") as f:
            f.write(svg)
    return text, chart, unmet_wire_goals(wire1, wire2)
