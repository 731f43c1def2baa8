#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Receivers for the decision log's sinks (tests/e2e/ci.sh), standard
library only, on loopback or a unix socket path only.

  logrecv.py otlp ADDR PORT OUT [--status N] [--tls CERT KEY]
      OTLP/HTTP(S): each POST's body (one JSON document) and headers as a
      line of OUT; answers N (200); with --tls, over TLS with CERT and KEY
  logrecv.py syslog PATH OUT                   unix datagrams: each one a
      line of OUT (JSON-escaped, so a line is one datagram)

Prints READY when listening; runs until killed."""
import http.server
import json
import os
import socket
import ssl
import sys


def otlp(addr, port, out, status, tls):
    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            with open(out, "a") as f:
                f.write(json.dumps({"path": self.path, "type": self.headers.get("Content-Type"),
                                    "headers": {k.lower(): v for k, v in self.headers.items()},
                                    "body": body.decode("utf-8", "replace")}) + "\n")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer((addr, port), H)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls[0], tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("READY", flush=True)
    srv.serve_forever()


def syslog(path, out):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        os.unlink(path)
    except OSError:
        pass
    s.bind(path)
    os.chmod(path, 0o666)
    print("READY", flush=True)
    while True:
        d = s.recv(65536)
        with open(out, "a") as f:
            f.write(json.dumps(d.decode("utf-8", "replace")) + "\n")


def main():
    if sys.argv[1] == "otlp":
        status, tls = 200, None
        if "--status" in sys.argv:
            status = int(sys.argv[sys.argv.index("--status") + 1])
        if "--tls" in sys.argv:
            i = sys.argv.index("--tls")
            tls = (sys.argv[i + 1], sys.argv[i + 2])
        otlp(sys.argv[2], int(sys.argv[3]), sys.argv[4], status, tls)
    elif sys.argv[1] == "syslog":
        syslog(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: logrecv.py otlp ADDR PORT OUT | syslog PATH OUT")


if __name__ == "__main__":
    main()
