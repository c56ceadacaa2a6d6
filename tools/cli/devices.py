"""Which ConnectX tools/onchip bench runs on: a real one when onchip's driver can use it, else the
software ConnectX.

A ConnectX is a PCI function with vendor 0x15b3 and a device id from MLX5_DEVICE_IDS. Each is
reported with how it is bound:
  vfio-pci   onchip's own driver opens it (driver/bus/vfio) if it has an IOMMU group and
             /dev/vfio/<group> exists; the benchmark suites get its name in ONCHIP_VFIO_PCI
  mlx5_core  the kernel driver owns it (with mlx5_ib: an RDMA device under class/infiniband);
             a userspace driver cannot share it, so it is found but not used, with how to bind it
             to vfio-pci instead
  other      not usable until bound to vfio-pci

The sysfs and /dev roots are parameters (defaults: $ONCHIP_SYSFS_ROOT or /sys, $ONCHIP_DEV_ROOT
or /dev), so the scan can be tested against a fake tree.
"""
import os
import re

MELLANOX_VENDOR = 0x15B3

# The PCI ids rdma-core's mlx5 provider matches (mlx5_hca_table in providers/mlx5/mlx5.c, read
# from Debian 12's libmlx5.a, rdma-core 44): id -> (model, has device memory). On-device memory
# (MEMIC) exists from ConnectX-5 on (the kernel's drivers/infiniband/hw/mlx5/dm.c checks
# MLX5_CAP_DEV_MEM(memic)).
MLX5_DEVICE_IDS = {
    0x1011: ("Connect-IB", False),
    0x1012: ("Connect-IB VF", False),
    0x1013: ("ConnectX-4", False),
    0x1014: ("ConnectX-4 VF", False),
    0x1015: ("ConnectX-4 Lx", False),
    0x1016: ("ConnectX-4 Lx VF", False),
    0x1017: ("ConnectX-5", True),
    0x1018: ("ConnectX-5 VF", True),
    0x1019: ("ConnectX-5 Ex", True),
    0x101A: ("ConnectX-5 Ex VF", True),
    0x101B: ("ConnectX-6", True),
    0x101C: ("ConnectX-6 VF", True),
    0x101D: ("ConnectX-6 Dx", True),
    0x101E: ("ConnectX family VF", True),
    0x101F: ("ConnectX-6 Lx", True),
    0x1021: ("ConnectX-7", True),
    0x1023: ("ConnectX-8", True),
    0xA2D2: ("BlueField", True),
    0xA2D3: ("BlueField VF", True),
    0xA2D6: ("BlueField-2", True),
    0xA2DC: ("BlueField-3", True),
    0xA2DF: ("BlueField-4", True),
}

SOFTWARE = "software ConnectX (tools/sim, in-process)"
PCI_NAME = re.compile(r"^(?:([0-9a-fA-F]{1,4}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


def sysfs_root():
    return os.environ.get("ONCHIP_SYSFS_ROOT") or "/sys"


def dev_root():
    return os.environ.get("ONCHIP_DEV_ROOT") or "/dev"


def canonical_pci_name(name):
    """'3b:00.0' or '0000:3B:00.0' -> '0000:3b:00.0' (the kernel's form); None if not a PCI name."""
    m = PCI_NAME.match(name.strip())
    if not m or int(m.group(3), 16) > 0x1F:
        return None
    return "%04x:%02x:%02x.%s" % (int(m.group(1) or "0", 16), int(m.group(2), 16),
                                  int(m.group(3), 16), m.group(4))


def _read_hex(path):
    try:
        with open(path) as f:
            return int(f.read().strip(), 16)
    except (OSError, ValueError):
        return None


def _link_basename(path):
    try:
        return os.path.basename(os.readlink(path).rstrip("/"))
    except OSError:
        return None


class ConnectX:
    """One ConnectX PCI function as sysfs shows it."""

    def __init__(self, pci_name, device_id, driver, iommu_group, vfio_node, ib_devices):
        self.pci_name = pci_name
        self.device_id = device_id
        self.model, self.has_device_memory = MLX5_DEVICE_IDS[device_id]
        self.driver = driver            # basename of the driver link, None when unbound
        self.iommu_group = iommu_group  # int, None without an IOMMU
        self.vfio_node = vfio_node      # "<dev>/vfio/<group>" when it exists, else None
        self.ib_devices = ib_devices    # RDMA devices (mlx5_ib) on this function

    def name(self):
        return "%s (15b3:%04x) at %s" % (self.model, self.device_id, self.pci_name)

    def usable(self):
        """True when onchip's driver can open it over VFIO and it has device memory."""
        return self.driver == "vfio-pci" and self.vfio_node is not None and self.has_device_memory

    def status(self):
        """Where it stands, in one line: how it is bound and whether onchip can use it."""
        if self.driver == "vfio-pci":
            if self.iommu_group is None:
                return ("bound to vfio-pci but has no IOMMU group: enable the IOMMU "
                        "(intel_iommu=on or amd_iommu=on on the kernel command line)")
            if self.vfio_node is None:
                return ("bound to vfio-pci, IOMMU group %d, but /dev/vfio/%d is missing"
                        % (self.iommu_group, self.iommu_group))
            if not self.has_device_memory:
                return ("bound to vfio-pci (group %d), but a %s has no device memory "
                        "(ConnectX-5 and later do)" % (self.iommu_group, self.model))
            return "bound to vfio-pci (IOMMU group %d): onchip's driver can use it" % self.iommu_group
        if self.driver == "mlx5_core":
            rdma = (" with RDMA device %s (mlx5_ib)" % ", ".join(self.ib_devices)
                    if self.ib_devices else " (no RDMA device: mlx5_ib not loaded)")
            return ("bound to the kernel's mlx5_core%s: the kernel owns it, so onchip's userspace "
                    "driver cannot use it; to use it, bind it to vfio-pci: %s"
                    % (rdma, bind_to_vfio_hint(self.pci_name)))
        bound = "bound to %s" % self.driver if self.driver else "bound to no driver"
        return "%s; to use it, bind it to vfio-pci: %s" % (bound, bind_to_vfio_hint(self.pci_name))


def bind_to_vfio_hint(pci_name):
    dev = "/sys/bus/pci/devices/%s" % pci_name
    return ("modprobe vfio-pci; echo vfio-pci > %s/driver_override; echo %s > %s/driver/unbind; "
            "echo %s > /sys/bus/pci/drivers_probe" % (dev, pci_name, dev, pci_name))


def _ib_devices_by_pci(sysfs):
    """{pci_name: [ibdev, ...]} from <sysfs>/class/infiniband/*/device."""
    found = {}
    base = os.path.join(sysfs, "class", "infiniband")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return found
    for ibdev in names:
        pci = _link_basename(os.path.join(base, ibdev, "device"))
        if pci:
            found.setdefault(pci, []).append(ibdev)
    return found


def scan(sysfs=None, dev=None):
    """Every ConnectX under <sysfs>/bus/pci/devices, sorted by PCI name."""
    sysfs = sysfs or sysfs_root()
    dev = dev or dev_root()
    base = os.path.join(sysfs, "bus", "pci", "devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    ib = _ib_devices_by_pci(sysfs)
    found = []
    for name in names:
        path = os.path.join(base, name)
        if _read_hex(os.path.join(path, "vendor")) != MELLANOX_VENDOR:
            continue
        device_id = _read_hex(os.path.join(path, "device"))
        if device_id not in MLX5_DEVICE_IDS:
            continue
        group_name = _link_basename(os.path.join(path, "iommu_group"))
        group = int(group_name) if group_name and group_name.isdigit() else None
        node = os.path.join(dev, "vfio", str(group)) if group is not None else None
        found.append(ConnectX(name, device_id, _link_basename(os.path.join(path, "driver")), group,
                              node if node and os.path.exists(node) else None, ib.get(name, [])))
    return found


class Choice:
    """The device the suites run on (vfio is a ConnectX or None for the software ConnectX) and
    one line per ConnectX found, saying whether it is used and why not."""

    def __init__(self, vfio, found):
        self.vfio = vfio
        self.found = found

    def description(self):
        if self.vfio is None:
            return SOFTWARE
        return "%s over VFIO (onchip's own driver)" % self.vfio.name()

    def is_software(self):
        return self.vfio is None

    def suite_env(self, base):
        """The environment for a benchmark suite: ONCHIP_VFIO_PCI set exactly when on VFIO."""
        env = dict(base)
        env.pop("ONCHIP_VFIO_PCI", None)
        if self.vfio is not None:
            env["ONCHIP_VFIO_PCI"] = self.vfio.pci_name
        return env

    def notes(self):
        lines = []
        for cx in self.found:
            used = "used" if cx is self.vfio else "not used"
            lines.append("%s: %s; %s" % (cx.name(), used, cx.status()))
        return lines


class DeviceError(Exception):
    pass


def choose(spec, found=None):
    """spec: 'sim', 'auto' (the first usable VFIO ConnectX, else the software one) or
    'vfio:<pci name>' (that ConnectX, which must be usable). DeviceError says why not."""
    found = scan() if found is None else found
    if spec == "sim":
        return Choice(None, found)
    if spec == "auto":
        return Choice(next((cx for cx in found if cx.usable()), None), found)
    if spec.startswith("vfio:"):
        name = canonical_pci_name(spec[len("vfio:"):])
        if name is None:
            raise DeviceError("--device %s: not a PCI name (want vfio:dddd:bb:dd.f)" % spec)
        cx = next((c for c in found if c.pci_name == name), None)
        if cx is None:
            raise DeviceError("--device %s: no ConnectX at %s under %s/bus/pci/devices"
                              % (spec, name, sysfs_root()))
        if not cx.usable():
            raise DeviceError("--device %s: %s is %s" % (spec, cx.name(), cx.status()))
        return Choice(cx, found)
    raise DeviceError("--device %s: want sim, auto or vfio:dddd:bb:dd.f" % spec)
