#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One network attempt per invocation, for the egressctl end-to-end suite.

    probe.py [--wait FILE] [--wait-timeout S] [--timeout S] [--token T] SUBCMD ARG...

Every subcommand prints exactly ONE JSON line and exits 0; the JSON carries
the result:
    {"ok": bool, "errno": "ECONNREFUSED" | "TIMEOUT" | null, "peer": "ip:port",
     "data": ..., "pid": <pid>, "cg": "<0:: line of /proc/self/cgroup>", ...}
"ok" means the attempt itself succeeded (connect, send, socket creation);
"peer" is what getpeername()/recvfrom() reported; "data" is the reply (an
echo, the ORIG line of tlisten, DNS answers).  A global alarm (--timeout,
default 8 s) bounds every attempt: a SYN dropped by a catch-all gives
{"ok": false, "errno": "TIMEOUT"} instead of a hang.

--wait FILE: first wait (up to --wait-timeout, default 10 s) until FILE
exists; the suite uses it to start the attempt after its listeners are up.

SAFETY: only ever called with test addresses inside the suite's network
namespaces.  "vsock" creates an AF_VSOCK socket and closes it: it never
connects (this VM's host listens on vsock).
"""
import ctypes
import errno as errno_mod
import json
import mmap
import os
import random
import select
import signal
import socket
import struct
import sys
import time

OPTS = {"timeout": 8.0, "token": None, "wait": None, "wait_timeout": 10.0}
STEP = ["start"]

AF_VSOCK = 40
IPPROTO_UDPLITE = 136
IPPROTO_MPTCP = 262
MSG_FASTOPEN = 0x20000000
SYS_BPF = 321  # x86_64
SYS_IO_URING_SETUP = 425
SYS_IO_URING_ENTER = 426

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def ename(num):
    return errno_mod.errorcode.get(num, str(num))


def own_cgroup():
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    return line.strip()
    except OSError:
        pass
    return None


EXTRA = {}  # reported with the attempt ("held": what `bound` set up)


def emit(ok, err=None, peer=None, data=None, **kw):
    d = {"ok": bool(ok), "errno": err, "peer": peer, "data": data,
         "pid": os.getpid(), "cg": own_cgroup(), "step": STEP[0]}
    d.update(EXTRA)
    d.update(kw)
    try:
        sys.stdout.write(json.dumps(d) + "\n")
        sys.stdout.flush()
    finally:
        os._exit(0)


def on_alarm(signum, frame):
    emit(False, "TIMEOUT")


def fail(exc, **kw):
    if isinstance(exc, socket.timeout):
        emit(False, "TIMEOUT", **kw)
    if isinstance(exc, OSError) and exc.errno is not None:
        emit(False, ename(exc.errno), **kw)
    emit(False, "EXC:" + type(exc).__name__, msg=str(exc), **kw)


def fmt(addr):
    if isinstance(addr, tuple):
        if len(addr) == 2:
            return "%s:%d" % addr
        return "[%s]:%d" % (addr[0], addr[1])
    if isinstance(addr, bytes):
        addr = addr.decode(errors="replace")
    if isinstance(addr, str) and addr.startswith("\0"):
        return "@" + addr[1:]  # abstract unix name
    return addr


def line():
    return ("probe %s\n" % OPTS["token"]).encode()


RECV_ERR = [None]  # errno of the last read_reply() that failed


def read_reply(s, limit=2.0):
    """Reads until newline, EOF or `limit` seconds; returns text or None."""
    s.settimeout(limit)
    buf = b""
    end = time.monotonic() + limit
    RECV_ERR[0] = None
    try:
        while b"\n" not in buf and time.monotonic() < end:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    except socket.timeout:
        pass
    except OSError as e:
        # a reset (the proxy refusing a connection it accepted) is a result
        RECV_ERR[0] = e.errno
    return buf.decode(errors="replace").strip() if buf else None


def stream_attempt(family, proto, addr, connect_timeout=3.0):
    STEP[0] = "socket"
    try:
        s = socket.socket(family, socket.SOCK_STREAM, proto)
    except OSError as e:
        fail(e)
    s.settimeout(connect_timeout)
    STEP[0] = "connect"
    try:
        s.connect(addr)
    except OSError as e:
        fail(e)
    STEP[0] = "getpeername"
    try:
        peer = fmt(s.getpeername())
    except OSError as e:
        peer = "ERR:" + ename(e.errno)
    STEP[0] = "send"
    try:
        s.sendall(line())
    except OSError as e:
        emit(True, None, peer, None, send_errno=ename(e.errno))
    STEP[0] = "recv"
    data = read_reply(s)
    if data is None and RECV_ERR[0] is not None:
        emit(False, ename(RECV_ERR[0]), peer)
    emit(True, None, peer, data)


def cmd_tcp4(a, p):
    stream_attempt(socket.AF_INET, 0, (a, int(p)))


def cmd_tcp6(a, p):
    stream_attempt(socket.AF_INET6, 0, (a, int(p)))


def cmd_tcp6_scoped(a, ifname, p):
    """TCP to a link-local ADDR on the device IFNAME (its scope id)."""
    stream_attempt(socket.AF_INET6, 0, (a, int(p), 0, socket.if_nametoindex(ifname)))


def cmd_tcp_mapped(a, p):
    stream_attempt(socket.AF_INET6, 0, ("::ffff:" + a, int(p)))


def cmd_mptcp(a, p):
    stream_attempt(socket.AF_INET, IPPROTO_MPTCP, (a, int(p)))


def cmd_tfo(a, p):
    # A blocking socket: on a non-blocking one (what settimeout() makes)
    # sendto(MSG_FASTOPEN) without a cookie returns EINPROGRESS.  The global
    # alarm bounds the wait.
    STEP[0] = "socket"
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    STEP[0] = "sendto_fastopen"
    try:
        s.sendto(line(), MSG_FASTOPEN, (a, int(p)))
    except OSError as e:
        fail(e)
    # right after sendto() the handshake may still be in flight, and
    # getpeername() is ENOTCONN until it completes: wait for it
    import select
    select.select([], [s], [], 2.0)
    try:
        peer = fmt(s.getpeername())
    except OSError as e:
        peer = "ERR:" + ename(e.errno)
    STEP[0] = "recv"
    emit(True, None, peer, read_reply(s))


def dgram_attempt(family, proto, addr, connected):
    STEP[0] = "socket"
    try:
        s = socket.socket(family, socket.SOCK_DGRAM, proto)
    except OSError as e:
        fail(e)
    try:
        if connected:
            STEP[0] = "connect"
            s.connect(addr)
            STEP[0] = "send"
            s.send(line())
        else:
            STEP[0] = "sendto"
            s.sendto(line(), addr)
    except OSError as e:
        fail(e)
    STEP[0] = "recv"
    s.settimeout(2.0)
    try:
        data, src = s.recvfrom(4096)
        emit(True, None, fmt(src), data.decode(errors="replace").strip())
    except (socket.timeout, OSError) as e:
        emit(True, None, None, None,
             recv_errno="TIMEOUT" if isinstance(e, socket.timeout) else ename(e.errno))


def cmd_udp_sendto(a, p):
    dgram_attempt(socket.AF_INET, 0, (a, int(p)), False)


def cmd_udp6_sendto(a, p):
    dgram_attempt(socket.AF_INET6, 0, (a, int(p)), False)


def cmd_udp_mapped_sendto(a, p):
    dgram_attempt(socket.AF_INET6, 0, ("::ffff:" + a, int(p)), False)


def cmd_udp_connected_send(a, p):
    dgram_attempt(socket.AF_INET, 0, (a, int(p)), True)


def cmd_udplite(a, p):
    dgram_attempt(socket.AF_INET, IPPROTO_UDPLITE, (a, int(p)), False)


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class MsgHdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(IoVec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class MMsgHdr(ctypes.Structure):
    _fields_ = [("hdr", MsgHdr), ("len", ctypes.c_uint)]


def sockaddr_in(a, p):
    return struct.pack("=H", socket.AF_INET) + struct.pack("!H", p) + \
        socket.inet_aton(a) + b"\0" * 8


def cmd_sendmmsg(a, p):
    """Two datagrams through one real sendmmsg(2), each with its own msg_name."""
    STEP[0] = "socket"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sa = ctypes.create_string_buffer(sockaddr_in(a, int(p)), 16)
    payloads = [ctypes.create_string_buffer(line() + b"#%d" % i) for i in range(2)]
    iovs = [IoVec(ctypes.cast(b, ctypes.c_void_p), len(b.raw) - 1) for b in payloads]
    msgs = (MMsgHdr * 2)()
    for i in range(2):
        msgs[i].hdr.name = ctypes.cast(sa, ctypes.c_void_p)
        msgs[i].hdr.namelen = 16
        msgs[i].hdr.iov = ctypes.pointer(iovs[i])
        msgs[i].hdr.iovlen = 1
    STEP[0] = "sendmmsg"
    n = libc().sendmmsg(s.fileno(), msgs, 2, 0)
    if n < 0:
        emit(False, ename(ctypes.get_errno()))
    if n < 2:
        # A partial send means the second message failed; sendmmsg then
        # reports the error on the next call: make it.
        n2 = libc().sendmmsg(s.fileno(), ctypes.byref(msgs[n]), 2 - n, 0)
        emit(False, ename(ctypes.get_errno()) if n2 < 0 else "PARTIAL", data={"sent": n})
    STEP[0] = "recv"
    s.settimeout(2.0)
    try:
        data, src = s.recvfrom(4096)
        emit(True, None, fmt(src), data.decode(errors="replace").strip(), sent=n)
    except (socket.timeout, OSError):
        emit(True, None, None, None, sent=n, recv_errno="TIMEOUT")


# --- DNS --------------------------------------------------------------------

def dns_query(name, qid):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)


def dns_skip_name(msg, off):
    while True:
        n = msg[off]
        if n & 0xC0 == 0xC0:
            return off + 2
        if n == 0:
            return off + 1
        off += 1 + n


def dns_answers(msg, qid):
    """Returns (rcode, [A records]) or raises ValueError."""
    rid, flags, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    if rid != qid or not flags & 0x8000:
        raise ValueError("not our reply")
    off = 12
    for _ in range(qd):
        off = dns_skip_name(msg, off) + 4
    out = []
    for _ in range(an):
        off = dns_skip_name(msg, off)
        typ, cls, ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        if typ == 1 and rdlen == 4:
            out.append(socket.inet_ntoa(msg[off:off + 4]))
        off += rdlen
    return flags & 0xF, out


def dns_result(reply, qid, peer, **kw):
    try:
        rcode, ips = dns_answers(reply, qid)
    except (ValueError, IndexError, struct.error) as e:
        emit(False, "BADREPLY", peer, None, msg=str(e), **kw)
    emit(rcode == 0 and bool(ips), None if rcode == 0 else "RCODE%d" % rcode,
         peer, ",".join(ips), **kw)


def cmd_dns_udp(server, name, port="53", connected=False):
    qid = random.randrange(1, 65535)
    STEP[0] = "socket"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        if connected:
            STEP[0] = "connect"
            s.connect((server, int(port)))
            STEP[0] = "send"
            s.send(dns_query(name, qid))
        else:
            STEP[0] = "sendto"
            s.sendto(dns_query(name, qid), (server, int(port)))
    except OSError as e:
        fail(e)
    STEP[0] = "recv"
    s.settimeout(2.0)
    end = time.monotonic() + 2.0
    while True:
        try:
            reply, src = s.recvfrom(4096)
        except (socket.timeout, OSError) as e:
            fail(e)
        if len(reply) >= 2 and struct.unpack("!H", reply[:2])[0] == qid:
            break
        if time.monotonic() > end:
            emit(False, "TIMEOUT")
    peer = fmt(src)
    if connected:
        peer = fmt(s.getpeername())
    dns_result(reply, qid, peer, source=fmt(src), local=fmt(s.getsockname()))


def cmd_dns_udp_from(src, sport, server, name, port="53"):
    """A UDP query from SRC:SPORT (bound with SO_REUSEADDR first): the
    address and port another socket used before."""
    qid = random.randrange(1, 65535)
    STEP[0] = "bind"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((src, int(sport)))
        STEP[0] = "sendto"
        s.sendto(dns_query(name, qid), (server, int(port)))
    except OSError as e:
        fail(e, local=fmt(s.getsockname()))
    STEP[0] = "recv"
    s.settimeout(2.0)
    try:
        reply, peer = s.recvfrom(4096)
    except (socket.timeout, OSError) as e:
        fail(e, local=fmt(s.getsockname()))
    dns_result(reply, qid, fmt(peer), local=fmt(s.getsockname()))


def cmd_dns_udp_connected(server, name, port="53"):
    cmd_dns_udp(server, name, port, connected=True)


def cmd_dns_tcp(server, name, port="53"):
    qid = random.randrange(1, 65535)
    STEP[0] = "connect"
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3.0)
    try:
        s.connect((server, int(port)))
        peer = fmt(s.getpeername())
        q = dns_query(name, qid)
        STEP[0] = "send"
        s.sendall(struct.pack("!H", len(q)) + q)
        STEP[0] = "recv"
        buf = b""
        while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
            chunk = s.recv(4096)
            if not chunk:
                emit(False, "EOF", peer, buf.decode(errors="replace"))
            buf += chunk
    except OSError as e:
        fail(e)
    dns_result(buf[2:], qid, peer)


# --- ICMP, raw, packet, vsock -------------------------------------------------

def icmp_checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def echo_request(ident):
    payload = line()
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, 1)
    return struct.pack("!BBHHH", 8, 0, icmp_checksum(hdr + payload), ident, 1) + payload


def icmp_attempt(a, sock_type, v6=False):
    """An ICMP (v6: ICMPv6, the kernel fills the checksum) echo request;
    "data" is "echo-reply" when one (type 0, v6: 129) came back."""
    STEP[0] = "socket"
    try:
        if v6:
            s = socket.socket(socket.AF_INET6, sock_type, socket.IPPROTO_ICMPV6)
        else:
            s = socket.socket(socket.AF_INET, sock_type, socket.IPPROTO_ICMP)
    except OSError as e:
        fail(e)
    STEP[0] = "sendto"
    ident = os.getpid() & 0xFFFF
    try:
        if v6:
            s.sendto(struct.pack("!BBHHH", 128, 0, 0, ident, 1) + line(), (a, 0))
        else:
            s.sendto(echo_request(ident), (a, 0))
    except OSError as e:
        fail(e)
    STEP[0] = "recv"
    s.settimeout(0.5)
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        try:
            data, src = s.recvfrom(4096)
        except (socket.timeout, OSError):
            continue
        if sock_type == socket.SOCK_RAW and not v6:
            data = data[(data[0] & 0xF) * 4:]  # raw IPv4 sockets deliver the IP header
        if src[0] == a and data and data[0] == (129 if v6 else 0):
            emit(True, None, src[0], "echo-reply")
    emit(True, None, None, None, recv_errno="TIMEOUT")


def cmd_raw(a):
    icmp_attempt(a, socket.SOCK_RAW)


def cmd_ping(a):
    icmp_attempt(a, socket.SOCK_DGRAM)


def cmd_raw6(a):
    icmp_attempt(a, socket.SOCK_RAW, v6=True)


def cmd_ping6(a):
    icmp_attempt(a, socket.SOCK_DGRAM, v6=True)


def cmd_packet(ifname, dstmac):
    """One Ethernet frame, ethertype 0x88b5 (local experimental), on ifname."""
    STEP[0] = "socket"
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    except OSError as e:
        fail(e)
    try:
        STEP[0] = "bind"
        s.bind((ifname, 0))
        frame = bytes.fromhex(dstmac.replace(":", "")) + bytes.fromhex("02000000e299") + \
            b"\x88\xb5" + line()
        STEP[0] = "send"
        s.send(frame.ljust(60, b"\0"))
    except OSError as e:
        fail(e)
    emit(True)


def cmd_vsock():
    """Socket creation ONLY. Never connect: the VM's host listens on vsock."""
    STEP[0] = "socket"
    try:
        s = socket.socket(AF_VSOCK, socket.SOCK_STREAM, 0)
    except OSError as e:
        fail(e)
    s.close()
    emit(True)


# --- unix -----------------------------------------------------------------------

def cmd_abstract_connect(name):
    stream_attempt(socket.AF_UNIX, 0, "\0" + name)


def cmd_unix_path(path):
    stream_attempt(socket.AF_UNIX, 0, path)


def unix_sendto(addr):
    STEP[0] = "socket"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    STEP[0] = "sendto"
    try:
        s.sendto(line(), addr)
    except OSError as e:
        fail(e)
    emit(True)


def cmd_abstract_sendto(name):
    unix_sendto("\0" + name)


def cmd_unix_path_sendto(path):
    unix_sendto(path)


# --- io_uring ---------------------------------------------------------------------

def cmd_io_uring_connect(a, p):
    """IORING_OP_CONNECT through raw io_uring_setup/mmap/io_uring_enter."""
    L = libc()
    params = ctypes.create_string_buffer(120)
    STEP[0] = "io_uring_setup"
    fd = L.syscall(ctypes.c_long(SYS_IO_URING_SETUP), ctypes.c_long(4), params)
    if fd < 0:
        emit(False, ename(ctypes.get_errno()))
    sq_entries, cq_entries = struct.unpack_from("=II", params, 0)
    sq_off = struct.unpack_from("=7I", params, 40)  # head tail mask entries flags dropped array
    cq_off = struct.unpack_from("=6I", params, 80)  # head tail mask entries overflow cqes
    STEP[0] = "mmap"
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    sq = mmap.mmap(fd, sq_off[6] + sq_entries * 4, mmap.MAP_SHARED, prot, offset=0)
    cq = mmap.mmap(fd, cq_off[5] + cq_entries * 16, mmap.MAP_SHARED, prot, offset=0x8000000)
    sqes = mmap.mmap(fd, sq_entries * 64, mmap.MAP_SHARED, prot, offset=0x10000000)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sa = ctypes.create_string_buffer(sockaddr_in(a, int(p)), 16)
    # struct io_uring_sqe: opcode flags ioprio fd off(=addrlen) addr len op_flags user_data
    sqe = struct.pack("=BBHiQQIIQ", 16, 0, 0, s.fileno(), 16, ctypes.addressof(sa), 0, 0, 0x5E)
    sqes[0:64] = sqe.ljust(64, b"\0")
    tail = struct.unpack_from("=I", sq, sq_off[1])[0]
    mask = struct.unpack_from("=I", sq, sq_off[2])[0]
    struct.pack_into("=I", sq, sq_off[6] + (tail & mask) * 4, 0)
    struct.pack_into("=I", sq, sq_off[1], tail + 1)
    STEP[0] = "io_uring_enter"
    r = L.syscall(ctypes.c_long(SYS_IO_URING_ENTER), ctypes.c_long(fd), ctypes.c_long(1),
                  ctypes.c_long(1), ctypes.c_long(1), ctypes.c_void_p(0), ctypes.c_long(0))
    if r < 0:
        emit(False, ename(ctypes.get_errno()))
    head, ctail = struct.unpack_from("=II", cq, cq_off[0])
    if head == ctail:
        emit(False, "NOCQE")
    cmask = struct.unpack_from("=I", cq, cq_off[2])[0]
    _, res, _ = struct.unpack_from("=QiI", cq, cq_off[5] + (head & cmask) * 16)
    STEP[0] = "connect"
    if res < 0:
        emit(False, ename(-res))
    peer = fmt(s.getpeername())
    STEP[0] = "send"
    s.sendall(line())
    STEP[0] = "recv"
    emit(True, None, peer, read_reply(s))


# --- cgroups and bpf() ------------------------------------------------------------

def cmd_cgroup_escape(path):
    STEP[0] = "open"
    try:
        fd = os.open(path, os.O_WRONLY)
        STEP[0] = "write"
        os.write(fd, b"%d\n" % os.getpid())
        os.close(fd)
    except OSError as e:
        fail(e)
    emit(True, data=own_cgroup())


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr.ljust(128, b"\0"), 128)
    r = libc().syscall(ctypes.c_long(SYS_BPF), ctypes.c_long(cmd), buf, ctypes.c_long(128))
    return r, (ctypes.get_errno() if r < 0 else 0)


BPF_MAP_CREATE, BPF_PROG_LOAD, BPF_PROG_ATTACH, BPF_PROG_DETACH = 0, 5, 8, 9
BPF_PROG_TYPE_CGROUP_SOCK_ADDR = 18
BPF_CGROUP_INET4_CONNECT = 10


def cmd_bpf_detach(cgpath="/"):
    """BPF_PROG_DETACH(connect4, attach_bpf_fd=0): removes a legacy
    (non-MULTI) attachment, also for an unprivileged caller (docs/kernel.md, "Which cgroup a hook runs for").
    If the cgroup cannot be opened (cgroupfs hidden), the syscall is made
    anyway on a directory fd so the bpf() layer itself is exercised."""
    STEP[0] = "open"
    open_errno = None
    try:
        fd = os.open(cgpath, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        open_errno = ename(e.errno)
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    STEP[0] = "bpf"
    r, err = bpf(BPF_PROG_DETACH, struct.pack("=IIII", fd, 0, BPF_CGROUP_INET4_CONNECT, 0))
    emit(r == 0, ename(err) if r < 0 else None, data={"open_errno": open_errno})


def cmd_bpf_any():
    STEP[0] = "bpf"
    r, err = bpf(BPF_MAP_CREATE, struct.pack("=IIII", 2, 4, 4, 1))  # ARRAY, 4, 4, 1 entry
    emit(r >= 0, ename(err) if r < 0 else None)


def cmd_bpf_attach_legacy(cgpath):
    """Test setup (root): attach an allow-all connect4 program to cgpath the
    legacy way (BPF_PROG_ATTACH, flags 0), to show that anyone may detach it."""
    insns = bytes.fromhex("b700000001000000" "9500000000000000")  # r0 = 1; exit
    ib = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(b"GPL")
    STEP[0] = "prog_load"
    r, err = bpf(BPF_PROG_LOAD, struct.pack(
        "=IIQQIIQII16sII", BPF_PROG_TYPE_CGROUP_SOCK_ADDR, 2, ctypes.addressof(ib),
        ctypes.addressof(lic), 0, 0, 0, 0, 0, b"egr_e2e_legacy", 0, BPF_CGROUP_INET4_CONNECT))
    if r < 0:
        emit(False, ename(err))
    prog = r
    STEP[0] = "attach"
    cg = os.open(cgpath, os.O_RDONLY | os.O_DIRECTORY)
    r, err = bpf(BPF_PROG_ATTACH, struct.pack("=IIII", cg, prog, BPF_CGROUP_INET4_CONNECT, 0))
    emit(r == 0, ename(err) if r < 0 else None)


# --- processes and servers ----------------------------------------------------------

def cmd_listen_local(p, ready):
    """Binds 127.0.0.1:p, listens, creates the file `ready`, echoes one
    connection (prefixed "local-echo "), then reports.  Run it in the
    background and the client with --wait READY."""
    STEP[0] = "bind"
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(p)))
        s.listen(4)
    except OSError as e:
        fail(e)
    open(ready, "w").close()
    STEP[0] = "accept"
    s.settimeout(5)
    try:
        c, peer = s.accept()
        c.settimeout(3)
        data = c.recv(4096)
        c.sendall(b"local-echo " + data)
        c.close()
    except OSError as e:
        fail(e)
    emit(True, None, fmt(peer), data.decode(errors="replace").strip())


def cmd_doublefork(*args):
    """Runs SUBCMD ARGS in a double-forked, setsid grandchild and relays its
    JSON line.  This process makes itself a child subreaper first, so the
    orphaned grandchild is reparented here (not to PID 1) and reaped."""
    libc().prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER; best effort
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        if os.fork() == 0:
            os.setsid()
            signal.setitimer(signal.ITIMER_REAL, max(1.0, OPTS["timeout"] - 1.5))
            os.dup2(w, 1)
            os.close(w)
            run(list(args))
            os._exit(0)
        os._exit(0)
    os.close(w)
    os.waitpid(child, 0)
    buf = b""
    end = time.monotonic() + OPTS["timeout"] - 1
    while time.monotonic() < end:
        ready, _, _ = select.select([r], [], [], 0.2)
        if ready:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            buf += chunk
    while True:  # reap the grandchild (reparented here)
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                time.sleep(0.02)
                if time.monotonic() > end:
                    break
        except ChildProcessError:
            break
    try:
        d = json.loads(buf.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        emit(False, "NOGRANDCHILD", data=buf.decode(errors="replace"))
    d["parent_pid"] = os.getpid()
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()
    os._exit(0)


def cmd_sigwait(path, mode):
    """mode handler: TERM/INT/HUP are caught, written to path, exit 42.
    mode default: the three are reset to SIG_DFL (undoing any inherited
    SIG_IGN), so the signal kills this process.  Writes READY when set."""
    def handler(signum, frame):
        with open(path, "a") as f:
            f.write("GOT %s\n" % signal.Signals(signum).name)
        os._exit(42)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler if mode == "handler" else signal.SIG_DFL)
    with open(path, "a") as f:
        f.write("READY %d\n" % os.getpid())
    signal.alarm(0)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        time.sleep(0.05)
    emit(False, "NOSIGNAL")


# --- fast-path socket lifetimes ----------------------------------------------------

def wait_file(path, limit=20.0):
    end = time.monotonic() + limit
    while not os.path.exists(path):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def addr4(host, port):
    """HOST (a name is resolved here, IPv4 only) and PORT as a sockaddr."""
    return socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)[0][4]


def dial(sa, st=None, suffix=""):
    """A TCP connection to sa (3 s timeout); with st, records its two ends
    as st["local"+suffix] and st["peer"+suffix]."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(sa)
    if st is not None:
        st["local" + suffix], st["peer" + suffix] = fmt(s.getsockname()), fmt(s.getpeername())
    return s


def cmd_hold_echo(host, port, held, go):
    """Connects to a banner+echo server (HOST may be a name: resolving it is
    what opens a tcp:// fast-path entry), reads the banner, creates the file
    HELD, waits for the file GO (the suite creates it once the fast-path
    entry is gone), then sends the probe line on the SAME connection and
    reads its echo; then opens a NEW connection to the same address and
    port and reads its banner.  Reports local/peer of both connections:
    "local" 198.18.0.2:x is a direct connection, 127.0.0.1:x one redirected
    to egressctl's transparent listener.  Give it --timeout > the wait."""
    st = {}
    STEP[0] = "resolve"
    try:
        sa = addr4(host, port)
        STEP[0] = "connect"
        s = dial(sa, st)
        STEP[0] = "banner"
        st["banner"] = read_reply(s, 3)
        open(held, "w").close()
        STEP[0] = "wait"
        if not wait_file(go):
            emit(False, "NOGO", **st)
        STEP[0] = "send_after"
        s.sendall(line())
        STEP[0] = "echo_after"
        st["echo"] = read_reply(s, 3)
        if st["echo"] is None and RECV_ERR[0] is not None:
            st["echo_errno"] = ename(RECV_ERR[0])
        s.close()
        STEP[0] = "connect2"
        s2 = dial(sa, st, "2")
        STEP[0] = "banner2"
        st["banner2"] = read_reply(s2, 3)
        s2.close()
    except OSError as e:
        fail(e, **st)
    emit(True, None, **st)


def cmd_rst_close(host, port):
    """Connects, waits until the server's first bytes (a banner) have
    arrived, and close()s WITHOUT reading them: the kernel answers with an
    RST instead of a FIN.  "local" names the connection for the sensor."""
    st = {}
    STEP[0] = "connect"
    try:
        s = dial(addr4(host, port), st)
        STEP[0] = "wait_data"
        r, _, _ = select.select([s], [], [], 3)
        if not r:
            emit(False, "NODATA", **st)
        st["unread"] = len(s.recv(4096, socket.MSG_PEEK))
        STEP[0] = "close"
        s.close()
    except OSError as e:
        fail(e, **st)
    emit(True, None, **st)


def cmd_conn_batch(host, fport, rport, n, held, go, done, last):
    """N connections, one after the other, in five kinds (i % 5):
      fast_close     to HOST:FPORT (a fast-path echo): send, read the echo, close
      fast_unread    the same, but close() with the echo unread (an RST)
      fast_halfclose send, shutdown(SHUT_WR), read to EOF, close
      redir_read     to HOST:RPORT (redirected): read the listener's line, close
      redir_unread   the same, close() with the line unread
    Then holds 4 fast-path and 2 redirected connections open, creates HELD,
    waits for GO, closes them (2 of the fast ones with unread data), creates
    DONE, waits for LAST (the suite inspects the maps meanwhile: egressctl
    runs until its CMD exits).  Reports per-kind counts of connections that
    worked as expected ("good") and the first failure of each kind."""
    kinds = ["fast_close", "fast_unread", "fast_halfclose", "redir_read", "redir_unread"]
    good = dict.fromkeys(kinds, 0)
    bad = {}

    def conn(p):
        return dial((host, int(p)))

    def readable(s):
        return bool(select.select([s], [], [], 3)[0])

    for i in range(int(n)):
        k = kinds[i % 5]
        try:
            if k.startswith("fast"):
                s = conn(fport)
                s.sendall(line())
                if k == "fast_close":
                    ok = read_reply(s, 3) == line().decode().strip()
                elif k == "fast_unread":
                    ok = readable(s)
                else:
                    s.shutdown(socket.SHUT_WR)
                    buf, end = b"", time.monotonic() + 3
                    while time.monotonic() < end:
                        d = s.recv(4096)
                        if not d:
                            break
                        buf += d
                    ok = buf == line()
            else:
                s = conn(rport)
                ok = readable(s) if k == "redir_unread" else bool(read_reply(s, 3))
            s.close()
            if ok:
                good[k] += 1
            else:
                bad.setdefault(k, "no reply")
        except OSError as e:
            bad.setdefault(k, ename(e.errno) if e.errno else type(e).__name__)
    STEP[0] = "hold"
    hold = []
    try:
        for p in (fport, fport, fport, fport, rport, rport):
            s = conn(p)
            if p == fport:
                s.sendall(line())
            readable(s)
            hold.append(s)
    except OSError as e:
        bad.setdefault("hold", ename(e.errno) if e.errno else type(e).__name__)
    open(held, "w").close()
    if not wait_file(go):
        emit(False, "NOGO", good=good, bad=bad)
    for i, s in enumerate(hold):
        if i in (0, 1):
            s.recv(4096)  # read: a normal close (FIN); 2 and 3 keep theirs unread (RST)
        s.close()
    open(done, "w").close()
    if not wait_file(last):
        emit(False, "NOEND", good=good, bad=bad, held=len(hold))
    emit(not bad, None, good=good, bad=bad, held=len(hold))


# --- sockets held while an attempt runs (the loopback class) -----------------

IP_FREEBIND = 15
IP_TRANSPARENT = 19
HELD = []  # kept open until the process exits


def own_echo(s, stream):
    """Serves the sandbox's own socket: "own-echo " + what arrived."""
    def loop():
        while True:
            try:
                if stream:
                    c, _ = s.accept()
                    c.settimeout(3)
                    data = c.recv(4096)
                    c.sendall(b"own-echo " + data)
                    c.close()
                else:
                    data, peer = s.recvfrom(4096)
                    s.sendto(b"own-echo " + data, peer)
            except OSError:
                return
    import threading
    threading.Thread(target=loop, daemon=True).start()


def hold(spec):
    """PROTO/FAMILY/ADDR/PORT[/OPT,...]: a socket made, bound and kept.
    OPT: v6only, dual (IPV6_V6ONLY off), reuseaddr, reuseport, freebind,
    transparent (IP_TRANSPARENT), listen, serve (answer "own-echo ..."),
    shutdown (listen, then shutdown(): the port is free, the socket open),
    close (closed again once set up).  Returns "OK [addr]:port" or what
    failed ("bind:EADDRINUSE", "setsockopt:EPERM")."""
    parts = spec.split("/")
    proto, fam, addr, port = parts[:4]
    opts = parts[4].split(",") if len(parts) > 4 and parts[4] else []
    family = socket.AF_INET6 if fam == "6" else socket.AF_INET
    stream = proto == "tcp"
    s = socket.socket(family, socket.SOCK_STREAM if stream else socket.SOCK_DGRAM)
    setopts = [("v6only", socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1),
               ("dual", socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0),
               ("reuseaddr", socket.SOL_SOCKET, socket.SO_REUSEADDR, 1),
               ("reuseport", socket.SOL_SOCKET, socket.SO_REUSEPORT, 1),
               ("freebind", socket.IPPROTO_IP, IP_FREEBIND, 1),
               ("transparent", socket.IPPROTO_IP, IP_TRANSPARENT, 1)]
    try:
        for name, lvl, opt, val in setopts:
            if name in opts:
                STEP[0] = "setsockopt"
                s.setsockopt(lvl, opt, val)
        STEP[0] = "bind"
        s.bind((addr, int(port)))
        if stream and ("listen" in opts or "serve" in opts or "shutdown" in opts):
            STEP[0] = "listen"
            s.listen(16)
        bound_at = fmt(s.getsockname())
        if "shutdown" in opts:
            STEP[0] = "shutdown"
            s.shutdown(socket.SHUT_RDWR)
    except OSError as e:
        s.close()
        return "%s:%s" % (STEP[0], ename(e.errno))
    if "serve" in opts:
        own_echo(s, stream)
    if "close" in opts:
        s.close()
    else:
        HELD.append(s)
    return "OK " + bound_at


def cmd_bound(*args):
    """bound SPEC... [ready=FILE] [wait=FILE] -- SUBCMD ARG...: hold the
    sockets of every SPEC (see hold()), create FILE ready, wait for FILE
    wait, then run SUBCMD; its JSON line gets "held": [result per SPEC]."""
    if "--" not in args:
        emit(False, "USAGE", msg="bound: no -- SUBCMD")
    i = args.index("--")
    specs, sub = args[:i], list(args[i + 1:])
    EXTRA["held"] = []
    ready = wait = None
    for spec in specs:
        if spec.startswith("ready="):
            ready = spec[6:]
        elif spec.startswith("wait="):
            wait = spec[5:]
        else:
            EXTRA["held"].append(hold(spec))
    STEP[0] = "start"
    if ready:
        open(ready, "w").close()
    if wait and not wait_file(wait, OPTS["timeout"]):
        emit(False, "NOGO")
    run(sub)


def cmd_hold_until(path):
    """Nothing of its own: `bound ... -- hold_until FILE` keeps the held
    sockets until FILE exists."""
    STEP[0] = "hold"
    emit(wait_file(path, OPTS["timeout"]), None)


def cmd_recv_fd(path, *args):
    """recv_fd PATH -- SUBCMD ARG...: takes the socket that the server on
    the unix socket PATH passes (SCM_RIGHTS), keeps it, and runs SUBCMD;
    "received": the address the passed socket is bound to."""
    if not args or args[0] != "--":
        emit(False, "USAGE", msg="recv_fd: no -- SUBCMD")
    STEP[0] = "recv_fd"
    try:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.settimeout(3)
        u.connect(path)
        _, fds, _, _ = socket.recv_fds(u, 16, 1)
        if not fds:
            emit(False, "NOFD")
        s = socket.socket(fileno=fds[0])
        HELD.append(s)
        EXTRA["received"] = fmt(s.getsockname())
    except OSError as e:
        fail(e)
    run(list(args[1:]))


def cmd_ip_transparent():
    """setsockopt(IP_TRANSPARENT) on a TCP socket (needs CAP_NET_ADMIN)."""
    STEP[0] = "setsockopt"
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.IPPROTO_IP, IP_TRANSPARENT, 1)
    except OSError as e:
        fail(e)
    emit(True)


def cmd_noop():
    emit(True)


def cmd_exec(prog, *args):
    """Execs PROG ARGS (probe.py again under another interpreter: one with
    file capabilities); the JSON line is then PROG's.  Only if execve()
    fails is it this one's, with its errno (an exec whose file capabilities
    cannot all be had -- an empty bounding set -- fails with EPERM)."""
    STEP[0] = "execve"
    signal.setitimer(signal.ITIMER_REAL, 0)  # an itimer outlives execve()
    try:
        os.execv(prog, [prog] + list(args))
    except OSError as e:
        fail(e)


def run(argv):
    if not argv:
        emit(False, "USAGE", msg="no subcommand")
    fn = globals().get("cmd_" + argv[0])
    if fn is None:
        emit(False, "USAGE", msg="unknown subcommand " + argv[0])
    try:
        fn(*argv[1:])
    except TypeError as e:
        emit(False, "USAGE", msg=str(e))
    except Exception as e:  # report, never crash without a JSON line
        fail(e)


def main():
    argv = sys.argv[1:]
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        key = opt[2:].replace("-", "_")
        if key not in OPTS or not argv:
            emit(False, "USAGE", msg="bad option " + opt)
        val = argv.pop(0)
        OPTS[key] = float(val) if key in ("timeout", "wait_timeout") else val
    if OPTS["token"] is None:
        OPTS["token"] = "t%08x" % random.getrandbits(32)
    if OPTS["wait"]:
        end = time.monotonic() + OPTS["wait_timeout"]
        while not os.path.exists(OPTS["wait"]):
            if time.monotonic() > end:
                STEP[0] = "wait"
                emit(False, "NOGO")
            time.sleep(0.02)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, OPTS["timeout"])
    run(argv)


if __name__ == "__main__":
    main()
