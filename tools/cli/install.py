"""tools/onchip install [--prefix P]: onchip's provider as a library other programs use.

Builds the provider and the device daemon, then installs under P (default /usr/local):

  P/lib/libonchip-rdmav34.so          the provider (libibverbs loads it; -lonchip-rdmav34 links it)
  P/etc/libibverbs.d/onchip.driver    its driver file ("driver P/lib/libonchip"); libibverbs reads
                                      only /etc/libibverbs.d, so with P=/usr it goes there, and for
                                      another P RDMAV_DRIVERS (tools/onchip env) names the provider
  P/include/onchip/dmah.h             the calls onchip adds (ibv_alloc_dmah, ibv_reg_mr_ex); the
                                      mlx5dv_* it exports are <infiniband/mlx5dv.h>'s
  P/lib/pkgconfig/onchip.pc           pkg-config --cflags --libs onchip (with an rpath to P/lib)
  P/bin/onchip-simd                   the device daemon
  P/share/man/man1/onchip.1, P/share/man/man8/onchip-simd.8

Then, once the daemon runs (tools/onchip sim start), eval "$(tools/onchip env --prefix P)" lets
an unmodified verbs program find onchip_0 and onchip_1 without tools/onchip run (as root: see
tools/verbs_env/published.py for why).
"""
import os
import shutil
import subprocess
import sys

import bazel
import progress

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS = ["//tools/plugin:libonchip-rdmav34.so", "//tools/simd:onchip-simd"]
PLUGIN = "libonchip-rdmav34.so"
DEFAULT_PREFIX = "/usr/local"


class InstallError(Exception):
    pass


def layout(prefix):
    """Where each installed file goes under `prefix`."""
    etc = "/etc" if prefix == "/usr" else os.path.join(prefix, "etc")
    return {
        "plugin": os.path.join(prefix, "lib", PLUGIN),
        "driver": os.path.join(etc, "libibverbs.d", "onchip.driver"),
        "header": os.path.join(prefix, "include", "onchip", "dmah.h"),
        "pc": os.path.join(prefix, "lib", "pkgconfig", "onchip.pc"),
        "simd": os.path.join(prefix, "bin", "onchip-simd"),
        "man1": os.path.join(prefix, "share", "man", "man1", "onchip.1"),
        "man8": os.path.join(prefix, "share", "man", "man8", "onchip-simd.8"),
    }


def pc_text(prefix, version):
    return ("prefix=%s\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n\n"
            "Name: onchip\nDescription: onchip's mlx5 libibverbs provider (device memory, DMA "
            "handles, mlx5dv calls)\nVersion: %s\nRequires: libibverbs\n"
            "Cflags: -I${includedir}\n"
            "Libs: -L${libdir} -Wl,-rpath,${libdir} -Wl,--push-state,--no-as-needed "
            "-lonchip-rdmav34 -Wl,--pop-state\n" % (prefix, version))


def install_files(prefix, plugin, simd, version, root=ROOT):
    """Copies the built `plugin` and `simd` and the tree's header and man pages under `prefix`;
    returns the layout."""
    prefix = os.path.abspath(prefix)
    where = layout(prefix)
    sources = {
        "plugin": plugin,
        "simd": simd,
        "header": os.path.join(root, "uapi", "verbs", "dmah.h"),
        "man1": os.path.join(root, "docs", "man", "onchip.1"),
        "man8": os.path.join(root, "docs", "man", "onchip-simd.8"),
    }
    try:
        for key, source in sources.items():
            os.makedirs(os.path.dirname(where[key]), exist_ok=True)
            shutil.copyfile(source, where[key])
            os.chmod(where[key], 0o755 if key in ("plugin", "simd") else 0o644)
        for key, text in (("driver", "driver %s\n" % where["plugin"][: -len("-rdmav34.so")]),
                          ("pc", pc_text(prefix, version))):
            os.makedirs(os.path.dirname(where[key]), exist_ok=True)
            with open(where[key], "w") as f:
                f.write(text)
    except OSError as e:
        raise InstallError("cannot install into %s: %s (%s); choose a --prefix you may write"
                           % (prefix, e.strerror, e.filename or ""))
    return where


def run(args, version):
    prefix = os.path.abspath(args.prefix)
    probe = prefix
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.access(probe, os.W_OK):
        raise InstallError("%s is not writable; run as root or pass --prefix DIR" % probe)
    progress.step("building %s" % " ".join(TARGETS), file=sys.stderr)
    if bazel.run(["build"] + TARGETS, cwd=ROOT, file=sys.stderr, terse=True) != 0:
        raise InstallError("the build failed (Bazel's errors are above)")
    try:
        bin_dir = bazel.info("bazel-bin", cwd=ROOT)
    except subprocess.CalledProcessError as e:
        raise InstallError("bazel info bazel-bin failed: %s" % (e.stderr or "").strip())
    where = install_files(prefix, os.path.join(bin_dir, "tools", "plugin", PLUGIN),
                          os.path.join(bin_dir, "tools", "simd", "onchip-simd"), version)
    for path in where.values():
        print(path)
    progress.step("installed onchip %s under %s; next: tools/onchip sim start, then "
                  "eval \"$(tools/onchip env --prefix %s)\"" % (version, prefix, prefix),
                  file=sys.stderr)
    return 0
