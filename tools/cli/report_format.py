"""How the bench report writes numbers and which rows it shows in short: sizes, times, rates,
and the key sizes of an operation measured at many (report.py and report_chart.py share them)."""
import collections

IMPLS = ("onchip", "vendor", "host")
WIRE_IMPLS = ("onchip", "host", "floor")
TWO_PROC = "_2proc"
# The sizes shown on screen and in the chart for operations measured at many sizes; report.txt
# and report.json keep every size.
KEY_SIZES = {8, 64, 4096, 262144, 2097152}


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


def key_rows(table):
    sizes = collections.Counter(e["op"] for e in table)
    return [e for e in table if sizes[e["op"]] <= 4 or e["size"] in KEY_SIZES]
