#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Application servers for the egressctl proxy suite (tests/e2e/proxy.sh).
Every connection and request is logged as one line to --log (flushed at
once), so tests can assert what a server did and did NOT see.

  webservers.py --log F [--bind ADDR,...] [--http PORT,...] [--tls PORT,...]
                [--cert PEM --key PEM] [--banner PORT,...] [--idle S]

  --http    HTTP/1.1 origin server.  Reads the head and the body
            (Content-Length or chunked, decoded), logs
              HTTP local=IP:PORT peer=IP:PORT method=M target=T host=H te=chunked|-
                   cl=<Content-Length>|- hdrs=<header names> auth=<Authorization, blanks
                   as _>|- len=N sha=<sha256 of the body>
                   body=<hex, first 512 bytes>
            and answers 200 "hello <method> <target> via <local>" (Connection: close),
            or, for a path /dl/N/HOW, N bytes of random.Random(N).randbytes(N)
            framed by HOW: cl (Content-Length), close (no length, ends with the
            connection), chunked (64 KiB chunks), short (Content-Length N, then
            only N/2 bytes and a close).
  --tls     the same behind TLS (cert/key), logging first
              TLS local=IP:PORT peer=IP:PORT sni=NAME
            then the HTTP line with "HTTPS" instead of "HTTP".
  --tlsvhost  the --vhost server behind TLS (cert/key; ALPN http/1.1 when
            the client offers it), logging the TLS line first, then VHOST lines
            as below: a kept-alive HTTPS origin (tests/e2e/inspect.sh).
  --banner  server-first TCP (an SSH-like banner "SSH-2.0-egr-PORT"), then echo;
              ACCEPT banner local=IP:PORT peer=IP:PORT / DATA banner local=... <text>
  --vhost   HTTP/1.1 with keep-alive that serves whatever site the Host header
            names, at every address (as a shared front end of many sites
            does).  Logs each request
              VHOST local=IP:PORT peer=IP:PORT cookie=<Cookie>|- nauth=<Authorization
                    lines> auth=<Authorization>|- xk=<X-K>|- (blanks as _)
                    req=<n on this connection> method=M
                    target=T host=H upgrade=<Upgrade header>|- len=N sha=<sha256 of the body>
            and answers "site <host> <method> <target>" (X-Site: <host>), or
            for /b/N/HOW the N bytes of /dl/N/HOW above (cl, chunked, close);
            HEAD gets the head alone; /etag with If-None-Match: "v1" a 304;
            /ws[/...] with Upgrade: websocket a 101, then it echoes every read
            (VHOSTWS local=... <text>).  The connection stays open unless the
            request says Connection: close (or is HTTP/1.0) or HOW is close;
            after a request with "X-Lax: 1" it reads on whatever Connection
            says, as a lax server does (RFC 9112 §9.6 says not to); after
            one for /drop-next, the next request is read, logged
              VHOSTDROP local=IP:PORT peer=IP:PORT target=T
            and the connection closed without an answer (a kept connection
            the server closes as a request comes).
A connection that ends in an error (a reset, the --idle timeout: 15 s) is logged
  ERR KIND local=IP:PORT peer=IP:PORT <exception>

Addresses: the suite's "internet" netns routes whole test ranges to lo
(AnyIP), so "local=" is the destination address the client (the proxy)
connected to: the forged-SNI test asserts it.  Prints READY once every
socket listens.  SAFETY: only ever run inside the suite's network namespaces.
"""
import hashlib
import random
import socket
import ssl
import sys
import threading
import time

LOG = None
LOCK = threading.Lock()
MAX_HEAD = 256 * 1024


def log(*parts):
    with LOCK:
        LOG.write(" ".join(str(p) for p in parts) + "\n")
        LOG.flush()


def fmt(a):
    return ("%s:%d" if ":" not in a[0] else "[%s]:%d") % (a[0], a[1])


class Reader:
    def __init__(self, sock):
        self.s = sock
        self.buf = b""
        self.version = ""  # of the last request read

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def until(self, sep, limit=MAX_HEAD):
        while sep not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("too long")
            self.fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def read_request(r):
    head = r.until(b"\r\n\r\n").decode("latin-1")
    lines = head.split("\r\n")
    parts = lines[0].split(" ")
    method, target, r.version = (parts + ["", "", ""])[:3]
    hdrs, names = {}, []
    for ln in lines[1:]:
        if ":" in ln:
            k, v = ln.split(":", 1)
            hdrs.setdefault(k.strip().lower(), v.strip())
            names.append(k.strip().lower())
    te = hdrs.get("transfer-encoding", "").lower()
    body = b""
    if "chunked" in te:
        while True:
            size = int(r.until(b"\r\n").split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while r.until(b"\r\n") != b"\r\n":  # trailers
                    pass
                break
            body += r.exact(size)
            r.exact(2)
    elif "content-length" in hdrs:
        body = r.exact(int(hdrs["content-length"]))
    return method, target, hdrs, names, ("chunked" if "chunked" in te else "-"), body


def serve_download(c, path, local):
    """/dl/N/HOW: see the module doc. Returns False if path is not one."""
    parts = path.split("/")
    if len(parts) != 4 or parts[1] != "dl" or not parts[2].isdigit() \
            or parts[3] not in ("cl", "close", "chunked", "short"):
        return False
    n, how = int(parts[2]), parts[3]
    body = random.Random(n).randbytes(n)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Served-By: %s\r\n" \
        % local.encode()
    if how in ("cl", "short"):
        c.sendall(head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % n)
        c.sendall(body if how == "cl" else body[:n // 2])
    elif how == "close":
        c.sendall(head + b"Connection: close\r\n\r\n")
        c.sendall(body)
    else:
        c.sendall(head + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        for i in range(0, n, 65536):
            part = body[i:i + 65536]
            c.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
        c.sendall(b"0\r\n\r\n")
    return True


def serve_http(c, kind, local, peer):
    r = Reader(c)
    method, target, hdrs, names, te, body = read_request(r)
    log(kind, "local=" + local, "peer=" + peer, "method=" + method, "target=" + target,
        "host=" + hdrs.get("host", "-"), "te=" + te, "cl=" + hdrs.get("content-length", "-"),
        "hdrs=" + ",".join(names),
        "auth=" + hdrs.get("authorization", "-").replace(" ", "_"), "len=%d" % len(body),
        "sha=" + hashlib.sha256(body).hexdigest(), "body=" + body[:512].hex())
    path = target if target.startswith("/") else "/" + target.split("://", 1)[-1].partition("/")[2]
    if serve_download(c, path.split("?")[0], local):
        return
    text = ("hello %s %s via %s\n" % (method, target, local)).encode()
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
              b"X-Served-By: %s\r\nConnection: close\r\n\r\n" % (len(text), local.encode()) + text)


def vhost_reply(c, method, target, hdrs, keep, local, peer):
    """One response of the --vhost server; False when the connection ends."""
    site = hdrs.get("host", "-")
    if site.startswith("["):
        site = site.partition("]")[0] + "]"
    else:
        site = site.partition(":")[0]
    path = target.split("?")[0]
    conn_h = b"Connection: %s\r\n" % (b"keep-alive" if keep else b"close")
    head = b"HTTP/1.1 %s\r\nX-Site: %s\r\nX-Served-By: %s\r\n"
    if (path == "/ws" or path.startswith("/ws/")) and \
            hdrs.get("upgrade", "").lower() == "websocket":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nX-Site: %s\r\n\r\n" % site.encode())
        while True:
            d = c.recv(4096)
            if not d:
                return False
            log("VHOSTWS", "local=" + local, "peer=" + peer, d.decode(errors="replace").strip())
            c.sendall(d)
    if path == "/etag" and hdrs.get("if-none-match") == '"v1"':
        c.sendall(head % (b"304 Not Modified", site.encode(), local.encode()) +
                  b"ETag: \"v1\"\r\n" + conn_h + b"\r\n")
        return keep
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "b" and parts[2].isdigit() and \
            parts[3] in ("cl", "chunked", "close"):
        n, how = int(parts[2]), parts[3]
        body = random.Random(n).randbytes(n)
    else:
        how = "cl"
        body = ("site %s %s %s\n" % (site, method, target)).encode()
    h = head % (b"200 OK", site.encode(), local.encode())
    if how == "close":
        keep = False
        h += b"Connection: close\r\n\r\n"
    elif how == "chunked":
        h += b"Transfer-Encoding: chunked\r\n" + conn_h + b"\r\n"
    else:
        h += b"Content-Length: %d\r\n" % len(body) + conn_h + b"\r\n"
    if method == "HEAD":
        c.sendall(h)
        return keep
    if how == "chunked":
        h += b"".join(b"%x\r\n" % len(body[i:i + 65536]) + body[i:i + 65536] + b"\r\n"
                      for i in range(0, len(body), 65536)) + b"0\r\n\r\n"
        c.sendall(h)
    else:
        c.sendall(h + body)
    return keep


def serve_vhost(c, local, peer):
    r = Reader(c)
    n = 0
    lax = drop = False
    while True:
        if not r.buf:
            try:
                r.fill()
            except EOFError:
                return  # the client is done: not an error
        method, target, hdrs, names, te, body = read_request(r)
        if drop:
            log("VHOSTDROP", "local=" + local, "peer=" + peer, "target=" + target)
            return
        drop = target == "/drop-next"
        n += 1
        log("VHOST", "local=" + local, "peer=" + peer,
            "cookie=" + hdrs.get("cookie", "-").replace(" ", "_"),
            "nauth=%d" % names.count("authorization"),
            "auth=" + hdrs.get("authorization", "-").replace(" ", "_"),
            "xk=" + hdrs.get("x-k", "-").replace(" ", "_"), "req=%d" % n, "method=" + method,
            "target=" + target, "host=" + hdrs.get("host", "-"),
            "upgrade=" + hdrs.get("upgrade", "-"), "len=%d" % len(body),
            "sha=" + hashlib.sha256(body).hexdigest())
        tokens = [t.strip().lower() for t in hdrs.get("connection", "").split(",")]
        keep = "close" not in tokens and r.version != "HTTP/1.0"
        lax = lax or hdrs.get("x-lax") == "1"
        if not vhost_reply(c, method, target, hdrs, keep, local, peer) and not lax:
            return


IDLE = 15.0


def conn_thread(c, peer, kind, ctx):
    c.settimeout(IDLE)
    local = peer_s = "-"
    try:
        local = fmt(c.getsockname())
        peer_s = fmt(peer)
        if kind == "http":
            serve_http(c, "HTTP", local, peer_s)
        elif kind == "vhost":
            serve_vhost(c, local, peer_s)
        elif kind in ("tls", "tlsvhost"):
            t = ctx.wrap_socket(c, server_side=True, do_handshake_on_connect=False)
            c = t
            try:
                t.do_handshake()
            except (ssl.SSLError, OSError) as e:
                log("TLSERR", "local=" + local, "peer=" + peer_s,
                    "sni=" + (getattr(t, "egr_sni", None) or "-"), repr(e).replace(" ", "_")[:120])
                return
            sni = "sni=" + (getattr(t, "egr_sni", None) or "-")
            if kind == "tlsvhost":
                log("TLS", "local=" + local, "peer=" + peer_s, sni,
                    "alpn=" + (t.selected_alpn_protocol() or "-"))
                serve_vhost(t, local, peer_s)
                return
            log("TLS", "local=" + local, "peer=" + peer_s, sni)
            serve_http(t, "HTTPS", local, peer_s)
        else:
            log("ACCEPT banner", "local=" + local, "peer=" + peer_s)
            c.sendall(b"SSH-2.0-egr-%d\r\n" % c.getsockname()[1])
            while True:
                d = c.recv(4096)
                if not d:
                    break
                log("DATA banner", "local=" + local, "peer=" + peer_s,
                    d.decode(errors="replace").strip())
                c.sendall(d)
    except (OSError, EOFError, ValueError) as e:
        log("ERR", kind, "local=" + local, "peer=" + peer_s, repr(e).replace(" ", "_")[:120])
    finally:
        try:
            c.close()
        except OSError:
            pass


def listener(bind, port, kind, ctx):
    fam = socket.AF_INET6 if ":" in bind else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((bind, port))
    s.listen(128)

    def loop():
        while True:
            c, peer = s.accept()
            threading.Thread(target=conn_thread, args=(c, peer, kind, ctx), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def plist(v):
    return [int(p) for p in v.split(",") if p] if v else []


def main():
    global LOG, IDLE
    args = sys.argv[1:]
    opt = dict(zip(args[::2], args[1::2]))
    LOG = open(opt["--log"], "a")
    IDLE = float(opt.get("--idle", IDLE))
    binds = opt.get("--bind", "0.0.0.0").split(",")
    ctx = None
    if opt.get("--tls") or opt.get("--tlsvhost"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opt["--cert"], opt["--key"])
        ctx.sni_callback = lambda sock, name, _c: setattr(sock, "egr_sni", name)
        if opt.get("--tlsvhost"):
            ctx.set_alpn_protocols(["http/1.1"])
    for bind in binds:
        for p in plist(opt.get("--http")):
            listener(bind, p, "http", None)
        for p in plist(opt.get("--tls")):
            listener(bind, p, "tls", ctx)
        for p in plist(opt.get("--banner")):
            listener(bind, p, "banner", None)
        for p in plist(opt.get("--vhost")):
            listener(bind, p, "vhost", None)
        for p in plist(opt.get("--tlsvhost")):
            listener(bind, p, "tlsvhost", ctx)
    print("READY", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
