"""/dev/infiniband/uverbsN: the character device node libibverbs opens for the software ConnectX.

libibverbs insists on a char device whose major:minor equals the sysfs `dev` file; the node is
never read or written (the provider swaps it for a harmless fd), so /dev/null's 1:3 serves.

Two ways to make it, tried in order:
  - on the host, as root: mknod a fresh /dev/infiniband/uverbsN (the first free N, so concurrent
    runs never share or remove each other's node); removed again afterwards;
  - in a private mount namespace (unshare; a user namespace too when not root): a tmpfs mirror of
    /dev with /dev/null bind-mounted at infiniband/uverbs0 replaces /dev for the command only.
    Nothing on the host changes.
"""
import ctypes
import errno
import os
import stat

CDEV = (1, 3)  # /dev/null
DEV_DIR = "/dev/infiniband"
MAX_NODES = 64
REGISTRY = "/run/onchip-uverbs"  # one file per node made, named as the node, holding its pid


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_onchip_node(path):
    """Whether `path` is a node this module makes (a char device numbered as /dev/null)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(*CDEV)


def sweep(registry=REGISTRY, dev_dir=DEV_DIR):
    """Removes the recorded nodes whose pid no longer runs; returns their names."""
    swept = []
    try:
        records = os.listdir(registry)
    except OSError:
        return swept
    for name in records:
        if name.startswith("."):
            continue
        record = os.path.join(registry, name)
        try:
            with open(record) as f:
                pid = int(f.read().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        if pid and alive(pid):
            continue
        node = os.path.join(dev_dir, name)
        if is_onchip_node(node):
            try:
                os.unlink(node)
                swept.append(name)
            except OSError:
                pass
        try:
            os.unlink(record)
        except OSError:
            pass
    return swept


class HostNode:
    """A node made with mknod on the host /dev; remove() undoes exactly what create() did."""

    def __init__(self, owner=None, registry=REGISTRY):
        self.path = None
        self.made_dir = False
        self.owner = owner or os.getpid()  # the pid the node lives for
        self.registry = registry

    def create(self):
        """Returns the uverbs name ("uverbs3"), or raises OSError when the host /dev is out of reach."""
        if os.geteuid() != 0:
            raise PermissionError(errno.EPERM, "mknod needs root")
        for _ in range(3):  # a concurrent run may remove an empty /dev/infiniband under us
            if not os.path.isdir(DEV_DIR):
                try:
                    os.mkdir(DEV_DIR, 0o755)
                    self.made_dir = True
                except FileExistsError:
                    pass
            for n in range(MAX_NODES):
                path = "%s/uverbs%d" % (DEV_DIR, n)
                try:
                    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*CDEV))
                except FileExistsError:
                    continue
                except FileNotFoundError:
                    break
                self.path = path
                self._record("uverbs%d" % n)
                return "uverbs%d" % n
            else:
                raise OSError(errno.ENOSPC, "no free /dev/infiniband/uverbsN below %d" % MAX_NODES)
        raise OSError(errno.ENOENT, "%s keeps disappearing" % DEV_DIR)

    def _record(self, name):
        try:
            os.makedirs(self.registry, mode=0o755, exist_ok=True)
            tmp = os.path.join(self.registry, ".%s.%d" % (name, os.getpid()))
            with open(tmp, "w") as f:
                f.write("%d\n" % self.owner)
            os.rename(tmp, os.path.join(self.registry, name))  # a sweep never reads half a pid
        except OSError:
            pass  # unrecorded: still removed by remove(), only not swept after a SIGKILL

    def remove(self):
        if self.path:
            for path in (self.path, os.path.join(self.registry, os.path.basename(self.path))):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            self.path = None
        if self.made_dir:
            try:
                os.rmdir(DEV_DIR)  # only if empty: another run may have its node there
            except OSError:
                pass
            self.made_dir = False


def unshare_prefix():
    """The unshare(1) command line that gives the child a private mount namespace."""
    base = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        base[1:1] = ["--user", "--map-root-user"]
    return base


# ---- inside the namespace ----

_MS_BIND = 4096
_MS_REC = 16384
_libc = None


def _mount(source, target, fstype, flags, data=None):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s on %s: %s" % (source, target, os.strerror(e)))


def replace_dev(scratch, count=1):
    """Inside a private mount namespace: /dev becomes a tmpfs at `scratch` mirroring the host's
    /dev entry by entry (bind mounts and symlinks), plus infiniband/uverbs0 ... uverbs<count-1>
    bound to /dev/null. Returns the uverbs names."""
    _mount("onchip-dev", scratch, "tmpfs", 0, "mode=755")
    for entry in os.scandir("/dev"):
        if entry.name == "infiniband":
            continue  # ours alone: never write through into the host's
        target = os.path.join(scratch, entry.name)
        try:
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir():
                os.mkdir(target)
                _mount(entry.path, target, None, _MS_BIND | _MS_REC)
            else:
                open(target, "w").close()
                _mount(entry.path, target, None, _MS_BIND)
        except OSError:
            continue  # an entry we may not mirror (e.g. not ours in a user namespace)
    ib = os.path.join(scratch, "infiniband")
    os.makedirs(ib, exist_ok=True)
    names = ["uverbs%d" % n for n in range(count)]
    for name in names:
        node = os.path.join(ib, name)
        if not os.path.exists(node):
            open(node, "w").close()
        _mount("/dev/null", node, None, _MS_BIND)
    _mount(scratch, "/dev", None, _MS_BIND | _MS_REC)
    return names
