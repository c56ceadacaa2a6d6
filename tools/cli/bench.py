"""tools/onchip bench: the device-memory-versus-host-memory benchmarks (the main job).

Builds every benchmark target (tagged `benchmark`), runs each suite with Google Benchmark,
keeps its JSON under --out, and prints the results. --quick keeps each measurement short
(under 30 seconds in all); --full repeats measurements for medians and p99.
"""
import os
import subprocess

import bazel
import progress


def benchmark_targets():
    out = subprocess.run(["bazel", "query", "attr(tags, 'benchmark', //bench/...)", "--output=label"],
                         capture_output=True, text=True)
    return sorted(l for l in out.stdout.split() if l.startswith("//"))


def run(args):
    targets = benchmark_targets()
    if not targets:
        progress.fail("no benchmark targets under //bench")
        return 1
    progress.step("building %d benchmark suites" % len(targets))
    if bazel.run(["build", "--", *targets]) != 0:
        progress.fail("build failed")
        return 1
    os.makedirs(args.out, exist_ok=True)
    bin_dir = bazel.info("bazel-bin")
    flags = []
    if args.quick:
        flags = ["--benchmark_min_time=0.01"]
    elif args.full:
        flags = ["--benchmark_repetitions=10", "--benchmark_report_aggregates_only=true"]
    failed = 0
    for i, target in enumerate(targets, 1):
        rel = target.lstrip("/").replace(":", "/")
        name = rel.replace("/", "_")
        json_path = os.path.join(args.out, name + ".json")
        progress.step("[%d/%d] %s" % (i, len(targets), target))
        code = progress.run_streaming([os.path.join(bin_dir, rel), "--benchmark_out=" + json_path,
                                       "--benchmark_out_format=json", *flags])
        if code != 0:
            failed += 1
    progress.step("JSON results in %s" % args.out)
    return 1 if failed else 0
