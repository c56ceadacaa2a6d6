"""onchip's Bazel macros: tests carry their tier, benchmarks are binaries.

Tiers (ARCHITECTURE.md): tier0 unit, tier1 software ConnectX, tier2 hugepages, tier3 hardware.
tools/onchip selects by these tags (CI reruns tier0 and tier1 under ASan+UBSan). A test of tier
"on_demand" is tagged manual and no tier: only `bazel test` of its label runs it (the long soaks).
Every test of the tree is one of these macros' (tests/unit/docs:tier_macro_test).
"""

_TIERS = ["tier0", "tier1", "tier2", "tier3", "on_demand"]

def _with_tier(tier, tags):
    if tier not in _TIERS:
        fail("tier must be one of %s" % _TIERS)
    return tags + ["manual" if tier == "on_demand" else tier]

def onchip_test(name, tier, srcs, deps = [], size = "small", tags = [], **kwargs):
    """A GoogleTest suite in tier `tier`."""
    native.cc_test(
        name = name,
        srcs = srcs,
        size = size,
        deps = deps + ["@googletest//:gtest_main"],
        tags = _with_tier(tier, tags),
        **kwargs
    )

def onchip_py_test(name, tier, tags = [], **kwargs):
    """A Python test in tier `tier`."""
    native.py_test(name = name, tags = _with_tier(tier, tags), **kwargs)

def onchip_sh_test(name, tier, tags = [], **kwargs):
    """A shell test in tier `tier`."""
    native.sh_test(name = name, tags = _with_tier(tier, tags), **kwargs)

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
