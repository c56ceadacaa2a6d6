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

# The libraries under the Device core or beside it: none of them depends on :device.
LEAVES = ("registry", "device_object", "caps", "hca", "memic", "sw_icm", "gid_table",
          "copy_kernels", "steering_tags", "eq", "events", "uar", "mkey", "roce_address",
          "qp_transitions")


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


def build_libraries(text):
    """driver/BUILD's cc_library targets: name -> (files, deps inside the package)."""
    libraries = {}

    def cc_library(name, srcs=(), hdrs=(), deps=(), **_):
        libraries[name] = (set(srcs) | set(hdrs), {d[1:] for d in deps if d.startswith(":")})

    def concept_library(name, deps, private=(), hdrs=(), **_):  # driver/library.bzl
        cc_library(name, [name + ".cc"] + list(private), [name + ".h"] + list(hdrs), deps)

    ignore = lambda *args, **kwargs: None
    exec(compile(text, "driver/BUILD", "exec"),
         {"cc_library": cc_library, "concept_library": concept_library, "load": ignore,
          "package": ignore, "alias": ignore, "exports_files": ignore})
    return libraries


def closure(libraries, name):
    """`name` and every library of the package it depends on, directly or not."""
    seen, todo = set(), [name]
    while todo:
        lib = todo.pop()
        if lib not in seen:
            seen.add(lib)
            todo.extend(libraries.get(lib, ((), ()))[1])
    return seen


def library_violations(libraries, files):
    """What breaks the library order; `files` maps a driver/ top-level file name to its text."""
    found = []
    owner = {}
    for lib, (names, _) in sorted(libraries.items()):
        for name in names:
            if name in owner:
                found.append("%s is in :%s and :%s" % (name, owner[name], lib))
            owner[name] = lib
    for name in sorted(files):
        if name not in owner:
            found.append("%s is in no library of driver/BUILD" % name)
    for lib, (names, _) in sorted(libraries.items()):
        reach = closure(libraries, lib)
        for name in sorted(names):
            for include in INCLUDE.findall(files.get(name, "")):
                header = include[len("driver/"):]
                if "/" in header:
                    continue  # a subpackage: the layer table above orders those
                if owner.get(header) not in reach:
                    found.append(":%s (%s) includes %s but does not depend on :%s" %
                                 (lib, name, include, owner.get(header)))
    for lib in LEAVES:
        if lib not in libraries:
            found.append("the leaf :%s is not in driver/BUILD" % lib)
        elif "device" in closure(libraries, lib):
            found.append("the leaf :%s reaches :device" % lib)
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

    def test_the_libraries_keep_their_order(self):
        top = root()
        with open(os.path.join(top, "driver", "BUILD"), encoding="utf-8") as f:
            libraries = build_libraries(f.read())
        self.assertIn("device", libraries)
        self.assertGreater(len(libraries), 20, "driver/BUILD has too few libraries")
        files = {path[len("driver/"):]: text for path, text in driver_sources(top).items()
                 if path.count("/") == 1}
        self.assertEqual(library_violations(libraries, files), [], "driver/BUILD's order")

    def test_the_library_check_refuses_each_break(self):
        libraries = {
            "caps": ({"caps.h", "caps.cc"}, set()),
            "eq": ({"eq.h"}, {"caps"}),
            "device": ({"device.h", "device.cc"}, {"caps", "eq"}),
            "pd": ({"pd.h"}, {"device"}),
        }
        ok = {"caps.h": "", "caps.cc": '#include "driver/caps.h"\n',
              "eq.h": '#include "driver/caps.h"\n', "device.h": '#include "driver/eq.h"\n',
              "device.cc": '#include "driver/cmd/run.h"\n',
              "pd.h": '#include "driver/caps.h"\n#include "driver/device.h"\n'}

        def found(text, libs=libraries, **changed):
            return any(text in v for v in library_violations(libs, dict(ok, **changed)))

        self.assertEqual([v for v in library_violations(libraries, ok) if "leaf" not in v], [])
        # A leaf that includes the Device without depending on it.
        self.assertTrue(found(":eq (eq.h) includes driver/device.h",
                              **{"eq.h": '#include "driver/device.h"\n'}))
        # A header above the including library.
        self.assertTrue(found(":device (device.cc) includes driver/pd.h",
                              **{"device.cc": '#include "driver/pd.h"\n'}))
        # A file no library holds, and one two libraries hold.
        self.assertTrue(found("qp.cc is in no library", **{"qp.cc": ""}))
        self.assertTrue(found("caps.h is in :caps and :pd",
                              libs=dict(libraries, pd=({"pd.h", "caps.h"}, {"device"}))))
        # A leaf that depends on the Device.
        self.assertTrue(found("the leaf :caps reaches :device",
                              libs=dict(libraries, caps=({"caps.h", "caps.cc"}, {"device"}))))

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
