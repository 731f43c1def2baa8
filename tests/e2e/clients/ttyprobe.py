#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a hostile CMD does to the terminal egressctl asks its --ask questions
on, for the egressctl end-to-end suite (audit.sh).

    ttyprobe.py control TEXT           TIOCSTI TEXT+CR into /dev/tty, then read a
                                       line from stdin: without a sandbox the
                                       terminal hands the injected line back
    ttyprobe.py attack OUT SECONDS TEXT EGRPID [PIDFILE]
                                       for SECONDS, every 0.1 s, try to type
                                       TEXT+CR into the terminal egressctl reads:
                                       TIOCSTI on /dev/tty and on stdio, TIOCLINUX,
                                       the outer terminal opened by path ($OUTER_TTY,
                                       if what opens is $OUTER_TTY_ID, and every
                                       /dev/pts/N not our own), and the
                                       descriptors 0-2 of egressctl (EGRPID) and of
                                       the pid in PIDFILE (a process of the user's
                                       outside the sandbox that holds the outer
                                       terminal) through /proc/PID/fd; writes one
                                       JSON object to OUT: per vector "ok" if any
                                       attempt typed into a terminal, else its
                                       errors ("open EACCES", "EPERM", ...), and
                                       how many injections went through
    ttyprobe.py chatter MARK SECONDS   print MARK-n every 0.05 s for SECONDS
    ttyprobe.py forge TARGET           print a question that looks like
                                       egressctl's, read the answer line from
                                       stdin and print it as "forged-answer=..."
    ttyprobe.py session                what CMD's terminal is (one JSON line:
                                       isatty of fds 0-2, ttyname, session
                                       leader, size), then "READY"; waits (10 s
                                       at most) for the size to change and
                                       prints "size2=ROWSxCOLS"; then
                                       "cat-start", reads stdin to EOF, prints
                                       "cat-done=..." and exits 7

Only terminals and /proc are touched: no network traffic at all.
"""
import errno as errno_mod
import fcntl
import json
import os
import re
import struct
import sys
import termios
import time

TIOCSTI = getattr(termios, "TIOCSTI", 0x5412)
TIOCLINUX = getattr(termios, "TIOCLINUX", 0x541C)


def ename(e):
    return errno_mod.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) else str(e)


def sti(fd, text):
    for ch in text.encode():
        fcntl.ioctl(fd, TIOCSTI, bytes([ch]))


def cmd_control(text):
    res = {"ok": False}
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
        sti(fd, text + "\r")
        os.close(fd)
        res["injected"] = True
    except OSError as e:
        res["errno"] = ename(e)
        print(json.dumps(res), flush=True)
        return
    line = sys.stdin.readline().strip()
    res["read"] = line
    res["ok"] = line == text
    print(json.dumps(res), flush=True)


def same_tty(fd, path):
    try:
        return os.fstat(fd).st_rdev == os.stat(path).st_rdev
    except OSError:
        return False


def cmd_attack(out, seconds, text, egrpid, pidfile=None):
    seen = {}
    injected = 0
    payload = text + "\r"

    def note(vector, result):
        seen.setdefault(vector, set()).add(result)

    def try_sti(vector, opener):
        nonlocal injected
        try:
            fd = opener()
        except OSError as e:
            note(vector, "open " + ename(e))
            return
        try:
            sti(fd, payload)
            injected += 1
            note(vector, "ok")
        except OSError as e:
            note(vector, ename(e))
        finally:
            if fd > 2:
                os.close(fd)

    def open_rw(path):
        return lambda: os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)

    holder = None
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        try_sti("sti_dev_tty", open_rw("/dev/tty"))
        ttys = [fd for fd in (0, 1, 2) if os.isatty(fd)]
        for fd in ttys:
            try_sti("sti_stdio", lambda fd=fd: fd)
        if not ttys:
            note("sti_stdio", "not a tty")
        try:
            fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
            try:
                # subcode 3: paste the selection (a VT only; ENOTTY/EINVAL elsewhere)
                fcntl.ioctl(fd, TIOCLINUX, bytes([3]))
                note("tioclinux", "ok")
            except OSError as e:
                note("tioclinux", ename(e))
            os.close(fd)
        except OSError as e:
            note("tioclinux", "open " + ename(e))
        outer = os.environ.get("OUTER_TTY")
        if outer:
            try:
                fd = os.open(outer, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
                st = os.fstat(fd)
                os.close(fd)
                if "%d:%d" % (st.st_dev, st.st_ino) == os.environ.get("OUTER_TTY_ID"):
                    try_sti("outer_by_path", open_rw(outer))
                else:
                    note("outer_by_path", "not the outer terminal")
            except OSError as e:
                note("outer_by_path", "open " + ename(e))
        else:
            note("outer_by_path", "no OUTER_TTY")
        others = 0
        try:
            names = [n for n in os.listdir("/dev/pts") if n.isdigit()]
        except OSError as e:
            names = []
            note("other_pts", "listdir " + ename(e))
        for n in names:
            p = "/dev/pts/" + n
            if any(same_tty(fd, p) for fd in ttys):
                continue
            others += 1
            try_sti("other_pts", open_rw(p))
        if not others:
            note("other_pts", "none visible")
        if holder is None and pidfile:
            try:
                holder = int(open(pidfile).read().split()[0])
            except (OSError, ValueError, IndexError):
                holder = None
        for tag, pid in (("proc_fd_egressctl", int(egrpid)), ("proc_fd_holder", holder)):
            if pid is None:
                note(tag, "no pid")
                continue
            for fd in (0, 1, 2):
                try_sti(tag, open_rw("/proc/%d/fd/%d" % (pid, fd)))
        time.sleep(0.1)
    vectors = {k: "ok" if "ok" in v else ",".join(sorted(v)) for k, v in seen.items()}
    res = {"vectors": vectors, "injected": injected, "pid": os.getpid(), "uid": os.getuid()}
    with open(out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out + ".tmp", out)


def cmd_chatter(mark, seconds):
    end = time.monotonic() + float(seconds)
    n = 0
    while time.monotonic() < end:
        n += 1
        try:
            os.write(1, ("%s-%d\n" % (mark, n)).encode())
        except OSError:
            return
        time.sleep(0.05)


def cmd_forge(target):
    os.write(1, ("\r\negressctl: allow %s for curl[%d]? [y]es once / [a]lways this run / "
                 "[N]o (3 s) " % (target, os.getpid())).encode())
    line = sys.stdin.readline()
    line = re.sub(r"[^ -~]", "?", line.rstrip("\r\n"))
    os.write(1, ("\r\nforged-answer=%s\r\n" % line).encode())


def winsize():
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))
    return "%dx%d" % (rows, cols)


def cmd_session():
    info = {"isatty": [os.isatty(fd) for fd in (0, 1, 2)],
            "ttyname": os.ttyname(0) if os.isatty(0) else None,
            "session_leader": os.getsid(0) == os.getpid(), "size": winsize()}
    print(json.dumps(info), flush=True)
    print("READY", flush=True)
    first = winsize()
    end = time.monotonic() + 10
    while winsize() == first and time.monotonic() < end:
        time.sleep(0.05)
    print("size2=" + winsize(), flush=True)
    print("cat-start", flush=True)
    data = sys.stdin.read()
    print("cat-done=%s" % data.strip(), flush=True)
    sys.exit(7)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"control": cmd_control, "attack": cmd_attack, "chatter": cmd_chatter,
     "forge": cmd_forge, "session": cmd_session}[cmd](*args)


main()
