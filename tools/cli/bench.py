"""tools/onchip bench: device memory against host memory, onchip against the vendor algorithm.

Builds every benchmark target (tagged `benchmark` under //bench), runs each suite with Google
Benchmark (repetitions, so latency has a median and a p99), keeps the JSON under --out, and
writes the report: a table (report.txt), the numbers (report.json) and a chart (report.svg).
About 3 minutes by default; --quick is under 30 seconds; --full repeats more for steadier numbers.

The device (--device, default auto): a ConnectX bound to vfio-pci when there is one that onchip's
driver can open (the suites get it in ONCHIP_VFIO_PCI), otherwise the software ConnectX. Every
ConnectX found is named in the header with why it is or is not used.
--suite PATH runs prebuilt benchmark binaries instead of building //bench (no Bazel needed).
The wire suite's two-process rows and the peers suite (perftest and ucx_perftest in two
processes, their own numbers) need a device daemon: bench starts one of its own for the run
(stopped at the end); with --suite they run when ONCHIP_BENCH_DAEMON names a daemon's socket.

--out DIR (default out/bench) receives one JSON per suite (named after the suite) and report.txt,
report.json, report.csv, report.svg; bench overwrites those names and touches nothing else in DIR.
Each is written to NAME.partial and renamed, so an interrupted run leaves no truncated file.
--compare OLD.json sets an earlier run's report.json beside this one: each row's new time over its
old time (< 1: faster now). Copy the old report.json aside first: bench overwrites its own.

Hugepages: as root, bench makes sure the free 2 MiB hugepages the mode needs are reserved (the
1 GiB hugepage-versus-4k read of the default and --full modes needs about 600, --quick 64) and
gives back what it added when it ends, also on failure or Ctrl-C; --keep-hugepages keeps them.

Exit status: 0 every suite ran (performance goals missed are listed, not failed: the report
judges them, speed is measured here, never asserted, and on a shared machine a miss is often noise);
1 a build or a suite failed; 2 bad options; 130 interrupted.
"""
import json
import re
import os
import shutil
import tempfile
import platform
import subprocess

import bazel
import devices
import progress
import report
import simd

# Every mode shuffles the repetitions of a suite's rows (random interleaving), so a row and the
# baseline it is divided by sample the same moments of a shared machine's noise: run back to back,
# a slow spell that covered only one of them made their ratio say what the neighbours did.
INTERLEAVED = "--benchmark_enable_random_interleaving=true"
MODES = {
    # --quick leaves out the 1 GiB hugepage-versus-4k read test: faulting in 2 GiB takes longer
    # than the whole quick budget.
    "quick": ["--benchmark_min_time=0.002", "--benchmark_repetitions=3", INTERLEAVED,
              "--benchmark_filter=-random_read_1GiB"],
    "default": ["--benchmark_min_time=0.02", "--benchmark_repetitions=5", INTERLEAVED],
    "full": ["--benchmark_min_time=0.2", "--benchmark_repetitions=15", INTERLEAVED],
}


# What bench writes into --out besides one JSON per suite (suite_json_name); nothing else there
# is bench's to overwrite or remove.
REPORT_FILES = ("report.txt", "report.json", "report.csv", "report.svg")

# Hugepages each mode needs: the 1 GiB hugepage read (alloc_bench) needs 516 free 2 MiB pages
# next to what the allocators keep; --quick leaves that benchmark out.
HUGEPAGES = {"quick": 64, "default": 600, "full": 600}


class UsageError(Exception):
    pass


def mode_of(args):
    return "quick" if args.quick else "full" if args.full else "default"


def suite_json_name(label):
    """The file name of a suite's JSON under --out: '//bench/mmio:wc_copy_bench' ->
    'bench_mmio_wc_copy_bench.json'; a --suite binary's label is its file name."""
    return label.lstrip("/").replace(":", "_").replace("/", "_") + ".json"


def check_out_dir(out):
    """Creates --out if needed and proves it writable, else UsageError saying why."""
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise UsageError("--out %s: cannot write there (%s)" % (out, e.strerror or e))


def validate(args):
    """Checks every option before anything is installed, reserved or built; returns the device
    choice. UsageError or devices.DeviceError says what is wrong."""
    choice = devices.choose(args.device)
    missing = [p for p in args.suite if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        raise UsageError("--suite: not an executable file: %s" % " ".join(missing))
    names = [suite_json_name(os.path.basename(p)) for p in args.suite]
    if len(set(names)) != len(names):
        raise UsageError("--suite: two suites with the same file name would write the same JSON")
    args.compare_with = load_compare(args.compare) if args.compare else None
    check_out_dir(args.out)
    return choice


def load_compare(path):
    """The earlier report.json --compare names, or UsageError saying why it cannot be used."""
    try:
        with open(path) as f:
            old = json.load(f)
    except OSError as e:
        raise UsageError("--compare %s: cannot read it (%s)" % (path, e.strerror or e))
    except ValueError as e:
        raise UsageError("--compare %s: not JSON (%s)" % (path, e))
    if not isinstance(old, dict) or not isinstance(old.get("rows"), list):
        raise UsageError("--compare %s: not a report.json written by tools/onchip bench" % path)
    return old


def benchmark_targets():
    out = subprocess.run(["bazel", "query", "attr(tags, 'benchmark', //bench/...)", "--output=label"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        progress.fail("bazel query for the benchmark suites failed (exit %d)" % out.returncode)
        return []
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
            "root (tools/onchip bench reserves them for the run), or: echo %d > "
            "/proc/sys/vm/nr_hugepages" % HUGEPAGES["default"])


ANSI = re.compile(r"\x1b\[[0-9;]*m")


class SuiteProgress:
    """Shows a suite's progress (a count of finished measurements), its own log lines and its
    closing summary, instead of every measurement: those are in the JSON and the report. It
    judges nothing: every performance goal is the report's (report.goals), from the JSON."""

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
    suites = [(t, os.path.join(bin_dir, t.lstrip("/").replace(":", "/"))) for t in targets]
    absent = [t for t, path in suites if not os.access(path, os.X_OK)]
    if absent:
        progress.fail("the build reported success but left no binary for %s" % " ".join(absent))
        return None
    return suites


def load_suite_json(path):
    """None when `path` holds a Google Benchmark result with at least one benchmark, else why not."""
    if not os.path.exists(path):
        return "produced no benchmark JSON (is it a Google Benchmark binary?)"
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return "wrote %s, which is not benchmark JSON (%s)" % (path, e)
    if not isinstance(data, dict) or not data.get("benchmarks"):
        return "wrote %s with no benchmark in it (a --benchmark_filter that matched nothing?)" % path
    return None


def header_lines(context, choice, mode, warning):
    device = context.get("onchip.device", choice.description())
    header = [
        ("device", device),
        ("cpu", cpu_model()),
        # Which kernel each target (DM, BlueFlame) uses and why, as the driver chose it for the
        # device's BAR mapping (dm_bench), else the mmio suite's account of its own buffers.
        ("copy kernels", context.get("onchip.copy_variant") or context.get("onchip_wc_copy")
         or "see mmio benchmark"),
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


def run(args, choice):
    mode = mode_of(args)
    progress.step("device: %s" % choice.description())
    for line in choice.notes():
        progress.note(line)
    warning = hugepage_warning()
    if warning:
        progress.note("note: " + warning)
    if args.suite:
        suites = [(os.path.basename(p), p) for p in args.suite]
    else:
        suites = build_suites()
        if suites is None:
            return 1
    # A report from an earlier run must not pass for this one's: drop bench's own files only.
    own = [suite_json_name(label) for label, _ in suites] + list(REPORT_FILES)
    for name in own:
        try:
            os.remove(os.path.join(args.out, name))
        except FileNotFoundError:
            pass
    env = choice.suite_env(os.environ)
    daemon = None
    if not args.suite and "ONCHIP_BENCH_DAEMON" not in env:
        daemon = private_daemon()
        if daemon:
            env["ONCHIP_BENCH_DAEMON"] = daemon
    try:
        return run_suites(args, choice, suites, env, mode, warning)
    finally:
        if daemon:
            simd.stop(daemon)
            shutil.rmtree(os.path.dirname(daemon), ignore_errors=True)


def private_daemon():
    """Starts a device daemon of this run's own (the two-process rows of the wire suite use it)
    and returns its socket; None, with a note, when it cannot start: those rows then say they
    need the daemon."""
    # A UNIX socket's path must stay under 108 bytes: a short directory under /tmp.
    path = os.path.join(tempfile.mkdtemp(prefix="onchip-bench-", dir="/tmp"), "simd.sock")
    try:
        simd.start(path)
        return path
    except SystemExit as e:
        progress.note("note: no device daemon for the two-process rows: %s" % e)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        return None


def run_suite(binary, json_path, mode, env):
    """Runs one suite into `json_path`: the suite writes a temporary file beside it, renamed to
    `json_path` only once the suite exited 0 and left benchmark JSON there, so an interrupted or
    failed suite leaves no truncated JSON under --out. Returns (exit code, problem or None)."""
    partial = json_path + ".partial"
    try:
        code = progress.run_streaming([binary, "--benchmark_out=" + partial,
                                       "--benchmark_out_format=json", "--benchmark_color=false",
                                       *MODES[mode]], SuiteProgress(), env=env)
        if code != 0:
            return code, None
        problem = load_suite_json(partial)
        if problem:
            return code, problem.replace(partial, json_path)
        os.replace(partial, json_path)
        return 0, None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def run_suites(args, choice, suites, env, mode, warning):
    paths, failed, missed = [], [], []
    for i, (label, binary) in enumerate(suites, 1):
        json_path = os.path.join(args.out, suite_json_name(label))
        progress.step("[%d/%d] %s (%s mode)" % (i, len(suites), label, mode))
        code, problem = run_suite(binary, json_path, mode, env)
        if code != 0:
            failed.append("%s (exit %d)" % (label, code))
            continue
        if problem:
            progress.fail("%s %s" % (binary if args.suite else label, problem))
            failed.append("%s (%s)" % (label, problem.split(" (")[0]))
            continue
        paths.append(json_path)
    if paths:
        context, _, _ = report.load(paths)
        header = header_lines(context, choice, mode, warning)
        text, chart, unmet = report.write(paths, args.out, header,
                                          getattr(args, "compare_with", None))
        missed += unmet
        print()
        progress.step("report")
        print(text)
        print()
        progress.note("table: %s (every row: report.csv)" % os.path.join(args.out, "report.txt"))
        if chart:
            progress.note("chart: %s" % chart)
        progress.note("raw JSON: %s" % args.out)
    print()
    if failed:
        progress.step("bench FAILED: %d of %d suites: %s" % (len(failed), len(suites), "; ".join(failed)))
        return 1
    if missed:
        progress.step("bench done, but %d performance goal%s missed or not judged (rerun with --full "
                      "before reading much into it):" % (len(missed), "" if len(missed) == 1 else "s"))
        for m in missed:
            progress.note(m)
        return 0
    progress.step("bench ok: %d suites ran, every performance goal met" % len(suites))
    return 0
