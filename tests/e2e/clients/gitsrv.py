#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A git smart-HTTP server over TLS for tests/e2e/inspect.sh: every request
goes to `git http-backend` (CGI) with the repositories under ROOT, and is
logged as one line to LOG:

    GIT method=M path=P query=Q status=S

    gitsrv.py --bind ADDR --port N --cert PEM --key PEM --root DIR --log F

Prints READY once it listens. SAFETY: only ever run inside the suite's
network namespaces."""
import http.server
import os
import ssl
import subprocess
import sys
import threading

BACKEND = "/usr/lib/git-core/git-http-backend"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def run_backend(self):
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(n) if n else b""
        env = {"GIT_PROJECT_ROOT": ROOT, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "test",
               "REMOTE_ADDR": self.client_address[0], "PATH": "/usr/bin:/bin",
               "GIT_CONFIG_NOSYSTEM": "1", "HOME": ROOT}
        p = subprocess.run([BACKEND], input=body, env=env, capture_output=True, timeout=60)
        head, _, out = p.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = p.stdout.partition(b"\n\n")
        status, hdrs = 200, []
        for line in head.decode(errors="replace").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        with LOCK:
            LOG.write("GIT method=%s path=%s query=%s status=%d\n" % (self.command, path, query or "-", status))
            LOG.flush()

    do_GET = run_backend
    do_POST = run_backend


def main():
    global ROOT, LOG
    opt = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    ROOT = opt["--root"]
    LOG = open(opt["--log"], "a")
    srv = http.server.ThreadingHTTPServer((opt["--bind"], int(opt["--port"])), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(opt["--cert"], opt["--key"])
    ctx.set_alpn_protocols(["http/1.1"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("READY", flush=True)
    srv.serve_forever()


LOCK = threading.Lock()
ROOT = LOG = None
main()
