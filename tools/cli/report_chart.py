"""The bench report's chart (report.svg): bar panels and log-log line panels stacked top to
bottom, stamped with the device, the mode and the date of the run."""
import collections
import html
import math

from report_format import IMPLS, TWO_PROC, WIRE_IMPLS, human_ns, human_size, key_rows

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
    svg.width = max(svg.width, legend_x + 18 + int(7 * max(len(labels.get(i, i)) for i in impls)) + 10)
    # Below the bars, room for the longest label, drawn at 40 degrees (about 6.5 px a character,
    # 0.64 of it downwards).
    return base + max(110, 30 + int(4.2 * max(len(label) for label, _ in groups)))


# A line panel's plot width, and the room left of a panel for its gridlines' labels ("10.0 us",
# anchored at the axis). A legend entry is a swatch of 18 px, 4 px of gap and its label at
# about LEGEND_CHAR px a character (10 px sans-serif).
PANEL_WIDTH = 360
TICK_LABEL_ROOM = 60
LEGEND_CHAR = 6.5


def legend_width(labels):
    """The width a line panel's legend takes right of the panel, its 10 px of gap included."""
    return 10 + 22 + int(math.ceil(LEGEND_CHAR * max((len(l) for l in labels), default=0)))


def line_columns(panels, left=70):
    """The left edges of the two columns line panels are laid out in: the second column starts
    past the widest legend of the first and the room its own gridline labels take, so no legend
    overlaps the next panel."""
    widest = max((legend_width([s[0] for s in series]) for _, series in panels), default=0)
    return left, left + PANEL_WIDTH + widest + TICK_LABEL_ROOM


def draw_lines(svg, left, top, title, series, width=PANEL_WIDTH, height=200):
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


def render_svg(title, stamp, table, wire1=(), wire2=(), hot=(), wire_ops=()):
    """The chart: `stamp` (the device, the mode, the date) above everything; the copy table's key
    rows as bars (onchip, vendor, host); the copy kernels' latency against size; over the wire
    (operations in the order `wire_ops`), latency against size per operation with DM, host and
    the floor as lines (two-process lines dashed), single-size operations as bars; the hot paths
    as bars beside their floors."""
    svg = Svg(1000)
    svg.text(10, 16, stamp, size=11, extra=' class="stamp"')
    top = 24
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
    for op in [op for op in wire_ops if not op.endswith("_bw")]:
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
    columns = line_columns(panels)
    if panels:
        svg.width = max(svg.width, columns[1] + PANEL_WIDTH + legend_width(
            [s[0] for _, series in panels for s in series]) + 10)
    for i, (ptitle, series) in enumerate(panels):
        col, row = i % 2, i // 2
        draw_lines(svg, columns[col], top + row * 260, ptitle, series)
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
    if top <= 24:
        return None
    svg.height = top
    return svg.done()
