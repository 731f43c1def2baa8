#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a uid 0 CMD without capabilities tries against the kernel's knobs,
for the egressctl end-to-end suite (run.sh). Each subcommand prints ONE
JSON line {"ok": bool, "errno": "EROFS" | null, ...} and exits 0.

    sandboxprobe.py write PATH VALUE   write VALUE into PATH (a per-netns
                                       sysctl of the test's own netns only),
                                       read it back: {"ok", "errno", "value"}
    sandboxprobe.py open-w PATH        open PATH for writing and close it
                                       WITHOUT writing a byte (core_pattern,
                                       sysrq-trigger, /sys files, cgroup v1
                                       tasks): {"ok", "errno"}
    sandboxprobe.py kill PID           kill(PID, 0): {"ok", "errno"}

SAFETY: "open-w" never writes; "write" is only ever given a network sysctl
of the suite's own network namespace.
"""
import errno as errno_mod
import json
import os
import sys


def ename(e):
    return errno_mod.errorcode.get(e.errno, str(e.errno))


def emit(ok, err=None, **kw):
    d = {"ok": ok, "errno": ename(err) if err else None, "uid": os.getuid()}
    d.update(kw)
    print(json.dumps(d), flush=True)


def read_value(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return "read " + ename(e)


def cmd_write(path, value):
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, (value + "\n").encode())
        finally:
            os.close(fd)
        emit(True, value=read_value(path))
    except OSError as e:
        emit(False, e, value=read_value(path))


def cmd_open_w(path):
    try:
        fd = os.open(path, os.O_WRONLY)
        os.close(fd)
        emit(True)
    except OSError as e:
        emit(False, e)


def cmd_kill(pid):
    try:
        os.kill(int(pid), 0)
        emit(True)
    except OSError as e:
        emit(False, e)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"write": cmd_write, "open-w": cmd_open_w, "kill": cmd_kill}[cmd](*args)


main()
