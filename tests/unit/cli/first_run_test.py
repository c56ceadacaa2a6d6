"""A first run as a new user meets it: the socket directory checked before any build with one line
saying what to do, no traceback from misuse, a stable device order, launcher children that die
with the launcher, and what a killed launcher left swept by the next."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import simd  # puts tools/verbs_env on the path
import unittest_main

import launch  # noqa: E402
import sysfs_tree  # noqa: E402
import uverbs_node  # noqa: E402

MAIN = os.path.join(os.path.dirname(os.path.abspath(simd.__file__)), "main.py")


def onchip(*args):
    return subprocess.run([sys.executable, MAIN] + list(args), capture_output=True, text=True,
                          timeout=60)


def _gone(pid):
    """No such process, or a zombie waiting for its (re)parent to reap it."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return ") Z " in f.read()
    except (FileNotFoundError, ProcessLookupError):  # reaped between the open and the read
        return True


class SocketTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def test_default_is_xdg_runtime_dir(self):
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = self.tmp
        try:
            self.assertEqual(simd.default_socket(), os.path.join(self.tmp, "onchip", "simd.sock"))
        finally:
            if old is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = old

    def test_run_with_an_unusable_socket_says_what_to_do_in_one_line(self):
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        out = onchip("run", "--socket", os.path.join(blocker, "simd.sock"), "--", "true")
        self.assertEqual(out.returncode, 1)
        self.assertNotIn("Traceback", out.stderr)
        self.assertEqual(len(out.stderr.splitlines()), 1, out.stderr)
        self.assertIn("--in-process", out.stderr)
        self.assertNotIn("building", out.stderr)  # checked before the build

    def test_a_file_at_the_socket_path_is_left_alone(self):
        path = os.path.join(self.tmp, "mine")
        with open(path, "w") as f:
            f.write("data")
        out = onchip("sim", "start", "--socket", path)
        self.assertEqual(out.returncode, 1)
        self.assertIn("is not a socket", out.stderr)
        with open(path) as f:
            self.assertEqual(f.read(), "data")

    def test_version(self):
        out = onchip("--version")
        self.assertEqual(out.returncode, 0)
        self.assertRegex(out.stdout, r"^onchip \S+\n$")


class LauncherTest(unittest.TestCase):
    def test_onchip_0_is_listed_first_whatever_the_uverbs_numbers(self):
        for names in (["uverbs7", "uverbs3"], ["uverbs1", "uverbs0"], ["uverbs12", "uverbs2"]):
            root = tempfile.mkdtemp()
            functions = [sysfs_tree.Function("simd:s#%d" % i) for i in range(2)]
            sysfs_tree.build_devices(root, [(n, (1, 3), f) for n, f in zip(names, functions)])
            v = os.path.join(root, "class", "infiniband_verbs")
            listed = []
            for entry in sysfs_tree.listing_order(v):
                with open(os.path.join(v, entry, "ibdev")) as f:
                    listed.append(f.read().strip())
            self.assertEqual(listed, ["onchip_0", "onchip_1"], names)
            with open(os.path.join(root, "class", "infiniband", "onchip_0", "device",
                                   "onchip_locator")) as f:
                self.assertEqual(f.read().strip(), "simd:s#0")

    def test_children_die_with_the_launcher(self):
        parent = subprocess.Popen(
            [sys.executable, "-c",
             "import subprocess, sys; sys.path.insert(0, %r); import launch; "
             "p = subprocess.Popen(['sleep', '60'], preexec_fn=launch.die_with_parent); "
             "print(p.pid, flush=True); p.wait()" % os.path.dirname(launch.__file__)],
            stdout=subprocess.PIPE, text=True)
        child = int(parent.stdout.readline())
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _gone(child):
            time.sleep(0.05)
        self.assertTrue(_gone(child), "the launcher's child outlived it")

    def test_a_dead_launchers_leftovers_are_swept(self):
        tmp = tempfile.mkdtemp()
        dead = subprocess.Popen(["true"])
        dead.wait()
        stale = tempfile.mkdtemp(prefix="%s%d-" % (launch.SCRATCH_PREFIX, dead.pid), dir=tmp)
        live = tempfile.mkdtemp(prefix="%s%d-" % (launch.SCRATCH_PREFIX, os.getpid()), dir=tmp)
        lock = launch.hold(live)  # a running launcher's
        self.assertEqual(launch.sweep_scratch(tmp, min_age=0), [stale])
        self.assertTrue(os.path.isdir(live))
        os.close(lock)
        registry, dev = os.path.join(tmp, "registry"), os.path.join(tmp, "dev")
        os.makedirs(registry)
        os.makedirs(dev)
        for name, pid in (("uverbs5", dead.pid), ("uverbs6", os.getpid())):
            with open(os.path.join(registry, name), "w") as f:
                f.write("%d\n" % pid)
            open(os.path.join(dev, name), "w").close()  # a regular file: never ours to remove
        self.assertEqual(uverbs_node.sweep(registry, dev), [])
        self.assertEqual(os.listdir(registry), ["uverbs6"])  # the dead pid's record went
        self.assertEqual(sorted(os.listdir(dev)), ["uverbs5", "uverbs6"])


if __name__ == "__main__":
    unittest_main.main()
