"""A shell test that runs unmodified programs through a device daemon of its own."""

load("//tools/build:defs.bzl", "onchip_sh_test")

def daemon_test(name, src):
    """Runs `src` with the arguments LAUNCH_PY PLUGIN SIMD: the verbs environment's launcher,
    onchip's libibverbs plugin and the device daemon it starts (tier1; not under
    the sanitizers: a sanitized plugin does not load into the unmodified programs)."""
    onchip_sh_test(
        name = name,
        size = "medium",
        srcs = [src],
        args = [
            "$(rootpath //tools/verbs_env:launch.py)",
            "$(rootpath //tools/plugin:libonchip-rdmav34.so)",
            "$(rootpath //tools/simd:onchip-simd)",
        ],
        data = [
            "//tools/plugin:libonchip-rdmav34.so",
            "//tools/simd:onchip-simd",
            "//tools/verbs_env:launch",
            "//tools/verbs_env:launch.py",
        ],
        tier = "tier1",
        tags = ["nosanitize"],
    )
