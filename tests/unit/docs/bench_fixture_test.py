"""Benchmarks and tests share one RC-connect fixture (tools/testing/rc_connect.h): every file
under bench/ that makes an RC QP connects it through ConnectRc and takes no QP to RTR by hand,
so a change to how two RC QPs meet is made once for both."""
import os
import unittest

from source_tree import root

FIXTURE = os.path.join("tools", "testing", "rc_connect.h")


def sources(top):
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            if name.endswith((".cc", ".h")):
                yield os.path.join(dirpath, name)


class BenchFixtureTest(unittest.TestCase):
    def test_benches_connect_rc_qps_through_the_shared_fixture(self):
        top = root()
        self.assertTrue(os.path.isfile(os.path.join(top, FIXTURE)))
        connecting = []
        for path in sources(os.path.join(top, "bench")):
            with open(path) as f:
                text = f.read()
            if "IBV_QPT_RC" not in text:
                continue
            rel = os.path.relpath(path, top)
            connecting.append(rel)
            self.assertIn('#include "%s"' % FIXTURE, text, rel)
            self.assertIn("ConnectRc(", text, rel)
            self.assertNotIn("IBV_QPS_RTR", text, rel + " moves a QP to RTR by hand")
        self.assertIn(os.path.join("bench", "driver", "wire_bench.cc"), connecting)

    def test_the_tests_use_the_same_fixture(self):
        top = root()
        users = []
        for path in sources(os.path.join(top, "tests")):
            with open(path) as f:
                if '#include "%s"' % FIXTURE in f.read():
                    users.append(os.path.relpath(path, top))
        self.assertTrue(users)
        self.assertFalse(os.path.exists(os.path.join(top, "tests", "device", "rc_connect.h")))


if __name__ == "__main__":
    unittest.main()
