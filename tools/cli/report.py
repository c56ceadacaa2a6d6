"""The device-memory-versus-host-memory report, built from Google Benchmark JSON.

A row takes part by its fields (bench/row.h writes them as its label, "key=value" words): op,
impl, place (dm or host), side (remote or local, wire rows), procs, bytes, measure (latency or
bandwidth), pair (a variant timed beside that baseline by turns) and any extra word (floor= and
bound= of a hot path, tier=, variant=). The report never reads a row's name. By impl:
  onchip  what onchip does (its copy kernel, its allocator, the driver over the wire)
  vendor  the vendor provider's documented algorithm, written in bench/baselines as a baseline
  floor   the same exchange done by bare shared memory (over the wire: nothing can beat it)
  bound   the least any provider's call can be (the hot paths)
  paired  over the wire: the 8-byte WRITE into DM and its floor timed by turns (x_floor, the
          median of the rounds' ratios), which judges the wire goal in place of dividing two rows
  peer    a peer's own tool (perftest, ucx_perftest) between two processes
The copy table takes the operations that have an onchip row on dm: its columns are onchip (impl
onchip, place dm), vendor (impl vendor) and host (place host). Each is run with repetitions,
which bench.py interleaves at random across a suite's rows; latency is the time of one operation
(one iteration), reported as the median and the 99th percentile (nearest rank) over repetitions,
or, where a row measured each operation itself (the p50_ns and p99_ns counters), the median of
those; throughput is the median of bytes per second. A row that failed is reported with its
error, never with a number. Rows without fields are listed as they are.

Every performance goal is judged here (goals()), never by a suite: the wire goal, the copy
kernels' and the allocator's. Sections: the copy and allocation table, over the wire (one
process, then two), peers, the driver's own cost, goals, errors. report.json holds all of it,
report.csv one line per row and implementation, report.svg the chart (report_chart.py);
compare() sets a report.json beside a new run.
"""
import collections
import datetime
import json
import math
import os

import report_chart
from report_format import (IMPLS, TWO_PROC, WIRE_IMPLS, human_ns, human_rate, human_size,
                           key_rows)

WIRE_GOAL = 3.0   # 8-byte RDMA WRITE into DM within 3x of the floor
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# A floor sample more than this many times its row's lower median is an outlier (a preemption,
# a 72 us stall): nothing makes the bare exchange slower but the machine. Well above the 3-4x a
# cross-CPU exchange changes by when the hypervisor places the vCPUs differently, which is a
# state of the machine the floor has to show, not an outlier.
FLOOR_OUTLIER = 10.0
# The copy kernels' and the allocator's goals: (op, bytes or None for the worst over every size,
# against which column, at least), judged on the paired ratio (the two timed by turns) where
# the suite measured one, as wc_copy_bench's pairs were made for.
COPY_GOALS = (("wc_copy_to_device", 4096, "vendor", 8.0),
              ("wc_copy_to_device", 262144, "host", 0.90),
              ("wc_copy_to_device", None, "vendor", 1.0),
              ("blueflame_copy", 64, "vendor", 1.0),
              ("wc_copy_from_device", 4096, "vendor", 4.0),
              ("wc_copy_from_device", None, "vendor", 1.0))
ALLOC_GOAL = ("alloc_free", "onchip", "mmap_populate", 5.0)  # at every size


def fields(label):
    """A row's fields from its label (bench/row.h), with procs and bytes as numbers; None for a
    row that has none (its label is absent or not key=value words naming op and impl)."""
    out = {}
    for word in (label or "").split():
        key, sep, value = word.partition("=")
        if not sep or not key:
            return None
        out[key] = value
    if "op" not in out or "impl" not in out:
        return None
    try:
        out["procs"] = int(out.get("procs", 1))
        out["bytes"] = int(out["bytes"]) if "bytes" in out else None
    except ValueError:
        return None
    out.setdefault("measure", "latency")
    return out


def is_wire(f):
    return "side" in f or (f["impl"] in ("floor", "paired") and f["bytes"] is not None)


def is_hot(f):
    return f["bytes"] is None and ("floor" in f or f["impl"] in ("floor", "bound"))


def wire_key(f):
    """(op, impl, bytes) of a wire row as its table keys it: the op with _local_dm when the row
    moves the local buffer and _bw for bandwidth; impl the column (onchip = DM), with _2proc."""
    op = f["op"] + ("_local_dm" if f.get("side") == "local" else "") + (
        "_bw" if f["measure"] == "bandwidth" else "")
    impl = f["impl"] if f["impl"] in ("floor", "paired") else (
        "onchip" if f.get("place") == "dm" else "host")
    return op, impl + (TWO_PROC if f["procs"] == 2 else ""), f["bytes"]


def copy_column(f):
    """The copy table's column of a row of an operation it shows, or None."""
    if f["impl"] == "onchip" and f.get("place") == "dm":
        return "onchip"
    if f["impl"] == "vendor":
        return "vendor"
    if f.get("place") == "host":
        return "host"
    return None


PAIR_COLUMN = {"vendor": "vendor", "memcpy": "host"}


def pair_key(f):
    """(op, bytes, column) of a copy pair of the variant in use against a baseline the table has
    a column for, or None."""
    column = PAIR_COLUMN.get(f.get("pair"))
    if f["impl"] != "onchip" or column is None:
        return None
    return f["op"], f["bytes"], column


def elsewhere_samples(text):
    """{pair_key: [(ns, base_ns), ...]} from wc_copy_bench's onchip_pairs_elsewhere context (a JSON
    object keyed by each pair's label); entries that are not two numbers judge nothing."""
    try:
        got = json.loads(text or "{}")
    except ValueError:
        return {}
    out = collections.defaultdict(list)
    for label, samples in (got.items() if isinstance(got, dict) else ()):
        f = fields(label)
        key = pair_key(f) if f else None
        if key is None or not isinstance(samples, list):
            continue
        for x in samples:
            if (isinstance(x, list) and len(x) == 2
                    and all(isinstance(v, (int, float)) and v > 0 for v in x)):
                out[key].append((float(x[0]), float(x[1])))
    return out


def sample_of(b, f):
    """(ns per operation, bytes per second, p99 ns or None, engine ns or None) of a run."""
    unit = UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
    # A hot path is one single-threaded call on a sink: its CPU time, which a preemption does not
    # inflate, as rings_bench's own summary divides it.
    hot = f is not None and is_hot(f)
    ns = (b["cpu_time"] if hot and "cpu_time" in b else b.get("real_time", 0.0)) * unit
    p99_ns = None
    # A row that timed each operation itself (p50_ns/p99_ns counters, always in ns).
    if isinstance(b.get("p50_ns"), (int, float)) and b["p50_ns"] > 0:
        ns = float(b["p50_ns"])
        p99_ns = float(b.get("p99_ns") or ns)
    # The device thread's CPU time per operation (wire rows of one process).
    engine = b.get("engine_cpu_ns")
    engine_ns = float(engine) if isinstance(engine, (int, float)) and engine > 0 else None
    return ns, b.get("bytes_per_second", 0.0), p99_ns, engine_ns


def collect(paths):
    """Everything the report shows, from the suites' JSON files: a dict with context,
    copy (rows[(op, size)][impl] = samples), wire (the same for the wire rows, impl with
    _2proc), hot (op -> samples) and hot_paths ([(path, floor, bound)] in the suite's order),
    peers ((tool, size) -> samples), fielded ([(fields, sample)], every row with fields), errors
    ([(name, message, fields or None)]) and other (name -> samples, rows without fields or in no
    section). A sample is (ns per operation, bytes per second, p99 ns or None, engine ns or None).
    paired[(op, size, column)] holds (ns, base_ns) of each repetition of the pair of the variant
    in use against that column's baseline; elsewhere[...] the same, each the mean over the
    repetitions of one of the other processes wc_copy_bench ran it in; wire_paired[(op, size,
    two_proc)] the x_floor of each repetition of a wire pair; wire_order the wire operations in
    the order the suite ran them."""
    got = {"context": {}, "errors": [], "paired": collections.defaultdict(list),
           "wire_paired": collections.defaultdict(list),
           "elsewhere": collections.defaultdict(list),
           "copy": collections.defaultdict(lambda: collections.defaultdict(list)),
           "wire": collections.defaultdict(lambda: collections.defaultdict(list)),
           "hot": collections.defaultdict(list), "ranks": {},
           "other": collections.defaultdict(list), "fielded": [],
           "peers": collections.defaultdict(list)}
    plain = []  # (name, fields, sample): rows whose section depends on the others
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for k, v in data.get("context", {}).items():
            got["context"].setdefault(k, v)
        for key, samples in elsewhere_samples(
                data.get("context", {}).get("onchip_pairs_elsewhere")).items():
            got["elsewhere"][key] += samples
        seen_errors = set()
        for b in data.get("benchmarks", []):
            name = b.get("run_name", b["name"])
            f = fields(b.get("label"))
            if b.get("error_occurred"):
                if name not in seen_errors:
                    seen_errors.add(name)
                    got["errors"].append((name, b.get("error_message", "failed"), f))
                continue
            if b.get("run_type") == "aggregate":
                continue
            if f is None:
                got["other"][name].append(sample_of(b, None))
                continue
            collect_row(got, plain, name, f, b)
    ranked = sorted(got["ranks"], key=lambda k: got["ranks"][k])
    got["wire_order"] = [k for k in ranked if isinstance(k, str)]
    got["hot_paths"] = [k for k in ranked if isinstance(k, tuple)]
    dm_ops = {f["op"] for _, f, _ in plain if copy_column(f) == "onchip"}
    for name, f, sample in plain:
        column = copy_column(f) if f["op"] in dm_ops else None
        if column:
            got["copy"][(f["op"], f["bytes"])][column].append(sample)
        else:
            got["other"][name].append(sample)
    return got


def collect_row(got, plain, name, f, b):
    """Files one successful run with fields `f` into its section of `got` (collect)."""
    if "pair" in f:
        key = pair_key(f)
        if key and all(isinstance(b.get(k), (int, float)) for k in ("ns", "base_ns")):
            got["paired"][key].append((float(b["ns"]), float(b["base_ns"])))
        return
    if f["impl"] == "peer":
        if isinstance(b.get("p50_ns"), (int, float)) and b["p50_ns"] > 0:
            p999 = b.get("p999_ns")
            got["peers"][(f["op"], f["bytes"])].append(
                (float(b["p50_ns"]), float(p999) if isinstance(p999, (int, float)) else None,
                 float(b.get("mean_ns") or 0)))
        return
    sample = sample_of(b, f)
    got["fielded"].append((f, sample))
    # The order the suite registered its rows in (Google Benchmark's family_index), which random
    # interleaving leaves alone.
    rank = b.get("family_index", 1 << 30)
    if is_wire(f):
        op, impl, size = wire_key(f)
        got["ranks"][op] = min(got["ranks"].get(op, rank), rank)
        if impl.startswith("paired"):
            if isinstance(b.get("x_floor"), (int, float)) and b["x_floor"] > 0:
                got["wire_paired"][(op, size, f["procs"] == 2)].append(float(b["x_floor"]))
        else:
            got["wire"][(op, size)][impl].append(sample)
    elif is_hot(f):
        got["hot"][f["op"]].append(sample)
        if "floor" in f:
            path = (f["op"], f.get("floor"), f.get("bound"))
            got["ranks"][path] = min(got["ranks"].get(path, rank), rank)
    else:
        plain.append((name, f, sample))


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


def paired_ratio(key, paired, elsewhere):
    """The pair's ratio of `key` (op, size, column): the baseline's mean time per copy over
    onchip's, over every repetition of every process (this one's repetitions, each other
    process's mean), as wc_copy_bench's own summary takes it; None when no pair ran."""
    pair = (paired or {}).get(key)
    if not pair:
        return None
    return mean_ratio([process_sample(pair)] + list((elsewhere or {}).get(key, [])))


def build(rows, paired=None, elsewhere=None):
    """The copy table. One method for every row's x vendor and x host: the two rows' medians, each
    side timed alone (random interleaving), as a program that uses one of them pays it. Where the
    suite also timed onchip beside the baseline by turns (wc_copy_bench's pairs), that ratio is
    its own column, vs_vendor_paired / vs_host_paired: a side run by turns with another can be
    slowed by it (a MOVDIR64B evicts the lines the vendor's loop then stores to), so the two
    methods are shown apart and never mixed in one column."""
    table = []
    for (op, size) in sorted(rows, key=lambda k: (k[0], k[1])):
        impls = {impl: stats(samples) for impl, samples in rows[(op, size)].items()}
        entry = {"op": op, "size": size, "impls": impls}
        on = impls.get("onchip")
        for base in ("vendor", "host"):
            b = impls.get(base)
            entry["vs_" + base] = (b["median_ns"] / on["median_ns"]) if on and b and on["median_ns"] else None
            entry["vs_%s_paired" % base] = paired_ratio((op, size, base), paired, elsewhere)
        table.append(entry)
    return table


def floor_stats(samples):
    """The floor's stats without its outliers (a sample over FLOOR_OUTLIER times the lower median
    of its samples, so that one stall among two samples is caught too), and how many were
    rejected."""
    if not samples:
        return None, 0
    ns = sorted(s[0] for s in samples)
    typical = ns[(len(ns) - 1) // 2]
    kept = [s for s in samples if s[0] <= FLOOR_OUTLIER * typical]
    return stats(kept), len(samples) - len(kept)


def wire_failures(errors, two_proc):
    """{(op, size): {impl: message}} of one wire section's failed rows."""
    failed = collections.defaultdict(dict)
    for _, message, f in errors:
        if f and is_wire(f) and (f["procs"] == 2) == two_proc:
            op, impl, size = wire_key(f)
            failed[(op, size)][impl[:-len(TWO_PROC)] if two_proc else impl] = message
    return failed


def build_wire(wire, errors, two_proc, paired=None, order=()):
    """One wire section's rows, operations in `order`: per (op, size) the stats of onchip (remote
    DM, or local DM for the *_local_dm operations), host and floor (its outliers rejected,
    floor_rejected says how many), how many times the floor each takes, DM against host, and the
    error of each implementation that failed. Where the suite timed the DM operation and the
    floor by turns (paired[(op, size, two_proc)]), DM's times-the-floor is that pair's median over
    repetitions (x_floor_paired)."""
    suffix = TWO_PROC if two_proc else ""
    failed = wire_failures(errors, two_proc)
    keys = set(failed) | {(op, size) for op, size, two in (paired or {}) if two == two_proc}
    for key, impls in wire.items():
        if any(impl + suffix in impls for impl in WIRE_IMPLS):
            keys.add(key)
    order = list(order) + sorted({op for op, _ in keys} - set(order))
    table = []
    for op, size in sorted(keys, key=lambda k: (order.index(k[0]), k[1])):
        got = wire.get((op, size), {})
        impls = {impl: stats(got[impl + suffix]) for impl in ("onchip", "host") if got.get(impl + suffix)}
        fl, rejected = floor_stats(got.get("floor" + suffix))
        if fl:
            impls["floor"] = fl
        entry = {"op": op, "size": size, "impls": impls, "errors": failed.get((op, size), {}),
                 "floor_rejected": rejected}
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


def build_hot(hot, errors, paths=()):
    """The driver's own cost: each hot path (path, floor, bound) in `paths` and of a failed row,
    its time beside its floor's and its bound's, and the ratios to the floor (a run without bound
    rows leaves the bound out)."""
    failed = {}
    paths = list(paths)
    for _, message, f in errors:
        if f and is_hot(f):
            failed[f["op"]] = message
            if "floor" in f and (f["op"], f["floor"], f.get("bound")) not in paths:
                paths.append((f["op"], f["floor"], f.get("bound")))
    rows = []
    for path, floor, bound in paths:
        p, f, b = (stats(hot[n]) if n in hot else None for n in (path, floor, bound))
        over = lambda x: x["median_ns"] / f["median_ns"] if x and f and f["median_ns"] else None
        rows.append({"path": path, "floor": floor, "bound": bound,
                     "ns": p["median_ns"] if p else None,
                     "floor_ns": f["median_ns"] if f else None,
                     "bound_ns": b["median_ns"] if b else None,
                     "x_floor": over(p), "bound_x_floor": over(b),
                     "error": failed.get(path) or failed.get(floor)})
    return rows


def ratio_text(r):
    if not r:
        return "-"
    return "%.2fx" % r if r >= 0.1 else "%.3fx" % r


def render_text(header, table, other, with_other=True):
    out = []
    for k, v in header:
        out.append("%-14s %s" % (k + ":", v))
    out.append("")
    cols = "%-20s %8s | %9s %9s %10s | %9s %9s | %9s | %8s %8s | %8s %8s"
    out.append(cols % ("operation", "size", "onchip", "p99", "onchip/s", "vendor", "p99",
                       "host", "x vendor", "x host", "paired", "paired"))
    out.append(cols % (("",) * 10 + ("x vendor", "x host")))
    out.append("-" * 142)
    for e in table:
        on, ve, ho = (e["impls"].get(i) for i in IMPLS)
        out.append(cols % (
            e["op"], human_size(e["size"]),
            human_ns(on["median_ns"]) if on else "-", human_ns(on["p99_ns"]) if on else "-",
            human_rate(on["bytes_per_s"]) if on else "-",
            human_ns(ve["median_ns"]) if ve else "-", human_ns(ve["p99_ns"]) if ve else "-",
            human_ns(ho["median_ns"]) if ho else "-",
            ratio_text(e["vs_vendor"]), ratio_text(e["vs_host"]),
            ratio_text(e.get("vs_vendor_paired")), ratio_text(e.get("vs_host_paired"))))
    out.append("")
    out.append("Latency is per operation: median and p99 over repetitions. x vendor / x host: how many")
    out.append("times faster onchip is than the vendor algorithm / than host memory (> 1 is faster), one")
    out.append("method for every row: the two rows' medians, each side timed alone. paired x vendor / x")
    out.append("host: the same, with the two timed by turns (wc_copy_bench's pairs; the vendor's mean time")
    out.append("per copy over onchip's, over every repetition in every process the suite ran them in): a")
    out.append("side timed beside another may be slowed by it, so the two methods may disagree.")
    out.append("wc_copy_* and blueflame_copy are the mmio kernels alone (onchip = the variant in use);")
    out.append("memcpy_*_dm, alloc_free_dm and reg_dereg_dm_mr go through the driver and the device.")
    if other and with_other:
        out.append("")
        out.append("Other benchmarks (median over repetitions):")
        for name, ns, bps in other:
            out.append("  %-60s %12s %14s" % (name, human_ns(ns), human_rate(bps)))
    return "\n".join(out)


def times_text(r):
    """A times-the-floor: below 1 the floor itself was slowed (nothing on the software ConnectX
    is faster than it), which the text says rather than print "0.0x"."""
    if not r:
        return "-"
    return "%.1fx" % r if r >= 1 else "<1x!"


def engine_text(x):
    """The device thread's CPU time per operation of a wire row, or '-' where none was measured."""
    return human_ns(x["engine_cpu_ns"]) if x and x.get("engine_cpu_ns") else "-"


def render_wire(title, table, software=False):
    """One wire section's lines; `software`: the device is the software ConnectX, whose DM gain
    the text says measures the model."""
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
    if software and any(e["dm_vs_host"] for e in table):
        out.append("DM gain, on the software ConnectX: its device memory is host memory behind the "
                   "device model, so the gain measures")
        out.append("the model (its MEMIC path against its host path), not a NIC; on hardware it is "
                   "the NIC's to show.")
    rejected = sum(e.get("floor_rejected", 0) for e in table)
    if rejected:
        out.append("floor: %d sample%s left out as outliers (over %.0fx the row's typical: the "
                   "machine, not the exchange)" % (rejected, "" if rejected == 1 else "s",
                                                   FLOOR_OUTLIER))
    if any(0 < (e.get("x_floor_" + i) or 0) < 1 for e in table for i in ("onchip", "host")):
        out.append("<1x!: the floor ran slower than the operation in this run, which the floor "
                   "should not: that ratio judges nothing")
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


def wire_verdict(ratio):
    """The goal's verdict. No operation on the software ConnectX can beat the floor (the engine is
    such a thread), so a ratio below 1 says the floor itself was slowed, by CPUs busy with other
    work, and this run cannot judge the goal."""
    if ratio < 1.0:
        return "not judged: the floor ran slower than the operation, the CPUs were busy"
    return "met" if ratio <= WIRE_GOAL else "missed"



def copy_goals(table):
    """The copy kernels' goals (COPY_GOALS) over the copy table: (text, ratio, verdict) of each
    one measured. A goal is judged on the paired ratio where the suite timed one, else on the
    rows' medians, and says which; one over every size takes the worst size."""
    out = []
    for op, size, column, least in COPY_GOALS:
        candidates = []
        for e in table:
            if e["op"] != op or (size is not None and e["size"] != size):
                continue
            paired = e.get("vs_%s_paired" % column)
            r = paired or e.get("vs_" + column)
            if r:
                candidates.append((r, e["size"], "paired" if paired else "rows"))
        if not candidates:
            continue
        r, at, method = min(candidates)
        where = human_size(at) if size is not None else "every size (worst: %s)" % human_size(at)
        out.append(("%s %s: onchip >= %gx %s (%s)" % (op, where, least, column, method), r,
                    "met" if r >= least else "missed"))
    return out


def alloc_goal(fielded):
    """The allocator's goal (ALLOC_GOAL) from the rows' medians at every size it ran: (text,
    worst ratio, verdict), or None when not measured."""
    op, impl, base, least = ALLOC_GOAL
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for f, sample in fielded:
        if f["op"] == op and f["impl"] in (impl, base) and f["bytes"] is not None:
            by[f["bytes"]][f["impl"]].append(sample[0])
    ratios = [(median(x[base]) / median(x[impl]), n) for n, x in by.items()
              if x.get(impl) and x.get(base) and median(x[impl]) > 0]
    if not ratios:
        return None
    r, at = min(ratios)
    return ("%s: onchip >= %gx %s at every size (worst: %s)" % (op, least, base, human_size(at)),
            r, "met" if r >= least else "missed")


def goals(table, wire1, wire2, fielded):
    """Every performance goal, judged here and only here: [(text, ratio, verdict)]."""
    out = []
    for where, wire in (("one process", wire1), ("two processes", wire2)):
        goal = wire_goal(wire)
        if goal:
            out.append(("8-byte RDMA WRITE into DM within %.0fx of the floor, %s" % (WIRE_GOAL, where),
                        goal[0], goal[1]))
    out += copy_goals(table)
    alloc = alloc_goal(fielded)
    if alloc:
        out.append(alloc)
    return out


def unmet_goals(judged):
    """One line per goal missed or not judged, for bench to list."""
    return ["%s: %s (%s)" % (text, ("%.1fx" % r) if r >= 1 else ratio_text(r), verdict)
            for text, r, verdict in judged if verdict != "met"]


def render_goals(judged):
    out = ["Performance goals (judged here from the rows above; a miss on a shared machine is "
           "often noise):"]
    for text, r, verdict in judged:
        out.append("  %-72s %8s  %s" % (text, ratio_text(r), verdict))
    return out


def render_hot(rows, copy_table):
    out = ["The driver's own cost: one call on a sink device against the bare stores it must make, "
           "in CPU time (information, no goal),",
           "and against its bound, the least any provider's call can be (no check at all): "
           "what any provider pays beyond the floor on this machine"]
    cols = "%-20s %9s %-13s %9s %8s | %-19s %9s %8s"
    out.append(cols % ("path", "time", "its floor", "time", "x floor", "its bound", "time", "x floor"))
    out.append("-" * 104)
    ns = lambda v: human_ns(v) if v else "-"
    over = lambda r: "%.1fx" % r if r else "-"  # a sink's stores: no floor that cannot be beaten
    for r in rows:
        if r["error"]:
            out.append("%-20s failed: %s" % (r["path"], r["error"]))
            continue
        out.append(cols % (r["path"], ns(r["ns"]), r["floor"], ns(r["floor_ns"]),
                           over(r["x_floor"]), r["bound"], ns(r.get("bound_ns")),
                           over(r.get("bound_x_floor"))))
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
    failed = {(f["op"], f["bytes"]): message for _, message, f in errors
              if f and f["impl"] == "peer"}
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


def software_device(context, header=()):
    """Whether the run's device is the software ConnectX (the suites' context, or the header)."""
    device = context.get("onchip.device") or dict(header).get("device") or ""
    return "software" in device


def render_sections(got, copy_table, wire1, wire2, hot, peers=(), judged=(), software=False):
    """The sections after the copy table: over the wire (one process, two processes), the
    driver's own cost, the goals, and the errors no section showed."""
    out = []
    if wire1:
        out.append("")
        out += render_wire("Over the wire, one process (two RC QPs of one device; latency per "
                           "operation, p50 and p99):", wire1, software)
    if wire2:
        out.append("")
        out += render_wire("Over the wire, two processes (each a client of one device daemon):",
                           wire2, software)
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
    if judged:
        out.append("")
        out += render_goals(judged)
    rest = [(n, m) for n, m, f in got["errors"]
            if not f or not (is_wire(f) or is_hot(f) or f["impl"] == "peer")]
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
        out.append("the buffer is device memory: the remote one, or the local one for *_local_dm)%s"
                   % ("; on the software ConnectX it" if software else "."))
        if software:
            out.append("measures the device model, not a NIC.")
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


def chart_stamp(header, context):
    """What the chart says it is of: the device, the mode and the date of the run (the suites'
    own date when they wrote one)."""
    h = dict(header)
    date = context.get("date") or datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    return "device: %s; mode: %s; %s" % (h.get("device") or context.get("onchip.device", "?"),
                                         h.get("mode", "?"), date)


def write_file(path, text):
    """Writes `text` to `path` through a temporary file renamed over it: an interrupted write
    leaves the old file or none, never a truncated one."""
    tmp = path + ".partial"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write(paths, out_dir, header, compare_with=None):
    """Writes report.txt, report.json, report.csv and report.svg into out_dir; returns the text to
    print (the key rows and every section), the chart's path (None when nothing to draw) and the
    performance goals missed or not judged (unmet_goals)."""
    got = collect(paths)
    context = got["context"]
    other = [(name, median([x[0] for x in v]), median([x[1] for x in v]))
             for name, v in sorted(got["other"].items())]
    table = build(got["copy"], got["paired"], got["elsewhere"])
    wire1 = build_wire(got["wire"], got["errors"], two_proc=False, paired=got["wire_paired"],
                       order=got["wire_order"])
    wire2 = build_wire(got["wire"], got["errors"], two_proc=True, paired=got["wire_paired"],
                       order=got["wire_order"])
    hot = build_hot(got["hot"], got["errors"], got["hot_paths"])
    peers = build_peers(got["peers"], got["errors"], wire2)
    judged = goals(table, wire1, wire2, got["fielded"])
    software = software_device(context, header)
    sections = render_sections(got, table, wire1, wire2, hot, peers, judged, software)
    write_file(os.path.join(out_dir, "report.txt"),
               "\n".join([render_text(header, table, other)] + sections) + "\n")
    text = "\n".join([render_text(header, key_rows(table), other, with_other=False)] + sections)
    new = {"header": dict(header), "rows": table, "wire": wire1, "wire_2proc": wire2, "hot": hot,
           "peers": peers, "goals": [{"goal": g, "ratio": r, "verdict": v} for g, r, v in judged],
           "errors": [{"name": n, "message": m} for n, m, _ in got["errors"]], "context": context}
    write_file(os.path.join(out_dir, "report.json"), json.dumps(new, indent=1))
    write_file(os.path.join(out_dir, "report.csv"),
               "\n".join(csv_lines(table, wire1, wire2, hot, got["errors"])) + "\n")
    if compare_with is not None:
        text += "\n\n" + "\n".join(compare(compare_with, new))
    svg = report_chart.render_svg("onchip: device memory vs host memory, onchip vs the vendor "
                                  "algorithm", chart_stamp(header, context), table, wire1, wire2,
                                  hot, got["wire_order"])
    chart = None
    if svg:
        chart = os.path.join(out_dir, "report.svg")
        write_file(chart, svg)
    return text, chart, unmet_goals(judged)
