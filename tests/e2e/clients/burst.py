#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Many quick requests through egressctl's HTTP proxy, for tests/e2e/audit.sh.

    burst.py [--tag T] [--timeout S] N URL

Sends N absolute-URI "GET URL" requests to the proxy in $HTTP_PROXY, one
fresh connection each, one after the other, and prints ONE JSON line:
    {"tag": T, "n": N, "codes": {"200": n, ...}, "errors": {"ECONNRESET": n},
     "secs": <wall time of the N requests>, "start": <epoch>, "end": <epoch>,
     "pid": <pid>}
(status "000" when no HTTP status came back).  --timeout bounds each request
(default 5 s); the whole burst is also bounded by N * timeout.

SAFETY: only ever called with test names inside the suite's netns.
"""
import errno as errno_mod
import json
import os
import socket
import sys
import time


def main():
    args = sys.argv[1:]
    tag, timeout = None, 5.0
    while args and args[0].startswith("--"):
        if args[0] == "--tag":
            tag = args[1]
        elif args[0] == "--timeout":
            timeout = float(args[1])
        args = args[2:]
    n, url = int(args[0]), args[1]
    proxy = os.environ.get("HTTP_PROXY", "").split("://", 1)[-1].rstrip("/")
    phost, pport = proxy.rsplit(":", 1)
    host = url.split("://", 1)[1].split("/", 1)[0]
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (url, host)).encode()
    codes, errors = {}, {}
    start = time.time()
    t0 = time.monotonic()
    for _ in range(n):
        code = "000"
        try:
            s = socket.create_connection((phost, int(pport)), timeout=timeout)
            try:
                s.sendall(req)
                buf = b""
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    buf += d
                if buf.startswith(b"HTTP/"):
                    code = buf.split(b" ", 2)[1].decode("latin-1")
            finally:
                s.close()
        except OSError as e:
            name = "TIMEOUT" if isinstance(e, socket.timeout) else \
                errno_mod.errorcode.get(e.errno or 0, type(e).__name__)
            errors[name] = errors.get(name, 0) + 1
        codes[code] = codes.get(code, 0) + 1
    secs = time.monotonic() - t0
    sys.stdout.write(json.dumps({"tag": tag, "n": n, "codes": codes, "errors": errors,
                                 "secs": round(secs, 4), "start": start, "end": time.time(),
                                 "pid": os.getpid()}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
