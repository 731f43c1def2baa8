#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Stand-ins for an upstream proxy that fails, for tests/e2e/upstream.sh.

    upstub.py --log F --bind ADDR --silent PORT --garbage PORT --eager PORT

  --silent   accepts, reads, never answers (a proxy that hangs)
  --garbage  answers whatever it is sent with bytes that are no HTTP
  --eager    answers CONNECT with 200 and, in the same write, the first
             bytes of a server that speaks first ("SSH-2.0-eager\r\n"),
             then echoes: the tunnel's bytes right behind the reply
Each connection and what it read is logged to F as one line
("ACCEPT silent peer=IP:PORT", "READ garbage <first line>").  Prints READY
once all listen.  SAFETY: only ever run inside the suite's network
namespaces.
"""
import socket
import sys
import threading

LOCK = threading.Lock()
LOG = None


def log(*parts):
    with LOCK:
        LOG.write(" ".join(parts) + "\n")
        LOG.flush()


def serve(c, peer, kind):
    try:
        log("ACCEPT", kind, "peer=%s:%d" % peer)
        data = c.recv(4096)
        log("READ", kind, data.split(b"\r\n", 1)[0].decode("latin-1"))
        if kind == "garbage":
            c.sendall(b"SSH-2.0-not-a-proxy\r\n\r\n")
        if kind == "eager":
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\nSSH-2.0-eager\r\n")
        c.settimeout(60)
        while True:
            d = c.recv(4096)
            if not d:
                break
            if kind == "eager":
                c.sendall(d)
    except OSError:
        pass
    finally:
        c.close()


def listen(addr, port, kind):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)

    def loop():
        while True:
            c, peer = s.accept()
            threading.Thread(target=serve, args=(c, peer, kind), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def main():
    global LOG
    a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    LOG = open(a["--log"], "a")
    listen(a["--bind"], int(a["--silent"]), "silent")
    listen(a["--bind"], int(a["--garbage"]), "garbage")
    listen(a["--bind"], int(a["--eager"]), "eager")
    print("READY", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
