#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""reaper.py CMD [ARG]...: runs CMD (the e2e suite) as a child subreaper.

Orphans of the suite -- confined processes whose egressctl was SIGKILLed,
double-forked grandchildren, a listener forked by a probe -- are reparented
here instead of to PID 1 (which, on some VMs, never reaps them), and are
reaped here.  SIGINT/SIGTERM/SIGHUP are forwarded to CMD so its EXIT trap
cleans up.  When CMD exits, any descendant still left is one of ours: it is
killed by pid and reaped.  Exits with CMD's status (128+N if killed by N).
Prints nothing, so the suite's last line stays its summary.
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def children():
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == me:
            out.append(int(d))
    return out


def main():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os.execvp(sys.argv[1], sys.argv[1:])  # no subreaper: run CMD as is
    pid = os.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)

    status = 1
    while True:
        try:
            p, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if p == pid:
            status = os.waitstatus_to_exitcode(st)
            break
    end = time.monotonic() + 5
    while time.monotonic() < end:
        left = children()
        if not left:
            break
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break
        time.sleep(0.05)
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
