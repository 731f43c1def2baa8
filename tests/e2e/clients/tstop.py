#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One thread of a process stopped for a while, the others left running
(tests/e2e/docker.sh packet: the daemon's loop stopped, its packet guard's
thread not).

    tstop.py TID SECONDS

PTRACE_SEIZE and PTRACE_INTERRUPT stop the thread TID alone (no SIGSTOP,
so no group stop of its process); prints "stopped" once it is, lets it go
(PTRACE_DETACH) after SECONDS, then prints "released". Exits 1 with the
reason when the thread cannot be stopped.
"""
import ctypes
import os
import sys
import time

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid):
    if libc.ptrace(req, tid, None, None) < 0:
        err = ctypes.get_errno()
        sys.exit("tstop: ptrace %#x of %d: %s" % (req, tid, os.strerror(err)))


def main():
    tid, secs = int(sys.argv[1]), float(sys.argv[2])
    ptrace(PTRACE_SEIZE, tid)
    ptrace(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, WALL)
    print("stopped", flush=True)
    time.sleep(secs)
    ptrace(PTRACE_DETACH, tid)
    print("released", flush=True)


if __name__ == "__main__":
    main()
