"""Small helpers for saying what is happening, and how far along, on a terminal or in a log."""
import signal
import subprocess
import sys
import time


def step(text, file=None):
    print("==> %s" % text, file=file or sys.stdout, flush=True)


def note(text, file=None):
    print("    %s" % text, file=file or sys.stdout, flush=True)


def stop(proc):
    """Stops a child on the way out of an interrupted run: SIGINT first (Bazel cancels its build,
    a benchmark exits), then SIGTERM, then SIGKILL, each after a grace period."""
    for sig, grace in ((signal.SIGINT, 10), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        try:
            proc.send_signal(sig)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        except OSError:
            return


def run_streaming(cmd, filter_line=None, env=None, cwd=None, file=None):
    """Runs cmd, echoing its output (optionally rewritten by filter_line) to `file` (default
    stdout). Returns the exit code. An interrupt (Ctrl-C) stops the child before it propagates."""
    file = file or sys.stdout
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=cwd, bufsize=1)
    try:
        for line in proc.stdout:
            line = line.rstrip("\n")
            if filter_line:
                line = filter_line(line)
            if line is not None:
                print(line, file=file, flush=True)
        code = proc.wait()
    except BaseException:
        stop(proc)
        raise
    note("(%s, %.0f s)" % ("done" if code == 0 else "exit %d" % code, time.monotonic() - started),
         file=file)
    return code


def fail(text):
    print("onchip: %s" % text, file=sys.stderr, flush=True)
