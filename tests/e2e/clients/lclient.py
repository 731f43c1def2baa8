#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Clients of the limits suite (tests/e2e/limits.sh), run confined.

    lclient.py [--tag T] [--timeout S] [--deadline S] [--after FILE]
               [--ready DIR --peers P] [--fds] KIND N IP:PORT

Opens N connections, one after the other, to the echo server at IP:PORT,
each through KIND:
    connect   the HTTP proxy in $HTTP_PROXY: CONNECT IP:PORT
    socks     the SOCKS5 proxy in $ALL_PROXY: a request for IP:PORT
    tproxy    IP:PORT directly (the kernel redirects it to the proxy)
    get       the HTTP proxy: GET http://IP:PORT/... (one exchange, closed)
and sends "ping I" through it; a connection that echoes it back is
"served" and is HELD open. Every other ends as one outcome: "503:<x-proxy-
error>" (any other status: "http:<status>"), "socks:<reply byte>", "reset",
"eof", "timeout" (--timeout S per step, default 5), or an errno name.
KIND may be a comma-separated list: one attempt of each, in order (N is
then ignored), and "seq" lists their outcomes ("served" for a success).
Two more kinds wait for the proxy to end a silent client (never "served"):
    idle-http    connect to the HTTP proxy and send nothing
    idle-socks   SOCKS5 request for the name IP (any text) and PORT, then
                 send nothing after the reply

--after FILE waits (at most --deadline) for FILE before starting.  With
--ready DIR, once all N are tried it creates DIR/T.ready and waits (at most
--deadline, default 40 s from the start) until P such files exist, so that
every peer's connections are held at once; then it checks that each held
connection still echoes and closes them.  --fds raises the soft descriptor
limit to the hard one first.

Prints ONE JSON line: {"tag", "n", "served", "still", "outcomes": {outcome:
count}, "first": {details of the first refusal: "outcome", "status", "xpe",
"body", "code"}, "pid"}.  SAFETY: only ever called with test addresses
inside the suite's netns.
"""
import errno as errno_mod
import json
import os
import resource
import socket
import struct
import sys
import time

OPTS = {"tag": None, "timeout": 5.0, "deadline": 40.0, "after": None, "ready": None,
        "peers": 1, "fds": False}


def proxy(var):
    p = os.environ[var].split("://", 1)[-1].rstrip("/")
    h, port = p.rsplit(":", 1)
    return h, int(port)


def ename(e):
    if isinstance(e, socket.timeout):
        return "timeout"
    if e.errno == errno_mod.ECONNRESET or e.errno == errno_mod.EPIPE:
        return "reset"
    return errno_mod.errorcode.get(e.errno or 0, type(e).__name__)


class Refused(Exception):
    def __init__(self, outcome, **detail):
        super().__init__(outcome)
        self.outcome = outcome
        self.detail = detail


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            raise Refused("eof", got=buf.hex())
        buf += d
    return buf


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            if not buf:
                raise Refused("eof")
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ")[1])
    except (IndexError, ValueError):
        raise Refused("garbage", head=lines[0][:80])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, rest


def http_refusal(s, status, hdrs, rest):
    """Reads the rest of a refusal's body (Content-Length) and raises."""
    n = int(hdrs.get("content-length", "0"))
    try:
        while len(rest) < n:
            d = s.recv(4096)
            if not d:
                break
            rest += d
    except OSError:
        pass
    xpe = hdrs.get("x-proxy-error")
    raise Refused("503:%s" % xpe if status == 503 else "http:%d" % status,
                  status=status, xpe=xpe, body=rest.decode("utf-8", "replace"))


def open_one(kind, ip, port, i):
    if kind in ("connect", "get", "idle-http"):
        s = socket.create_connection(proxy("HTTP_PROXY"), timeout=OPTS["timeout"])
    elif kind in ("socks", "idle-socks"):
        s = socket.create_connection(proxy("ALL_PROXY"), timeout=OPTS["timeout"])
    else:
        s = socket.create_connection((ip, port), timeout=OPTS["timeout"])
    try:
        if kind == "connect":
            s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                      % (ip.encode(), port, ip.encode(), port))
            status, hdrs, rest = read_head(s)
            if status != 200:
                http_refusal(s, status, hdrs, rest)
        elif kind == "get":
            s.sendall(b"GET http://%s:%d/limits/%d HTTP/1.1\r\nHost: %s\r\n"
                      b"Connection: close\r\n\r\n" % (ip.encode(), port, i, ip.encode()))
            status, hdrs, rest = read_head(s)
            if status != 200:
                http_refusal(s, status, hdrs, rest)
            s.close()
            return None
        elif kind in ("socks", "idle-socks"):
            s.sendall(b"\x05\x01\x00")
            if recv_exact(s, 2) != b"\x05\x00":
                raise Refused("socks-method")
            if kind == "socks":
                s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(ip) + struct.pack("!H", port))
            else:
                s.sendall(b"\x05\x01\x00\x03" + bytes([len(ip)]) + ip.encode()
                          + struct.pack("!H", port))
            rep = recv_exact(s, 10)
            if rep[1] != 0:
                raise Refused("socks:%d" % rep[1], code=rep[1])
        if kind.startswith("idle-"):
            if s.recv(100):
                raise Refused("data")
            raise Refused("eof")
        msg = b"ping %d\n" % i
        s.sendall(msg)
        if recv_exact(s, len(msg)) != msg:
            raise Refused("bad-echo")
        return s
    except BaseException:
        s.close()
        raise


def main():
    args = sys.argv[1:]
    while args and args[0].startswith("--"):
        k = args[0][2:]
        if k == "fds":
            OPTS["fds"] = True
            args = args[1:]
            continue
        v = args[1]
        OPTS[k] = float(v) if k in ("timeout", "deadline") else int(v) if k == "peers" else v
        args = args[2:]
    kind, n, dst = args[0], int(args[1]), args[2]
    kinds = kind.split(",") if "," in kind else [kind] * n
    n = len(kinds)
    ip, port = dst.rsplit(":", 1)
    port = int(port)
    start = time.monotonic()
    deadline = start + OPTS["deadline"]
    if OPTS["fds"]:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if OPTS["after"]:
        while not os.path.exists(OPTS["after"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    held, outcomes, first, seq = [], {}, None, []
    served = 0
    for i in range(n):
        if time.monotonic() >= deadline:
            outcomes["not-tried"] = outcomes.get("not-tried", 0) + n - i
            break
        try:
            s = open_one(kinds[i], ip, port, i)
            served += 1
            seq.append("served")
            if s:
                held.append(s)
            continue
        except Refused as e:
            out, detail = e.outcome, e.detail
        except OSError as e:
            out, detail = ename(e), {}
        seq.append(out)
        outcomes[out] = outcomes.get(out, 0) + 1
        if first is None:
            first = dict(detail, outcome=out)
    if OPTS["ready"]:
        open(os.path.join(OPTS["ready"], "%s.ready" % OPTS["tag"]), "w").close()
        while time.monotonic() < deadline:
            if len([f for f in os.listdir(OPTS["ready"]) if f.endswith(".ready")]) >= OPTS["peers"]:
                break
            time.sleep(0.05)
    still = 0
    for i, s in enumerate(held):
        try:
            msg = b"still %d\n" % i
            s.sendall(msg)
            if recv_exact(s, len(msg)) == msg:
                still += 1
        except (OSError, Refused):
            pass
        s.close()
    sys.stdout.write(json.dumps({"tag": OPTS["tag"], "n": n, "served": served, "still": still,
                                 "outcomes": outcomes, "first": first, "seq": seq,
                                 "pid": os.getpid()}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
