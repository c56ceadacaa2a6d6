"""tools/onchip: build, test, benchmark and run onchip on the software ConnectX.

Subcommands (tools/onchip help <subcommand> for options):
  test    install what is missing, reserve hugepages, build, run every test, count test cases
  bench   the same set-up, then the benchmark suites (the device-memory report)
  run     run a verbs program on the software ConnectX: tools/onchip run -- ibv_devinfo -v
  help    this text
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench  # noqa: E402
import run  # noqa: E402
import setup  # noqa: E402
import testing  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parser():
    p = argparse.ArgumentParser(prog="tools/onchip", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND")
    t = sub.add_parser("test", help="build and run every test; ends with 'N passed, N failed'",
                       description=testing.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--sanitize", action="store_true",
                   help="run the tier0 and tier1 tests under ASan+UBSan instead")
    t.add_argument("--tiers", default="",
                   help="comma-separated tiers to run (tier0,tier1,tier2,tier3); default all")
    t.add_argument("targets", nargs="*", help="Bazel test targets (default //tests/... //tools/... //uapi/...)")
    b = sub.add_parser("bench", help="run the benchmark suites and print the report",
                       description=bench.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = b.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="short runs, under 30 seconds")
    mode.add_argument("--full", action="store_true", help="long runs with more repetitions")
    b.add_argument("--out", default=os.path.join(ROOT, "out", "bench"),
                   help="where the JSON results and the report go")
    b.add_argument("--device", default="auto", metavar="sim|auto|vfio:BDF",
                   help="sim: the software ConnectX; vfio:dddd:bb:dd.f: that ConnectX, bound to "
                        "vfio-pci; auto (default): a usable VFIO-bound ConnectX, else sim")
    b.add_argument("--suite", action="append", default=[], metavar="PATH",
                   help="run this prebuilt benchmark binary (repeatable) instead of building //bench")
    r = sub.add_parser("run", help="run CMD against the software ConnectX through libibverbs",
                       description=run.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--dev-node", choices=["auto", "host", "namespace"], default="auto",
                   help="how to make /dev/infiniband/uverbsN (default: mknod as root, else a "
                        "private mount namespace)")
    r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS")
    h = sub.add_parser("help", help="what each subcommand does")
    h.add_argument("topic", nargs="?")
    return p


def main(argv):
    p = parser()
    args = p.parse_args(argv)
    if args.command == "run":
        return run.run(args)  # in the caller's directory; needs only the plugin, no test set-up
    if args.command == "bench":  # paths given on the command line are the caller's
        args.out = os.path.abspath(args.out)
        args.suite = [os.path.abspath(p) for p in args.suite]
    os.chdir(ROOT)
    if args.command in (None, "help"):
        topic = getattr(args, "topic", None)
        if topic:
            p.parse_args([topic, "--help"])
        p.print_help()
        return 0
    if not (args.command == "bench" and args.suite):  # prebuilt suites need no packages or build
        setup.prepare()
    if args.command == "test":
        return testing.run(args)
    if args.command == "bench":
        return bench.run(args)
    p.error("unknown subcommand %s" % args.command)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
