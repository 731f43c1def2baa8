#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a command on a fresh pseudo-terminal (its controlling terminal) and
answers egressctl's --ask questions: each ANSWER in turn to each question
that appears ("-" means: do not answer). Prints one JSON line: the whole
terminal output, how many questions were seen, the exit status, and whether
the terminal's modes were back to cooked (ICANON and ECHO) at the end.

usage: askdrive.py [--limit S] [--tty-owner UID] [--on TEXT ACTION]...
                   ANSWERS -- CMD [ARG]...
       (ANSWERS: e.g. "y", "a", "n,y", "-")

The terminal starts 24x80. CMD finds the terminal's name in $OUTER_TTY and
its file's st_dev:st_ino in $OUTER_TTY_ID (the --ask injection tests try to
reach it by path from inside the sandbox, where another devpts may have a
pty of the same name). --tty-owner makes UID the terminal's owner, as a
login makes the user the owner of theirs. --on runs ACTION once, when TEXT
first appears in the output: "resize:ROWS:COLS" (the terminal's size; its
foreground process group gets SIGWINCH), "send:HEX" (type those bytes),
"signal:N" (send signal N to CMD).
"""
import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import time


def main():
    args = sys.argv[1:]
    limit = 30.0
    owner = None
    actions = []
    while args[:1] in (["--limit"], ["--tty-owner"], ["--on"]):
        if args[0] == "--limit":
            limit = float(args[1])
        elif args[0] == "--tty-owner":
            owner = int(args[1])
        else:
            actions.append([args[1].encode(), args[2], False])
            args = args[1:]
        args = args[2:]
    answers = args[0].split(",")
    cmd = args[args.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.environ["OUTER_TTY"] = os.ttyname(0)
        st = os.fstat(0)
        os.environ["OUTER_TTY_ID"] = "%d:%d" % (st.st_dev, st.st_ino)
        if owner is not None:
            os.fchown(0, owner, -1)
        os.execvp(cmd[0], cmd)
    out = b""
    seen = 0
    status = None
    end = time.monotonic() + limit
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            # EIO: no fd holds the terminal right now (CMD with its stdio
            # elsewhere, before it opens /dev/tty); over once CMD is
            _, st = os.waitpid(pid, os.WNOHANG)
            if _:
                status = st
                break
            time.sleep(0.05)
            continue
        out += data
        while out.count(b"[N]o") > seen:
            ans = answers[seen] if seen < len(answers) else "-"
            seen += 1
            if ans != "-":
                os.write(fd, ans.encode() + b"\n")
        for a in actions:
            if a[2] or a[0] not in out:
                continue
            a[2] = True
            kind, _, arg = a[1].partition(":")
            if kind == "resize":
                rows, cols = (int(x) for x in arg.split(":"))
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            elif kind == "send":
                os.write(fd, bytes.fromhex(arg))
            elif kind == "signal":
                os.kill(pid, int(arg))
    else:
        os.kill(pid, 9)
    if status is None:
        _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    try:
        lflag = termios.tcgetattr(fd)[3]
        restored = bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO)
    except termios.error:
        restored = None
    print(json.dumps({"out": out.decode(errors="replace"), "questions": seen, "rc": rc,
                      "modes_restored": restored}))


main()
