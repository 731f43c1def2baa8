#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Receivers for the decision log's sinks (tests/e2e/ci.sh), standard
library only, on loopback or a unix socket path only.

  logrecv.py otlp ADDR PORT OUT [--status N]   OTLP/HTTP: each POST's body
      (one JSON document) as a line of OUT; answers N (200)
  logrecv.py syslog PATH OUT                   unix datagrams: each one a
      line of OUT (JSON-escaped, so a line is one datagram)

Prints READY when listening; runs until killed."""
import http.server
import json
import os
import socket
import sys


def otlp(addr, port, out, status):
    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            with open(out, "a") as f:
                f.write(json.dumps({"path": self.path, "type": self.headers.get("Content-Type"),
                                    "body": body.decode("utf-8", "replace")}) + "\n")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer((addr, port), H)
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
        status = 200
        if "--status" in sys.argv:
            status = int(sys.argv[sys.argv.index("--status") + 1])
        otlp(sys.argv[2], int(sys.argv[3]), sys.argv[4], status)
    elif sys.argv[1] == "syslog":
        syslog(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: logrecv.py otlp ADDR PORT OUT | syslog PATH OUT")


if __name__ == "__main__":
    main()
