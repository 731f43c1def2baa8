#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A process that already has connections when egressctl attaches to its
cgroup (tests/e2e/existing.sh).

    holder.py [--timeout S] [--tcp ADDR:PORT]... [--udp ADDR:PORT]...
    holder.py serve --log FILE --port P

Opens every connection (connected UDP sockets too), does one round trip on
each with an echo server, prints one JSON line and then reads commands,
one per line, from stdin; each command prints one JSON line:

    {"ready": true, "pid": P, "conns": {"t0": {"proto": "tcp", "local": "ip:port",
     "peer": "ip:port", "ok": true, "errno": null}, "u0": {...}}}

    ping TOKEN [S]           one round trip on every connection: sends
                             "TOKEN NAME", wants it echoed back within S
                             seconds (default --timeout)
                             -> {"cmd": "ping", "results": {"t0": {"ok": .., "errno": ..}}}
    new tcp|udp ADDR PORT NAME   a connection made now (after the attach), kept
                             as NAME: connect and one round trip
                             -> {"cmd": "new", "name": NAME, "ok": .., "errno": .., "local": ..}
    close NAME TOKEN         one round trip with "TOKEN NAME", then close(): the
                             FIN leaves after the socket's file is released
                             (nothing unread: else close() sends a reset)
                             -> {"cmd": "close", "name": NAME, "ok": .., "errno": ..}
    quit

errno is a name ("ECONNABORTED", "TIMEOUT" when nothing came back within
--timeout). A UDP socket's pending error (SO_ERROR) is reported before
anything is sent on it.

serve: a TCP echo server on 0.0.0.0:P and [::]:P that, unlike servers.py,
never ends an idle connection (a stalled connection must stay open on the
server's side); every line received is logged to FILE as
"DATA tcp local=A peer=B LINE". Prints READY once listening.

SAFETY: only ever called with test addresses inside the suite's namespaces.
"""
import errno as errno_mod
import json
import os
import socket
import sys
import threading

TIMEOUT = 3.0
CONNS = {}  # name -> (proto, socket)


def ename(num):
    return errno_mod.errorcode.get(num, str(num))


def addr_of(spec):
    """ "198.51.100.1:7000" or "[2001:db8:2::1]:7000" -> (family, (host, port))"""
    host, _, port = spec.rpartition(":")
    if host.startswith("["):
        return socket.AF_INET6, (host[1:-1], int(port))
    return socket.AF_INET, (host, int(port))


def fmt(a):
    return ("[%s]:%d" if ":" in a[0] else "%s:%d") % (a[0], a[1])


def round_trip(proto, s, token):
    """One echo round trip; (ok, errno name)."""
    try:
        if proto == "udp":
            pending = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if pending:
                return False, ename(pending)
        msg = (token + "\n").encode()
        s.send(msg)
        got = b""
        # the echo of this token; bytes of an earlier, stalled round trip
        # that arrive first are skipped
        while not got.endswith(msg):
            chunk = s.recv(4096)
            if not chunk:
                return False, "EOF"
            got = chunk if proto == "udp" else got + chunk
        return True, None
    except socket.timeout:
        return False, "TIMEOUT"
    except OSError as e:
        return False, ename(e.errno) if e.errno else str(e)


def open_conn(name, proto, spec):
    family, addr = addr_of(spec)
    s = socket.socket(family, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    s.settimeout(TIMEOUT)
    d = {"proto": proto, "peer": fmt(addr), "local": None}
    try:
        s.connect(addr)
        d["local"] = fmt(s.getsockname())
    except socket.timeout:
        d.update(ok=False, errno="TIMEOUT")
        s.close()
        return d
    except OSError as e:
        d.update(ok=False, errno=ename(e.errno))
        s.close()
        return d
    CONNS[name] = (proto, s)
    ok, err = round_trip(proto, s, "hello %s %s" % (name, os.getpid()))
    d.update(ok=ok, errno=err)
    return d


def out(d):
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()


def serve(log_path, port):
    lock = threading.Lock()
    log = open(log_path, "a")

    def conn(c, local, peer):
        buf = b""
        with c:
            while True:
                try:
                    data = c.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    with lock:
                        log.write("DATA tcp local=%s peer=%s %s\n" % (local, peer, line.decode(errors="replace")))
                        log.flush()
                try:
                    c.sendall(data)
                except OSError:
                    return

    def listen(family, host):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, port))
        s.listen(256)

        def loop():
            while True:
                c, peer = s.accept()
                local = fmt(c.getsockname()[:2])
                threading.Thread(target=conn, args=(c, local, fmt(peer[:2])), daemon=True).start()
        threading.Thread(target=loop, daemon=True).start()
    listen(socket.AF_INET, "0.0.0.0")
    listen(socket.AF_INET6, "::")
    out({"ready": True, "READY": True})
    threading.Event().wait()


def main():
    global TIMEOUT
    args = sys.argv[1:]
    if args[:1] == ["serve"]:
        opt = dict(zip(args[1::2], args[2::2]))
        serve(opt["--log"], int(opt["--port"]))
        return
    want = []
    while args:
        a = args.pop(0)
        if a == "--timeout":
            TIMEOUT = float(args.pop(0))
        elif a in ("--tcp", "--udp"):
            want.append((a[2:], args.pop(0)))
        else:
            sys.exit("usage: holder.py [--timeout S] [--tcp ADDR:PORT]... [--udp ADDR:PORT]...")
    n = {"tcp": 0, "udp": 0}
    conns = {}
    for proto, spec in want:
        name = "%s%d" % (proto[0], n[proto])
        n[proto] += 1
        conns[name] = open_conn(name, proto, spec)
    out({"ready": True, "pid": os.getpid(), "conns": conns})
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "ping" and len(w) in (2, 3):
            res = {}
            for name, (proto, s) in CONNS.items():
                s.settimeout(float(w[2]) if len(w) == 3 else TIMEOUT)
                ok, err = round_trip(proto, s, "%s %s" % (w[1], name))
                res[name] = {"ok": ok, "errno": err}
            out({"cmd": "ping", "token": w[1], "results": res})
        elif w[0] == "new" and len(w) == 5:
            spec = ("[%s]:%s" if ":" in w[2] else "%s:%s") % (w[2], w[3])
            d = open_conn(w[4], w[1], spec)
            d.update(cmd="new", name=w[4])
            out(d)
        elif w[0] == "close" and len(w) == 3 and w[1] in CONNS:
            proto, s = CONNS.pop(w[1])
            ok, err = round_trip(proto, s, "%s %s" % (w[2], w[1]))
            s.close()
            out({"cmd": "close", "name": w[1], "ok": ok, "errno": err})
        elif w[0] == "quit":
            break
        else:
            out({"cmd": w[0], "ok": False, "errno": "USAGE"})


if __name__ == "__main__":
    main()
