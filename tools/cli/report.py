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


def load(paths):
    """(context, rows): rows[(op, size)][impl] = list of (ns_per_op, bytes_per_s); extra runs."""
    context = {}
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    other = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for k, v in data.get("context", {}).items():
            context.setdefault(k, v)
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate" or b.get("error_occurred"):
                continue
            ns = b["real_time"] * UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
            m = NAME.match(b["name"])
            if m and m.group("impl") in IMPLS:
                key = (m.group("op"), int(m.group("size")))
                rows[key][m.group("impl")].append((ns, b.get("bytes_per_second", 0.0)))
            else:
                other.append((b["name"], ns, b.get("bytes_per_second", 0.0)))
    return context, rows, other


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


def render_text(header, table, other):
    out = []
    for k, v in header:
        out.append("%-14s %s" % (k + ":", v))
    out.append("")
    out.append("%-16s %9s | %-24s | %-24s | %-24s | %9s %9s" % (
        "operation", "size", "onchip  median / p99", "vendor  median / p99", "host  median / p99",
        "x vendor", "x host"))
    out.append("-" * 132)
    for e in table:
        cells = []
        for impl in IMPLS:
            s = e["impls"].get(impl)
            cells.append("%s / %s  %s" % (human_ns(s["median_ns"]), human_ns(s["p99_ns"]),
                                          human_rate(s["bytes_per_s"])) if s else "-")
        ratio = lambda r: ("%.2fx" % r) if r else "-"
        out.append("%-16s %9s | %-24s | %-24s | %-24s | %9s %9s" % (
            e["op"], human_size(e["size"]), cells[0][:24], cells[1][:24], cells[2][:24],
            ratio(e["vs_vendor"]), ratio(e["vs_host"])))
    out.append("")
    out.append("x vendor / x host: how many times faster onchip is (median latency ratio; > 1 is faster).")
    if other:
        out.append("")
        out.append("Other benchmarks:")
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
    text = render_text(header, table, other)
    report_txt = os.path.join(out_dir, "report.txt")
    with open(report_txt, "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump({"header": dict(header), "rows": table, "context": context}, f, indent=1)
    svg = render_svg("onchip: device memory vs host memory, onchip vs the vendor algorithm", table)
    chart = None
    if svg:
        chart = os.path.join(out_dir, "report.svg")
        with open(chart, "w") as f:
            f.write(svg)
    return text, chart
