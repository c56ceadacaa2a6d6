"""tools/onchip install, sim start's publication and env, as a new user meets them: the files land
under a temporary prefix, ibv_devinfo run directly (no launcher) lists the daemon's functions,
onchip_0 first, and a C program built with `pkg-config --cflags --libs onchip` opens onchip_0 and
allocates a PD. Then sim stop's clean-up: the published tree, the nodes and the socket go.

  install_test.py PLUGIN SIMD
"""
import contextlib
import errno
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import install
import shell_env
import simd
import unittest_main

import published  # tools/verbs_env, on the path through simd
import uverbs_node

PROGRAM = r"""
#include <stdio.h>
#include <infiniband/verbs.h>
#include <onchip/dmah.h>
int main(void) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (list == NULL || n == 0) { fprintf(stderr, "no device\n"); return 1; }
  struct ibv_context *ctx = ibv_open_device(list[0]);
  if (ctx == NULL) { perror("ibv_open_device"); return 1; }
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  if (pd == NULL) { perror("ibv_alloc_pd"); return 1; }
  printf("%s: pd %u\n", ibv_get_device_name(list[0]), pd->handle);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return 0;
}
"""


# The verbs README.md lists under "What does not work yet": each answers EOPNOTSUPP, and names
# the missing feature in one line under ONCHIP_LOG.
MISSING = r"""
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <infiniband/verbs.h>
int main(void) {
  struct ibv_device **list = ibv_get_device_list(NULL);
  if (list == NULL || list[0] == NULL) return 1;
  struct ibv_context *ctx = ibv_open_device(list[0]);
  struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
  struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
  if (pd == NULL || cq == NULL) return 1;
  void *buf = malloc(4096);
  errno = 0;
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  printf("odp %s %d\n", mr ? "ok" : "failed", errno);
  struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 1, .max_recv_wr = 1,
                                        .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *qp = ibv_create_qp(pd, &qa);
  if (qp == NULL) return 1;
  struct ibv_flow_attr fa = {.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof fa, .port = 1};
  errno = 0;
  struct ibv_flow *flow = ibv_create_flow(qp, &fa);
  printf("flow %s %d\n", flow ? "ok" : "failed", errno);
  return 0;
}
"""


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp(prefix="onchip-install-test-")
        cls.prefix = os.path.join(cls.scratch, "prefix")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        cls.where = install.install_files(cls.prefix, PLUGIN, SIMD, "test", root=root)
        cls.socket = os.path.join(cls.scratch, "run", "simd.sock")
        simd.check_socket(cls.socket)
        cls.daemon = subprocess.Popen([cls.where["simd"], "--socket", cls.socket],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cls.daemon.stdout.readline()  # "onchip simd: serving ..."
        cls.status = simd.status(cls.socket)

    @classmethod
    def tearDownClass(cls):
        if cls.daemon.poll() is None:
            cls.daemon.terminate()
            cls.daemon.wait()
        simd.stop(cls.socket)  # the one test_stop_removes_what_start_made started, if any
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("libibverbs lists a device only with /dev/infiniband/uverbsN, which "
                          "only root makes on the host")
        self.assertIsNotNone(self.status, "the installed daemon does not answer")
        simd.start(self.socket, quiet=True)  # publishes the running daemon
        self.env = dict(os.environ)
        pairs, _ = shell_env.variables(self.prefix, self.socket)
        self.env.update(pairs)
        self.env.pop("IBV_DRIVERS", None)

    def test_installed_files(self):
        for key in ("plugin", "driver", "header", "pc", "simd", "man1", "man8"):
            self.assertTrue(os.path.isfile(self.where[key]), key)
        with open(self.where["driver"]) as f:
            self.assertEqual(f.read(), "driver %s/lib/libonchip\n" % self.prefix)
        out = subprocess.run([self.where["simd"], "--version"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0)
        self.assertTrue(out.stdout.startswith("onchip-simd "), out.stdout)

    def test_ibv_devinfo_without_the_launcher(self):
        out = subprocess.run(["ibv_devinfo"], env=self.env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        names = [line.split()[1] for line in out.stdout.splitlines()
                 if line.startswith("hca_id:")]
        self.assertEqual(names, ["onchip_0", "onchip_1"])
        self.assertIn("node_guid:\t\t\t0c42:a103:004f:0001", out.stdout.split("hca_id")[1])

    def test_pkg_config_program(self):
        binary = self._build("pd", PROGRAM)
        # No RDMAV_DRIVERS and no LD_PRELOAD: the linked provider registers itself.
        env = {k: v for k, v in self.env.items() if k not in ("RDMAV_DRIVERS", "LD_PRELOAD")}
        out = subprocess.run([binary], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("onchip_0: pd "), out.stdout)

    def _build(self, name, text):
        source = os.path.join(self.scratch, name + ".c")
        with open(source, "w") as f:
            f.write(text)
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(self.where["pc"]))
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "onchip"], env=env,
                               capture_output=True, text=True, check=True).stdout.split()
        binary = os.path.join(self.scratch, name)
        subprocess.run(["cc", "-o", binary, source] + flags, check=True)
        return binary

    def test_missing_features_answer_eopnotsupp_and_say_so_when_asked(self):
        binary = self._build("missing", MISSING)
        quiet = subprocess.run([binary], env=self.env, capture_output=True, text=True)
        self.assertEqual(quiet.returncode, 0, quiet.stderr)
        self.assertEqual(quiet.stdout, "odp failed %d\nflow failed %d\n"
                         % (errno.EOPNOTSUPP, errno.EOPNOTSUPP))
        self.assertEqual(quiet.stderr, "")  # the library is silent unless asked
        told = subprocess.run([binary], env=dict(self.env, ONCHIP_LOG="warn"),
                              capture_output=True, text=True)
        lines = told.stderr.splitlines()
        self.assertIn("onchip: ibv_reg_mr: on-demand paging (IBV_ACCESS_ON_DEMAND) is not "
                      "implemented by onchip", lines)
        self.assertIn("onchip: ibv_create_flow: flow steering is not implemented by onchip",
                      lines)

    def test_daemon_leaves_a_file_that_is_not_a_socket(self):
        path = os.path.join(self.scratch, "not-a-socket")
        with open(path, "w") as f:
            f.write("mine\n")
        out = subprocess.run([self.where["simd"], "--socket", path], capture_output=True,
                             text=True, timeout=20)
        self.assertNotEqual(out.returncode, 0)
        with open(path) as f:
            self.assertEqual(f.read(), "mine\n")
        with self.assertRaises(simd.SocketError):
            simd.check_socket(path)

    def test_stop_removes_what_start_made(self):
        nodes = published.read_state(self.socket)["nodes"]
        self.assertEqual(len(nodes), 2)
        self.assertTrue(simd.stop(self.socket))
        self.daemon.wait()
        self.assertFalse(os.path.exists(self.socket))
        self.assertFalse(os.path.exists(published.sysfs_root(self.socket)))
        for name in nodes:
            self.assertFalse(os.path.exists(os.path.join(uverbs_node.DEV_DIR, name)))
        # start with none running starts one and says so (the build stands in for Bazel's).
        built, simd.build = simd.build, lambda: self.where["simd"]
        told = io.StringIO()
        try:
            with contextlib.redirect_stderr(told):
                st = simd.start(self.socket)
        finally:
            simd.build = built
        self.assertIn("started the device daemon (pid %d) on %s" % (st["pid"], self.socket),
                      told.getvalue())
        self.assertEqual(published.read_state(self.socket)["pid"], st["pid"])


if __name__ == "__main__":
    PLUGIN, SIMD = (os.path.abspath(p) for p in sys.argv[1:3])
    del sys.argv[1:3]
    unittest_main.main()
