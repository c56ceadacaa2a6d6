"""Running Bazel from tools/onchip: progress on screen, queries for test targets."""
import subprocess

import progress


def _show(line):
    # Keep Bazel's progress ("[12 / 80] Compiling ...") and results; drop the sandbox chatter.
    if "linux-sandbox" in line and line[:1].isdigit():
        return None
    return line


def run(args):
    return progress.run_streaming(["bazel"] + args, _show)


def query_tests(targets, tiers):
    """The test targets under `targets` whose tags match `tiers` (Bazel's tag-filter syntax:
    comma-separated, a leading '-' excludes)."""
    every = "tests(%s)" % " + ".join(targets)
    expr = every
    wanted = [t for t in (tiers or "").split(",") if t and not t.startswith("-")]
    excluded = [t[1:] for t in (tiers or "").split(",") if t.startswith("-")]
    if wanted:
        expr = "attr(tags, '\\b(%s)\\b', %s)" % ("|".join(wanted), expr)
    if excluded:
        expr = "(%s) except attr(tags, '\\b(%s)\\b', %s)" % (expr, "|".join(excluded), every)
    out = subprocess.run(["bazel", "query", expr, "--output=label"], capture_output=True, text=True)
    if out.returncode != 0:
        progress.fail("bazel query failed: %s" % out.stderr.strip().splitlines()[-1:])
        return []
    return sorted(l for l in out.stdout.split() if l.startswith("//"))


def info(key, config=()):
    out = subprocess.run(["bazel", "info", *config, key], capture_output=True, text=True, check=True)
    return out.stdout.strip()
