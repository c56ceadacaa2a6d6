"""The sysfs tree libibverbs reads to discover the software ConnectX (SYSFS_PATH points at it).

What a kernel with mlx5_ib would publish for RoCE (or InfiniBand) functions, limited to what libibverbs and
ibverbs-utils read: class/infiniband_verbs/ (the uverbs ABI and one uverbsN per device) and
class/infiniband/<ibdev>/ (node type and GUIDs, firmware, board, the modalias, and port 1 with
its state, rate and GID/pkey tables). The modalias is onchip's own ("onchip:..."), which no stock
provider matches, so libibverbs hands the devices to libonchip-rdmav34.so and never to libmlx5.
One device per function: onchip_0, onchip_1, ... each with its function's MAC and IPv4 address
(the device daemon serves two functions, 0c:42:a1:4f:00:01 / 127.0.0.1 and :02 / 127.0.0.2).
A daemon started with --link-layer ib serves InfiniBand functions: link_layer "InfiniBand",
the LID and SM LID its subnet manager gave, and one GID, fe80::/64 + the port GUID (= the node
GUID), as an IB port's table holds before anyone adds to it. Either GID table lists its empty
entries too, as zero GIDs.
"""
import os

IBDEV = "onchip_0"
MODALIAS = "onchip:v000015B3d0000101D"  # Mellanox vendor, ConnectX-6 Dx device, private bus
UVERBS_ABI = 6          # class/infiniband_verbs/abi_version: the uverbs command ABI
PROVIDER_ABI = 1        # uverbsN/abi_version: what libonchip-rdmav34.so matches
MAC = (0x0c, 0x42, 0xa1, 0x4f, 0x00, 0x01)  # Mellanox OUI 0c:42:a1; tools/sim DeviceConfig
IPV4 = (127, 0, 0, 1)
FW_VER = "22.39.1002"   # tools/sim DeviceConfig defaults; query_device reads the device itself
BOARD_ID = "ONCHIP_SIM_CX6DX"
PORT_CAP_MASK = 0x04010000  # IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS, as query_port says
IB_PORT_CAP_MASK = 0x00010800  # IBV_PORT_CM_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP (the vport context's)
NETDEV = "lo"            # the software ConnectX moves data inside the host


class Function:
    """One device entry: the locator the provider opens (driver/open.h: "sim", "simd:<socket>#N",
    "vfio:<PCI address>"; it lands in device/onchip_locator, which no kernel writes, and
    ONCHIP_DEVICE in the environment overrides it) and the function's addresses."""

    def __init__(self, locator="sim", mac=MAC, ipv4=IPV4, link_layer="Ethernet", lid=0, sm_lid=0):
        self.locator = locator
        self.mac = tuple(mac)
        self.ipv4 = tuple(ipv4)
        self.link_layer = link_layer  # "Ethernet" or "InfiniBand"
        self.lid = lid
        self.sm_lid = sm_lid

    @property
    def infiniband(self):
        return self.link_layer == "InfiniBand"

    @staticmethod
    def from_status(locator, entry):
        """From one function of the device daemon's status ({"mac": "0c:42:...", "ipv4": ...,
        "link_layer": "InfiniBand", "lid": 2, "sm_lid": 1}; a daemon without the link layer
        fields serves Ethernet)."""
        return Function(locator, [int(x, 16) for x in entry["mac"].split(":")],
                        [int(x) for x in entry["ipv4"].split(".")],
                        entry.get("link_layer", "Ethernet"), entry.get("lid", 0),
                        entry.get("sm_lid", 0))


def _gid(words):
    return ":".join("%04x" % w for w in words)


def node_guid(mac=MAC):
    """The GUID a Mellanox function derives from its MAC: OUI, 03:00, the NIC part."""
    m = mac
    return "%02x%02x:%02x03:00%02x:%02x%02x" % (m[0], m[1], m[2], m[3], m[4], m[5])


NODE_GUID = node_guid()


def link_local_gid(mac=MAC):
    """fe80::/64 with the modified EUI-64 of MAC (RoCE's default GID)."""
    m = mac
    eui = [(m[0] ^ 0x02) << 8 | m[1], m[2] << 8 | 0xff, 0xfe << 8 | m[3], m[4] << 8 | m[5]]
    return _gid([0xfe80, 0, 0, 0] + eui)


def ib_port_gid(mac=MAC):
    """An InfiniBand port's GID 0: the default subnet prefix fe80::/64 and the port GUID."""
    guid = [int(w, 16) for w in node_guid(mac).split(":")]
    return _gid([0xfe80, 0, 0, 0] + guid)


def ipv4_mapped_gid(a, b, c, d):
    return _gid([0, 0, 0, 0, 0, 0xffff, a << 8 | b, c << 8 | d])


# Port 1's GID table has more entries than it holds addresses, as a real port's does
# (tools/sim/gid_table.h): RoCE roce_address_table_size entries (tools/sim/config.h), InfiniBand
# 8 (cmd_hca_cap.gid_table_size 0). The kernel lists every entry; an empty one reads as the zero
# GID, of type "IB/RoCE v1", with no netdev.
ROCE_GID_TABLE_SIZE = 16
IB_GID_TABLE_SIZE = 8
ZERO_GID = _gid([0] * 8)
EMPTY_GID = (ZERO_GID, "IB/RoCE v1")


def gids(mac=MAC, ipv4=IPV4):
    """The populated start of a RoCE port's GID table: each address once as RoCE v1 and once as
    RoCE v2, as mlx5_ib lists them (tools/sim/gid_table.cc GidTable has the same order)."""
    return [(link_local_gid(mac), "IB/RoCE v1"), (link_local_gid(mac), "RoCE v2"),
            (ipv4_mapped_gid(*ipv4), "IB/RoCE v1"), (ipv4_mapped_gid(*ipv4), "RoCE v2")]


GIDS = gids()


def _gid_table(root, p, populated, size, ndev):
    """Writes gids/I and gid_attrs/types/I for every entry of a `size`-entry table whose first
    entries are `populated` ((gid, type) pairs); populated entries name `ndev` (None: no netdev,
    as on InfiniBand), empty ones have no ndevs file (libibverbs then reports ifindex 0)."""
    for i in range(size):
        gid, kind = populated[i] if i < len(populated) else EMPTY_GID
        _write(root, "%s/gids/%d" % (p, i), gid)
        _write(root, "%s/gid_attrs/types/%d" % (p, i), kind)
        if ndev is not None and i < len(populated):
            _write(root, "%s/gid_attrs/ndevs/%d" % (p, i), ndev)


def _write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def build(root, uverbs="uverbs0", cdev=(1, 3), locator="sim"):
    """Writes the tree of one device (onchip_0 on `uverbs`, opening `locator`) under `root`;
    `cdev` is the major:minor of /dev/infiniband/<uverbs>."""
    return build_devices(root, [(uverbs, cdev, Function(locator))])


def listing_order(class_dir):
    """The uverbsN entries of `class_dir` in the order ibv_get_device_list returns their devices:
    the directory's own order (rdma-core libibverbs/init.c: find_sysfs_devs puts each readdir entry
    at the head of its list with list_add, and try_all_drivers puts each matched device at the
    head of the device list again, which restores readdir's order)."""
    return [n for n in os.listdir(class_dir) if n.startswith("uverbs")]


def build_devices(root, devices):
    """Writes the tree under `root` for `devices`, a list of (uverbs name, cdev, Function):
    onchip_0 is the first function, onchip_1 the second, ... and ibv_get_device_list lists them in
    that order whatever uverbs numbers they got: the entries are made first, then named in the
    order the directory lists them (which depends on the file system and the names, not on what
    the entries hold)."""
    v = "class/infiniband_verbs"
    _write(root, v + "/abi_version", str(UVERBS_ABI))
    cdevs = {}
    for uverbs, cdev, _ in devices:
        os.makedirs(os.path.join(root, v, uverbs))
        cdevs[uverbs] = cdev
    functions = [f for _, _, f in devices]
    for index, uverbs in enumerate(listing_order(os.path.join(root, v))):
        cdev, function = cdevs[uverbs], functions[index]
        ibdev = "onchip_%d" % index
        _write(root, "%s/%s/ibdev" % (v, uverbs), ibdev)
        _write(root, "%s/%s/dev" % (v, uverbs), "%d:%d" % cdev)
        _write(root, "%s/%s/abi_version" % (v, uverbs), str(PROVIDER_ABI))
        _device(root, ibdev, function)
    return root


def _device(root, ibdev, function):
    d = "class/infiniband/" + ibdev
    guid = node_guid(function.mac)
    _write(root, d + "/node_type", "1: CA")
    _write(root, d + "/node_guid", guid)
    _write(root, d + "/sys_image_guid", guid)
    _write(root, d + "/fw_ver", FW_VER)
    _write(root, d + "/board_id", BOARD_ID)
    _write(root, d + "/node_desc", "%s onchip software ConnectX" % ibdev)
    _write(root, d + "/device/modalias", MODALIAS)
    _write(root, d + "/device/onchip_locator", function.locator)

    p = d + "/ports/1"
    if function.infiniband:
        _ib_port(root, p, function)
        return
    _write(root, p + "/link_layer", "Ethernet")
    _write(root, p + "/state", "4: ACTIVE")
    _write(root, p + "/phys_state", "5: LinkUp")
    _write(root, p + "/rate", "100 Gb/sec (4X EDR)")
    _write(root, p + "/lid", "0x0")
    _write(root, p + "/sm_lid", "0x0")
    _write(root, p + "/sm_sl", "0")
    _write(root, p + "/lmc", "0")
    _write(root, p + "/cap_mask", "0x%08x" % PORT_CAP_MASK)
    _write(root, p + "/pkeys/0", "0xffff")
    _gid_table(root, p, gids(function.mac, function.ipv4), ROCE_GID_TABLE_SIZE, NETDEV)


def _ib_port(root, p, function):
    """Port 1 of an InfiniBand function, as mlx5_ib publishes it (no netdev behind its GID)."""
    _write(root, p + "/link_layer", "InfiniBand")
    _write(root, p + "/state", "4: ACTIVE")
    _write(root, p + "/phys_state", "5: LinkUp")
    _write(root, p + "/rate", "100 Gb/sec (4X EDR)")
    _write(root, p + "/lid", "0x%x" % function.lid)
    _write(root, p + "/sm_lid", "0x%x" % function.sm_lid)
    _write(root, p + "/sm_sl", "0")
    _write(root, p + "/lmc", "0")
    _write(root, p + "/cap_mask", "0x%08x" % IB_PORT_CAP_MASK)
    _write(root, p + "/pkeys/0", "0xffff")
    _gid_table(root, p, [(ib_port_gid(function.mac), "IB/RoCE v1")], IB_GID_TABLE_SIZE, None)
