"""The device-memory-versus-host-memory report, built from Google Benchmark JSON.

Benchmarks that take part are named `<operation>.<implementation>/<bytes>`, for example
`memcpy_to_dm.onchip/4096`, `memcpy_to_dm.vendor/4096` and `memcpy_to_dm.host/4096`:
  onchip  what onchip does (its copy kernel, its allocator, ...)
  vendor  the vendor provider's documented algorithm, written in bench/baselines as a baseline
  host    the same operation on host memory
Each is run with repetitions; latency is the time of one operation (one iteration), reported as
the median and the 99th percentile (nearest rank) over repetitions; throughput is the median of
bytes per second. Other benchmarks are listed as they are.
"""
import collections
import html
import json
import math
import os
import re

IMPLS = ("onchip", "vendor", "host")
NAME = re.compile(r"^(?P<op>[A-Za-z0-9_]+)\.(?P<impl>[A-Za-z0-9_]+)/(?P<size>\d+)")
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


MMIO = re.compile(r"^(?P<dir>ToDevice|FromDevice)/(?P<variant>[A-Za-z0-9_]+)/(?P<size>\d+)")
BF = re.compile(r"^BlueFlame64/(?P<variant>[A-Za-z0-9_]+)")


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


def load(paths):
    """(context, rows): rows[(op, size)][impl] = list of (ns_per_op, bytes_per_s); extra runs."""
    context = {}
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    other = collections.defaultdict(list)
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for k, v in data.get("context", {}).items():
            context.setdefault(k, v)
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate" or b.get("error_occurred"):
                continue
            ns = b["real_time"] * UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
            sample = (ns, b.get("bytes_per_second", 0.0))
            name = b.get("run_name", b["name"])
            where = classify(name, data.get("context", {}))
            if where:
                rows[(where[0], where[2])][where[1]].append(sample)
            else:
                other[name].append(sample)
    others = [(name, median([x[0] for x in v]), median([x[1] for x in v]))
              for name, v in sorted(other.items())]
    return context, rows, others


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
    return {"median_ns": median(lat), "p99_ns": p99(lat), "bytes_per_s": median(bw),
            "reps": len(samples)}


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
    return "%.0f ns" % ns if ns < 1e4 else "%.1f us" % (ns / 1e3)


def build(rows):
    table = []
    for (op, size) in sorted(rows, key=lambda k: (k[0], k[1])):
        impls = {impl: stats(samples) for impl, samples in rows[(op, size)].items()}
        entry = {"op": op, "size": size, "impls": impls}
        on = impls.get("onchip")
        for base in ("vendor", "host"):
            b = impls.get(base)
            entry["vs_" + base] = (b["median_ns"] / on["median_ns"]) if on and b and on["median_ns"] else None
        table.append(entry)
    return table


# The sizes shown on screen and in the chart for operations measured at many sizes; report.txt
# and report.json keep every size.
KEY_SIZES = {64, 4096, 262144, 2097152}


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
    out.append("times faster onchip is than the vendor algorithm / than host memory (> 1 is faster).")
    out.append("wc_copy_* and blueflame_copy are the mmio kernels alone (onchip = the variant in use);")
    out.append("memcpy_*_dm, alloc_free_dm and reg_dereg_dm_mr go through the driver and the device.")
    if other and with_other:
        out.append("")
        out.append("Other benchmarks (median over repetitions):")
        for name, ns, bps in other:
            out.append("  %-60s %12s %14s" % (name, human_ns(ns), human_rate(bps)))
    return "\n".join(out)


COLORS = {"onchip": "#1b7837", "vendor": "#b2182b", "host": "#2166ac"}


def render_svg(title, table):
    """Grouped bars: latency per operation and size for each implementation, log scale."""
    groups = [e for e in table if e["impls"]]
    if not groups:
        return None
    bar, gap, left, top, height = 12, 18, 70, 50, 320
    width = left + len(groups) * (len(IMPLS) * bar + gap) + 160
    vals = [s["median_ns"] for e in groups for s in e["impls"].values() if s["median_ns"] > 0]
    lo, hi = math.log10(min(vals)) - 0.2, math.log10(max(vals)) + 0.2
    y = lambda v: top + height - (math.log10(v) - lo) / (hi - lo) * height
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, top + height + 120),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="15">%s</text>' % (left, html.escape(title)),
           '<text x="12" y="%d" transform="rotate(-90 12 %d)">median latency per operation '
           '(log scale, lower is better)</text>' % (top + height // 2 + 120, top + height // 2 + 120)]
    for decade in range(math.ceil(lo), math.floor(hi) + 1):
        yy = y(10 ** decade)
        svg.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (left, width - 150, yy, yy))
        svg.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 4, yy + 4, human_ns(10 ** decade)))
    x = left + gap / 2
    for e in groups:
        for i, impl in enumerate(IMPLS):
            s = e["impls"].get(impl)
            if s and s["median_ns"] > 0:
                yy = y(s["median_ns"])
                svg.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s %s: %s</title></rect>'
                           % (x + i * bar, yy, bar - 1, top + height - yy, COLORS[impl], e["op"], impl,
                              human_size(e["size"]), human_ns(s["median_ns"])))
        label = "%s %s" % (e["op"], human_size(e["size"]))
        cx = x + len(IMPLS) * bar / 2
        svg.append('<text x="%.1f" y="%d" transform="rotate(45 %.1f %d)">%s</text>'
                   % (cx, top + height + 14, cx, top + height + 14, html.escape(label)))
        x += len(IMPLS) * bar + gap
    for i, impl in enumerate(IMPLS):
        svg.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>'
                   % (width - 140, top + i * 18, COLORS[impl], width - 122, top + 10 + i * 18, impl))
    svg.append("</svg>")
    return "\n".join(svg)


def write(paths, out_dir, header):
    context, rows, other = load(paths)
    table = build(rows)
    report_txt = os.path.join(out_dir, "report.txt")
    with open(report_txt, "w") as f:
        f.write(render_text(header, table, other) + "\n")
    text = render_text(header, key_rows(table), other, with_other=False)
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump({"header": dict(header), "rows": table, "context": context}, f, indent=1)
    svg = render_svg("onchip: device memory vs host memory, onchip vs the vendor algorithm",
                     key_rows(table))
    chart = None
    if svg:
        chart = os.path.join(out_dir, "report.svg")
        with open(chart, "w") as f:
            f.write(svg)
    return text, chart
