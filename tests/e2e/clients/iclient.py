#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Clients of the HTTPS inspection suite (tests/e2e/inspect.sh). Each prints
one JSON line: ok, errno (on failure), and what the mode found.

  iclient.py get URL           python urllib as it comes: HTTPS_PROXY and the
                               CA bundle of the environment (SSL_CERT_FILE);
                               code, body's first 200 bytes
  iclient.py ws HOST PATH      a WebSocket upgrade over TLS to HOST:443 (through
                               HTTPS_PROXY's CONNECT when set), the CA bundle of
                               SSL_CERT_FILE; sends "hello-ws" after the 101;
                               code, echo (what came back)
  iclient.py slow HOST PATH MARK SECS
                               GET PATH over TLS (through HTTPS_PROXY when set),
                               reads the head, touches MARK, reads nothing for
                               SECS, then the whole body: code, n (bytes)
  iclient.py mem PID           opens /proc/PID/mem and reads 4 KiB of its heap
                               (from /proc/PID/maps): ok, n
  iclient.py ptrace PID        PTRACE_SEIZE of PID, then PTRACE_DETACH: ok
  iclient.py keyfiles PATH...  reads each file, and every file under each
                               directory (that it can): keys (files that hold
                               "PRIVATE KEY"), files read
SAFETY: only ever run inside the suite's network namespaces."""
import ctypes
import errno
import json
import os
import socket
import ssl
import sys
import time
import urllib.parse
import urllib.request


def out(**kw):
    print(json.dumps(kw), flush=True)


def fail(e):
    en = getattr(e, "errno", None)
    name = errno.errorcode.get(en, type(e).__name__) if isinstance(en, int) else type(e).__name__
    out(ok=False, errno=name, msg=str(e)[:200])


def tls_conn(host, port=443):
    """A TLS socket to host:port, through HTTPS_PROXY's CONNECT when set."""
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if proxy:
        u = urllib.parse.urlparse(proxy)
        s = socket.create_connection((u.hostname, u.port), timeout=10)
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port,
                                                                     host.encode(), port))
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(4096)
            if not d:
                raise ConnectionError("proxy closed")
            head += d
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise ConnectionError("CONNECT: " + head.split(b"\r\n")[0].decode())
    else:
        s = socket.create_connection((host, port), timeout=10)
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(s, server_hostname=host)


def read_head(t):
    head = b""
    while b"\r\n\r\n" not in head:
        d = t.recv(4096)
        if not d:
            raise ConnectionError("closed before the head")
        head += d
    h, _, rest = head.partition(b"\r\n\r\n")
    return h.decode("latin-1"), rest


def mode_get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            out(ok=True, code=str(r.status), body=r.read(200).decode(errors="replace"))
    except urllib.error.HTTPError as e:
        out(ok=True, code=str(e.code), body=e.read(200).decode(errors="replace"),
            perr=e.headers.get("x-proxy-error") or "")
    except Exception as e:  # noqa: BLE001 - one line whatever failed
        fail(e)


def mode_ws(host, path):
    try:
        t = tls_conn(host)
        t.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                  b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                  % (path.encode(), host.encode()))
        head, rest = read_head(t)
        code = head.split(" ")[1]
        echo = rest
        if code == "101":
            t.sendall(b"hello-ws")
            while b"hello-ws" not in echo:
                d = t.recv(4096)
                if not d:
                    break
                echo += d
        out(ok=True, code=code, echo=echo.decode(errors="replace"))
    except Exception as e:  # noqa: BLE001
        fail(e)


def mode_slow(host, path, mark, secs):
    try:
        t = tls_conn(host)
        t.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                  % (path.encode(), host.encode()))
        head, rest = read_head(t)
        open(mark, "w").close()
        time.sleep(float(secs))
        n = len(rest)
        while True:
            d = t.recv(1 << 20)
            if not d:
                break
            n += len(d)
        out(ok=True, code=head.split(" ")[1], n=n)
    except Exception as e:  # noqa: BLE001
        fail(e)


def mode_mem(pid):
    try:
        start = None
        with open("/proc/%s/maps" % pid) as f:
            for ln in f:
                if "[heap]" in ln:
                    start = int(ln.split("-")[0], 16)
                    break
        fd = os.open("/proc/%s/mem" % pid, os.O_RDONLY)
        try:
            data = os.pread(fd, 4096, start) if start else b""
        finally:
            os.close(fd)
        out(ok=True, n=len(data))
    except Exception as e:  # noqa: BLE001
        fail(e)


def mode_ptrace(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17
    if libc.ptrace(PTRACE_SEIZE, int(pid), None, None) != 0:
        e = ctypes.get_errno()
        out(ok=False, errno=errno.errorcode.get(e, str(e)))
        return
    libc.ptrace(PTRACE_DETACH, int(pid), None, None)
    out(ok=True)


def mode_keyfiles(paths):
    keys, files = [], 0
    for d in paths:
        walk = os.walk(d) if os.path.isdir(d) else [(os.path.dirname(d), [], [os.path.basename(d)])]
        for root, _, names in walk:
            for n in names:
                p = os.path.join(root, n)
                try:
                    with open(p, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                files += 1
                if b"PRIVATE KEY" in data:
                    keys.append(p)
    out(ok=True, files=files, keys=keys)


def main():
    a = sys.argv[1:]
    modes = {"get": lambda: mode_get(a[1]), "ws": lambda: mode_ws(a[1], a[2]),
             "slow": lambda: mode_slow(a[1], a[2], a[3], a[4]), "mem": lambda: mode_mem(a[1]),
             "ptrace": lambda: mode_ptrace(a[1]), "keyfiles": lambda: mode_keyfiles(a[1:])}
    modes[a[0]]()


if __name__ == "__main__":
    main()
