#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Inside the sandbox: the proxy's connection limit and idle timeout.
usage: limits.py maxconns HOST   (egressctl run --max-conns 2)
       limits.py idle HOST       (egressctl run --idle-timeout 2)
Prints one JSON line."""
import json
import os
import socket
import sys
import time

proxy = os.environ["HTTP_PROXY"].split("//")[1].rstrip("/")
ph, pp = proxy.rsplit(":", 1)


def tunnel(host):
    s = socket.create_connection((ph, int(pp)), timeout=5)
    s.sendall(f"CONNECT {host}:80 HTTP/1.1\r\nHost: {host}:80\r\n\r\n".encode())
    head = s.recv(200)
    if b" 200 " not in head:
        raise OSError(f"CONNECT answered {head[:40]!r}")
    return s


def get(s, host):
    s.sendall(f"GET /limits HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return s.recv(100).split(b"\r\n")[0].decode()


mode, host = sys.argv[1], sys.argv[2]
res = {}
if mode == "maxconns":
    a, b = tunnel(host), tunnel(host)
    try:
        c = socket.create_connection((ph, int(pp)), timeout=5)
        c.sendall(f"CONNECT {host}:80 HTTP/1.1\r\n\r\n".encode())
        res["third"] = repr(c.recv(100))
    except OSError as e:
        res["third"] = "error " + type(e).__name__
    res["first"] = get(a, host)
    res["second"] = get(b, host)
else:
    a = tunnel(host)
    time.sleep(4)
    try:
        res["after_idle"] = get(a, host) or "closed"
    except OSError as e:
        res["after_idle"] = "error " + type(e).__name__
print(json.dumps(res))
