"""The device daemon's functions published for programs started without the launcher.

`tools/onchip sim start` calls publish(): beside the daemon's socket it writes the sysfs tree
(sysfs_tree.py) at <socket dir>/sys, one device per function, and, as root, makes one host
/dev/infiniband/uverbsN per function (uverbs_node.HostNode, recorded for the daemon's pid, so a
sweep removes them once the daemon is gone). A program then finds onchip_0, onchip_1 with
SYSFS_PATH=<socket dir>/sys and the provider named by RDMAV_DRIVERS or an
/etc/libibverbs.d/*.driver file (`tools/onchip env` prints the variables).

What it cannot do: libibverbs 44 lists a device only when /dev/infiniband/<uverbsN> exists
(rdma-core libibverbs/init.c, try_access_device), and only root may make that node on the host,
so as a normal user the devices stay invisible outside `tools/onchip run` (which makes them in a
private mount namespace). libibverbs also ignores SYSFS_PATH's tree when the kernel's RDMA netlink
answers (ib_core loaded; init.c ibverbs_get_device_list asks netlink first).
"""
import json
import os
import shutil

import sysfs_tree
import uverbs_node

STATE = "published.json"  # {"pid": daemon pid, "nodes": ["uverbs3", ...]}


def sysfs_root(socket_path):
    return os.path.join(os.path.dirname(socket_path), "sys")


def read_state(socket_path):
    try:
        with open(os.path.join(os.path.dirname(socket_path), STATE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def publish(socket_path, status):
    """Publishes the functions of the daemon whose `status` (daemon_status.status) answers on
    `socket_path`; returns (sysfs root, uverbs names made on the host, [] when not root)."""
    unpublish(socket_path)
    if os.geteuid() == 0:
        uverbs_node.sweep()
    functions = [sysfs_tree.Function.from_status("simd:%s#%d" % (socket_path, f["index"]), f)
                 for f in status["functions"]]
    names = []
    if os.geteuid() == 0:
        for _ in functions:
            names.append(uverbs_node.HostNode(owner=int(status["pid"])).create())
    else:
        names = ["uverbs%d" % n for n in range(len(functions))]
    root = sysfs_root(socket_path)
    sysfs_tree.build_devices(root, [(n, uverbs_node.CDEV, f) for n, f in zip(names, functions)])
    made = names if os.geteuid() == 0 else []
    with open(os.path.join(os.path.dirname(socket_path), STATE), "w") as f:
        json.dump({"pid": int(status["pid"]), "nodes": made}, f)
    return root, made


def unpublish(socket_path):
    """Removes what publish() made for `socket_path` (the nodes only while they are ours)."""
    state = read_state(socket_path)
    for name in (state or {}).get("nodes", []):
        node = os.path.join(uverbs_node.DEV_DIR, name)
        record = os.path.join(uverbs_node.REGISTRY, name)
        try:
            with open(record) as f:
                owner = int(f.read().strip())
        except (OSError, ValueError):
            continue  # not recorded as the daemon's: another run's node now
        if owner == state.get("pid") and uverbs_node.is_onchip_node(node):
            for path in (node, record):
                try:
                    os.unlink(path)
                except OSError:
                    pass
    shutil.rmtree(sysfs_root(socket_path), ignore_errors=True)
    try:
        os.unlink(os.path.join(os.path.dirname(socket_path), STATE))
    except OSError:
        pass
