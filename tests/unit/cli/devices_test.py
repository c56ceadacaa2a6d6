"""tools/cli/devices.py against fake sysfs and /dev trees: which ConnectX bench finds, how each is
bound, which one it runs on, and what it tells the user about the others."""
import os
import tempfile
import unittest

import devices
import unittest_main


class FakeMachine:
    """A sysfs tree and a /dev tree under a temporary directory, shaped like the kernel's."""

    def __init__(self, root):
        self.sys = os.path.join(root, "sys")
        self.dev = os.path.join(root, "dev")
        os.makedirs(os.path.join(self.sys, "bus", "pci", "devices"))
        os.makedirs(self.dev)

    def pci(self, name, vendor, device, driver=None, group=None, vfio_node=True):
        path = os.path.join(self.sys, "bus", "pci", "devices", name)
        os.makedirs(path)
        for attr, value in (("vendor", vendor), ("device", device)):
            with open(os.path.join(path, attr), "w") as f:
                f.write("0x%04x\n" % value)
        if driver:
            os.makedirs(os.path.join(self.sys, "bus", "pci", "drivers", driver), exist_ok=True)
            os.symlink("../../../bus/pci/drivers/%s" % driver, os.path.join(path, "driver"))
        if group is not None:
            os.symlink("../../../kernel/iommu_groups/%d" % group, os.path.join(path, "iommu_group"))
            if vfio_node:
                os.makedirs(os.path.join(self.dev, "vfio"), exist_ok=True)
                open(os.path.join(self.dev, "vfio", str(group)), "w").close()

    def ib(self, ibdev, pci_name):
        path = os.path.join(self.sys, "class", "infiniband", ibdev)
        os.makedirs(path)
        os.symlink("../../../bus/pci/devices/%s" % pci_name, os.path.join(path, "device"))

    def scan(self):
        return devices.scan(self.sys, self.dev)


class DevicesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.m = FakeMachine(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_no_pci_devices_means_the_software_connectx(self):
        self.assertEqual(self.m.scan(), [])
        choice = devices.choose("auto", self.m.scan())
        self.assertTrue(choice.is_software())
        self.assertEqual(choice.description(), devices.SOFTWARE)
        self.assertEqual(choice.notes(), [])

    def test_missing_sysfs_root_finds_nothing(self):
        self.assertEqual(devices.scan(os.path.join(self.tmp.name, "absent"), self.m.dev), [])

    def test_vfio_bound_connectx_is_found_and_used(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x101D, driver="vfio-pci", group=17)
        found = self.m.scan()
        self.assertEqual(len(found), 1)
        cx = found[0]
        self.assertEqual((cx.pci_name, cx.model, cx.driver, cx.iommu_group),
                         ("0000:3b:00.0", "ConnectX-6 Dx", "vfio-pci", 17))
        self.assertEqual(cx.vfio_node, os.path.join(self.m.dev, "vfio", "17"))
        self.assertTrue(cx.usable())
        choice = devices.choose("auto", found)
        self.assertIs(choice.vfio, cx)
        self.assertFalse(choice.is_software())
        self.assertIn("0000:3b:00.0", choice.description())
        self.assertIn("VFIO", choice.description())
        self.assertEqual(choice.suite_env({"PATH": "/bin"}),
                         {"PATH": "/bin", "ONCHIP_VFIO_PCI": "0000:3b:00.0"})
        self.assertIn("used;", choice.notes()[0])
        self.assertNotIn("not used", choice.notes()[0])

    def test_explicit_vfio_device_accepts_a_short_pci_name(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x1017, driver="vfio-pci", group=4)
        choice = devices.choose("vfio:3B:00.0", self.m.scan())
        self.assertEqual(choice.vfio.pci_name, "0000:3b:00.0")

    def test_vfio_bound_without_dev_node_is_not_usable(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x101D, driver="vfio-pci", group=17, vfio_node=False)
        cx = self.m.scan()[0]
        self.assertFalse(cx.usable())
        self.assertIn("/dev/vfio/17 is missing", cx.status())
        self.assertTrue(devices.choose("auto", [cx]).is_software())
        with self.assertRaises(devices.DeviceError) as e:
            devices.choose("vfio:0000:3b:00.0", [cx])
        self.assertIn("/dev/vfio/17", str(e.exception))

    def test_vfio_bound_without_iommu_group_says_to_enable_the_iommu(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x101D, driver="vfio-pci")
        cx = self.m.scan()[0]
        self.assertIsNone(cx.iommu_group)
        self.assertFalse(cx.usable())
        self.assertIn("intel_iommu=on", cx.status())

    def test_connectx4_on_vfio_has_no_device_memory(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x1013, driver="vfio-pci", group=2)
        cx = self.m.scan()[0]
        self.assertFalse(cx.usable())
        self.assertIn("no device memory", cx.status())
        self.assertTrue(devices.choose("auto", [cx]).is_software())

    def test_mlx5_ib_device_is_found_not_used_with_how_to_bind(self):
        self.m.pci("0000:5e:00.0", 0x15B3, 0x1017, driver="mlx5_core", group=30)
        self.m.ib("mlx5_0", "0000:5e:00.0")
        found = self.m.scan()
        self.assertEqual(len(found), 1)
        cx = found[0]
        self.assertEqual((cx.model, cx.driver, cx.ib_devices), ("ConnectX-5", "mlx5_core", ["mlx5_0"]))
        self.assertFalse(cx.usable())
        status = cx.status()
        self.assertIn("mlx5_0", status)
        self.assertIn("cannot use it", status)
        self.assertIn("echo vfio-pci > /sys/bus/pci/devices/0000:5e:00.0/driver_override", status)
        self.assertIn("echo 0000:5e:00.0 > /sys/bus/pci/devices/0000:5e:00.0/driver/unbind", status)
        choice = devices.choose("auto", found)
        self.assertTrue(choice.is_software())
        self.assertIn("not used", choice.notes()[0])
        self.assertEqual(choice.suite_env({"ONCHIP_VFIO_PCI": "0000:01:00.0"}), {})
        with self.assertRaises(devices.DeviceError):
            devices.choose("vfio:0000:5e:00.0", found)

    def test_mlx5_core_without_mlx5_ib_says_so(self):
        self.m.pci("0000:5e:00.0", 0x15B3, 0x101B, driver="mlx5_core")
        self.assertIn("mlx5_ib not loaded", self.m.scan()[0].status())

    def test_unbound_connectx_says_how_to_bind(self):
        self.m.pci("0000:5e:00.0", 0x15B3, 0x1021)
        cx = self.m.scan()[0]
        self.assertIsNone(cx.driver)
        self.assertIn("bound to no driver", cx.status())
        self.assertIn("driver_override", cx.status())

    def test_non_mellanox_and_non_mlx5_functions_are_ignored(self):
        self.m.pci("0000:00:1f.6", 0x8086, 0x15B3, driver="e1000e")  # Intel NIC, id 0x15b3
        self.m.pci("0000:81:00.0", 0x15B3, 0x1003, driver="mlx4_core")  # ConnectX-3: mlx4
        self.assertEqual(self.m.scan(), [])

    def test_auto_picks_the_first_usable_by_pci_name_and_names_every_connectx(self):
        self.m.pci("0000:af:00.0", 0x15B3, 0x101D, driver="vfio-pci", group=40)
        self.m.pci("0000:3b:00.0", 0x15B3, 0x101D, driver="vfio-pci", group=17)
        self.m.pci("0000:18:00.0", 0x15B3, 0x1017, driver="mlx5_core")
        found = self.m.scan()
        self.assertEqual([c.pci_name for c in found], ["0000:18:00.0", "0000:3b:00.0", "0000:af:00.0"])
        choice = devices.choose("auto", found)
        self.assertEqual(choice.vfio.pci_name, "0000:3b:00.0")
        notes = choice.notes()
        self.assertEqual(len(notes), 3)
        self.assertIn("not used", notes[0])
        self.assertNotIn("not used", notes[1])
        self.assertIn("not used", notes[2])

    def test_sim_ignores_a_usable_connectx_and_clears_an_inherited_pci_name(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x101D, driver="vfio-pci", group=17)
        choice = devices.choose("sim", self.m.scan())
        self.assertTrue(choice.is_software())
        self.assertEqual(choice.suite_env({"ONCHIP_VFIO_PCI": "0000:3b:00.0", "A": "1"}), {"A": "1"})
        self.assertIn("not used", choice.notes()[0])

    def test_bad_device_specs_are_clear_errors(self):
        for spec, words in (("gpu", "want sim, auto or vfio:"), ("vfio:xyz", "not a PCI name"),
                            ("vfio:0000:3b:00.0", "no ConnectX at 0000:3b:00.0")):
            with self.assertRaises(devices.DeviceError) as e:
                devices.choose(spec, [])
            self.assertIn(words, str(e.exception))

    def test_canonical_pci_name(self):
        self.assertEqual(devices.canonical_pci_name("3b:00.0"), "0000:3b:00.0")
        self.assertEqual(devices.canonical_pci_name("0001:AF:1f.7"), "0001:af:1f.7")
        for bad in ("", "3b:00", "3b:20.0", "3b:00.8", "00000:3b:00.0", "0000:3b:00.0x"):
            self.assertIsNone(devices.canonical_pci_name(bad), bad)

    def test_scan_reads_the_roots_from_the_environment(self):
        self.m.pci("0000:3b:00.0", 0x15B3, 0x101D, driver="vfio-pci", group=17)
        saved = {k: os.environ.get(k) for k in ("ONCHIP_SYSFS_ROOT", "ONCHIP_DEV_ROOT")}
        os.environ["ONCHIP_SYSFS_ROOT"] = self.m.sys
        os.environ["ONCHIP_DEV_ROOT"] = self.m.dev
        try:
            found = devices.scan()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.assertEqual([c.pci_name for c in found], ["0000:3b:00.0"])
        self.assertTrue(found[0].usable())


if __name__ == "__main__":
    unittest_main.main()
