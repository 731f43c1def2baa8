#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""DNS clients (and one slow server) for the egressctl DNS suite, tests/e2e/dns.sh.

    dnsq.py [--tag T] [--timeout S] SUBCMD ARG...

Every client subcommand prints exactly ONE JSON line and exits 0:
    {"tag": T, "ok": bool, "errno": "TIMEOUT"|"ECONNREFUSED"|...|null,
     "rcode": "NOERROR"|"REFUSED"|..., "id_ok": <reply id == query id>,
     "an": <answer count>, "answers": [[name, type, ttl, data], ...],
     "rr": "TYPE DATA,..." (the answer section), "ttls": "TTL,...",
     "add": "TYPE DATA,..." (additional records but OPT), "qname": <as echoed>,
     "from": "ip:port" (who the reply came from), "ms": <elapsed>, ...}
"ok" means a reply arrived (whatever its rcode).

  q NAME [TYPE] [--server A] [--port P] [--tcp | --connected] [--noedns]
      one query (UDP sendto by default; --connected: connect()+send();
      --tcp: a length-prefixed query over TCP; EDNS 1232 unless --noedns);
      default server: the first nameserver of /etc/resolv.conf
  burst NAME TYPE N [--server A] [--port P]
      N identical queries at once (N sockets, all sent before any read);
      "rcodes" {rcode: count}, "addrs" (the A data seen), "answered"
  gai NAME      socket.getaddrinfo(NAME, 80, AF_INET): "addrs" or the gaierror
  garbage-udp A P   malformed datagrams (random bytes, a 1-byte and a 5-byte
      datagram, a response (QR set), a truncated question, QDCOUNT 2, an
      unknown opcode), each waited on for a second: "cases"
      {case: rcode of the reply | "none"} and "ids" {case: id matched}
  garbage-tcp A P   one connection: a frame of random bytes, then a
      zero-length frame: "replies" (rcodes read), "closed" (the responder
      closed the connection afterwards), "ms"
  tcp-pipe NAME... [--close] [--server A] [--port P]
      one TCP connection, every A query in one write; "replies" (sorted
      "NAME RCODE ADDRS" per reply, matched by id), or with --close:
      close right after sending
  load NAMEFMT SECONDS WINDOW [--server A] [--port P]
      queries as fast as the responder answers, WINDOW outstanding, for
      SECONDS; NAMEFMT is a name ("cached") or contains {} for a counter
      (every query a fresh name): "qps", "sent", "answered", "rcodes"
  lat NAME N [--server A] [--port P]
      N sequential queries: "median_us", "p90_us", "answered"

  serve ADDR PORT ANSWER DELAY LOG     (run in the "internet" netns)
      a slow authoritative UDP server: every A query is answered ANSWER
      (TTL 60) after DELAY seconds, other types NOERROR/empty; one line per
      query received to LOG ("Q NAME TYPE from IP"); prints READY

SAFETY: only ever called with test addresses inside the suite's network
namespaces.
"""
import errno as errno_mod
import json
import os
import random
import select
import socket
import struct
import sys
import threading
import time

OPTS = {"tag": None, "timeout": 5.0}
TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16,
         "AAAA": 28, "SRV": 33, "OPT": 41, "SVCB": 64, "HTTPS": 65, "ANY": 255}
TNAME = {v: k for k, v in TYPES.items()}
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP",
          5: "REFUSED", 16: "BADVERS"}


def emit(**kw):
    d = {"tag": OPTS["tag"], "ok": False, "errno": None, "pid": os.getpid()}
    d.update(kw)
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()
    sys.exit(0)


def ename(e):
    if isinstance(e, socket.timeout):
        return "TIMEOUT"
    if isinstance(e, socket.gaierror):
        return "EAI:%s" % e.args[0]
    if getattr(e, "errno", None):
        return errno_mod.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


def default_server():
    try:
        with open("/etc/resolv.conf") as f:
            for ln in f:
                p = ln.split()
                if len(p) >= 2 and p[0] == "nameserver":
                    return p[1]
    except OSError:
        pass
    return "127.0.0.1"


def opt(args, name, default=None, conv=str):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return conv(v)
    return default


def flag(args, name):
    if name in args:
        args.remove(name)
        return True
    return False


# ---------------------------------------------------------------- messages

def qname(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def build_query(name, qtype, qid, edns=True):
    h = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1 if edns else 0)
    q = qname(name) + struct.pack(">HH", qtype, 1)
    o = b"\0" + struct.pack(">HHIH", 41, 1232, 0, 0) if edns else b""
    return h + q + o


def read_name(buf, off, depth=0):
    labels = []
    while True:
        if off >= len(buf) or depth > 20:
            raise ValueError("bad name")
        n = buf[off]
        if n & 0xC0 == 0xC0:
            ptr = struct.unpack(">H", buf[off:off + 2])[0] & 0x3FFF
            name, _ = read_name(buf, ptr, depth + 1)
            if name:
                labels.append(name)
            return ".".join(labels), off + 2
        off += 1
        if n == 0:
            return ".".join(labels), off
        labels.append(buf[off:off + n].decode("latin-1"))
        off += n


def rdata_text(buf, off, rtype, rdlen):
    rd = buf[off:off + rdlen]
    if rtype == 1 and rdlen == 4:
        return socket.inet_ntop(socket.AF_INET, rd)
    if rtype == 28 and rdlen == 16:
        return socket.inet_ntop(socket.AF_INET6, rd)
    if rtype in (2, 5, 12):
        return read_name(buf, off)[0]
    if rtype == 15:
        return "%d %s" % (struct.unpack(">H", rd[:2])[0], read_name(buf, off + 2)[0])
    if rtype == 33:
        pr, w, port = struct.unpack(">HHH", rd[:6])
        return "%d %d %d %s" % (pr, w, port, read_name(buf, off + 6)[0])
    if rtype == 16:
        parts, i = [], 0
        while i < len(rd):
            n = rd[i]
            parts.append(rd[i + 1:i + 1 + n].decode("latin-1"))
            i += 1 + n
        return "|".join(parts)
    return rd.hex()


def parse_reply(buf):
    qid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", buf[:12])
    r = {"id": qid, "rcode": RCODES.get(flags & 0xF, str(flags & 0xF)),
         "qr": bool(flags & 0x8000), "tc": bool(flags & 0x0200), "aa": bool(flags & 0x0400),
         "an": an, "ns": ns, "ar": ar, "answers": [], "additional": []}
    off = 12
    try:
        for _ in range(qd):
            r["qname"], off = read_name(buf, off)
            off += 4
        for sec in range(an + ns + ar):
            name, off = read_name(buf, off)
            rtype, _cls, ttl, rdlen = struct.unpack(">HHIH", buf[off:off + 10])
            off += 10
            rec = [name, TNAME.get(rtype, str(rtype)), ttl, rdata_text(buf, off, rtype, rdlen)]
            off += rdlen
            if sec < an:
                r["answers"].append(rec)
            elif sec >= an + ns and rtype != 41:
                r["additional"].append(rec)
    except (ValueError, struct.error, IndexError) as e:
        r["parse_error"] = str(e)
    return r


# ---------------------------------------------------------------- clients

def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise ConnectionResetError(errno_mod.ECONNRESET, "closed")
        b += d
    return b


def one_query(name, qtype, server, port, mode, edns=True):
    qid = random.randrange(1, 65536)
    msg = build_query(name, qtype, qid, edns)
    t0 = time.monotonic()
    peer = None
    try:
        if mode == "tcp":
            s = socket.create_connection((server, port), timeout=OPTS["timeout"])
            s.sendall(struct.pack(">H", len(msg)) + msg)
            n = struct.unpack(">H", recv_exact(s, 2))[0]
            buf = recv_exact(s, n)
            peer = s.getpeername()
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(OPTS["timeout"])
            if mode == "connected":
                s.connect((server, port))
                s.send(msg)
                buf = s.recv(65535)
                peer = s.getpeername()
            else:
                s.sendto(msg, (server, port))
                buf, peer = s.recvfrom(65535)
        s.close()
    except OSError as e:
        emit(errno=ename(e), ms=round((time.monotonic() - t0) * 1000))
    ms = round((time.monotonic() - t0) * 1000)
    if len(buf) < 12:
        emit(ok=True, rcode="SHORT", ms=ms, nbytes=len(buf))
    r = parse_reply(buf)
    emit(ok=True, rcode=r["rcode"], id_ok=r["id"] == qid, qr=r["qr"], tc=r["tc"], an=r["an"],
         nbytes=len(buf), rr=",".join("%s %s" % (a[1], a[3]) for a in r["answers"]),
         ttls=",".join(str(a[2]) for a in r["answers"]),
         add=",".join("%s %s" % (a[1], a[3]) for a in r["additional"]),
         qname=r.get("qname", ""), answers=r["answers"],
         **{"from": "%s:%d" % peer[:2], "ms": ms, "parse_error": r.get("parse_error") or ""})


def cmd_q(args):
    server = opt(args, "--server", None) or default_server()
    port = opt(args, "--port", 53, int)
    mode = "tcp" if flag(args, "--tcp") else "connected" if flag(args, "--connected") else "udp"
    edns = not flag(args, "--noedns")
    name = args[0]
    qtype = TYPES.get(args[1].upper(), None) if len(args) > 1 else 1
    if qtype is None:
        qtype = int(args[1])
    one_query(name, qtype, server, port, mode, edns)


def cmd_burst(args):
    server = opt(args, "--server", None) or default_server()
    port = opt(args, "--port", 53, int)
    name, qtype, n = args[0], TYPES[args[1].upper()], int(args[2])
    socks, ids = [], {}
    t0 = time.monotonic()
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setblocking(False)
        qid = random.randrange(1, 65536)
        ids[s] = qid
        socks.append(s)
    for s in socks:
        s.sendto(build_query(name, qtype, ids[s]), (server, port))
    rcodes, addrs, left = {}, set(), set(socks)
    deadline = t0 + OPTS["timeout"]
    while left and time.monotonic() < deadline:
        rl, _, _ = select.select(list(left), [], [], max(0.0, deadline - time.monotonic()))
        for s in rl:
            buf = s.recv(65535)
            r = parse_reply(buf)
            if r["id"] != ids[s]:
                continue
            rcodes[r["rcode"]] = rcodes.get(r["rcode"], 0) + 1
            addrs.update(a[3] for a in r["answers"] if a[1] == "A")
            left.discard(s)
    emit(ok=not left, answered=n - len(left), rcodes=rcodes, addrs=sorted(addrs),
         ms=round((time.monotonic() - t0) * 1000))


def cmd_gai(args):
    t0 = time.monotonic()
    try:
        ai = socket.getaddrinfo(args[0], 80, socket.AF_INET, socket.SOCK_STREAM)
    except OSError as e:
        emit(errno=ename(e), ms=round((time.monotonic() - t0) * 1000))
    emit(ok=True, addrs=sorted({a[4][0] for a in ai}), ms=round((time.monotonic() - t0) * 1000))


def cmd_garbage_udp(args):
    server, port = args[0], int(args[1])
    rnd = random.Random(53)
    good = build_query("g.test", 1, 0x4242, edns=False)
    cases = [
        ("random", bytes([0x51, 0x52, 0x01, 0x00]) + bytes(rnd.randrange(256) for _ in range(296))),
        ("one_byte", b"\x7f"),
        ("five_bytes", b"\x12\x34\x01\x00\x00"),
        ("response", bytes([0x43, 0x43, 0x81, 0x80]) + good[4:]),
        ("truncated_question", good[:12] + b"\x05allow"),
        ("qdcount2", good[:4] + b"\x00\x02" + good[6:]),
        ("opcode_status", good[:2] + b"\x10\x00" + good[4:]),
        ("trailing_bytes", good[:2] + b"\x01\x00" + good[4:] + b"junk"),
        ("pointer_loop", good[:12] + b"\xc0\x0c\x00\x01\x00\x01"),
    ]
    out, ids = {}, {}
    for name, payload in cases:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1.0)
        try:
            s.sendto(payload, (server, port))
            buf = s.recv(65535)
            out[name] = RCODES.get(buf[3] & 0xF, str(buf[3] & 0xF)) if len(buf) >= 4 else "SHORT"
            ids[name] = len(payload) >= 2 and buf[:2] == payload[:2]
        except socket.timeout:
            out[name] = "none"
        except OSError as e:
            out[name] = ename(e)
        s.close()
    emit(ok=True, cases=out, ids=ids)


def cmd_garbage_tcp(args):
    server, port = args[0], int(args[1])
    rnd = random.Random(54)
    t0 = time.monotonic()
    replies, closed = [], False
    try:
        s = socket.create_connection((server, port), timeout=OPTS["timeout"])
        junk = bytes(rnd.randrange(256) for _ in range(300))
        s.sendall(struct.pack(">H", len(junk)) + junk + b"\x00\x00")
        s.settimeout(3.0)
        buf = b""
        while True:
            try:
                d = s.recv(65535)
            except socket.timeout:
                break
            except OSError:
                closed = True
                break
            if not d:
                closed = True
                break
            buf += d
        while len(buf) >= 2:
            n = struct.unpack(">H", buf[:2])[0]
            m = buf[2:2 + n]
            replies.append(RCODES.get(m[3] & 0xF, "?") if len(m) >= 4 else "SHORT")
            buf = buf[2 + n:]
        s.close()
    except OSError as e:
        emit(errno=ename(e), replies=replies)
    emit(ok=True, replies=replies, closed=closed, ms=round((time.monotonic() - t0) * 1000))


def cmd_tcp_pipe(args):
    server = opt(args, "--server", None) or default_server()
    port = opt(args, "--port", 53, int)
    close = flag(args, "--close")
    qs = [(n, random.randrange(1, 65536)) for n in args]
    t0 = time.monotonic()
    try:
        s = socket.create_connection((server, port), timeout=OPTS["timeout"])
        wire = b""
        for n, qid in qs:
            m = build_query(n, 1, qid)
            wire += struct.pack(">H", len(m)) + m
        s.sendall(wire)
        if close:
            s.close()
            emit(ok=True, sent=len(qs), ms=round((time.monotonic() - t0) * 1000))
        got = []
        for _ in qs:
            n = struct.unpack(">H", recv_exact(s, 2))[0]
            r = parse_reply(recv_exact(s, n))
            name = next((q for q, i in qs if i == r["id"]), None)
            got.append("%s %s %s" % (name, r["rcode"], ",".join(a[3] for a in r["answers"])))
        s.close()
    except OSError as e:
        emit(errno=ename(e))
    emit(ok=True, replies=sorted(got), ms=round((time.monotonic() - t0) * 1000))


def cmd_load(args):
    server = opt(args, "--server", None) or default_server()
    port = opt(args, "--port", 53, int)
    fmt, secs, window = args[0], float(args[1]), int(args[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.setblocking(False)
    outstanding = {}  # id -> send time
    sent = answered = 0
    rcodes = {}
    counter = [0]
    nextid = [0]

    def send_one():
        nextid[0] = (nextid[0] + 1) & 0xFFFF
        if nextid[0] in outstanding:
            return False
        name = fmt
        if "{}" in fmt:
            counter[0] += 1
            name = fmt.replace("{}", "n%d" % counter[0])
        try:
            s.sendto(build_query(name, 1, nextid[0], edns=False), (server, port))
        except BlockingIOError:
            return False
        outstanding[nextid[0]] = time.monotonic()
        return True

    t0 = time.monotonic()
    end = t0 + secs
    while time.monotonic() < end:
        while len(outstanding) < window and send_one():
            sent += 1
        rl, _, _ = select.select([s], [], [], 0.2)
        if rl:
            for _ in range(256):
                try:
                    buf = s.recv(65535)
                except BlockingIOError:
                    break
                qid = struct.unpack(">H", buf[:2])[0]
                if outstanding.pop(qid, None) is not None:
                    answered += 1
                    rc = RCODES.get(buf[3] & 0xF, "?")
                    rcodes[rc] = rcodes.get(rc, 0) + 1
        now = time.monotonic()
        for qid in [q for q, t in outstanding.items() if now - t > 2.0]:
            del outstanding[qid]  # lost: stop waiting for it
    el = time.monotonic() - t0
    emit(ok=answered > 0, sent=sent, answered=answered, qps=round(answered / el), rcodes=rcodes,
         secs=round(el, 2))


def cmd_lat(args):
    server = opt(args, "--server", None) or default_server()
    port = opt(args, "--port", 53, int)
    name, n = args[0], int(args[1])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2.0)
    lat = []
    for i in range(n):
        qid = (i + 1) & 0xFFFF
        msg = build_query(name, 1, qid, edns=False)
        t0 = time.perf_counter()
        s.sendto(msg, (server, port))
        try:
            while True:
                buf = s.recv(65535)
                if buf[:2] == msg[:2]:
                    break
        except socket.timeout:
            continue
        lat.append((time.perf_counter() - t0) * 1e6)
    lat.sort()
    if not lat:
        emit(answered=0)
    emit(ok=True, answered=len(lat), median_us=round(lat[len(lat) // 2]),
         p90_us=round(lat[int(len(lat) * 0.9)]), min_us=round(lat[0]))


# ---------------------------------------------------------------- server

def cmd_serve(args):
    addr, port, answer, delay, logpath = args[0], int(args[1]), args[2], float(args[3]), args[4]
    log = open(logpath, "a", buffering=1)
    lock = threading.Lock()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))

    def reply(buf, peer):
        time.sleep(delay)
        try:
            qid, flags = struct.unpack(">HH", buf[:4])
            name, off = read_name(buf, 12)
            qtype = struct.unpack(">H", buf[off:off + 2])[0]
        except (ValueError, struct.error, IndexError):
            return
        q = buf[12:off + 4]
        rrs = b""
        if qtype == 1:
            rrs = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(answer)
        h = struct.pack(">HHHHHH", qid, 0x8400 | (flags & 0x0100), 1, 1 if rrs else 0, 0, 0)
        with lock:
            s.sendto(h + q + rrs, peer)

    print("READY", flush=True)
    while True:
        buf, peer = s.recvfrom(65535)
        try:
            name, off = read_name(buf, 12)
            qtype = struct.unpack(">H", buf[off:off + 2])[0]
        except (ValueError, struct.error, IndexError):
            continue
        with lock:
            log.write("Q %s %s from %s\n" % (name.lower(), TNAME.get(qtype, qtype), peer[0]))
        threading.Thread(target=reply, args=(buf, peer), daemon=True).start()


def main():
    args = sys.argv[1:]
    while args and args[0] in ("--tag", "--timeout"):
        OPTS[args[0][2:]] = float(args[1]) if args[0] == "--timeout" else args[1]
        args = args[2:]
    if not args:
        emit(errno="USAGE")
    if args[0] == "serve":
        cmd_serve(args[1:])
        return
    fn = {"q": cmd_q, "burst": cmd_burst, "gai": cmd_gai, "garbage-udp": cmd_garbage_udp,
          "garbage-tcp": cmd_garbage_tcp, "tcp-pipe": cmd_tcp_pipe, "load": cmd_load, "lat": cmd_lat}.get(args[0])
    if fn is None:
        emit(errno="USAGE")
    try:
        fn(args[1:])
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 -- one JSON line whatever happens
        emit(errno="EXC:%s" % type(e).__name__, data=str(e)[:200])


if __name__ == "__main__":
    main()
