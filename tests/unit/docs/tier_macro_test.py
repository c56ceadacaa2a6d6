"""Every test target takes its tier from tools/build/defs.bzl's macros (onchip_test,
onchip_py_test, onchip_sh_test): no BUILD or .bzl file calls cc_test, py_test or sh_test itself,
so no test can be left out of tools/onchip test's tiers by a missing tag."""
import os
import re
import unittest

from source_tree import root

DIRECT = re.compile(r"^\s*(?:native\.)?(cc_test|py_test|sh_test)\(", re.M)
MACROS = os.path.join("tools", "build", "defs.bzl")


def build_files(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not d.startswith("bazel-") and not d.startswith(".")]
        for name in filenames:
            if name in ("BUILD", "BUILD.bazel") or name.endswith(".bzl"):
                yield os.path.join(dirpath, name)


class TierMacroTest(unittest.TestCase):
    def test_no_test_rule_outside_the_macros(self):
        top = root()
        found = []
        for path in build_files(top):
            rel = os.path.relpath(path, top)
            # tools/bazel holds the offline copies of external rule sets (WORKSPACE), not ours.
            if rel == MACROS or rel.startswith(os.path.join("tools", "bazel") + os.sep):
                continue
            with open(path, encoding="utf-8") as f:
                for m in DIRECT.finditer(f.read()):
                    found.append("%s: %s" % (rel, m.group(1)))
        self.assertEqual(found, [], "test rules that bypass the tier macros")

    def test_the_pattern_finds_a_direct_rule(self):
        self.assertTrue(DIRECT.search('load("x")\n\ncc_test(\n    name = "a",\n)\n'))
        self.assertTrue(DIRECT.search('    native.sh_test(\n'))
        self.assertFalse(DIRECT.search('onchip_test(\n    name = "a",\n)\n'))


if __name__ == "__main__":
    unittest.main()
