#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The kernel's knobs through other mounts of their filesystems (a second
procfs, a bind of /proc or /proc/sys, a second sysfs, tracefs, debugfs,
binfmt_misc, securityfs, ...), for tests/e2e/sudo.sh and cisudo.sh (the
mounts: tests/e2e/pfs.sh).

    kfprobe.py [--netns INODE] NAME=OP:PATH ...

One JSON line per attempt, {"name", "ok", "errno", "data"}; "ok" means the
way to the knob is open (what the sandbox must make false):

    open-w    open PATH for writing, close it unwritten
    rewrite   read PATH's value, open it for writing and write that same
              value back (core_pattern, tracing_on): nothing changes
    status    binfmt_misc's status: "enabled" is written back as "1",
              "disabled" as "0" (the same state)
    bump      an integer sysctl under /net/ of the CALLER'S OWN network
              namespace (the suite's test netns): write value+1, read it
              back, write the value read first again; data "OLD->READ"
    visible   PATH shows the kernel's files: a directory with entries, or a
              file that is not /dev/null (false: masked, hidden, absent)
    rw-mount  the mount PATH is on is not read-only (statvfs)

SAFETY: nothing is ever written but the value just read (rewrite, status),
or a network sysctl of the caller's own namespace put back at once (bump).
With --netns INODE (the inode of the test's network namespace, as `stat -L
-c %i /run/netns/NAME` gives it), nothing at all is tried, and the status
is 2, unless the caller's own network namespace is that one: no bump ever
reaches a namespace the test did not make (the host's).
"""
import errno as errno_mod
import json
import os
import stat
import sys


def ename(e):
    return errno_mod.errorcode.get(e, str(e))


def out(name, ok, err="", data=""):
    print(json.dumps({"name": name, "ok": bool(ok), "errno": err, "data": data}), flush=True)


def read(path):
    with open(path) as f:
        return f.read()


def write(path, value):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def op_open_w(path):
    os.close(os.open(path, os.O_WRONLY))
    return True, ""


def op_rewrite(path):
    value = read(path).rstrip("\n")
    write(path, value + "\n")
    return True, value


def op_status(path):
    value = read(path).strip()
    if value not in ("enabled", "disabled"):
        return False, "unexpected status %r" % value
    write(path, "1" if value == "enabled" else "0")
    return True, value


def op_bump(path):
    if "/net/" not in path:
        raise SystemExit("kfprobe: bump is for network sysctls only: " + path)
    old = int(read(path))
    try:
        write(path, "%d\n" % (old + 1))
        now = int(read(path))
    finally:
        if int(read(path)) != old:
            write(path, "%d\n" % old)
    return now == old + 1, "%d->%d" % (old, now)


def op_visible(path):
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        n = len(os.listdir(path))
        return n > 0, "%d entries" % n
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3):
        return False, "/dev/null"
    return True, "a file"


def op_rw_mount(path):
    ro = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    return not ro, "ro" if ro else "rw"


OPS = {"open-w": op_open_w, "rewrite": op_rewrite, "status": op_status, "bump": op_bump,
       "visible": op_visible, "rw-mount": op_rw_mount}


def main():
    args = sys.argv[1:]
    if args[:1] == ["--netns"]:
        want, args = args[1], args[2:]
        have = os.stat("/proc/self/ns/net").st_ino
        if str(have) != want:
            print("kfprobe: in network namespace %d, not the test's %s: nothing tried" % (have, want),
                  file=sys.stderr)
            sys.exit(2)
    for arg in args:
        name, rest = arg.split("=", 1)
        op, path = rest.split(":", 1)
        try:
            ok, data = OPS[op](path)
            out(name, ok, data=data)
        except OSError as e:
            out(name, False, ename(e.errno), path)


main()
