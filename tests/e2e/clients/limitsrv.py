#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Servers of the limits suite (tests/e2e/limits.sh), in its "internet" netns.
One thread per connection; every connection and request is logged as one
line to --log (flushed at once), so tests can assert what a server did and
did NOT see.

  limitsrv.py --log F [--echo PORT] [--http PORT]

  --echo   TCP echo, no timeout of its own (held tunnels stay up):
             ACCEPT echo local=IP:PORT peer=IP:PORT
  --http   HTTP/1.1, one request per connection (Connection: close). Reads
           the head and a Content-Length body, logs
             HTTP local=IP:PORT method=M path=P len=N
           and answers by path:
             /silent           nothing, ever (holds the connection)
             /slowhead/S       200 "ok" after S seconds
             /slowbody/N/S     200, Content-Length N, the body spread over S s
             /close/N          200 without a length, N bytes, then close
             anything else     200 "ok M P len=N"
           Bodies are bytes of random.Random(N).randbytes(N).
Prints READY once every socket listens.  SAFETY: only ever run inside the
suite's network namespaces.
"""
import random
import socket
import sys
import threading
import time

LOG = None
LOCK = threading.Lock()


def log(*parts):
    with LOCK:
        LOG.write(" ".join(str(p) for p in parts) + "\n")
        LOG.flush()


def fmt(a):
    return "%s:%d" % (a[0], a[1])


def body_of(n):
    return random.Random(n).randbytes(n)


def serve_echo(c, local, peer):
    log("ACCEPT echo local=%s peer=%s" % (local, peer))
    c.settimeout(120)
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass


def read_request(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return None
        buf += d
        if len(buf) > 256 * 1024:
            return None
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    if path.startswith("http://"):
        path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
    clen = 0
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        if k.strip().lower() == "content-length":
            clen = int(v.strip())
    while len(rest) < clen:
        d = c.recv(65536)
        if not d:
            break
        rest += d
    return method, path, len(rest)


def serve_http(c, local, peer):
    c.settimeout(120)
    try:
        req = read_request(c)
        if not req:
            return
        method, path, n = req
        log("HTTP local=%s method=%s path=%s len=%d" % (local, method, path, n))
        parts = path.strip("/").split("/")
        if parts[0] == "silent":
            while c.recv(65536):
                pass
            return
        if parts[0] == "slowhead":
            time.sleep(float(parts[1]))
        if parts[0] == "slowbody":
            size, secs = int(parts[1]), float(parts[2])
            data = body_of(size)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
            steps = 10
            for i in range(steps):
                time.sleep(secs / steps)
                c.sendall(data[i * size // steps:(i + 1) * size // steps])
            return
        if parts[0] == "close":
            c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body_of(int(parts[1])))
            return
        body = ("ok %s %s len=%d\n" % (method, path, n)).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                  % (len(body), body))
    except OSError as e:
        log("ERR http local=%s peer=%s %s" % (local, peer, e))
    finally:
        try:
            c.shutdown(socket.SHUT_WR)
            c.settimeout(2)
            while c.recv(65536):
                pass
        except OSError:
            pass
        c.close()


def listener(port, fn):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(4096)

    def loop():
        while True:
            c, peer = s.accept()
            local = fmt(c.getsockname())
            threading.Thread(target=fn, args=(c, local, fmt(peer)), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def main():
    global LOG
    args = sys.argv[1:]
    opts = {}
    while args:
        opts[args[0]] = args[1]
        args = args[2:]
    LOG = open(opts["--log"], "a")
    threading.stack_size(256 * 1024)
    if "--echo" in opts:
        listener(int(opts["--echo"]), serve_echo)
    if "--http" in opts:
        listener(int(opts["--http"]), serve_http)
    print("READY", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
