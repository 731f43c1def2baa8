#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""usock.py SOCKET MODE [ARG]: a hostile client of the daemon's user socket
(daemon/usersock.c), for tests/e2e/nosudo.sh. Prints the service's answer
(one JSON line) or EOF, and a JSON line {"alive": true} when a further
message still finds the connection open, as the tests need.

MODE:
  args JSON      {"args": JSON, "env": [], "nfds": 4} with stdin, stdout,
                 stderr and the working directory (a real client's shape)
  raw TEXT       TEXT as the message, with the same four descriptors
  nofds TEXT     TEXT without descriptors
  big            a message of 200000 bytes
  fds N JSON     {"args": JSON, ...} with N descriptors (and "nfds": 4)
  signal N       {"signal": N} as the first message, then waits 1s
  files JSON PATH...  {"args": JSON, ...} with the four and each PATH
                 opened (read-only) after them, "nfds" counting them
"""
import json
import os
import socket
import sys


def main():
    path, mode = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
    except OSError as e:
        print(json.dumps({"connect": False, "errno": e.errno}))
        return 0
    cwd = os.open(".", os.O_PATH | os.O_DIRECTORY)
    four = [0, 1, 2, cwd]

    def req(args, nfds=4):
        return json.dumps({"args": args, "env": ["PATH=/usr/bin:/bin"], "nfds": nfds}).encode()

    if mode == "args":
        socket.send_fds(s, [req(json.loads(sys.argv[3]))], four)
    elif mode == "raw":
        socket.send_fds(s, [sys.argv[3].encode()], four)
    elif mode == "nofds":
        s.send(sys.argv[3].encode())
    elif mode == "big":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        body = req(["--", "true"])[:-1] + b" " * 200000 + b"}"
        try:
            socket.send_fds(s, [body], four)
        except OSError as e:
            print(json.dumps({"send": False, "errno": e.errno}))
            return 0
    elif mode == "fds":
        n = int(sys.argv[3])
        socket.send_fds(s, [req(json.loads(sys.argv[4]))], (four * 16)[:n])
    elif mode == "files":
        extra = [os.open(p, os.O_RDONLY) for p in sys.argv[4:]]
        socket.send_fds(s, [req(json.loads(sys.argv[3]), 4 + len(extra))], four + extra)
    elif mode == "signal":
        s.send(json.dumps({"signal": int(sys.argv[3])}).encode())
    s.settimeout(20)
    try:
        reply = s.recv(65536)
    except socket.timeout:
        reply = b"TIMEOUT"
    print(reply.decode(errors="replace") if reply else "EOF")
    return 0


sys.exit(main())
