"""tools/onchip: build, test, benchmark and run onchip, on the software ConnectX or a real one.

  tools/onchip test     build everything and run the tests; ends with `N passed, N failed`
  tools/onchip bench    benchmark device memory against host memory and print the report
  tools/onchip run -- CMD ARGS
                        run a verbs program (ibv_devinfo, pyverbs, your own) on onchip
  tools/onchip sim start|status|stop
                        the device daemon: one software ConnectX shared by many processes
  tools/onchip install [--prefix P]
                        install the provider, onchip.pc, the daemon and man pages under P
  tools/onchip env      the shell variables for verbs programs run without tools/onchip run
  tools/onchip --version
                        the commit this tree is
  tools/onchip help [SUBCOMMAND]
                        this text, or a subcommand's options

test and bench install missing Debian packages first (as root) and, as root, reserve the 2 MiB
hugepages the run needs, giving them back when it ends (--keep-hugepages keeps them).
Ctrl-C stops the run cleanly (exit status 130).
"""
import argparse
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench  # noqa: E402
import devices  # noqa: E402
import install  # noqa: E402
import progress  # noqa: E402
import run  # noqa: E402
import setup  # noqa: E402
import shell_env  # noqa: E402
import simd  # noqa: E402
import testing  # noqa: E402
import version  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Hugepages `test` reserves when its selection includes the hugepage tier: the tier2 tests need
# up to 32 free 2 MiB pages each, and Bazel runs two at a time on a 2-core machine.
TEST_HUGEPAGES = 64


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line and the usual exit status 2, without the usage block argparse repeats.
        topic = self.prog.split()[-1] if " " in self.prog else ""
        self.exit(2, "%s: %s (see: tools/onchip help%s)\n"
                  % (self.prog, message, " " + topic if topic else ""))


def parser():
    p = Parser(prog="tools/onchip",
               usage="tools/onchip {test,bench,run,sim,install,env,help} ...",
               description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
               add_help=False)
    p.add_argument("--version", action="store_true", help=argparse.SUPPRESS)
    # The subcommands are listed once, in the description; argparse's own list is suppressed.
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=Parser,
                           prog="tools/onchip", help=argparse.SUPPRESS)
    raw = argparse.RawDescriptionHelpFormatter
    t = sub.add_parser("test", description=testing.__doc__, formatter_class=raw)
    t.add_argument("--tiers", default="", metavar="TIER,...",
                   help="only these tiers: unit, device, hugepages, hardware (or tier0..tier3); "
                        "a leading '-' leaves one out; default every tier")
    t.add_argument("--sanitize", action="store_true",
                   help="run the unit and device tiers under ASan+UBSan, then the tsan tests")
    t.add_argument("--keep-hugepages", action="store_true",
                   help="keep the hugepages reserved for the run instead of giving them back")
    t.add_argument("targets", nargs="*",
                   help="Bazel test targets (default //...)")
    b = sub.add_parser("bench", description=bench.__doc__, formatter_class=raw)
    mode = b.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="short runs, under 30 seconds")
    mode.add_argument("--full", action="store_true", help="long runs with more repetitions")
    b.add_argument("--out", default=os.path.join(ROOT, "out", "bench"), metavar="DIR",
                   help="where the JSON results and the report go (default out/bench); only "
                        "bench's own files there are overwritten")
    b.add_argument("--device", default="auto", metavar="sim|auto|vfio:BDF",
                   help="sim: the software ConnectX; vfio:dddd:bb:dd.f: that ConnectX, bound to "
                        "vfio-pci; auto (default): a usable VFIO-bound ConnectX, else sim")
    b.add_argument("--suite", action="append", default=[], metavar="PATH",
                   help="run this prebuilt benchmark binary (repeatable) instead of building //bench")
    b.add_argument("--keep-hugepages", action="store_true",
                   help="keep the hugepages reserved for the run instead of giving them back")
    b.add_argument("--compare", default="", metavar="OLD.json",
                   help="after the report, print each row's time as a ratio to this earlier "
                        "report.json's (copy it aside first: bench overwrites --out's report.json)")
    r = sub.add_parser("run", description=run.__doc__, formatter_class=raw)
    r.add_argument("--dev-node", choices=["auto", "host", "namespace"], default="auto",
                   help="how to make /dev/infiniband/uverbsN (default: mknod as root, else a "
                        "private mount namespace)")
    r.add_argument("--in-process", action="store_true",
                   help="give the program its own software ConnectX inside it (the 'sim' "
                        "locator) instead of the shared device daemon")
    r.add_argument("--socket", default="", metavar="PATH",
                   help="the device daemon's socket (default: tools/onchip sim's)")
    r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS")

    s = sub.add_parser("sim", description=simd.__doc__, formatter_class=raw)
    s.add_argument("action", choices=["start", "status", "stop"])
    s.add_argument("--socket", default="", metavar="PATH",
                   help="the daemon's socket (default $XDG_RUNTIME_DIR/onchip/simd.sock, else "
                        "/run/onchip/simd.sock)")
    s.add_argument("--json", action="store_true", help="status: the daemon's JSON as it is")
    s.add_argument("--link-layer", choices=["eth", "ib"], default="eth",
                   help="start: the ports' link layer, Ethernet (RoCE, the default) or "
                        "InfiniBand (LIDs; peers addressed without a GRH)")
    i = sub.add_parser("install", description=install.__doc__, formatter_class=raw)
    i.add_argument("--prefix", default=install.DEFAULT_PREFIX, metavar="P",
                   help="where to install (default %s)" % install.DEFAULT_PREFIX)
    e = sub.add_parser("env", description=shell_env.__doc__, formatter_class=raw)
    e.add_argument("--prefix", default=install.DEFAULT_PREFIX, metavar="P",
                   help="where tools/onchip install put the provider (default %s)"
                        % install.DEFAULT_PREFIX)
    e.add_argument("--socket", default="", metavar="PATH",
                   help="the device daemon's socket (default: tools/onchip sim's)")
    h = sub.add_parser("help")
    h.add_argument("topic", nargs="?",
                   choices=["test", "bench", "run", "sim", "install", "env", "help"])
    return p


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)


def dispatch(p, args, hugepages):
    if getattr(args, "version", False):
        print("onchip %s" % version.commit())
        return 0
    if args.command == "install":
        return install.run(args, version.commit())
    if args.command == "env":
        path = os.path.abspath(args.socket) if args.socket else simd.default_socket()
        return shell_env.run(args, path)
    if args.command == "run":
        return run.run(args)  # in the caller's directory; needs only the plugin, no test set-up
    if args.command == "sim":
        return simd.run(args)
    if args.command in (None, "help"):
        topic = getattr(args, "topic", None)
        if topic and topic != "help":
            p.parse_args([topic, "--help"])
        p.print_help()
        return 0
    if args.command == "test":
        try:
            testing.passes(args)  # an unknown tier stops here, before anything is installed
        except testing.TierError as e:
            progress.fail("test: %s" % e)
            return 2
        os.chdir(ROOT)
        tiers = testing.tier_filter(args.tiers)
        wanted = TEST_HUGEPAGES if not args.sanitize and _selects(tiers, testing.TIERS["hugepages"]) else 0
        setup.prepare(hugepages, wanted, "the hugepage tests")
        # The hugepages go back before the count line, which ends the run (main's `finally`
        # then finds nothing left to give back).
        return testing.run(args, before_count=hugepages.restore)
    if args.command == "bench":
        args.out = os.path.abspath(args.out)  # paths given on the command line are the caller's
        args.suite = [os.path.abspath(s) for s in args.suite]
        args.compare = os.path.abspath(args.compare) if args.compare else ""
        try:
            choice = bench.validate(args)  # before packages, hugepages or a build
        except (devices.DeviceError, bench.UsageError) as e:
            progress.fail("bench: %s" % e)
            return 2
        os.chdir(ROOT)
        if not args.suite:  # prebuilt suites need no packages, build or hugepages
            mode = bench.mode_of(args)
            setup.prepare(hugepages, bench.HUGEPAGES[mode], "bench (%s mode)" % mode)
        return bench.run(args, choice)
    p.error("unknown subcommand %s" % args.command)
    return 2


def _selects(tag_filter, tag):
    """Whether a Bazel tag filter (testing.tier_filter's form) lets tests tagged `tag` run."""
    words = [w for w in tag_filter.split(",") if w]
    if "-" + tag in words:
        return False
    wanted = [w for w in words if not w.startswith("-")]
    return not wanted or tag in wanted


def main(argv):
    p = parser()
    args = p.parse_args(argv)
    hugepages = setup.Hugepages(keep=getattr(args, "keep_hugepages", False))
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        return dispatch(p, args, hugepages)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        progress.fail("interrupted; stopped what was running")
        return 130
    except (simd.SocketError, install.InstallError, shell_env.EnvError) as e:
        progress.fail("%s: %s" % (args.command, e))
        return 1
    except OSError as e:  # misuse the checks above did not foresee: one line, no traceback
        progress.fail("%s: %s%s" % (args.command, e.strerror or e,
                                    " (%s)" % e.filename if e.filename else ""))
        return 1
    except Exception as e:  # noqa: BLE001 - a bug still ends in one line; the traceback on demand
        if os.environ.get("ONCHIP_TRACEBACK"):
            raise
        progress.fail("%s: internal error: %s: %s (ONCHIP_TRACEBACK=1 shows where)"
                      % (args.command, type(e).__name__, e))
        return 1
    finally:
        # A second Ctrl-C must not cut the give-back short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        hugepages.restore()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
