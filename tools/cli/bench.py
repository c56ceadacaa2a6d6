"""tools/onchip bench: device memory against host memory, onchip against the vendor algorithm.

Builds every benchmark target (tagged `benchmark` under //bench), runs each suite with Google
Benchmark (repetitions, so latency has a median and a p99), keeps the JSON under --out, and
writes the report: a table (report.txt), the numbers (report.json) and a chart (report.svg).
About 3 minutes by default; --quick is under 30 seconds; --full repeats more for steadier numbers.

The device (--device, default auto): a ConnectX bound to vfio-pci when there is one that onchip's
driver can open (the suites get it in ONCHIP_VFIO_PCI), otherwise the software ConnectX. Every
ConnectX found is named in the header with why it is or is not used (see devices.py).
--suite PATH runs prebuilt benchmark binaries instead of building //bench (no Bazel needed).
"""
import glob
import re
import os
import platform
import subprocess

import bazel
import devices
import progress
import report

MODES = {
    # --quick leaves out the 1 GiB hugepage-versus-4k read test: faulting in 2 GiB takes longer
    # than the whole quick budget.
    "quick": ["--benchmark_min_time=0.002", "--benchmark_repetitions=3",
              "--benchmark_filter=-random_read_1GiB"],
    "default": ["--benchmark_min_time=0.02", "--benchmark_repetitions=5"],
    "full": ["--benchmark_min_time=0.2", "--benchmark_repetitions=15"],
}


def benchmark_targets():
    out = subprocess.run(["bazel", "query", "attr(tags, 'benchmark', //bench/...)", "--output=label"],
                         capture_output=True, text=True)
    return sorted(l for l in out.stdout.split() if l.startswith("//"))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def hugepage_warning():
    try:
        with open("/proc/sys/vm/nr_hugepages") as f:
            if int(f.read().strip() or 0) > 0:
                return None
    except OSError:
        pass
    return ("no 2 MiB hugepages are reserved: host buffers fall back to 4 KiB pages, which adds "
            "TLB misses to the host-memory numbers and skips the hugepage benchmarks. Fix: run as "
            "root (tools/onchip reserves them), or: echo 640 > /proc/sys/vm/nr_hugepages")


ANSI = re.compile(r"\x1b\[[0-9;]*m")


class SuiteProgress:
    """Shows a suite's progress (a count of finished measurements), its own log lines and its
    closing summary, instead of every measurement: those are in the JSON and the report."""

    def __init__(self):
        self.results = 0
        self.in_summary = False

    def __call__(self, line):
        line = ANSI.sub("", line)
        if line.startswith("=="):
            self.in_summary = True
        if self.in_summary:
            return "    " + line
        if line.startswith("onchip") or "error" in line.lower():
            return "    " + line
        if re.search(r"\d (ns|us|ms|s) ", line):
            self.results += 1
            if self.results % 250 == 0:
                return "    %d measurements done" % self.results
        return None


def build_suites():
    """(label, binary path) of every benchmark target, built; None when the build fails."""
    targets = benchmark_targets()
    if not targets:
        progress.fail("no benchmark targets under //bench")
        return None
    progress.step("building %d benchmark suites" % len(targets))
    if bazel.run(["build", "--", *targets]) != 0:
        progress.fail("build failed")
        return None
    bin_dir = bazel.info("bazel-bin")
    return [(t, os.path.join(bin_dir, t.lstrip("/").replace(":", "/"))) for t in targets]


def header_lines(context, choice, mode, warning):
    device = context.get("onchip.device", choice.description())
    header = [
        ("device", device),
        ("cpu", cpu_model()),
        ("copy variant", context.get("onchip.copy_variant", "see mmio benchmark")),
        ("mode", "%s (%s)" % (mode, " ".join(MODES[mode]))),
    ]
    for line in choice.notes():
        header.append(("hardware", line))
    if not choice.found:
        header.append(("hardware", "none (no PCI function 15b3 with an mlx5 device id "
                                         "under %s/bus/pci/devices)" % devices.sysfs_root()))
    if "software" in device:
        header.append(("note", "on the software ConnectX, device memory is host memory behind a BAR "
                               "model: copy-kernel ratios carry over to hardware, absolute device "
                               "latencies do not"))
    if warning:
        header.append(("hugepages", "none reserved (see the note above)"))
    return header


def run(args):
    mode = "quick" if args.quick else "full" if args.full else "default"
    try:
        choice = devices.choose(args.device)
    except devices.DeviceError as e:
        progress.fail(str(e))
        return 2
    progress.step("device: %s" % choice.description())
    for line in choice.notes():
        progress.note(line)
    warning = hugepage_warning()
    if warning:
        progress.note("note: " + warning)
    if args.suite:
        suites = [(os.path.basename(p), os.path.abspath(p)) for p in args.suite]
        missing = [p for _, p in suites if not os.access(p, os.X_OK)]
        if missing:
            progress.fail("not an executable benchmark suite: %s" % " ".join(missing))
            return 2
    else:
        suites = build_suites()
        if suites is None:
            return 1
    os.makedirs(args.out, exist_ok=True)
    for stale in glob.glob(os.path.join(args.out, "*.json")):
        os.remove(stale)
    env = choice.suite_env(os.environ)
    paths, failed = [], 0
    for i, (label, binary) in enumerate(suites, 1):
        json_path = os.path.join(args.out, label.lstrip("/").replace(":", "_").replace("/", "_") + ".json")
        progress.step("[%d/%d] %s (%s mode)" % (i, len(suites), label, mode))
        code = progress.run_streaming([binary, "--benchmark_out=" + json_path,
                                       "--benchmark_out_format=json", "--benchmark_color=false",
                                       *MODES[mode]], SuiteProgress(), env=env)
        if code != 0:
            failed += 1
        elif os.path.exists(json_path):
            paths.append(json_path)
    if not paths:
        return 1
    context, _, _ = report.load(paths)
    header = header_lines(context, choice, mode, warning)
    text, chart = report.write(paths, args.out, header)
    print()
    progress.step("report")
    print(text)
    print()
    progress.note("table: %s" % os.path.join(args.out, "report.txt"))
    if chart:
        progress.note("chart: %s" % chart)
    progress.note("raw JSON: %s" % args.out)
    return 1 if failed else 0
