"""The order of the layers inside driver/ (ARCHITECTURE.md, driver/README.md): verbs over objects
over rings over cmd and bus. Every #include "driver/..." line of every file under driver/ names a
layer at or below the including file's own: driver/verbs may include the objects (driver/*.h),
driver/ may include driver/rings, driver/rings may include driver/cmd and driver/bus, and
driver/cmd and driver/bus include only each other."""
import os
import re
import unittest

from source_tree import root

INCLUDE = re.compile(r'^\s*#\s*include\s+"(driver/[^"]+)"', re.M)

# Layer name -> rank; a file may include a layer of its own rank or below.
RANK = {"bus": 0, "cmd": 0, "rings": 1, "objects": 2, "verbs": 3}


def layer_of(path):
    """The layer of a repository path under driver/ ("driver/rings/cq_ring.h" -> "rings")."""
    parts = path.split("/")
    if len(parts) > 2 and parts[1] in ("bus", "cmd", "rings", "verbs"):
        return parts[1]
    return "objects"


def violations(files):
    """(file, include) pairs that point up; `files` maps a driver/ path to its text."""
    found = []
    for path, text in sorted(files.items()):
        mine = RANK[layer_of(path)]
        for include in INCLUDE.findall(text):
            if RANK[layer_of(include)] > mine:
                found.append("%s includes %s (%s over %s)" % (path, include, layer_of(include),
                                                              layer_of(path)))
    return found


def driver_sources(top):
    files = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(top, "driver")):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.endswith((".h", ".cc", ".c")):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    files[os.path.relpath(path, top).replace(os.sep, "/")] = f.read()
    return files


class DriverLayersTest(unittest.TestCase):
    def test_no_include_points_up(self):
        files = driver_sources(root())
        self.assertGreater(len(files), 50, "the scan found too few driver/ files")
        self.assertEqual(violations(files), [], "includes against the layer order")

    def test_the_table_refuses_each_upward_include(self):
        up = {
            "driver/rings/send_queue.h": '#include "driver/bfreg.h"\n',
            "driver/rings/x.cc": '#include "driver/verbs/calls.h"\n',
            "driver/cmd/cmdq.cc": '#include "driver/rings/cq_ring.h"\n',
            "driver/bus/bus.cc": ' #  include "driver/device.h"\n',
            "driver/qp.cc": '#include "driver/verbs/attributes.h"\n',
        }
        self.assertEqual(len(violations(up)), len(up))

    def test_the_table_allows_each_downward_include(self):
        down = {
            "driver/verbs/calls.cc": '#include "driver/qp.h"\n#include "driver/rings/cq_ring.h"\n',
            "driver/qp.cc": '#include "driver/rings/wqe_budget.h"\n#include "driver/cmd/run.h"\n',
            "driver/rings/send_queue.h": '#include "driver/bus/bus.h"\n',
            "driver/cmd/cmdq.h": '#include "driver/bus/bus.h"\n',
            "driver/bus/simd/simd_client.h": '#include "driver/cmd/commander.h"\n',
        }
        self.assertEqual(violations(down), [])


if __name__ == "__main__":
    unittest.main()
