#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Load for the stress suite (tests/stress/stress.sh), run as the confined
command: every connection goes through one of egressctl's listeners.  Every
loop is bounded in count and time; every job prints ONE JSON line.

  load.py flood MODE HOST:PORT PATH --rate R --count N [--conc C] [--timeout S]
      N requests "GET PATH" at R per second at most (C in flight at most),
      each on a fresh connection; MODE:
        http         absolute URI through $HTTP_PROXY
        connect      a CONNECT tunnel through $HTTP_PROXY, then the request
        socks5       SOCKS5 CONNECT (domain name) through $ALL_PROXY
        transparent  straight to what HOST resolves to (the kernel
                     redirects it to the transparent listener)
      -> {"n", "ok" (2xx with the whole body), "codes", "errors", "secs",
          "rps", "p50_ms", "p99_ms", "max_ms"}
  load.py slow MODE HOST:PORT --n M --trickle T --hold S [--ready FILE]
      M slow clients: each reaches the head stage of MODE (http, connect,
      socks5, transparent, dns_tcp: HOST is then the resolver) and sends its
      head one byte every T seconds, for at most S seconds.  Counts those
      the server (egressctl) closed, and when.
      -> {"n", "opened", "closed_by_peer", "close_s": {"min","p50","max"},
          "still_open"}
  load.py dns PROTO SERVER NAMES --rate R --count N [--conc C]
      N A queries (names taken in turn from the comma-separated NAMES) over
      udp or tcp (a fresh connection each), at R per second at most.
      -> {"n", "rcodes": {"0": n, "5": n, ...}, "errors", "answers", "secs"}
  load.py reset MODE HOST:PORT PATH --count N --after B
      N downloads of PATH, each reset (SO_LINGER 0) by the client after B
      body bytes.  -> {"n", "reset_after_b", "errors"}
  load.py cut MODE HOST:PORT PATH --count N
      N downloads the server resets half-way (/rst/N): each must end (EOF or
      a reset), none may hang.  -> {"n", "short", "whole", "errors"}
  load.py upper MODE HOST:PORT --bytes B
      sends B bytes, half-closes, reads the answer to EOF (the upper server).
      -> {"ok", "sent", "got", "match"}
  load.py first MODE HOST:PORT --bytes B
      reads the server's greeting to EOF (it half-closed), then sends B
      bytes and half-closes.  -> {"ok", "greeting", "eof_first", "sent",
      "sha"}
  load.py hold MODE HOST:PORT PATH --n N --ready FILE --rate BPS [--secs S] [--drain F]
      N downloads of PATH read at BPS bytes/s each (64 KiB receive buffers),
      at full speed once the file --drain names exists; FILE is created once
      all have their first body bytes; ends when the connections end or S
      pass.
      -> {"n", "started", "ended_by_peer", "bytes"}

SAFETY: only ever run inside the suite's network namespaces, at test names.
"""
import asyncio
import errno as errno_mod
import hashlib
import json
import os
import socket
import statistics
import struct
import sys
import time


def out(d):
    sys.stdout.write(json.dumps(d, sort_keys=True) + "\n")
    sys.stdout.flush()


def err_name(e):
    if isinstance(e, asyncio.TimeoutError):
        return "TIMEOUT"
    if isinstance(e, asyncio.IncompleteReadError):
        return "EOF"
    if isinstance(e, OSError) and e.errno:
        return errno_mod.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


def proxy_env(var):
    v = os.environ.get(var, "").split("://", 1)[-1].rstrip("/")
    return hostport(v)


RESOLVED = {}


def resolve(host):
    if host not in RESOLVED:
        RESOLVED[host] = socket.getaddrinfo(host, None, socket.AF_INET,
                                            socket.SOCK_STREAM)[0][4][0]
    return RESOLVED[host]


async def connect(addr, timeout, rcvbuf=0):
    """asyncio streams on a TCP connection to addr; rcvbuf: a fixed receive
    buffer (a slow reader then has little waiting in the kernel)."""
    if not rcvbuf:
        return await asyncio.wait_for(asyncio.open_connection(*addr), timeout)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setblocking(False)
    try:
        await asyncio.wait_for(asyncio.get_running_loop().sock_connect(s, addr), timeout)
    except BaseException:
        s.close()
        raise
    return await asyncio.open_connection(sock=s)


async def open_mode(mode, host, port, timeout, rcvbuf=0):
    """A connection that carries bytes to HOST:PORT through MODE's listener."""
    if mode in ("http", "connect"):
        r, w = await connect(proxy_env("HTTP_PROXY"), timeout, rcvbuf)
        if mode == "connect":
            w.write(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                    % (host.encode(), port, host.encode(), port))
            head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), timeout)
            code = head.split(b" ", 2)[1].decode("latin-1")
            if code != "200":
                w.transport.abort()
                raise ConnectionRefusedError(0, "CONNECT " + code)
        return r, w
    if mode == "socks5":
        r, w = await connect(proxy_env("ALL_PROXY"), timeout, rcvbuf)
        w.write(b"\x05\x01\x00")
        if await asyncio.wait_for(r.readexactly(2), timeout) != b"\x05\x00":
            w.transport.abort()
            raise ConnectionRefusedError(0, "SOCKS5 method")
        w.write(b"\x05\x01\x00\x03" + bytes([len(host)]) + host.encode() + struct.pack("!H", port))
        rep = await asyncio.wait_for(r.readexactly(4), timeout)
        if rep[1] != 0:
            w.transport.abort()
            raise ConnectionRefusedError(0, "SOCKS5 reply %d" % rep[1])
        alen = {1: 4, 4: 16}.get(rep[3])
        if alen is None:
            alen = (await r.readexactly(1))[0]
        await asyncio.wait_for(r.readexactly(alen + 2), timeout)
        return r, w
    if mode == "transparent":
        return await connect((resolve(host), port), timeout, rcvbuf)
    raise ValueError("unknown mode " + mode)


def request(mode, host, port, path):
    target = ("http://%s:%d%s" % (host, port, path)) if mode == "http" else path
    return (b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
            % (target.encode(), host.encode()))


async def read_response(r, timeout):
    """(code, body bytes, whole) of one Connection: close response."""
    head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), timeout)
    code = head.split(b" ", 2)[1].decode("latin-1")
    clen = None
    for ln in head.split(b"\r\n"):
        if ln.lower().startswith(b"content-length:"):
            clen = int(ln.split(b":", 1)[1])
    got = 0
    while True:
        d = await asyncio.wait_for(r.read(65536), timeout)
        if not d:
            break
        got += len(d)
    return code, got, clen is None or got == clen


def quant(v, q):
    if not v:
        return None
    v = sorted(v)
    return round(v[min(len(v) - 1, int(q * len(v)))] * 1000, 2)


async def paced(rate, count, conc, job):
    """Runs job(i) for i < count, starting at most rate per second, conc at once."""
    sem = asyncio.Semaphore(conc)
    t0 = time.monotonic()
    tasks = []

    async def one(i):
        async with sem:
            return await job(i)

    for i in range(count):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(i)))
    return await asyncio.gather(*tasks), time.monotonic() - t0


async def cmd_flood(a):
    host, port = hostport(a.target)
    codes, errors, lat = {}, {}, []
    ok = 0

    async def job(i):
        nonlocal ok
        t = time.monotonic()
        w = None
        try:
            r, w = await open_mode(a.mode, host, port, a.timeout)
            w.write(request(a.mode, host, port, a.path))
            code, _, whole = await read_response(r, a.timeout)
            codes[code] = codes.get(code, 0) + 1
            if code.startswith("2") and whole:
                ok += 1
            lat.append(time.monotonic() - t)
        except Exception as e:  # noqa: BLE001 -- every failure is counted by name
            n = err_name(e)
            if isinstance(e, ConnectionRefusedError) and e.args and e.args[0] == 0:
                n = e.args[1]
            errors[n] = errors.get(n, 0) + 1
        finally:
            if w:
                w.transport.abort()

    _, secs = await paced(a.rate, a.count, a.conc, job)
    out({"mode": a.mode, "n": a.count, "ok": ok, "codes": codes, "errors": errors,
         "secs": round(secs, 3), "rps": round(a.count / secs, 1) if secs else None,
         "p50_ms": quant(lat, 0.5), "p99_ms": quant(lat, 0.99), "max_ms": quant(lat, 1.0),
         "pid": os.getpid()})


def slow_head(mode, host, port):
    """The bytes a slow client of MODE trickles, after what opens the stage."""
    if mode == "http":
        return b"GET http://%s:%d/slow HTTP/1.1\r\nHost: %s\r\nX-Slow: " % (
            host.encode(), port, host.encode()) + b"a" * 4000
    if mode == "connect":
        return b"CONNECT %s:%d HTTP/1.1\r\nX-Slow: " % (host.encode(), port) + b"a" * 4000
    if mode == "socks5":
        return b"\x05\x01\x00\x05\x01\x00\x03" + bytes([len(host)]) + host.encode() + b"\x00"
    if mode == "transparent":
        return b"GET /slow HTTP/1.1\r\nHost: %s\r\nX-Slow: " % host.encode() + b"a" * 4000
    if mode == "dns_tcp":
        return b"\x00\x40" + b"\x12" * 64
    raise ValueError(mode)


async def cmd_slow(a):
    host, port = hostport(a.target)
    closes, opened = [], 0
    t0 = time.monotonic()
    deadline = t0 + a.hold

    async def one(i):
        nonlocal opened
        try:
            if a.mode in ("http", "connect", "socks5"):
                r, w = await asyncio.wait_for(asyncio.open_connection(
                    *proxy_env("ALL_PROXY" if a.mode == "socks5" else "HTTP_PROXY")), 10)
            elif a.mode == "dns_tcp":
                r, w = await asyncio.wait_for(asyncio.open_connection(host, 53), 10)
            else:
                r, w = await asyncio.wait_for(asyncio.open_connection(resolve(host), port), 10)
        except Exception:  # noqa: BLE001
            return
        opened += 1
        t_open = time.monotonic()
        head = slow_head(a.mode, host, port)
        reader = asyncio.ensure_future(r.read(65536))
        pos = 0
        try:
            while time.monotonic() < deadline:
                if pos < len(head):
                    try:
                        w.write(head[pos:pos + 1])
                        await w.drain()
                    except (ConnectionError, OSError):
                        break
                    pos += 1
                done, _ = await asyncio.wait({reader}, timeout=min(a.trickle,
                                             max(0.01, deadline - time.monotonic())))
                if done:
                    try:
                        d = reader.result()
                    except (ConnectionError, OSError):
                        d = b""
                    if not d:
                        break
                    reader = asyncio.ensure_future(r.read(65536))  # an answer: keep going
            else:
                reader.cancel()
                w.transport.abort()
                return
        finally:
            if not reader.done():
                reader.cancel()
        closes.append(time.monotonic() - t_open)
        w.transport.abort()

    await asyncio.gather(*(one(i) for i in range(a.n)))
    if a.ready:
        open(a.ready, "w").close()
    out({"mode": a.mode, "n": a.n, "opened": opened, "closed_by_peer": len(closes),
         "still_open": opened - len(closes),
         "close_s": {"min": round(min(closes), 2) if closes else None,
                     "p50": round(statistics.median(closes), 2) if closes else None,
                     "max": round(max(closes), 2) if closes else None},
         "secs": round(time.monotonic() - t0, 2)})


def dns_query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack("!HH", 1, 1)


def dns_rcode(resp, qid):
    if len(resp) < 12 or struct.unpack("!H", resp[:2])[0] != qid:
        raise ValueError("bad answer")
    return resp[3] & 0x0F, struct.unpack("!H", resp[6:8])[0]


async def cmd_dns(a):
    names = a.names.split(",")
    rcodes, errors = {}, {}
    answers = 0
    loop = asyncio.get_running_loop()

    async def job(i):
        nonlocal answers
        qid = (i * 7919 + 1) & 0xFFFF
        q = dns_query(qid, names[i % len(names)])
        try:
            if a.proto == "udp":
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setblocking(False)
                try:
                    await loop.sock_connect(s, (a.server, 53))
                    await loop.sock_sendall(s, q)
                    resp = await asyncio.wait_for(loop.sock_recv(s, 4096), a.timeout)
                finally:
                    s.close()
            else:
                r, w = await asyncio.wait_for(asyncio.open_connection(a.server, 53), a.timeout)
                try:
                    w.write(struct.pack("!H", len(q)) + q)
                    n = struct.unpack("!H", await asyncio.wait_for(r.readexactly(2), a.timeout))[0]
                    resp = await asyncio.wait_for(r.readexactly(n), a.timeout)
                finally:
                    w.transport.abort()
            rc, an = dns_rcode(resp, qid)
            rcodes[str(rc)] = rcodes.get(str(rc), 0) + 1
            answers += an
        except Exception as e:  # noqa: BLE001
            errors[err_name(e)] = errors.get(err_name(e), 0) + 1

    _, secs = await paced(a.rate, a.count, a.conc, job)
    out({"proto": a.proto, "n": a.count, "rcodes": rcodes, "errors": errors, "answers": answers,
         "secs": round(secs, 3)})


def linger0(w):
    s = w.get_extra_info("socket")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def cmd_reset(a):
    host, port = hostport(a.target)
    done, errors = 0, {}

    async def job(i):
        nonlocal done
        w = None
        try:
            r, w = await open_mode(a.mode, host, port, 10)
            w.write(request(a.mode, host, port, a.path))
            await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 10)
            got = 0
            while got < a.after:
                d = await asyncio.wait_for(r.read(65536), 10)
                if not d:
                    raise asyncio.IncompleteReadError(b"", None)
                got += len(d)
            done += 1
        except Exception as e:  # noqa: BLE001
            errors[err_name(e)] = errors.get(err_name(e), 0) + 1
        finally:
            if w:
                linger0(w)
                w.transport.abort()

    await paced(50, a.count, 16, job)
    out({"mode": a.mode, "n": a.count, "reset_after_b": done, "errors": errors})


async def cmd_cut(a):
    host, port = hostport(a.target)
    short = whole = 0
    errors = {}

    async def job(i):
        nonlocal short, whole
        w = None
        try:
            r, w = await open_mode(a.mode, host, port, 10)
            w.write(request(a.mode, host, port, a.path))
            try:
                _, _, ok = await read_response(r, 15)
            except (ConnectionError, OSError):
                ok = False  # a reset passed on: the body was cut short
            if ok:
                whole += 1
            else:
                short += 1
        except Exception as e:  # noqa: BLE001
            errors[err_name(e)] = errors.get(err_name(e), 0) + 1
        finally:
            if w:
                w.transport.abort()

    await paced(50, a.count, 16, job)
    out({"mode": a.mode, "n": a.count, "short": short, "whole": whole, "errors": errors})


async def cmd_upper(a):
    host, port = hostport(a.target)
    data = bytes((97 + i % 26) for i in range(a.bytes))
    try:
        r, w = await open_mode(a.mode, host, port, 10)
        w.write(data)
        await w.drain()
        w.write_eof()
        got = b""
        while True:
            d = await asyncio.wait_for(r.read(65536), 20)
            if not d:
                break
            got += d
        w.close()
        out({"mode": a.mode, "ok": True, "sent": len(data), "got": len(got),
             "match": got == data.upper()})
    except Exception as e:  # noqa: BLE001
        out({"mode": a.mode, "ok": False, "errno": err_name(e)})


async def cmd_first(a):
    host, port = hostport(a.target)
    data = os.urandom(a.bytes)
    try:
        r, w = await open_mode(a.mode, host, port, 10)
        greeting = b""
        while True:
            d = await asyncio.wait_for(r.read(65536), 20)
            if not d:
                break
            greeting += d
        # the server half-closed: our direction must still work
        w.write(data)
        await w.drain()
        w.write_eof()
        rest = await asyncio.wait_for(r.read(), 20)
        w.close()
        out({"mode": a.mode, "ok": True, "greeting": greeting.decode("latin-1"),
             "eof_first": True, "after": len(rest), "sent": len(data),
             "sha": hashlib.sha256(data).hexdigest()})
    except Exception as e:  # noqa: BLE001
        out({"mode": a.mode, "ok": False, "errno": err_name(e)})


async def cmd_hold(a):
    host, port = hostport(a.target)
    started, ended, total = 0, 0, 0
    first = asyncio.Event()
    t_end = time.monotonic() + a.secs

    async def one(i):
        nonlocal started, ended, total
        w = None
        try:
            r, w = await open_mode(a.mode, host, port, 10, rcvbuf=65536)
            w.write(request(a.mode, host, port, a.path))
            await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 10)
            d = await asyncio.wait_for(r.read(1024), 10)
            total += len(d)
            started += 1
            if started == a.n:
                first.set()
            while time.monotonic() < t_end:
                fast = a.drain and os.path.exists(a.drain)
                d = await asyncio.wait_for(r.read(1 << 20 if fast else max(1, a.rate // 10)),
                                           t_end - time.monotonic())
                if not d:
                    ended += 1
                    return
                total += len(d)
                if not fast:
                    await asyncio.sleep(0.1)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            ended += 1
        except asyncio.TimeoutError:
            pass
        finally:
            if w:
                w.transport.abort()

    tasks = [asyncio.ensure_future(one(i)) for i in range(a.n)]
    try:
        await asyncio.wait_for(first.wait(), 15)
        open(a.ready, "w").close()
    except asyncio.TimeoutError:
        pass
    await asyncio.gather(*tasks)
    out({"mode": a.mode, "n": a.n, "started": started, "ended_by_peer": ended, "bytes": total})


def main():
    import argparse
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("flood")
    p.add_argument("mode")
    p.add_argument("target")
    p.add_argument("path")
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--conc", type=int, default=64)
    p.add_argument("--timeout", type=float, default=15)
    p = sub.add_parser("slow")
    p.add_argument("mode")
    p.add_argument("target")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--trickle", type=float, required=True)
    p.add_argument("--hold", type=float, required=True)
    p.add_argument("--ready")
    p = sub.add_parser("dns")
    p.add_argument("proto", choices=("udp", "tcp"))
    p.add_argument("server")
    p.add_argument("names")
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--conc", type=int, default=32)
    p.add_argument("--timeout", type=float, default=8)
    for name in ("reset", "cut"):
        p = sub.add_parser(name)
        p.add_argument("mode")
        p.add_argument("target")
        p.add_argument("path")
        p.add_argument("--count", type=int, required=True)
        p.add_argument("--after", type=int, default=65536)
    for name in ("upper", "first"):
        p = sub.add_parser(name)
        p.add_argument("mode")
        p.add_argument("target")
        p.add_argument("--bytes", type=int, default=100000)
    p = sub.add_parser("hold")
    p.add_argument("mode")
    p.add_argument("target")
    p.add_argument("path")
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--ready", required=True)
    p.add_argument("--rate", type=int, default=100000)
    p.add_argument("--secs", type=float, default=30)
    p.add_argument("--drain")
    a = ap.parse_args()
    fn = {"flood": cmd_flood, "slow": cmd_slow, "dns": cmd_dns, "reset": cmd_reset,
          "cut": cmd_cut, "upper": cmd_upper, "first": cmd_first, "hold": cmd_hold}[a.cmd]
    asyncio.run(fn(a))


if __name__ == "__main__":
    main()
