#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Long-lived connections for the daemon suite (daemon.sh).

    longconn.py banner HOST PORT [--hold-for S] [--every S]
        connects to a banner+echo server, reads the banner, then every S
        seconds sends a line on that SAME connection and reads its echo,
        and opens a NEW connection to HOST:PORT and reads its banner (1 s
        timeout); one JSON line per event: {"held": true, ...}, {"echo": N},
        {"new": "ok"|"EOF"|ERRNO} (ok: the banner came),
        and {"errno": ERRNO, "step": ...} when the held connection ends.
    longconn.py tls HOST PORT NAME [--hold-for S]
        a TLS handshake with SNI NAME (no verification: a test server), then
        waits on the connection; {"held": true} and, when it ends,
        {"closed": "eof"|ERRNO}.

SAFETY: only ever called with test addresses inside the suite's network
namespaces.
"""
import errno as errno_mod
import json
import os
import socket
import ssl
import sys
import time


def out(**kw):
    kw["pid"] = os.getpid()
    print(json.dumps(kw), flush=True)


def ename(e):
    return errno_mod.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def opts(argv):
    o = {"hold-for": 30.0, "every": 0.5}
    rest = []
    i = 0
    while i < len(argv):
        if argv[i].startswith("--"):
            o[argv[i][2:]] = float(argv[i + 1])
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return o, rest


def hp(a):
    return ("[%s]:%d" if ":" in a[0] else "%s:%d") % a[:2]


def banner(host, port, o):
    # an IPv6 literal as it is (the ipv6 suite), a name or IPv4 resolved
    sa = (host if ":" in host else socket.gethostbyname(host), int(port))
    s = socket.create_connection(sa, timeout=3)
    s.recv(256)
    out(held=True, local=hp(s.getsockname()), peer=hp(s.getpeername()))
    end = time.time() + o["hold-for"]
    n = 0
    while time.time() < end:
        time.sleep(o["every"])
        n += 1
        try:
            s.settimeout(2)
            s.sendall(b"ping %d\n" % n)
            got = s.recv(256)
            if not got:
                out(errno="EOF", step="echo")
                return
            out(echo=n)
        except OSError as e:
            out(errno=ename(e) if not isinstance(e, socket.timeout) else "TIMEOUT", step="echo")
            return
        try:
            c = socket.create_connection(sa, timeout=1)
            c.settimeout(1)
            got = c.recv(256)  # the banner: the server's, or nothing
            c.close()
            out(new="ok" if got else "EOF")
        except OSError as e:
            out(new=ename(e) if not isinstance(e, socket.timeout) else "TIMEOUT")


def tls(host, port, name, o):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection((socket.gethostbyname(host), int(port)), timeout=5)
    s = ctx.wrap_socket(raw, server_hostname=name)
    out(held=True)
    s.settimeout(o["hold-for"])
    try:
        got = s.recv(256)
        out(closed="eof" if not got else "data")
    except socket.timeout:
        out(closed="TIMEOUT")
    except ssl.SSLError as e:
        out(closed="SSL:" + e.__class__.__name__)
    except OSError as e:
        out(closed=ename(e))


def main():
    o, rest = opts(sys.argv[1:])
    try:
        if rest[0] == "banner":
            banner(rest[1], rest[2], o)
        elif rest[0] == "tls":
            tls(rest[1], rest[2], rest[3], o)
        else:
            out(errno="USAGE")
    except OSError as e:
        out(errno=ename(e), step="connect")


main()
