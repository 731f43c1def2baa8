#!/usr/bin/python3
"""What `make demo` runs inside the sandbox: a few ordinary connections and
the usual ways around a proxy, each printed with what happened to it."""
import errno
import socket
import sys


def attempt(what, fn):
    try:
        res = fn()
        print(f"  {what:<52} ok: {res}", flush=True)
    except OSError as e:
        name = errno.errorcode.get(e.errno, str(e.errno))
        print(f"  {what:<52} refused: {name}", flush=True)


def tcp(addr, port, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((addr, port))
    peer = s.getpeername()
    reply = s.recv(200).decode(errors="replace").strip()
    return f"peer {peer[0]}:{peer[1]} says {reply!r}"


def http(addr, port):
    s = socket.create_connection((addr, port), timeout=3)
    s.sendall(b"GET / HTTP/1.0\r\nHost: demo.test\r\n\r\n")
    return s.recv(200).split(b"\r\n")[0].decode()


def udp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", (addr, port))
    return "sent"


def sock(fam, typ, proto=0):
    socket.socket(fam, typ, proto).close()
    return "created"


def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + name)
    return "connected"


inet = sys.argv[1]
print("allowed:")
attempt(f"TCP to the fast-path target {inet}:8080 (HTTP)", lambda: http(inet, 8080))
print("redirected to egressctl's transparent listener:")
attempt("TCP to 203.0.113.10:443", lambda: tcp("203.0.113.10", 443))
attempt("TCP to ::ffff:203.0.113.11:22 (v4-mapped)",
        lambda: tcp("::ffff:203.0.113.11", 22, socket.AF_INET6))
attempt(f"TCP to {inet}:80 (not approved)", lambda: tcp(inet, 80))
print("escape attempts:")
attempt("IPv6 TCP to [2001:db8:1::1]:80", lambda: tcp("2001:db8:1::1", 80, socket.AF_INET6))
attempt("UDP to 203.0.113.10:443 (QUIC-like)", lambda: udp("203.0.113.10", 443))
attempt("raw ICMP socket", lambda: sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("ICMP ping socket", lambda: sock(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))
attempt("packet socket", lambda: sock(socket.AF_PACKET, socket.SOCK_RAW))
attempt("MPTCP socket", lambda: sock(socket.AF_INET, socket.SOCK_STREAM, 262))
attempt("abstract unix socket @egressctl-demo", lambda: abstract("egressctl-demo"))
attempt("host loopback service 127.0.0.1:9 (not this cgroup's)", lambda: tcp("127.0.0.1", 9))
