"""tools/cli/setup.py's Hugepages against a stand-in nr_hugepages file: a run raises the pool only
to what it needs, only as root, says so, and gives back exactly what it found unless kept."""
import contextlib
import io
import os
import tempfile
import unittest

import setup
import unittest_main


class HugepagesTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.path = os.path.join(tmp.name, "nr_hugepages")
        self.free_path = os.path.join(tmp.name, "free_hugepages")
        self.set(0)

    def set(self, n, in_use=0):
        """n reserved, `in_use` of them held by other processes."""
        with open(self.path, "w") as f:
            f.write("%d\n" % n)
        with open(self.free_path, "w") as f:
            f.write("%d\n" % (n - in_use))

    def value(self):
        with open(self.path) as f:
            return int(f.read())

    def run_with(self, wanted, keep=False, is_root=True):
        pages = setup.Hugepages(self.path, keep=keep, is_root=is_root, free_path=self.free_path)
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            pages.reserve(wanted, "the test")
            during = self.value()
            pages.restore()
        return during, said.getvalue()

    def test_raises_to_what_the_run_needs_and_gives_it_back(self):
        self.set(3)
        during, said = self.run_with(64)
        self.assertEqual(during, 64)
        self.assertEqual(self.value(), 3)
        self.assertIn("reserved 64 x 2 MiB (128 MiB) for the test, was 3", said)
        self.assertIn("gave back", said)

    def test_keep_leaves_them_reserved(self):
        during, said = self.run_with(64, keep=True)
        self.assertEqual((during, self.value()), (64, 64))
        self.assertIn("--keep-hugepages", said)
        self.assertNotIn("gave back", said)

    def test_never_lowers_a_larger_pool_or_touches_it_afterwards(self):
        self.set(1000)
        during, said = self.run_with(64)
        self.assertEqual((during, self.value()), (1000, 1000))
        self.assertIn("left as they are", said)

    def test_pages_other_processes_hold_do_not_count(self):
        self.set(100, in_use=90)  # 10 free
        during, said = self.run_with(64)
        self.assertEqual(during, 154)  # 54 more make 64 free
        self.assertEqual(self.value(), 100)
        self.assertIn("was 100", said)

    def test_not_root_changes_nothing_and_says_how(self):
        during, said = self.run_with(64, is_root=False)
        self.assertEqual((during, self.value()), (0, 0))
        self.assertIn("echo 64 > %s" % self.path, said)

    def test_restore_runs_once(self):
        pages = setup.Hugepages(self.path, is_root=True, free_path=self.free_path)
        with contextlib.redirect_stdout(io.StringIO()):
            pages.reserve(8, "x")
            pages.restore()
            self.set(5)  # someone else's change after the run
            pages.restore()
        self.assertEqual(self.value(), 5)

    def test_nothing_wanted_reads_nothing(self):
        os.unlink(self.path)
        pages = setup.Hugepages(self.path, is_root=True, free_path=self.free_path)
        pages.reserve(0, "x")
        pages.restore()
        self.assertFalse(os.path.exists(self.path))


if __name__ == "__main__":
    unittest_main.main()
