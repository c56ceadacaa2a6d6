"""onchip's Bazel macros: tests carry their tier, benchmarks are binaries.

Tiers (ARCHITECTURE.md): tier0 unit, tier1 software ConnectX, tier2 hugepages, tier3 hardware.
tools/onchip selects by these tags (CI reruns tier0 and tier1 under ASan+UBSan).
"""

_TIERS = ["tier0", "tier1", "tier2", "tier3"]

def onchip_test(name, tier, srcs, deps = [], size = "small", tags = [], **kwargs):
    """A GoogleTest suite in tier `tier`."""
    if tier not in _TIERS:
        fail("tier must be one of %s" % _TIERS)
    native.cc_test(
        name = name,
        srcs = srcs,
        size = size,
        deps = deps + ["@googletest//:gtest_main"],
        tags = tags + [tier],
        **kwargs
    )

def onchip_benchmark(name, srcs, deps = [], **kwargs):
    """A Google Benchmark suite; tools/onchip bench runs every target tagged benchmark."""
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + ["@benchmark//:benchmark_main"],
        tags = ["benchmark"],
        testonly = True,
        **kwargs
    )
