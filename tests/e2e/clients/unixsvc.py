#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stand-ins of local services for tests/e2e/unix.sh.

  unixsvc.py serve --log FILE PATH...   a stream listener at every PATH
      (mode 0666, its directories made): each connection gets "svc PATH\\n"
      and is logged as one line "PATH"; READY on stdout once all listen.
  unixsvc.py connect PATH [--chdir DIR] [--dgram]
      one connect (or datagram send) from wherever it runs; prints one JSON
      line {"ok": bool, "errno": "EPERM"|..., "data": what the server said}.
"""
import errno
import json
import os
import selectors
import socket
import sys


def serve(args):
    log = args[args.index("--log") + 1]
    paths = [a for i, a in enumerate(args) if a != "--log" and (i == 0 or args[i - 1] != "--log")]
    sel = selectors.DefaultSelector()
    for p in paths:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.lexists(p):
            os.unlink(p)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(p)
        os.chmod(p, 0o666)
        s.listen(16)
        sel.register(s, selectors.EVENT_READ, p)
    print("READY", flush=True)
    while True:
        for key, _ in sel.select():
            c, _ = key.fileobj.accept()
            with open(log, "a") as f:
                f.write(key.data + "\n")
            try:
                c.sendall(("svc %s\n" % key.data).encode())
            except OSError:
                pass
            c.close()


def connect(args):
    path = args[0]
    if "--chdir" in args:
        os.chdir(args[args.index("--chdir") + 1])
    dgram = "--dgram" in args
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM if dgram else socket.SOCK_STREAM)
    s.settimeout(5)
    out = {"ok": False, "errno": "", "data": ""}
    try:
        if dgram:
            s.sendto(b"x", path)
        else:
            s.connect(path)
            out["data"] = s.recv(200).decode(errors="replace").strip()
        out["ok"] = True
    except socket.timeout:
        out["errno"] = "TIMEOUT"
    except OSError as e:
        out["errno"] = errno.errorcode.get(e.errno, str(e.errno))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        connect(sys.argv[2:])
