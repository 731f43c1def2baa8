#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Raw clients of egressctl's proxy listeners, for tests/e2e/proxy.sh.

    pclient.py [--tag T] [--timeout S] SUBCMD ARG...

Every invocation prints exactly ONE JSON line and exits 0:
    {"tag": T, "ok": bool, "errno": "ECONNREFUSED"|"TIMEOUT"|null,
     "code": <SOCKS5 reply byte or null>, "status": <HTTP status or null>,
     "headers": {lower-case name: value}, "body": "<text after the head>",
     "data": "<what came back, as text>", "nbytes": <bytes received>,
     "closed": <the peer closed (EOF or RST) before our read timeout>,
     "xpe": <the x-proxy-error header or null>, "pid": <pid>, "cg": "<0:: line>"}

PROXY is HOST:PORT, or "http" / "socks" for the port in $HTTP_PROXY /
$ALL_PROXY (what `egressctl run` sets for its CMD).

  http PROXY KIND ARG... [--shut]   one payload to the HTTP proxy; KIND:
      req METHOD URL [BODY]   an absolute-URI request (Content-Length body)
      connect HOST:PORT       CONNECT
      random N                N random bytes (seeded) then CRLF CRLF
      trunc                   "GET http://allowed.test/... HTTP/1.1\\r\\nHo" then shutdown(WR)
      bighead KIB             an absolute-URI GET with a KIB KiB header
  socks PROXY HOST PORT [--atyp domain|ip4|ip6|N] [--cmd N] [--ver N]
        [--trunc greeting|request] [--send TEXT] [--until TEXT]
      a SOCKS5 greeting (no auth) and request; "code" is the reply byte
      (null if the proxy closed first); then --send TEXT and read ("data")
      until EOF, the timeout or --until TEXT
  tcp HOST PORT [--send TEXT | --hex HEX | --random N] [--until TEXT]
      a plain TCP client (the transparent path when confined): connect,
      send (or stay silent), read until EOF, timeout or TEXT received
  tcp HOST PORT --echo N / socks PROXY HOST PORT --echo N
      half-close through the relay: send N seeded random letters while
      reading, shutdown(SHUT_WR), read to EOF; adds "echo_ok" (what came
      back ends with exactly what was sent) and "sha" (sha256 of all of it)
  raw HOST PORT HEX [--shut]
      connect, send HEX bytes, read until EOF or timeout

SAFETY: only ever called with test addresses inside the suite's netns.
"""
import errno as errno_mod
import hashlib
import json
import os
import random
import socket
import struct
import sys
import threading
import time

OPTS = {"tag": None, "timeout": 6.0}
OUT = {}


def own_cgroup():
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    return line.strip()
    except OSError:
        pass
    return None


def emit(**kw):
    d = {"tag": OPTS["tag"], "ok": False, "errno": None, "code": None, "status": None,
         "headers": {}, "body": "", "data": "", "nbytes": 0, "closed": False,
         "pid": os.getpid(), "cg": own_cgroup()}
    d.update(OUT)
    d.update(kw)
    d["xpe"] = d["headers"].get("x-proxy-error")
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()
    sys.exit(0)


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


def connect(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(OPTS["timeout"])
    s.connect((host, port))
    return s


def read_all(s, deadline, until=None):
    """Reads until EOF/RST (closed=True), the deadline or UNTIL (closed=False)."""
    buf, closed = b"", False
    while until is None or until not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not d:
            closed = True
            break
        buf += d
    return buf, closed


def parse_http(buf):
    status, headers, body = None, {}, ""
    if buf.startswith(b"HTTP/"):
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ")[1])
        except (IndexError, ValueError):
            status = None
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                headers.setdefault(k.strip().lower(), v.strip())
        body = rest.decode("latin-1")
    return status, headers, body


def finish(s, shut=False, until=None):
    if shut:
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    buf, closed = read_all(s, time.monotonic() + OPTS["timeout"], until)
    s.close()
    status, headers, body = parse_http(buf)
    emit(ok=True, status=status, headers=headers, body=body, closed=closed,
         data=buf[:4096].decode("latin-1"), nbytes=len(buf))


def cmd_http(args):
    shut = "--shut" in args
    args = [a for a in args if a != "--shut"]
    host, port = hostport(args[0])
    kind, rest = args[1], args[2:]
    if kind == "req":
        method, url = rest[0], rest[1]
        body = rest[2].encode() if len(rest) > 2 else b""
        h = url.split("://", 1)[1].split("/", 1)[0]
        payload = ("%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: pclient\r\n" % (method, url, h)).encode()
        if body or method in ("POST", "PUT"):
            payload += b"Content-Length: %d\r\n" % len(body)
        payload += b"\r\n" + body
    elif kind == "connect":
        payload = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (rest[0], rest[0])).encode()
    elif kind == "random":
        rnd = random.Random(int(rest[1]) if len(rest) > 1 else 7)
        payload = bytes(rnd.randrange(256) for _ in range(int(rest[0])))
        payload = payload.replace(b"\r\n\r\n", b"xxxx") + b"\r\n\r\n"
    elif kind == "trunc":
        payload = b"GET http://allowed.test/trunc-" + str(os.getpid()).encode() + b" HTTP/1.1\r\nHo"
        shut = True
    elif kind == "bighead":
        payload = (b"GET http://allowed.test/bighead HTTP/1.1\r\nHost: allowed.test\r\n"
                   b"X-Big: " + b"a" * (int(rest[0]) * 1024) + b"\r\n\r\n")
    else:
        emit(errno="USAGE")
    try:
        s = connect(host, port)
    except OSError as e:
        emit(errno=ename(e))
    try:
        s.sendall(payload)
    except OSError as e:
        OUT["errno"] = ename(e)  # the proxy may answer (431) and close mid-send
    finish(s, shut)


def letters(n):
    rnd = random.Random(13)
    return bytes(rnd.randrange(97, 123) for _ in range(n))


def echo(s, n):
    """Sends n letters while a thread reads, then half-closes; reads to EOF."""
    payload = letters(n)
    got = []
    t = threading.Thread(target=lambda: got.append(read_all(s, time.monotonic() + OPTS["timeout"])))
    t.start()
    try:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        OUT["errno"] = ename(e)
    t.join()
    s.close()
    buf, closed = got[0]
    emit(ok=OUT.get("errno") is None, nbytes=len(buf), closed=closed,
         data=buf[:64].decode("latin-1"), echo_ok=buf.endswith(payload),
         sha=hashlib.sha256(buf).hexdigest())


def cmd_socks(args):
    opt = {"--atyp": "domain", "--cmd": "1", "--ver": "5", "--trunc": None, "--send": None,
           "--until": None, "--echo": None}
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opt:
            opt[args[i]] = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    phost, pport = hostport(pos[0])
    host, port = pos[1], int(pos[2])
    atyp = opt["--atyp"]
    if atyp == "domain":
        addr = b"\x03" + bytes([len(host)]) + host.encode()
    elif atyp == "ip4":
        addr = b"\x01" + socket.inet_aton(host)
    elif atyp == "ip6":
        addr = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
    else:
        addr = bytes([int(atyp)]) + b"\x00\x00\x00\x00"
    ver = int(opt["--ver"])
    try:
        s = connect(phost, pport)
    except OSError as e:
        emit(errno=ename(e))
    deadline = time.monotonic() + OPTS["timeout"]
    try:
        if ver != 5:  # a SOCKS4-style request: the server should just close
            s.sendall(bytes([ver, 1]) + struct.pack("!H", port) + b"\x7f\x00\x00\x01user\x00")
            buf, closed = read_all(s, deadline)
            emit(ok=True, data=buf.hex(), nbytes=len(buf), closed=closed)
        greeting = b"\x05\x01\x00"
        if opt["--trunc"] == "greeting":
            s.sendall(greeting[:2])
            s.shutdown(socket.SHUT_WR)
            buf, closed = read_all(s, deadline)
            emit(ok=True, data=buf.hex(), nbytes=len(buf), closed=closed)
        s.sendall(greeting)
        sel = b""
        while len(sel) < 2:
            d = s.recv(2 - len(sel))
            if not d:
                emit(ok=True, closed=True, data="greeting:" + sel.hex(), nbytes=len(sel))
            sel += d
        OUT["method"] = sel.hex()
        req = bytes([5, int(opt["--cmd"]), 0]) + addr + struct.pack("!H", port)
        if opt["--trunc"] == "request":
            s.sendall(req[:5])
            s.shutdown(socket.SHUT_WR)
            buf, closed = read_all(s, deadline)
            emit(ok=True, data=buf.hex(), nbytes=len(buf), closed=closed)
        s.sendall(req)
        rep = b""
        while len(rep) < 2:
            d = s.recv(2 - len(rep))
            if not d:
                emit(ok=True, closed=True, data="reply:" + rep.hex(), nbytes=len(rep))
            rep += d
        OUT["code"] = rep[1]
        if rep[1] != 0:
            buf, closed = read_all(s, deadline)
            emit(ok=True, closed=closed, nbytes=len(rep) + len(buf))
        # the rest of the reply: RSV ATYP BND.ADDR BND.PORT
        hdr = b""
        while len(hdr) < 2:
            d = s.recv(2 - len(hdr))
            if not d:
                emit(ok=True, closed=True, data="short reply")
            hdr += d
        alen = {1: 4, 4: 16}.get(hdr[1])
        if alen is None:
            alen = s.recv(1)[0]
        need = alen + 2
        while need > 0:
            d = s.recv(need)
            if not d:
                emit(ok=True, closed=True, data="short reply")
            need -= len(d)
        if opt["--echo"] is not None:
            echo(s, int(opt["--echo"]))
        if opt["--send"] is not None:
            s.sendall(opt["--send"].encode().decode("unicode_escape").encode("latin-1"))
        buf, closed = read_all(s, deadline, opt["--until"] and opt["--until"].encode())
        status, headers, body = parse_http(buf)
        emit(ok=True, data=buf[:4096].decode("latin-1"), nbytes=len(buf), closed=closed,
             status=status, headers=headers, body=body)
    except OSError as e:
        emit(errno=ename(e))


def cmd_tcp(args):
    host, port = args[0], int(args[1])
    payload = b""
    if "--send" in args:
        payload = args[args.index("--send") + 1].encode().decode("unicode_escape").encode("latin-1")
    elif "--hex" in args:
        payload = bytes.fromhex(args[args.index("--hex") + 1])
    elif "--random" in args:
        rnd = random.Random(11)
        n = int(args[args.index("--random") + 1])
        payload = b"\x00" + bytes(rnd.randrange(256) for _ in range(n - 1))
    try:
        s = connect(host, port)
    except OSError as e:
        emit(errno=ename(e))
    OUT["peer"] = "%s:%d" % s.getpeername()[:2]
    if "--echo" in args:
        echo(s, int(args[args.index("--echo") + 1]))
    try:
        if payload:
            s.sendall(payload)
    except OSError as e:
        emit(errno=ename(e))
    until = args[args.index("--until") + 1].encode() if "--until" in args else None
    finish(s, until=until)


def cmd_raw(args):
    host, port = args[0], int(args[1])
    try:
        s = connect(host, port)
        s.sendall(bytes.fromhex(args[2]))
    except OSError as e:
        emit(errno=ename(e))
    finish(s, "--shut" in args)


def main():
    args = sys.argv[1:]
    while args and args[0].startswith("--"):
        k = args[0][2:]
        OPTS[k] = float(args[1]) if k == "timeout" else args[1]
        args = args[2:]
    if not args:
        emit(errno="USAGE")
    fn = {"http": cmd_http, "socks": cmd_socks, "tcp": cmd_tcp, "raw": cmd_raw}.get(args[0])
    if fn is None:
        emit(errno="USAGE")
    try:
        fn(args[1:])
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 -- one JSON line whatever happens
        emit(errno="EXC:%s" % type(e).__name__, data=str(e)[:200])


if __name__ == "__main__":
    main()
