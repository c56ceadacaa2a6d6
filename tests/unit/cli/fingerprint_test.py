"""tools/cli/fingerprint.py: `tools/onchip run` skips Bazel only while nothing in the tree changed
since the plugin's build, and never outside a git clone."""
import os
import subprocess
import tempfile
import unittest

import fingerprint
import unittest_main


class FingerprintTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        git = ["git", "-C", self.root, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(["git", "init", "-q", self.root], check=True)
        with open(os.path.join(self.root, "a.cc"), "w") as f:
            f.write("int a;\n")
        subprocess.run(git + ["add", "a.cc"], check=True)
        subprocess.run(git + ["commit", "-qm", "a"], check=True)
        self.output = os.path.join(tempfile.mkdtemp(), "plugin.so")  # outside, as bazel-bin
        open(self.output, "w").close()

    def test_unchanged_tree_is_up_to_date_and_an_edit_is_not(self):
        tree = fingerprint.of_tree(self.root)
        self.assertFalse(fingerprint.up_to_date(self.output, tree))  # never recorded
        fingerprint.record(self.output, tree)
        self.assertTrue(fingerprint.up_to_date(self.output, fingerprint.of_tree(self.root)))
        path = os.path.join(self.root, "a.cc")
        with open(path, "a") as f:
            f.write("int b;\n")
        self.assertFalse(fingerprint.up_to_date(self.output, fingerprint.of_tree(self.root)))

    def test_a_new_file_changes_it(self):
        tree = fingerprint.of_tree(self.root)
        open(os.path.join(self.root, "new.h"), "w").close()
        self.assertNotEqual(fingerprint.of_tree(self.root), tree)

    def test_no_git_no_skipping(self):
        plain = tempfile.mkdtemp()
        self.assertIsNone(fingerprint.of_tree(plain))
        self.assertFalse(fingerprint.up_to_date(self.output, None))


if __name__ == "__main__":
    unittest_main.main()
