"""A C program written against <infiniband/verbs.h>, run under onchip as its provider."""

load("@rdma_core//:defines.bzl", RDMA_CORE_DEFINES = "DEFINES")
load("//tools/build:defs.bzl", "onchip_sh_test")

_PLUGIN = "//tools/plugin:libonchip-rdmav34.so"

# Built with the system compiler, not cc_binary: .bazelrc's per-file warning set for project
# directories includes the C++-only -Wnon-virtual-dtor, which gcc rejects for C under -Werror.
# Same warnings otherwise.
_CFLAGS = "-std=gnu17 -O2 -g1 -Wall -Wextra -Wpedantic -Wshadow -Wimplicit-fallthrough -Werror -iquote . "

def verbs_c_test(name, src, links_onchip = False, tier = "tier1", tags = []):
    """Builds `src` (plus checks.h) into a program and runs it through tools/verbs_env/launch.py.

    links_onchip: also link libonchip-rdmav34.so for the calls it exports under upstream names
    (DMA handles, mlx5dv DM), with uapi/verbs/dmah.h as an application would include it.
    """
    srcs = [src, "checks.h"]
    link = " -libverbs"
    if links_onchip:
        srcs += [_PLUGIN, "//uapi/verbs:dmah.h"]
        link = " -L$$(dirname $(location %s)) -lonchip-rdmav34 -libverbs" % _PLUGIN
    native.genrule(
        name = name + "_bin",
        testonly = True,
        srcs = srcs,
        outs = [name + "_program"],
        cmd = "gcc " + _CFLAGS + " ".join(["-D" + d for d in RDMA_CORE_DEFINES]) +
              " $(location %s)" % src + link + " -o $@",
    )
    onchip_sh_test(
        name = name,
        size = "small",
        srcs = ["run_under_onchip.sh"],
        args = [
            "$(rootpath //tools/verbs_env:launch.py)",
            "$(rootpath %s)" % _PLUGIN,
            "$(rootpath :%s_bin)" % name,
        ],
        data = [
            ":%s_bin" % name,
            _PLUGIN,
            "//tools/verbs_env:launch",
            "//tools/verbs_env:launch.py",
        ],
        tier = tier,
        tags = tags,
    )
