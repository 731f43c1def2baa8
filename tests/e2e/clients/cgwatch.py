#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Records the id (inode) of every cgroup a suite names while it exists, so
a pin dir leaked by a failing run can still be removed after its cgroup is
gone. Every 50 ms it looks at the directories whose path starts with one of
the PREFIXes (and, for a PREFIX ending in "/+", one level below them too)
and appends "ID PATH" to OUT for each id not seen before. Ends when the
suite's shell (PARENT) is gone, or at SIGTERM.

usage: cgwatch.py PARENT OUT PREFIX...

A loop in the shell did this with a stat(1) and a sleep(1) per pass: on a
virtual machine where fork is dear, that was a tenth of a suite's CPU.
"""
import os
import signal
import stat
import sys
import time


def dirs(prefix):
    """The directories whose path starts with prefix ("/+": their children too)."""
    deep = prefix.endswith("/+")
    if deep:
        prefix = prefix[:-2]
    parent, start = os.path.split(prefix)
    try:
        names = [n for n in os.listdir(parent) if n.startswith(start)]
    except OSError:
        return
    for n in names:
        p = os.path.join(parent, n)
        yield p
        if deep:
            try:
                yield from (os.path.join(p, c) for c in os.listdir(p))
            except OSError:
                pass


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: cgwatch.py PARENT OUT PREFIX...")
    parent = int(sys.argv[1])
    out = sys.argv[2]
    prefixes = sys.argv[3:]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    seen = set()
    while os.getppid() == parent:
        for prefix in prefixes:
            for p in dirs(prefix):
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode) or st.st_ino in seen:
                    continue
                seen.add(st.st_ino)
                with open(out, "a") as f:
                    f.write(f"{st.st_ino} {p}\n")
        time.sleep(0.05)


if __name__ == "__main__":
    main()
