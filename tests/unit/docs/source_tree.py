"""The source tree a test of the tree's own rules reads: where the runfile //:README.md really
lives (such tests are tagged external, since they read files Bazel does not declare)."""
import os


def root():
    here = os.path.dirname(os.path.abspath(__file__))
    for base in (os.environ.get("TEST_SRCDIR", ""), here):
        for candidate in (os.path.join(base, "onchip", "README.md"), os.path.join(base, "README.md")):
            if os.path.exists(candidate):
                return os.path.dirname(os.path.realpath(candidate))
    raise RuntimeError("cannot find the repository's README.md in the runfiles")
