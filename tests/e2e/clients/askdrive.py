#!/usr/bin/python3
"""Runs a command on a fresh pseudo-terminal (its controlling terminal) and
answers egressctl's --ask questions: each ANSWER in turn to each question
that appears ("-" means: do not answer). Prints one JSON line: the whole
terminal output, how many questions were seen, and the exit status.

usage: askdrive.py [--limit S] ANSWERS -- CMD [ARG]...   (ANSWERS: e.g. "y", "a", "n,y", "-")
"""
import json
import os
import pty
import select
import sys
import time


def main():
    args = sys.argv[1:]
    limit = 30.0
    if args[:1] == ["--limit"]:
        limit = float(args[1])
        args = args[2:]
    answers = args[0].split(",")
    cmd = args[args.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    out = b""
    seen = 0
    end = time.monotonic() + limit
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
        while out.count(b"[N]o") > seen:
            ans = answers[seen] if seen < len(answers) else "-"
            seen += 1
            if ans != "-":
                os.write(fd, ans.encode() + b"\n")
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    print(json.dumps({"out": out.decode(errors="replace"), "questions": seen, "rc": rc}))


main()
