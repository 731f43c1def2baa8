#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Servers for the egressctl end-to-end suite.  Each accept/datagram/query is
logged as one line to --log (flushed at once), so tests can assert what a
server did and did NOT see.

  servers.py inet --log F --tcp-ports 7,22,53,80,443,7000-7031 --answer IP
      The "internet" side.  TCP on 0.0.0.0 and [::]: echo (port 53: DNS over
      TCP); UDP 7 echo and UDP 53 DNS on 0.0.0.0 and [::].  The netns routes
      whole test ranges to lo (AnyIP), so UDP replies are sent from the
      address the request was sent to (IP_PKTINFO), as a real host would.
      DNS answers every A query with --answer (IP4, or IP4,IP6: AAAA queries
      are then answered with IP6).

  servers.py sbx --log F --dns-port P --answer IP --lo-port P
                 --abstract NAME --abstract-dgram NAME --unix PATH --unix-dgram PATH
      The "sandbox host" side, started by the suite outside the cgroup: the
      DNS listener egressctl's --dns-port points at (UDP+TCP on 127.0.0.1),
      a loopback TCP echo server (the "host service" a sandbox must not reach),
      and abstract / filesystem unix sockets.

  servers.py host --log F --proto tcp|udp --addr A --port P [--opts O,...]
                  [--pass PATH]
      One "host service" outside the cgroup, as a loopback class test needs
      it: echo (TCP or UDP) on A:P, with the socket options O (reuseaddr,
      reuseport, v6only, bindlo: SO_BINDTODEVICE "lo").  --pass PATH: also hand the listening socket
      itself (SCM_RIGHTS) to every client of the unix socket PATH.

Prints READY on stdout once every socket listens.
"""
import os
import socket
import struct
import sys
import threading
import time

LOG = None
LOCK = threading.Lock()
IP_PKTINFO = 8
IPV6_RECVPKTINFO = 49
IPV6_PKTINFO = 50
IPV6_FREEBIND = 78


def log(*parts):
    with LOCK:
        LOG.write(" ".join(str(p) for p in parts) + "\n")
        LOG.flush()


def fmt(a):
    if isinstance(a, tuple):
        return ("%s:%d" if len(a) == 2 else "[%s]:%d") % (a[0], a[1])
    return repr(a)


def dns_answer(q, answer):
    """Returns (reply, qname, qtype) for a DNS query."""
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    off, labels = 12, []
    while q[off]:
        labels.append(q[off + 1:off + 1 + q[off]].decode(errors="replace"))
        off += 1 + q[off]
    qtype, _ = struct.unpack("!HH", q[off + 1:off + 5])
    question = q[12:off + 5]
    an = b""
    a4, _, a6 = answer.partition(",")  # "IP4[,IP6]": AAAA answered only with an IP6
    if qtype == 1:
        an = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(a4)
    elif qtype == 28 and a6:
        an = b"\xc0\x0c" + struct.pack("!HHIH", 28, 1, 60, 16) + socket.inet_pton(socket.AF_INET6, a6)
    hdr = struct.pack("!HHHHHH", qid, 0x8180 | (flags & 0x0100), 1, 1 if an else 0, 0, 0)
    return hdr + question + an, ".".join(labels), qtype


def serve_tcp_conn(c, peer, local, kind, answer):
    c.settimeout(3)
    try:
        if kind == "dns":
            buf = b""
            while len(buf) < 2 or len(buf) < 2 + struct.unpack("!H", buf[:2])[0]:
                chunk = c.recv(4096)
                if not chunk:
                    return
                buf += chunk
            reply, name, qtype = dns_answer(buf[2:], answer)
            log("DNS tcp", "local=" + local, "peer=" + peer, "name=" + name, "qtype=%d" % qtype)
            c.sendall(struct.pack("!H", len(reply)) + reply)
            return
        while True:
            data = c.recv(4096)
            if not data:
                return
            log("DATA tcp", "local=" + local, "peer=" + peer, data.decode(errors="replace").strip())
            c.sendall(data)
    except OSError:
        pass
    finally:
        c.close()


def tcp_listener(family, addr, kind, answer):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(addr)
    s.listen(64)

    def loop():
        while True:
            c, peer = s.accept()
            local = fmt(c.getsockname()) if family != socket.AF_UNIX else addr_name(addr)
            peer_s = fmt(peer) if family != socket.AF_UNIX else "unix"
            log("ACCEPT tcp", "local=" + local, "peer=" + peer_s)
            threading.Thread(target=serve_tcp_conn, args=(c, peer_s, local, kind, answer),
                             daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def addr_name(addr):
    if isinstance(addr, str):
        return ("@" + addr[1:]) if addr.startswith("\0") else addr
    return fmt(addr)


def udp_listener(family, addr, kind, answer, pktinfo=True):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        if pktinfo:
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVPKTINFO, 1)
            # replying from an AnyIP address (a local route, not a configured
            # address) needs IPV6_FREEBIND, else sendmsg() says EINVAL
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_FREEBIND, 1)
    elif pktinfo:
        s.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
    s.bind(addr)

    def loop():
        while True:
            data, anc, _, peer = s.recvmsg(4096, socket.CMSG_SPACE(64))
            dst, cmsg = None, []
            for lvl, typ, cdata in anc:
                if lvl == socket.IPPROTO_IP and typ == IP_PKTINFO:
                    dst = socket.inet_ntoa(cdata[8:12])
                    cmsg = [(lvl, IP_PKTINFO, struct.pack("=I4s4s", 0, cdata[8:12], b"\0" * 4))]
                elif lvl == socket.IPPROTO_IPV6 and typ == IPV6_PKTINFO:
                    dst = socket.inet_ntop(socket.AF_INET6, cdata[:16])
                    cmsg = [(lvl, IPV6_PKTINFO, cdata[:16] + struct.pack("=I", 0))]
            local = "%s:%d" % (dst or addr[0], addr[1])
            try:
                if kind == "dns":
                    reply, name, qtype = dns_answer(data, answer)
                    log("DNS udp", "local=" + local, "peer=" + fmt(peer), "name=" + name,
                        "qtype=%d" % qtype)
                else:
                    reply = data
                    log("DATA udp", "local=" + local, "peer=" + fmt(peer),
                        data.decode(errors="replace").strip())
                s.sendmsg([reply], cmsg, 0, peer)
            except (OSError, IndexError, struct.error) as e:
                log("ERROR udp", "local=" + local, repr(e))
    threading.Thread(target=loop, daemon=True).start()


def unix_dgram(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    if not path.startswith("\0"):
        os.chmod(path, 0o777)

    def loop():
        while True:
            data = s.recv(4096)
            log("DATA unix_dgram", "local=" + addr_name(path), data.decode(errors="replace").strip())
    threading.Thread(target=loop, daemon=True).start()


def host_service(opt):
    """servers.py host: one echo socket with the options a test asks for."""
    proto, addr, port = opt["--proto"], opt["--addr"], int(opt["--port"])
    opts = [o for o in opt.get("--opts", "").split(",") if o]
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    stream = proto == "tcp"
    s = socket.socket(family, socket.SOCK_STREAM if stream else socket.SOCK_DGRAM)
    if "reuseaddr" in opts:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if "reuseport" in opts:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if "bindlo" in opts:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"lo")
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1 if "v6only" in opts else 0)
    s.bind((addr, port))
    local = fmt(s.getsockname())
    if stream:
        s.listen(64)

        def loop():
            while True:
                c, peer = s.accept()
                log("ACCEPT tcp", "local=" + local, "peer=" + fmt(peer))
                threading.Thread(target=serve_tcp_conn, args=(c, fmt(peer), local, "echo", None),
                                 daemon=True).start()
    else:
        def loop():
            while True:
                data, peer = s.recvfrom(4096)
                log("DATA udp", "local=" + local, "peer=" + fmt(peer),
                    data.decode(errors="replace").strip())
                s.sendto(data, peer)
    threading.Thread(target=loop, daemon=True).start()
    if "--pass" in opt:
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.bind(opt["--pass"])
        os.chmod(opt["--pass"], 0o777)
        u.listen(4)

        def give():
            while True:
                c, _ = u.accept()
                socket.send_fds(c, [b"x"], [s.fileno()])
                log("PASSED", "local=" + local)
                c.close()
        threading.Thread(target=give, daemon=True).start()


def ports(spec):
    out = []
    for part in spec.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def main():
    global LOG
    mode, args = sys.argv[1], sys.argv[2:]
    opt = dict(zip(args[::2], args[1::2]))
    LOG = open(opt["--log"], "a")
    answer = opt.get("--answer", "192.0.2.53")
    if mode == "host":
        host_service(opt)
    elif mode == "inet":
        for p in ports(opt["--tcp-ports"]):
            kind = "dns" if p == 53 else "echo"
            tcp_listener(socket.AF_INET, ("0.0.0.0", p), kind, answer)
            tcp_listener(socket.AF_INET6, ("::", p), kind, answer)
        for p, kind in ((7, "echo"), (53, "dns")):
            udp_listener(socket.AF_INET, ("0.0.0.0", p), kind, answer)
            udp_listener(socket.AF_INET6, ("::", p), kind, answer)
    else:
        dp = int(opt["--dns-port"])
        tcp_listener(socket.AF_INET, ("127.0.0.1", dp), "dns", answer)
        udp_listener(socket.AF_INET, ("127.0.0.1", dp), "dns", answer, pktinfo=False)
        tcp_listener(socket.AF_INET, ("127.0.0.1", int(opt["--lo-port"])), "echo", answer)
        tcp_listener(socket.AF_UNIX, "\0" + opt["--abstract"], "echo", answer)
        unix_dgram("\0" + opt["--abstract-dgram"])
        tcp_listener(socket.AF_UNIX, opt["--unix"], "echo", answer)
        os.chmod(opt["--unix"], 0o777)
        unix_dgram(opt["--unix-dgram"])
    print("READY", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
