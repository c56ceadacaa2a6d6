"""Every repository path a Markdown file names exists, and no README is longer than 250 lines: a
README is a map, and a map whose roads are gone misleads. A path is a word that starts at a
top-level directory (driver/, tools/, ...), or a Bazel label (//pkg:target, pkg:target); a
label's package must exist, a glob must match."""
import glob
import os
import re
import unittest

from source_tree import root

MAX_README_LINES = 250
TOP = ("alloc", "bench", "docs", "driver", "log", "mmio", "tests", "tools", "uapi", ".ci")
# A path: not glued to a word, a slash or a dot before it (so /usr/share/.../tests is not one).
PATH = re.compile(r"(?<![\w/.\-~$])(?://)?((?:%s)/[\w.*+\-/]*(?::[\w.+\-]+)?)"
                  % "|".join(re.escape(t) for t in TOP))


def markdown_files(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not d.startswith("bazel-") and d != ".git"]
        for name in filenames:
            if name.endswith(".md"):
                yield os.path.join(dirpath, name)


def named_paths(text):
    for match in PATH.finditer(text):
        token = match.group(1).rstrip(".,;:)")
        if token.endswith("/..."):
            token = token[:-4]
        yield token


def exists(top, token):
    path, _, target = token.partition(":")
    path = path.rstrip("/")
    if target:  # a label: its package is a directory with a BUILD file
        return os.path.exists(os.path.join(top, path, "BUILD"))
    if "*" in path:
        return bool(glob.glob(os.path.join(top, path)))
    return os.path.exists(os.path.join(top, path))


class ReadmePathsTest(unittest.TestCase):
    def test_every_named_path_exists(self):
        top = root()
        missing = []
        for md in markdown_files(top):
            with open(md, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    for token in named_paths(line):
                        if not exists(top, token):
                            missing.append("%s:%d: %s" % (os.path.relpath(md, top), number, token))
        self.assertEqual(missing, [], "paths named in Markdown that do not exist:\n" + "\n".join(missing))

    def test_no_readme_is_longer_than_a_map(self):
        top = root()
        long = []
        for md in markdown_files(top):
            if os.path.basename(md) in ("README.md", "ARCHITECTURE.md"):
                with open(md, encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                if n > MAX_README_LINES:
                    long.append("%s: %d lines" % (os.path.relpath(md, top), n))
        self.assertEqual(long, [], "over %d lines (history belongs in commits or docs/perf-log.md)"
                         % MAX_README_LINES)

    def test_the_pattern_finds_what_a_map_names(self):
        line = ("see `tools/sim/iommu.h`, //tools/sim/fuzz:engine_fuzzer and driver/verbs/, "
                "not /usr/share/doc/rdma-core/tests or foo/driver/x")
        self.assertEqual(list(named_paths(line)),
                         ["tools/sim/iommu.h", "tools/sim/fuzz:engine_fuzzer", "driver/verbs/"])
        self.assertFalse(exists(root(), "tools/sim/no_such_file.h"))
        self.assertTrue(exists(root(), "tools/sim/fuzz:engine_fuzzer"))


if __name__ == "__main__":
    unittest.main()
