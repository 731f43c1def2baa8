#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Idle inspected HTTPS sessions for the benchmark's memory phase
(tools/bench/phases.sh phase_mem): N TLS connections to HOST:443, each
making one keep-alive request (GET PATH) and reading its response, then
held idle until the STOP file exists.

    tlshold.py HOST PATH N GO STOP

Trusts $SSL_CERT_FILE (egressctl gives CMD the run's CA there when a rule
inspects). Prints READY, waits for the GO file, opens them, prints one
JSON line {"requested", "open", "failed", "error"}, and holds them.
SAFETY: only ever run inside the benchmark's network namespaces."""
import json
import os
import socket
import ssl
import sys
import time


def one(ctx, host, path):
    s = socket.create_connection((host, 443), timeout=10)
    t = ctx.wrap_socket(s, server_hostname=host)
    t.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), host.encode()))
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = t.recv(65536)
        if not d:
            raise EOFError("closed before the response head")
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise ValueError(head.split(b"\r\n")[0].decode(errors="replace"))
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        d = t.recv(65536)
        if not d:
            raise EOFError("closed mid-body")
        body += d
    return t


def main():
    host, path, n, go, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    print("READY", flush=True)
    while not os.path.exists(go):
        time.sleep(0.05)
    held, failed, err = [], 0, ""
    for _ in range(n):
        try:
            held.append(one(ctx, host, path))
        except (OSError, ValueError, EOFError) as e:
            failed += 1
            err = err or repr(e)[:200]
    print(json.dumps({"requested": n, "open": len(held), "failed": failed, "error": err}),
          flush=True)
    while not os.path.exists(stop):
        time.sleep(0.1)


main()
