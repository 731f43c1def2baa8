#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP client that tries to send an approved connection's packets somewhere
else (direct.sh): an IPv6 routing header (IPV6_RTHDR: a segment routing
header whose first segment is VIA; no privilege needed) or an IPv4 loose
source route through VIA (IP_OPTIONS; CAP_NET_RAW), set before the connect,
between a deferred connect and its first write, or after the first
exchange. Prints one JSON line: ok, errno, stage (where it failed: opts,
connect, first, again), lport.

  reroute.py NAME PORT --via VIA [--when before|after|tfo|deferred]
             [--tls SNI] [--6] [--addr A]

  --when before    options set, then connect, then the first bytes
  --when after     connect, the first bytes and their answer, then the
                   options, then more bytes (the default)
  --when tfo       options set, then the first bytes in the SYN
                   (TCP Fast Open without a cookie, sendto(MSG_FASTOPEN))
  --when deferred  TCP_FASTOPEN_CONNECT: connect() sends nothing, the
                   options are set, then the first write sends the SYN
  --when none      no options: connect, the first bytes and their answer;
                   with --bulk N then N bytes more, every one echoed back
                   (a reader thread drains them), ok when all came back
  --tls SNI        the first bytes are a TLS ClientHello for SNI (what the
                   kernel-verified path checks); else a line of text
  --addr A         connect to A instead of resolving NAME (the control)
  --6              resolve NAME's AAAA
"""
import errno
import json
import socket
import ssl
import struct
import sys
import threading
import time

TCP_FASTOPEN_CONNECT = 30
TCP_FASTOPEN_NO_COOKIE = 34
MSG_FASTOPEN = 0x20000000
IPOPT_LSRR = 131


def out(**kw):
    print(json.dumps(kw), flush=True)


def err_name(e):
    if isinstance(e, socket.timeout):
        return "TIMEOUT"
    n = getattr(e, "errno", None)
    return errno.errorcode.get(n, "E%s" % n) if n else type(e).__name__


def hello(sni):
    """the ClientHello python's ssl sends for sni, as bytes"""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, outg, server_side=False, server_hostname=sni)
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outg.read()


def set_route(s, fam, via):
    if fam == socket.AF_INET6:
        # type 4 (segment routing), two segments, one left: the kernel puts
        # the destination in segment 0; the packet goes to segment 1 first
        srh = struct.pack("!BBBBBBH", 0, 4, 4, 1, 1, 0, 0)
        srh += b"\0" * 16 + socket.inet_pton(socket.AF_INET6, via)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RTHDR, srh)
    else:
        # loose source route: VIA first (the kernel adds the destination);
        # a NOP pads the options to a multiple of four bytes
        opt = bytes([1, IPOPT_LSRR, 7, 4]) + socket.inet_aton(via)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, opt)


def bulk(s, n):
    """n bytes to an echo server in large writes, read back by a thread"""
    got = [0]

    def drain():
        while got[0] < n:
            d = s.recv(1 << 20)
            if not d:
                break
            got[0] += len(d)

    s.settimeout(20)
    t = threading.Thread(target=drain)
    t.start()
    buf = b"y" * (1 << 20)
    left = n
    while left > 0:
        k = s.send(buf[:left])
        left -= k
    t.join(30)
    if got[0] < n:
        raise OSError(errno.EPIPE, "%d of %d bytes came back" % (got[0], n))


def main():
    a = sys.argv[1:]
    name, port = a[0], int(a[1])
    opt = {}
    i = 2
    while i < len(a):
        if a[i] == "--6":
            opt["6"] = True
            i += 1
        else:
            opt[a[i][2:]] = a[i + 1]
            i += 2
    fam = socket.AF_INET6 if opt.get("6") else socket.AF_INET
    when = opt.get("when", "after")
    first = hello(opt["tls"]) if "tls" in opt else b"hello from reroute\n"
    stage = "resolve"
    s = None
    try:
        addr = (opt["addr"], port) if "addr" in opt else \
            socket.getaddrinfo(name, port, fam, socket.SOCK_STREAM)[0][4]
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if when in ("before", "tfo"):
            stage = "opts"
            set_route(s, fam, opt["via"])
        if when == "tfo":
            stage = "connect"
            s.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_NO_COOKIE, 1)
            s.sendto(first, MSG_FASTOPEN, addr)
        elif when == "deferred":
            stage = "connect"
            s.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1)
            s.connect(addr)
            stage = "opts"
            set_route(s, fam, opt["via"])
            stage = "first"
            s.sendall(first)
        else:
            stage = "connect"
            s.connect(addr)
            stage = "first"
            s.sendall(first)
        if when in ("after", "none"):
            if not s.recv(65536):
                raise OSError(errno.ECONNRESET, "closed before an answer")
        if when == "none":
            if "bulk" in opt:
                stage = "bulk"
                bulk(s, int(opt["bulk"]))
            out(ok=True, stage="done", lport=s.getsockname()[1])
            return
        if when == "after":
            stage = "opts"
            set_route(s, fam, opt["via"])
        stage = "again"
        for _ in range(8):
            s.sendall(b"x" * 1000)
            time.sleep(0.05)
        s.recv(65536)  # an error, once the connection is ended
        out(ok=True, stage="done", lport=s.getsockname()[1])
    except Exception as e:  # noqa: BLE001 -- every failure is a result here
        lport = 0
        try:
            lport = s.getsockname()[1] if s else 0
        except OSError:
            pass
        out(ok=False, errno=err_name(e), stage=stage, lport=lport, error=str(e)[:120])


if __name__ == "__main__":
    main()
