#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Several HTTP/1.1 requests over ONE connection, for tests/e2e/proxy.sh:
what a kept-alive (or pipelining) client, or a hostile one, sends after its
first request.

    kaclient.py [--tag T] [--timeout S] [--socks PROXY | --proxy PROXY]
                [--pipeline] [--until-eof] [--after-upgrade TEXT]
                HOST PORT REQ...

HOST PORT is where the connection goes: straight there (the transparent path
when confined), through SOCKS5 (--socks; PROXY as in pclient.py: HOST:PORT or
"socks" for $ALL_PROXY; a domain request for HOST), or to the HTTP proxy
(--proxy; "http" for $HTTP_PROXY): then every request is in absolute form
http://HOST:PORT/PATH unless it says abs= itself.

REQ is "METHOD|HOSTHDR|PATH[|FIELD]...": the request line, a Host header
naming HOSTHDR (none if HOSTHDR is "-"), and per FIELD:
    Name: value     one more header
    body=N          a Content-Length body of N seeded random bytes
    chunked=N       the same body, chunked in 10000-byte chunks
    abs=NAME        absolute-form target http://NAME:PORT/PATH
    raw=TEXT        send TEXT (Python escapes) instead of a request
Requests go one at a time, each after the previous response (or, with
--pipeline, all in one write before reading anything).  A response is read
by its framing (Content-Length, chunked, until close; none for HEAD, 1xx,
204, 304).  Reading stops at EOF or the timeout.  --until-eof: after the
responses, read on until the peer closes (or the timeout).  --after-upgrade
TEXT: after a 101, send TEXT (Python escapes) and read until it comes back
("echo").

Prints ONE JSON line: {"tag", "ok", "errno", "n": responses read,
"statuses": "200 403", "xpes": "- blocked-by-allowlist", "sites": X-Site
headers ("-" if none), "lens": body lengths, "bodies_ok": "1 0 -" (the
body of a /b/N/... path is random.Random(N).randbytes(N): 1 if it was,
0 if not, - for other paths and HEAD), "conn": Connection headers, "clens":
Content-Length headers ("-" if none), "closed": the peer closed,
"echo": what came back after the upgrade, "tail": bytes after the last
response}.

SAFETY: only ever called with test addresses inside the suite's netns.
"""
import errno as errno_mod
import json
import os
import random
import socket
import struct
import sys
import time

OPTS = {"tag": None, "timeout": 6.0, "socks": None, "proxy": None, "pipeline": False,
        "until-eof": False, "after-upgrade": None}


def ename(e):
    if isinstance(e, socket.timeout):
        return "TIMEOUT"
    if getattr(e, "errno", None):
        return errno_mod.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


def hostport(spec):
    if spec in ("http", "socks"):
        v = os.environ.get("HTTP_PROXY" if spec == "http" else "ALL_PROXY", "")
        spec = v.split("://", 1)[-1].rstrip("/")
    h, p = spec.rsplit(":", 1)
    return h.strip("[]"), int(p)


class Conn:
    def __init__(self, s, deadline):
        self.s = s
        self.buf = b""
        self.closed = False
        self.deadline = deadline

    def fill(self):
        if self.closed:
            return False
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        self.s.settimeout(left)
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            raise
        except OSError:
            d = b""
        if not d:
            self.closed = True
            return False
        self.buf += d
        return True

    def until(self, sep):
        while sep not in self.buf:
            if not self.fill():
                return None
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            if not self.fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self):
        while self.fill():
            pass
        out, self.buf = self.buf, b""
        return out


def build(spec, port):
    f = spec.split("|")
    method, host, path, extra = f[0], f[1], f[2], f[3:]
    target, hdrs, body, chunked = path, [], b"", False
    for x in extra:
        if x.startswith("raw="):
            return x[4:].encode().decode("unicode_escape").encode("latin-1"), method
        if x.startswith("abs="):
            target = "http://%s:%d%s" % (x[4:], port, path)
        elif x.startswith("body=") or x.startswith("chunked="):
            k, n = x.split("=", 1)
            body, chunked = random.Random(int(n)).randbytes(int(n)), k == "chunked"
        else:
            hdrs.append(x)
    if OPTS["proxy"] and not target.startswith("http://"):
        target = "http://%s:%d%s" % (HOST, port, path)
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    if host != "-":
        head += "Host: %s\r\n" % host
    for h in hdrs:
        head += h + "\r\n"
    if chunked:
        head += "Transfer-Encoding: chunked\r\n\r\n"
        data = b"".join(b"%x\r\n" % len(body[i:i + 10000]) + body[i:i + 10000] + b"\r\n"
                        for i in range(0, len(body), 10000)) + b"0\r\n\r\n"
        return head.encode() + data, method
    if body or method in ("POST", "PUT"):
        head += "Content-Length: %d\r\n" % len(body)
    return head.encode() + b"\r\n" + body, method


def read_response(c, method):
    """One response: (status, headers, body), or None if the peer closed first."""
    while True:
        head = c.until(b"\r\n\r\n")
        if head is None:
            return None
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ")[1])
        except (IndexError, ValueError):
            status = 0
        hdrs = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                hdrs.setdefault(k.strip().lower(), v.strip())
        if status == 101 or not 100 <= status < 200:
            break
    if method == "HEAD" or status in (101, 204, 304) or 100 <= status < 200:
        return status, hdrs, b""
    if "chunked" in hdrs.get("transfer-encoding", "").lower():
        body = b""
        while True:
            line = c.until(b"\r\n")
            if line is None:
                return status, hdrs, body
            n = int(line.split(b";")[0].strip() or b"0", 16)
            if n == 0:
                while True:
                    t = c.until(b"\r\n")
                    if t is None or t == b"\r\n":
                        return status, hdrs, body
            d = c.exact(n + 2)
            if d is None:
                return status, hdrs, body
            body += d[:n]
    if "content-length" in hdrs:
        d = c.exact(int(hdrs["content-length"]))
        return status, hdrs, d if d is not None else c.rest()
    return status, hdrs, c.rest()


def body_ok(spec, body):
    p = spec.split("|")[2].split("?")[0].split("/")
    if spec.startswith("HEAD|"):
        return "-"
    if len(p) == 4 and p[1] == "b" and p[2].isdigit():
        return "1" if body == random.Random(int(p[2])).randbytes(int(p[2])) else "0"
    return "-"


def main():
    global HOST
    args = sys.argv[1:]
    while args and args[0].startswith("--"):
        k = args[0][2:]
        if k in ("pipeline", "until-eof"):
            OPTS[k] = True
            args = args[1:]
            continue
        OPTS[k] = float(args[1]) if k == "timeout" else args[1]
        args = args[2:]
    out = {"tag": OPTS["tag"], "ok": False, "errno": None, "n": 0, "statuses": "", "xpes": "",
           "sites": "", "lens": "", "bodies_ok": "", "conn": "", "clens": "", "closed": False,
           "echo": "", "tail": ""}

    def emit(**kw):
        out.update(kw)
        for k in ("statuses", "xpes", "sites", "lens", "bodies_ok", "conn", "clens"):
            out[k] = out[k].strip()
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
        sys.exit(0)

    if len(args) < 3:
        emit(errno="USAGE")
    HOST, port, specs = args[0], int(args[1]), args[2:]
    deadline = time.monotonic() + OPTS["timeout"]
    try:
        if OPTS["socks"] or OPTS["proxy"]:
            dst = hostport(OPTS["socks"] or OPTS["proxy"])
        else:
            dst = (HOST, port)
        s = socket.socket(socket.AF_INET6 if ":" in dst[0] else socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(OPTS["timeout"])
        s.connect(dst)
        c = Conn(s, deadline)
        if OPTS["socks"]:
            s.sendall(b"\x05\x01\x00")
            if c.exact(2) != b"\x05\x00":
                emit(errno="SOCKS-METHOD", closed=c.closed)
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(HOST)]) + HOST.encode() +
                      struct.pack("!H", port))
            rep = c.exact(10)
            if rep is None or rep[1] != 0:
                emit(errno="SOCKS-REPLY-%s" % (rep[1] if rep else "none"), closed=c.closed)
        reqs = [build(x, port) for x in specs]
        if OPTS["pipeline"]:
            s.sendall(b"".join(r[0] for r in reqs))
        for i, (data, method) in enumerate(reqs):
            if not OPTS["pipeline"]:
                try:
                    s.sendall(data)
                except OSError as e:
                    out["errno"] = ename(e)
                    break
            r = read_response(c, method)
            if r is None:
                break
            status, hdrs, body = r
            out["n"] += 1
            out["statuses"] += " %d" % status
            out["xpes"] += " " + hdrs.get("x-proxy-error", "-")
            out["sites"] += " " + hdrs.get("x-site", "-")
            out["lens"] += " %d" % len(body)
            out["bodies_ok"] += " " + body_ok(specs[i], body)
            out["conn"] += " " + hdrs.get("connection", "-").replace(" ", "")
            out["clens"] += " " + hdrs.get("content-length", "-")
            if status == 101:
                if OPTS["after-upgrade"] is not None:
                    t = OPTS["after-upgrade"].encode().decode("unicode_escape").encode("latin-1")
                    s.sendall(t)
                    got = c.buf
                    c.buf = b""
                    while t not in got and c.fill():
                        got += c.buf
                        c.buf = b""
                    out["echo"] = got.decode("latin-1")
                break
            if c.closed and not c.buf:
                break
        if OPTS["until-eof"]:
            out["tail"] = c.rest()[:512].decode("latin-1")
        emit(ok=True, closed=c.closed)
    except socket.timeout:
        emit(errno=out["errno"] or "TIMEOUT", closed=False)
    except OSError as e:
        emit(errno=ename(e))


if __name__ == "__main__":
    main()
