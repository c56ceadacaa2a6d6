"""Forward the rules_cc API to Bazel 4.2.3's native C++ rules.

Debian ships rules_cc 0.0.4, which targets a newer Bazel (it loads use_cpp_toolchain,
absent from 4.2.3). Everything Bazel's own C++ tooling loads from @rules_cc is here.
"""

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)
