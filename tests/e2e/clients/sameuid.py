#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A process of the user's outside egressctl, and what a confined command
of the same uid tries on it (tests/e2e/nosudo.sh, escapes_sameuid).

  sameuid.py hold ADDR PORT FILE   a UDP socket connected to ADDR:PORT,
                                   made here (outside any cgroup egressctl
                                   confines); "PID FD" written to FILE,
                                   then sleep 60
  sameuid.py take FILE TOKEN       each way to use the holder: one JSON line
                                   each, {"name", "ok", "errno"}; "ok": the
                                   step that leads out worked (TOKEN sent on
                                   the holder's socket, a tracer attached,
                                   its memory opened for writing, stopped)

Socket hooks judge a socket by the cgroup it was made in: the holder's
would take the confined command's datagrams out, were it handed over.
"""
import ctypes
import errno
import json
import os
import signal
import socket
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_PTRACE, NR_PIDFD_OPEN, NR_PIDFD_GETFD = 101, 434, 438
PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def out(name, ok, err=""):
    print(json.dumps({"name": name, "ok": ok, "errno": err}), flush=True)


def ename(e):
    return errno.errorcode.get(e, str(e))


def hold(addr, port, path):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((addr, int(port)))
    with open(path + ".tmp", "w") as f:
        f.write("%d %d\n" % (os.getpid(), s.fileno()))
    os.rename(path + ".tmp", path)
    time.sleep(60)


def take(path, token):
    pid, fd = (int(x) for x in open(path).read().split())
    # the holder's socket, through a pidfd (the same uid may, without Yama)
    pfd = libc.syscall(NR_PIDFD_OPEN, pid, 0)
    if pfd < 0:
        out("pidfd_getfd", False, ename(ctypes.get_errno()))
    else:
        got = libc.syscall(NR_PIDFD_GETFD, pfd, fd, 0)
        e = ctypes.get_errno()
        os.close(pfd)
        if got < 0:
            out("pidfd_getfd", False, ename(e))
        else:
            s = socket.socket(fileno=got)
            try:
                s.send(token.encode())
                out("pidfd_getfd", True)
            except OSError as x:
                out("pidfd_getfd", False, "send " + ename(x.errno))
            s.close()
    # a tracer on it (it could be made to send anything)
    r = libc.syscall(NR_PTRACE, PTRACE_ATTACH, pid, 0, 0)
    e = ctypes.get_errno()
    out("ptrace", r == 0, "" if r == 0 else ename(e))
    if r == 0:
        time.sleep(0.1)
        libc.syscall(NR_PTRACE, PTRACE_DETACH, pid, 0, 0)
    # its memory, for writing
    try:
        open("/proc/%d/mem" % pid, "r+b").close()
        out("proc_mem", True)
    except OSError as x:
        out("proc_mem", False, ename(x.errno))
    # stopped (then it could be replaced)
    try:
        os.kill(pid, signal.SIGSTOP)
        os.kill(pid, signal.SIGCONT)
        out("signal", True)
    except OSError as x:
        out("signal", False, ename(x.errno))


def main():
    a = sys.argv[1:]
    if a[:1] == ["hold"] and len(a) == 4:
        hold(a[1], a[2], a[3])
    elif a[:1] == ["take"] and len(a) == 3:
        take(a[1], a[2])
    else:
        sys.exit(__doc__)


main()
