"""Repository rules that turn installed Debian packages into Bazel repositories.

Headers stay where Debian put them (/usr/include is one of the compiler's builtin include
directories, so Bazel's inclusion check accepts them); the repositories only carry the
link flags and, for pkg-config packages, the compile flags as a .bzl constant.
"""

def _probe_defines(ctx):
    """The macros of `probes` whose header (under /usr/include) declares the symbol."""
    defines = []
    for define, probe in ctx.attr.probes.items():
        header, symbol = probe.split(":")
        path = ctx.path("/usr/include/" + header)
        if path.exists and ctx.read(path).find(symbol + "(") >= 0:
            defines.append(define)
    return sorted(defines)

def _system_library_impl(ctx):
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("defines.bzl", "# What the installed headers already declare (probes in WORKSPACE).\n" +
                            "DEFINES = %s\n" % repr(_probe_defines(ctx)))
    ctx.symlink(ctx.attr.build_file, "BUILD")

system_library = repository_rule(
    implementation = _system_library_impl,
    attrs = {
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        # {"MACRO": "dir/header.h:symbol"}: MACRO goes into defines.bzl's DEFINES when
        # /usr/include/dir/header.h declares symbol( ... ). A BUILD file loads DEFINES from
        # ":defines.bzl" for the targets whose users must know (e.g. to skip a fallback header).
        "probes": attr.string_dict(default = {}),
    },
    local = True,
)

def _split_cflags(text):
    """Splits pkg-config cflags, keeping `-include FILE` as one option."""
    out = []
    pending = None
    for token in text.split(" "):
        token = token.strip()
        if not token:
            continue
        if pending:
            out.append(pending + " " + token)
            pending = None
        elif token == "-include":
            pending = token
        else:
            out.append(token)
    return out

def _pkg_config_repository_impl(ctx):
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    result = ctx.execute(["pkg-config", "--cflags", ctx.attr.package])
    if result.return_code != 0:
        fail("pkg-config %s failed (is its -dev package installed? tools/onchip installs it): %s" %
             (ctx.attr.package, result.stderr))
    copts = []
    for flag in _split_cflags(result.stdout):
        if flag.startswith("-march=") or flag.startswith("-mtune="):
            continue  # the ISA is onchip's choice (see COPTS below), not the package's
        if flag.startswith("-I"):
            path = flag[2:]
            if any([path.find(skip) >= 0 for skip in ctx.attr.drop_include_dirs]):
                continue
            flag = "-isystem" + path  # outside the workspace: a system include, warnings off
        copts.append(flag)
    copts.extend(ctx.attr.extra_copts)
    ctx.file("flags.bzl", "# Generated from `pkg-config --cflags %s`.\nCOPTS = %s\n" %
                          (ctx.attr.package, repr(copts)))
    ctx.symlink(ctx.attr.build_file, "BUILD")

pkg_config_repository = repository_rule(
    implementation = _pkg_config_repository_impl,
    attrs = {
        "package": attr.string(mandatory = True),
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        # libdpdk.pc drags in dbus and libnl include dirs that EAL users never need, and one
        # of them (/usr/lib/.../dbus-1.0/include) is outside the builtin include dirs.
        "drop_include_dirs": attr.string_list(default = ["dbus-1.0", "libnl3"]),
        # DPDK 22.11 in Debian is built for corei7 (SSE4.2); x86-64-v2 is the same ISA level,
        # named portably. Project code outside alloc/ keeps the distro baseline and reaches
        # wider ISAs only through runtime dispatch (mmio/).
        "extra_copts": attr.string_list(default = ["-march=x86-64-v2"]),
    },
    local = True,
)
