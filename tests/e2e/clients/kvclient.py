#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""First-bytes clients for the kernel-verified path suite (kverify.sh).
Each resolves NAME (through the system resolver: egressctl's responder when
confined), connects, sends its first bytes, reads the answer, and prints one
JSON line: ok, errno (on failure), ms (connect to the end), lport (its own
local port, which the server logs when the connection is direct).

  kvclient.py tls NAME [--sni S | --no-sni] [--split N]
      a real TLS handshake (python ssl, no certificate check) to NAME:443;
      --split N writes the ClientHello in two pieces (N bytes, a pause,
      the rest) with TCP_NODELAY; --sendfile sends it with sendfile(2) from
      a file (pages the sender could still change after a check)
  kvclient.py big NAME --sni S
      a hand-built 1800-byte ClientHello, SNI after 1.3 KB of key share
      (as a post-quantum hybrid hello has), in one write; ok when the
      server answers (an alert is an answer) and nothing reset it;
      --size N makes it N bytes; --tfo sends it in the SYN (TCP Fast
      Open without a cookie: TCP_FASTOPEN_NO_COOKIE, sendto(MSG_FASTOPEN)),
      as much of it as the SYN has room for
  kvclient.py http NAME --host H   GET / with Host: H, plain HTTP
  kvclient.py h2c NAME             the HTTP/2 preface and SETTINGS
  kvclient.py raw NAME             bytes that are neither TLS nor HTTP
  --port P (any mode): to port P of NAME (default 443)
  --addr A (any mode): connect to A instead of resolving NAME (the
  control, outside egressctl, where nothing answers the sandbox's resolver)
  --6 (any mode): resolve NAME's AAAA, connect over IPv6
  --rthdr (any mode, IPv6): a routing header on every packet (a segment
  routing header with no segment left, which any process may set with
  IPV6_RTHDR; the receiver skips it)
"""
import errno
import json
import os
import socket
import ssl
import struct
import sys
import tempfile
import time


def out(**kw):
    print(json.dumps(kw), flush=True)


def err_name(e):
    if isinstance(e, ssl.SSLError):
        return "ESSL"
    if isinstance(e, socket.timeout):
        return "TIMEOUT"
    n = getattr(e, "errno", None)
    return errno.errorcode.get(n, "E%s" % n) if n else type(e).__name__


TCP_FASTOPEN_NO_COOKIE = 34
MSG_FASTOPEN = 0x20000000


FAMILY = socket.AF_INET  # --6: AF_INET6
RTHDR = False  # --rthdr


def resolve(name, port, at=None):
    return (at, port) if at else socket.getaddrinfo(name, port, FAMILY, socket.SOCK_STREAM)[0][4]


def srh(dst):
    """A segment routing header (type 4) with no segment left: the kernel
    puts the destination in its one segment; the receiver passes over it."""
    return struct.pack("!BBBBBBH", 0, 2, 4, 0, 0, 0, 0) + socket.inet_pton(socket.AF_INET6, dst)


def sock(addr):
    s = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    if RTHDR:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RTHDR, srh(addr[0]))
    return s


def connect(name, port, at=None):
    addr = resolve(name, port, at)
    s = sock(addr)
    s.connect(addr)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_all(s):
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            return got
        got += d


def send_first(s, data, split, via_file):
    """the first flight: at once, in two writes, or by sendfile(2) from a file"""
    if via_file:
        with tempfile.TemporaryFile() as f:
            f.write(data)
            f.flush()
            off = 0
            while off < len(data):
                off += os.sendfile(s.fileno(), f.fileno(), off, len(data) - off)
    elif split:
        s.sendall(data[:split])
        time.sleep(0.3)
        s.sendall(data[split:])
    else:
        s.sendall(data)


def tls(s, sni, split, via_file=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, outg, server_side=False, server_hostname=sni)
    first = True
    while True:
        try:
            o.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        data = outg.read()
        if data and first:
            send_first(s, data, split, via_file)
        elif data:
            s.sendall(data)
        first = first and not data
        if done:
            break
        d = s.recv(65536)
        if not d:
            raise ConnectionResetError(errno.ECONNRESET, "EOF in the handshake")
        inc.write(d)
    o.write(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (sni or "x").encode())
    s.sendall(outg.read())
    while True:
        d = s.recv(65536)
        if not d:
            break
        inc.write(d)
        try:
            if o.read(65536):
                return
        except ssl.SSLWantReadError:
            continue
    raise ConnectionResetError(errno.ECONNRESET, "no response")


def ext(t, body):
    return struct.pack("!HH", t, len(body)) + body


def big_hello(sni, size=1800):
    name = sni.encode()
    exts = ext(0x0a0a, b"")  # GREASE
    exts += ext(0x000a, struct.pack("!HHH", 4, 0x11ec, 0x001d))  # groups: X25519MLKEM768, x25519
    exts += ext(0x000d, struct.pack("!HHH", 4, 0x0403, 0x0804))
    exts += ext(0x002b, b"\x02\x03\x04")
    if size >= 1700:  # a hybrid key share's size
        ks, grp = os.urandom(1216), 0x11ec
    else:  # x25519's
        ks, grp = os.urandom(32), 0x001d
    exts += ext(0x0033, struct.pack("!HHH", 4 + len(ks), grp, len(ks)) + ks)
    exts += ext(0x0000, struct.pack("!HBH", len(name) + 3, 0, len(name)) + name)
    body = b"\x03\x03" + os.urandom(32) + b"\x20" + os.urandom(32)
    body += struct.pack("!H", 4) + b"\x13\x01\x13\x02" + b"\x01\x00"
    fixed = 4 + len(body) + 2 + len(exts) + 4
    exts += ext(0x0015, b"\x00" * (size - 5 - fixed))  # padding to size
    body += struct.pack("!H", len(exts)) + exts
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def main():
    a = sys.argv[1:]
    mode, name = a[0], a[1]
    opt = {a[i]: (a[i + 1] if i + 1 < len(a) and not a[i + 1].startswith("--") else True)
           for i in range(2, len(a)) if a[i].startswith("--")}
    global FAMILY, RTHDR
    FAMILY = socket.AF_INET6 if "--6" in opt else socket.AF_INET
    RTHDR = "--rthdr" in opt
    t0 = time.monotonic()
    r = {"mode": mode}
    try:
        if mode == "big" and "--tfo" in opt:
            # the connect is the first write: its data rides in the SYN
            h = big_hello(opt["--sni"], int(opt.get("--size", 1800)))
            r["hello_len"] = str(len(h))
            addr = resolve(name, int(opt.get("--port", 443)), opt.get("--addr"))
            s = sock(addr)
            s.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_NO_COOKIE, 1)
            t0 = time.monotonic()
            s.sendto(h, MSG_FASTOPEN, addr)
            r["lport"] = str(s.getsockname()[1])
            if not s.recv(4096):
                raise ConnectionResetError(errno.ECONNRESET, "no answer to the hello")
            mode = "done"
        else:
            s = connect(name, int(opt.get("--port", 443)), opt.get("--addr"))
            t0 = time.monotonic()
            r["lport"] = str(s.getsockname()[1])
        if mode == "done":
            pass
        elif mode == "tls":
            tls(s, None if "--no-sni" in opt else opt.get("--sni", name), int(opt.get("--split", 0)),
                "--sendfile" in opt)
        elif mode == "big":
            h = big_hello(opt["--sni"], int(opt.get("--size", 1800)))
            r["hello_len"] = str(len(h))
            s.sendall(h)
            if not s.recv(4096):
                raise ConnectionResetError(errno.ECONNRESET, "no answer to the hello")
        elif mode == "http":
            s.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % opt["--host"].encode())
            if not read_all(s).startswith(b"HTTP/1.1 200"):
                raise ConnectionResetError(errno.ECONNRESET, "no 200")
        elif mode == "h2c":
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            if not read_all(s):
                raise ConnectionResetError(errno.ECONNRESET, "no answer")
        else:
            s.sendall(b"\x00\x01\x02 not a protocol anyone speaks\r\n\r\n")
            if not read_all(s):
                raise ConnectionResetError(errno.ECONNRESET, "no answer")
        r["ok"] = True
    except (OSError, ssl.SSLError) as e:
        r["ok"] = False
        r["errno"] = err_name(e)
        r["detail"] = str(e)[:120]
    r["ms"] = str(int((time.monotonic() - t0) * 1000))
    out(**r)


if __name__ == "__main__":
    main()
