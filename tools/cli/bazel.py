"""Running Bazel from tools/onchip: progress on screen, queries for test targets."""
import subprocess

import progress


def _show(line):
    # Keep Bazel's progress ("[12 / 80] Compiling ...") and results; drop the sandbox chatter.
    if "linux-sandbox" in line and line[:1].isdigit():
        return None
    return line


class Filter:
    """Bazel's output minus the sandbox chatter, and minus "INFO: From Compiling x:" headers
    that nothing follows (the chatter was all they introduced)."""

    def __init__(self):
        self.header = None

    def __call__(self, line):
        if _show(line) is None:
            return None
        if line.startswith("INFO: From "):
            self.header = line
            return None
        header, self.header = self.header, None
        if header and not line.startswith("[") and not line.startswith("INFO:"):
            return header + "\n" + line
        return line


class Terse:
    """A quieter view of a build for `tools/onchip run`: Bazel's progress lines ("[12 / 80]
    Compiling ...") and, from the first error on, everything; the rest is dropped."""

    def __init__(self):
        self.failing = False

    def __call__(self, line):
        if _show(line) is None:
            return None
        if line.startswith("ERROR") or line.startswith("FAILED"):
            self.failing = True
        return line if self.failing or line.startswith("[") else None


def run(args, cwd=None, file=None, terse=False):
    return progress.run_streaming(["bazel"] + args, Terse() if terse else Filter(), cwd=cwd, file=file)


def query_tests(targets, tiers):
    """The test targets under `targets` whose tags match `tiers` (Bazel's tag-filter syntax:
    comma-separated, a leading '-' excludes), manual ones left out; None (said on stderr) when
    the query fails."""
    # Tests tagged manual run on demand only (bazel test //their:label), never in a tier run.
    every = "(tests(%s) except attr(tags, '\\bmanual\\b', tests(%s)))" % (
        " + ".join(targets), " + ".join(targets))
    expr = every
    wanted = [t for t in (tiers or "").split(",") if t and not t.startswith("-")]
    excluded = [t[1:] for t in (tiers or "").split(",") if t.startswith("-")]
    if wanted:
        expr = "attr(tags, '\\b(%s)\\b', %s)" % ("|".join(wanted), expr)
    if excluded:
        expr = "(%s) except attr(tags, '\\b(%s)\\b', %s)" % (expr, "|".join(excluded), every)
    out = subprocess.run(["bazel", "query", expr, "--output=label"], capture_output=True, text=True)
    if out.returncode != 0:
        errors = [l for l in out.stderr.splitlines() if l.startswith("ERROR")]
        progress.fail("bazel query failed: %s" % (errors or out.stderr.strip().splitlines()[-1:]
                                                  or ["exit %d" % out.returncode])[0])
        return None
    return sorted(l for l in out.stdout.split() if l.startswith("//"))


def query_fuzzers(targets):
    """The fuzzer binaries under `targets` (cc_binary tagged "fuzzer", manual: they build only
    under --config=sanitize); None (said on stderr) when the query fails."""
    expr = "attr(tags, '\\bfuzzer\\b', kind(cc_binary, %s))" % " + ".join(targets)
    out = subprocess.run(["bazel", "query", expr, "--output=label"], capture_output=True, text=True)
    if out.returncode != 0:
        progress.fail("bazel query for the fuzzers failed (exit %d)" % out.returncode)
        return None
    return sorted(l for l in out.stdout.split() if l.startswith("//"))


def info(key, config=(), cwd=None):
    out = subprocess.run(["bazel", "info", *config, key], capture_output=True, text=True,
                         check=True, cwd=cwd)
    return out.stdout.strip()
