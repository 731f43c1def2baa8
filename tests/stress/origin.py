#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The "internet" of the stress suite (tests/stress/stress.sh): origin
servers that floods, slow clients and faults are aimed at, on asyncio so a
few thousand connections cost little.  Run only inside the suite's
"internet" network namespace; every listener is on 0.0.0.0, which with the
namespace's AnyIP routes answers for whole test ranges.

  origin.py --log FILE [--http PORT] [--upper PORT] [--first PORT]
            [--silent PORT] [--servfail ADDR]

  --http     HTTP/1.1, one request per connection (Connection: close):
               GET /n/N      200, N bytes of 'x' with Content-Length
               GET /dl/N     200, N bytes in 64 KiB writes (for client resets)
               GET /rst/N    Content-Length N, N/2 bytes, then a reset
               GET /silent   reads the head, never answers (until the client
                             goes, at most 300 s)
               anything else 200 "ok"
  --upper    reads to EOF, then answers the bytes upper-cased and closes
             (the client's half-close must reach the server)
  --first    sends "hello\\n", half-closes, reads to EOF, logs what came
             (the server's half-close must reach the client, whose bytes
             must still reach the server afterwards)
  --silent   accepts and reads, never writes
  --servfail ADDR   a DNS server on ADDR:53 (UDP and TCP) answering every
             query SERVFAIL

Log lines (FILE, flushed per line): "HTTP <path> <peer>", "UPPER <n>",
"FIRST got=<n> sha=<sha256>", "SERVFAIL <udp|tcp>".  A line "READY" on
stdout once everything listens.
"""
import argparse
import asyncio
import hashlib
import socket
import struct
import sys

LOG = None


def log(*parts):
    LOG.write(" ".join(str(p) for p in parts) + "\n")
    LOG.flush()


def reset(writer):
    """Close with an RST: SO_LINGER 0."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def http_conn(reader, writer):
    peer = writer.get_extra_info("peername")
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
            ConnectionError):
        writer.transport.abort()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    path = parts[1] if len(parts) > 1 else "/"
    if path.startswith("http://"):
        path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
    log("HTTP", path, "%s:%d" % peer[:2])
    try:
        if path.startswith("/n/"):
            n = int(path[3:])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n
                         + b"x" * n)
        elif path.startswith("/dl/") or path.startswith("/rst/"):
            n = int(path.split("/")[2])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
            send = n if path.startswith("/dl/") else n // 2
            chunk = b"y" * 65536
            while send > 0:
                writer.write(chunk[:min(send, 65536)])
                send -= min(send, 65536)
                await writer.drain()
            if path.startswith("/rst/"):
                reset(writer)
                return
        elif path == "/silent":
            try:
                await asyncio.wait_for(reader.read(), 300)
            except asyncio.TimeoutError:
                pass
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()
    except (ConnectionError, OSError):
        writer.transport.abort()


async def read_all(reader, limit=64 << 20):
    data = b""
    while len(data) < limit:
        d = await asyncio.wait_for(reader.read(65536), 60)
        if not d:
            break
        data += d
    return data


async def upper_conn(reader, writer):
    try:
        data = await read_all(reader)
        log("UPPER", len(data))
        writer.write(data.upper())
        await writer.drain()
        writer.close()
    except (ConnectionError, OSError, asyncio.TimeoutError):
        writer.transport.abort()


async def first_conn(reader, writer):
    try:
        writer.write(b"hello\n")
        await writer.drain()
        writer.write_eof()
        data = await read_all(reader)
        log("FIRST", "got=%d" % len(data), "sha=%s" % hashlib.sha256(data).hexdigest())
        writer.close()
    except (ConnectionError, OSError, asyncio.TimeoutError):
        writer.transport.abort()


async def silent_conn(reader, writer):
    try:
        await asyncio.wait_for(read_all(reader), 300)
    except (ConnectionError, OSError, asyncio.TimeoutError):
        pass
    writer.transport.abort()


def servfail(q):
    if len(q) < 12:
        return None
    qid, flags = struct.unpack("!HH", q[:4])
    # QR, the query's opcode and RD, RA, RCODE 2; the question echoed, no records
    rflags = 0x8000 | (flags & 0x7900) | 0x0080 | 2
    off = 12
    while off < len(q) and q[off]:
        off += 1 + q[off]
    question = q[12:off + 5]
    return struct.pack("!HHHHHH", qid, rflags, 1 if len(question) > 5 else 0, 0, 0, 0) + question


class ServfailUDP(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.t = transport

    def datagram_received(self, data, addr):
        r = servfail(data)
        if r:
            log("SERVFAIL", "udp")
            self.t.sendto(r, addr)


async def servfail_tcp(reader, writer):
    try:
        while True:
            n = struct.unpack("!H", await asyncio.wait_for(reader.readexactly(2), 30))[0]
            r = servfail(await reader.readexactly(n))
            if not r:
                break
            log("SERVFAIL", "tcp")
            writer.write(struct.pack("!H", len(r)) + r)
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, OSError):
        pass
    writer.transport.abort()


async def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--http", type=int)
    ap.add_argument("--upper", type=int)
    ap.add_argument("--first", type=int)
    ap.add_argument("--silent", type=int)
    ap.add_argument("--servfail")
    a = ap.parse_args()
    LOG = open(a.log, "a")
    servers = []
    for port, fn in ((a.http, http_conn), (a.upper, upper_conn), (a.first, first_conn),
                     (a.silent, silent_conn)):
        if port:
            servers.append(await asyncio.start_server(fn, "0.0.0.0", port, backlog=4096,
                                                      reuse_address=True))
    if a.servfail:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(ServfailUDP, local_addr=(a.servfail, 53))
        servers.append(await asyncio.start_server(servfail_tcp, a.servfail, 53))
    print("READY", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
