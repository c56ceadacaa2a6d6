"""Small helpers for saying what is happening, and how far along, on a terminal or in a log."""
import subprocess
import sys
import time


def step(text):
    print("==> %s" % text, flush=True)


def note(text):
    print("    %s" % text, flush=True)


def run_streaming(cmd, filter_line=None, env=None):
    """Runs cmd, echoing its output (optionally rewritten by filter_line). Returns the exit code."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, bufsize=1)
    for line in proc.stdout:
        line = line.rstrip("\n")
        if filter_line:
            line = filter_line(line)
        if line is not None:
            print(line, flush=True)
    code = proc.wait()
    note("(%s, %.0f s)" % ("ok" if code == 0 else "exit %d" % code, time.monotonic() - started))
    return code


def fail(text):
    print("onchip: %s" % text, file=sys.stderr, flush=True)
