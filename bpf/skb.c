// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The catch-all, cgroup_skb/egress: a packet from the sandbox leaves only
 * towards loopback, and there only to egressctl's listeners, an approved
 * target or a socket of this sandbox (loopback_pkt), or from a socket that
 * connect approved for the fast path. Anything else is dropped and
 * reported once per socket. Runs in softirq for some packets (ACKs,
 * retransmits): no current-task helpers here, only the socket.
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/addr.h"
#include "lib/direct.h"
#include "lib/events.h"
#include "lib/kverify.h"
#include "lib/maps.h"
#include "lib/receiver.h"
#include "lib/record.h"
#include "lib/tunables.h"

/* A UDP datagram to the DNS responder: index who sent it by its source
 * address and port, from the connect/sendmsg-time record of its socket, so
 * the responder can attribute the query. (At connect() time a UDP socket
 * has no port yet; its first datagram has one.) A socket without such a
 * record removes whatever entry that address and port had: the responder
 * then refuses the datagram rather than credit it to an earlier socket. */
static __always_inline void
index_dns(struct __sk_buff *skb, struct bpf_sock *sk, const __be32 *saddr, __be16 sport)
{
	struct egr_conn_key k = {};
	struct egr_sk_orig *o = NULL;

	addr_copy(k.addr, saddr);
	k.port = sport;
	k.proto = IPPROTO_UDP;
	if (sk)
		o = sock_rec(sk, bpf_get_socket_cookie(skb));
	if (!o || !(o->flags & EGR_SK_INDEX)) {
		bpf_map_delete_elem(&egr_conns, &k);
		return;
	}
	conns_put(&k, &o->who);
	o->key = k; /* removed with the socket (sock_release) */
	o->flags |= EGR_SK_KEYED;
}

/* A bare RST of a TCP socket in TCP_CLOSE (it sends nothing else), to the
 * socket's own peer, without IP options or extension headers. Such a
 * socket had a connection (the kernel resets only those), and the segment
 * carries no data; a fast-path socket's record may already be freed by
 * then (close() with unread data: TCP_CLOSE, then the RST). */
static __always_inline int
is_rst(struct __sk_buff *skb, struct bpf_sock *sk, const struct pkt *p)
{
	__u32 dport = sk->dst_port, d4 = sk->dst_ip4, fam = sk->family;
	__be32 peer[4];
	__u8 b[2];

	peer[0] = sk->dst_ip6[0];
	peer[1] = sk->dst_ip6[1];
	peer[2] = sk->dst_ip6[2];
	peer[3] = sk->dst_ip6[3];
	ctx_loaded();
	if (fam == AF_INET)
		map4(peer, d4);
	if (p->l4 != IPPROTO_TCP || !addr_eq(p->d, peer))
		return 0;
	if (bpf_skb_load_bytes(skb, p->off + 2, b, 2) || *(__be16 *)b != (__be16)dport)
		return 0;
	if (bpf_skb_load_bytes(skb, p->off + 12, b, 2))
		return 0;
	/* RST set, and no SYN or FIN; a data offset but nothing after it */
	return (b[1] & 0x07) == 0x04 && skb->len == p->off + (b[0] >> 4) * 4;
}

/* Report a dropped packet, once per socket (later packets of the socket
 * are dropped silently), naming who connected and where to: the record's
 * original destination when connect rewrote it (the packet's own would be
 * egressctl's listener port), else the packet's (d, port). o: the socket's
 * record, or NULL. A TCP socket whose packets carry IP options or an IPv6
 * extension header (EGR_R_IPOPTS: set after its connect, which refuses
 * them), or leave a container through a tunnel (EGR_R_TUNNEL), is refused
 * for good and ended, as a direct one is (lib/direct.h): nothing of it
 * can go where it was meant to. */
static __always_inline int
skb_drop(struct __sk_buff *skb, struct bpf_sock *sk, struct egr_sk_orig *o, const __be32 *d,
	 __be16 port, __u8 reason)
{
	int end = (reason == EGR_R_IPOPTS || reason == EGR_R_TUNNEL) && !audit_mode &&
		  sk->protocol == IPPROTO_TCP;

	if (!o)
		o = bpf_sk_storage_get(&egr_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return deny_ret();
	if (end)
		o->flags |= EGR_SK_KREJECT | EGR_SK_DREJECT;
	if (o->flags & EGR_SK_SKB_SEEN)
		return deny_ret();
	o->flags |= EGR_SK_SKB_SEEN; /* report a socket once, not every packet */
	count_deny();
	if (o->flags & (EGR_SK_REDIRECTED | EGR_SK_DNS)) {
		d = o->addr;
		port = o->port;
	}
	emit_rec(skb, sk, &o->who, deny_verdict(), reason,
		 audit_mode ? 0
		 : end	    ? ECONNABORTED
			    : EPERM,
		 d, port, NULL);
	return deny_ret();
}

/* A packet to loopback (s, d: its addresses, v4-mapped for IPv4; off: where
 * its transport header starts) passes when it goes to one of egressctl's
 * listeners, an approved target, or a socket of this sandbox. This is the
 * connect/sendmsg decision again, on the packet's own addresses and ports
 * (the source port is known now) and the device it is routed through (a
 * socket bound to "lo" receives in front of an unbound one): what changed
 * since connect, or what connect could not see, cannot reach a socket
 * outside. TCP is checked at its SYN (the later segments belong to the
 * connection it makes), UDP at every datagram. */
static __always_inline int
loopback_pkt(struct __sk_buff *skb, const struct pkt *pk, __be32 lip)
{
	const __be32 *s = pk->s, *d = pk->d;
	struct egr_sk_orig *o = NULL;
	struct bpf_sock *sk;
	__u8 l4 = pk->l4;
	__be16 p[2];
	__u8 fl;

	if (l4 != IPPROTO_TCP && l4 != IPPROTO_UDP)
		/* sock_create refuses raw, ping and the other protocols
		 * (extension headers and options are opts_pkt's) */
		return is_mapped(d) ? SYS_PROCEED : deny_ret();
	if (bpf_skb_load_bytes(skb, pk->off, p, sizeof(p)))
		return deny_ret();
	sk = skb->sk;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	/* egressctl's listeners are on this loopback only in its own network
	 * namespace (lip, listen_ip4); elsewhere 127.0.0.1 is someone else's */
	if (lip == bpf_htonl(LOOPBACK4) && is_own_port(p[1]) &&
	    (is_mapped(d) ? d[3] == lip : ipv6_on && is_loopback6(d))) {
		if (l4 == IPPROTO_UDP && dns_port && p[1] == bpf_htons(dns_port))
			index_dns(skb, sk, s, p[0]);
		return SYS_PROCEED;
	}
	if (l4 == IPPROTO_TCP) {
		if (bpf_skb_load_bytes(skb, pk->off + 13, &fl, 1))
			return deny_ret();
		if ((fl & 0x12) != 0x02) /* not a SYN (a SYN-ACK answers someone) */
			return SYS_PROCEED;
	}
	if (fast_hit(d, p[1], l4) || (l4 == IPPROTO_UDP && local_udp_any))
		return SYS_PROCEED; /* (local_udp_any: dockerd's embedded DNS answering) */
	if (receiver(skb, d, p[1], s, p[0], l4) == RCV_OURS)
		return SYS_PROCEED;
	if (!sk)
		return deny_ret();
	o = sock_rec(sk, bpf_get_socket_cookie(skb));
	/* audit mode: connect/sendmsg reported this socket's would-deny
	 * already, with its task (finish): not a second time here */
	if (audit_mode && o && (o->flags & EGR_SK_DIRECT))
		return SYS_PROCEED;
	return skb_drop(skb, sk, o, d, p[1], EGR_R_LOOPBACK);
}

/* A packet of another network namespace (a container) to the listeners'
 * address there (lip, ns_ip4): to one of egressctl's ports it passes (a
 * datagram to the responder indexed first). -1: another port, judged as
 * any packet that leaves. */
static __always_inline int
listener_pkt(struct __sk_buff *skb, const struct pkt *pk)
{
	struct bpf_sock *sk = skb->sk;
	__be16 p[2];

	if ((pk->l4 != IPPROTO_TCP && pk->l4 != IPPROTO_UDP) ||
	    bpf_skb_load_bytes(skb, pk->off, p, sizeof(p)))
		return -1;
	if (!is_own_port(p[1]))
		return -1;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (pk->l4 == IPPROTO_UDP && dns_port && p[1] == bpf_htons(dns_port))
		index_dns(skb, sk, pk->s, p[0]);
	return SYS_PROCEED;
}

/* The cookie of the network namespace the packet is routed in (its
 * device's), read through the kernel's sk_buff: bpf_get_netns_cookie()
 * came to cgroup_skb programs only in 2025, bpf_cast_to_kern_ctx() with
 * 6.2. 0 when it cannot be read (then not egressctl's namespace). */
static __always_inline __u64
skb_netns(struct __sk_buff *skb)
{
	struct sk_buff *k;

	if (!bpf_cast_to_kern_ctx)
		return 0;
	k = bpf_cast_to_kern_ctx(skb);
	return k->dev ? k->dev->nd_net.net->net_cookie : 0;
}

enum {
	PKT_BAD,      /* its IP header cannot be read */
	PKT_LOOPBACK, /* to 127.0.0.0/8 or ::1 */
	PKT_OUT,      /* anywhere else (d zero if not IP) */
	PKT_LISTENER, /* IPv4 to lip, not loopback */
};

/* The packet's addresses (v4-mapped for IPv4), the protocol after its
 * fixed IP header and where that header ends (after IPv4's options), and
 * where it goes; lip: where the listeners are for this network namespace
 * (listen_ip4). */
static __always_inline int
pkt_parse(struct __sk_buff *skb, __be32 lip, struct pkt *p)
{
	__u8 h[40], j[8];

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, h, 20))
			return PKT_BAD;
		map4(p->d, 0);
		map4(p->s, 0);
		__builtin_memcpy(&p->d[3], h + 16, 4);
		__builtin_memcpy(&p->s[3], h + 12, 4);
		p->off = (h[0] & 0x0f) * 4;
		if (p->off < 20 || p->off > 60)
			return PKT_BAD;
		p->opts = p->off > 20;
		p->l4 = h[9];
		if (lip && p->d[3] == lip && lip != bpf_htonl(LOOPBACK4))
			return PKT_LISTENER;
		return (bpf_ntohl(p->d[3]) >> 24) == 127 ? PKT_LOOPBACK : PKT_OUT;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 0, h, 40))
			return PKT_BAD;
		__builtin_memcpy(p->d, h + 24, 16);
		__builtin_memcpy(p->s, h + 8, 16);
		p->l4 = h[6];
		p->off = 40;
		if (p->l4 == 0 && !bpf_skb_load_bytes(skb, 40, j, sizeof(j)) && is_jumbo(h, j)) {
			p->l4 = IPPROTO_TCP; /* BIG TCP's own header: skipped */
			p->off = 48;
		}
		p->opts = is_exthdr(p->l4);
		return is_loopback6(p->d) ? PKT_LOOPBACK : PKT_OUT;
	}
	return PKT_OUT;
}

/* A device kind (rtnl_link_ops->kind, at most 7 bytes and a NUL) as the
 * first 8 bytes of a string in one word, for a comparison without loops. */
#define KIND(a, b, c, d, e, f, g)                                                                  \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 |   \
	 (__u64)(f) << 40 | (__u64)(g) << 48)

/* Does the device the packet leaves through wrap it for another host? In
 * a container's network namespace one that holds CAP_NET_ADMIN there can
 * make a tunnel device (vxlan, gre, wireguard, ...) and route an approved
 * destination, or the listeners' address, through it: the packet seen
 * here goes where it was approved to, and the outer one the device then
 * sends belongs to a kernel socket no cgroup hook sees (measured: vxlan's
 * reached its remote end). Kinds that forward frames as they are pass:
 * none (a NIC, loopback), veth, netkit, bridge, vlan, macvlan, macvtap,
 * ipvlan, ipvtap, bond, team, vrf, dummy. -1 when it cannot be read. A
 * global function: the verifier walks its BTF loads once, not on every
 * path that reaches it. */
__noinline int
dev_wraps(struct __sk_buff *skb)
{
	const struct rtnl_link_ops *ops;
	struct net_device *dev;
	struct sk_buff *k;
	__u64 kind[2] = {};

	if (!skb || !bpf_cast_to_kern_ctx)
		return -1;
	k = bpf_cast_to_kern_ctx(skb);
	dev = k->dev;
	if (!dev)
		return -1;
	ops = dev->rtnl_link_ops;
	if (!ops)
		return 0;
	if (bpf_probe_read_kernel_str(kind, sizeof(kind), ops->kind) < 0 || kind[1])
		return -1;
	switch (kind[0]) {
	case KIND('v', 'e', 't', 'h', 0, 0, 0):
	case KIND('n', 'e', 't', 'k', 'i', 't', 0):
	case KIND('b', 'r', 'i', 'd', 'g', 'e', 0):
	case KIND('v', 'l', 'a', 'n', 0, 0, 0):
	case KIND('m', 'a', 'c', 'v', 'l', 'a', 'n'):
	case KIND('m', 'a', 'c', 'v', 't', 'a', 'p'):
	case KIND('i', 'p', 'v', 'l', 'a', 'n', 0):
	case KIND('i', 'p', 'v', 't', 'a', 'p', 0):
	case KIND('b', 'o', 'n', 'd', 0, 0, 0):
	case KIND('t', 'e', 'a', 'm', 0, 0, 0):
	case KIND('v', 'r', 'f', 0, 0, 0, 0):
	case KIND('d', 'u', 'm', 'm', 'y', 0, 0):
		return 0;
	}
	return 1;
}

/* A TCP packet that answers a connection to a listener of the sandbox from
 * an address of egressctl's own network namespace: the listener's SYN-ACK
 * to such an address (skb->sk is the listener then), or any packet of a
 * connection accepted from one (EGR_SK_PASSIVE, sockops' passive_cb), the
 * destination looked up again (a socket disconnected and connected anew
 * goes through connect's judgment, and would not pass here). */
static __always_inline int
passive_pkt(struct bpf_sock *sk, const struct egr_sk_orig *o, const struct pkt *p)
{
	if (p->l4 != IPPROTO_TCP || sk->protocol != IPPROTO_TCP)
		return 0;
	if (sk->state != BPF_TCP_LISTEN && !(o && (o->flags & EGR_SK_PASSIVE)))
		return 0;
	return bpf_map_lookup_elem(&egr_hostaddr, p->d) != NULL;
}

/* The catch-all's judgment of a packet (kind: pkt_parse's). One with IPv4
 * options or an IPv6 extension header is a direct socket's to judge (and
 * refuse), any other socket's is refused (skb_drop), wherever it goes.
 * direct_pkt is reached from one place: inlined twice (once for such
 * packets), it cost the verifier 63,000 of the program's 73,000
 * instructions (its kernel-verified part is a function of its own now,
 * kv_judge). */
static __always_inline int
skb_judge(struct __sk_buff *skb, struct pkt *p, int kind, __be32 lip, __u64 ns)
{
	struct egr_sk_orig *o;
	struct bpf_sock *sk;
	__be16 port = 0;

	if (kind == PKT_BAD)
		return deny_ret();
	if (!p->opts) {
		switch (kind) {
		case PKT_LOOPBACK:
			return loopback_pkt(skb, p, lip);
		case PKT_LISTENER:
			if (listener_pkt(skb, p) == SYS_PROCEED)
				return SYS_PROCEED;
		}
	}
	sk = skb->sk;
	if (!sk)
		return deny_ret();
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return deny_ret();
	o = sock_rec(sk, bpf_get_socket_cookie(skb));
	if (o && (o->flags & EGR_SK_DIRECT))
		return direct_pkt(skb, sk, o, p);
	if (p->l4 == IPPROTO_TCP || p->l4 == IPPROTO_UDP) /* IPv4 options: past them */
		bpf_skb_load_bytes(skb, p->off + 2, &port, sizeof(port));
	if (p->opts)
		return skb_drop(skb, sk, o, p->d, port, EGR_R_IPOPTS);
	if (sk->protocol == IPPROTO_TCP && sk->state == BPF_TCP_CLOSE && is_rst(skb, sk, p))
		return SYS_PROCEED;
	if (passive_pkt(sk, o, p))
		return SYS_PROCEED;
	/* a container answering another of the target's on a network both
	 * are on: what its connect or send would be allowed (egr_peer) */
	if ((p->l4 == IPPROTO_TCP || p->l4 == IPPROTO_UDP) && peer_hit(ns, p->d))
		return SYS_PROCEED;
	return skb_drop(skb, sk, o, p->d, port, EGR_R_SKB_DROP);
}

SEC("cgroup_skb/egress")
int
egr_skb_egress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct pkt p = {};
	__be16 port = 0;
	__u64 ns = skb_netns(skb);
	__be32 lip = listen_ip4(ns);
	int kind = pkt_parse(skb, lip, &p), r;

	r = skb_judge(skb, &p, kind, lip, ns);
	/* what passes in a container's network namespace: through a device
	 * that delivers it as it is (dev_wraps) */
	if (r != SYS_PROCEED || kind == PKT_LOOPBACK || !host_netns || ns == host_netns ||
	    !dev_wraps(skb))
		return r;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (!sk)
		return deny_ret();
	if (p.l4 == IPPROTO_TCP || p.l4 == IPPROTO_UDP)
		bpf_skb_load_bytes(skb, p.off + 2, &port, sizeof(port));
	return skb_drop(skb, sk, sock_rec(sk, bpf_get_socket_cookie(skb)), p.d, port, EGR_R_TUNNEL);
}
