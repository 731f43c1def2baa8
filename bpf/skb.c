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

/* A bare RST: a TCP socket in TCP_CLOSE sends nothing else. Such a socket
 * had a connection (the kernel resets only those), and the segment carries
 * no data; a fast-path socket's record may already be freed by then (close()
 * with unread data: TCP_CLOSE, then the RST). */
static __always_inline int
is_rst(struct __sk_buff *skb)
{
	__u8 b[2];
	__u32 off;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, b, 1))
			return 0;
		off = (b[0] & 0x0f) * 4;
		if (off < 20 || off > 60)
			return 0;
	} else {
		if (bpf_skb_load_bytes(skb, 6, b, 1) || b[0] != IPPROTO_TCP)
			return 0;
		off = 40;
	}
	if (bpf_skb_load_bytes(skb, off + 12, b, 2))
		return 0;
	/* RST set, and no SYN or FIN; a data offset but nothing after it */
	return (b[1] & 0x07) == 0x04 && skb->len == off + (b[0] >> 4) * 4;
}

/* Report a dropped packet, once per socket (later packets of the socket
 * are dropped silently). */
static __always_inline int
skb_drop(struct __sk_buff *skb, struct bpf_sock *sk, const __be32 *d, __be16 port, __u8 reason)
{
	struct egr_sk_orig *o;

	o = bpf_sk_storage_get(&egr_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return deny_ret();
	if (o->flags & EGR_SK_DIRECT)
		return (o->flags & EGR_SK_VERIFY) ? kv_pkt(skb, sk, o) : SYS_PROCEED;
	if (o->flags & EGR_SK_SKB_SEEN)
		return deny_ret();
	o->flags |= EGR_SK_SKB_SEEN; /* report a socket once, not every packet */
	count_deny();
	emit_skb(skb, sk, reason, d, port);
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
loopback_pkt(struct __sk_buff *skb, const __be32 *s, const __be32 *d, __u8 l4, __u32 off,
	     __be32 lip)
{
	struct bpf_sock *sk;
	__be16 p[2];
	__u8 fl;

	if (l4 != IPPROTO_TCP && l4 != IPPROTO_UDP)
		/* sock_create refuses raw, ping and the other protocols;
		 * an IPv6 extension header here means the destination
		 * options or a routing header a socket asked for */
		return is_mapped(d) ? SYS_PROCEED : deny_ret();
	if (bpf_skb_load_bytes(skb, off, p, sizeof(p)))
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
		if (bpf_skb_load_bytes(skb, off + 13, &fl, 1))
			return deny_ret();
		if ((fl & 0x12) != 0x02) /* not a SYN (a SYN-ACK answers someone) */
			return SYS_PROCEED;
	}
	if (fast_hit(d, p[1], l4))
		return SYS_PROCEED;
	if (receiver(skb, d, p[1], s, p[0], l4) == RCV_OURS)
		return SYS_PROCEED;
	if (!sk)
		return deny_ret();
	if (audit_mode) {
		/* connect/sendmsg reported this socket's would-deny already,
		 * with its task (finish): not a second time here */
		struct egr_sk_orig *o = sock_rec(sk, bpf_get_socket_cookie(skb));

		if (o && (o->flags & EGR_SK_DIRECT))
			return SYS_PROCEED;
	}
	return skb_drop(skb, sk, d, p[1], EGR_R_LOOPBACK);
}

/* A packet of another network namespace (a container) to the listeners'
 * address there (lip, ns_ip4): to one of egressctl's ports it passes (a
 * datagram to the responder indexed first). -1: another port, judged as
 * any packet that leaves. */
static __always_inline int
listener_pkt(struct __sk_buff *skb, const __be32 *s, __u8 l4, __u32 off)
{
	struct bpf_sock *sk = skb->sk;
	__be16 p[2];

	if ((l4 != IPPROTO_TCP && l4 != IPPROTO_UDP) || bpf_skb_load_bytes(skb, off, p, sizeof(p)))
		return -1;
	if (!is_own_port(p[1]))
		return -1;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (l4 == IPPROTO_UDP && dns_port && p[1] == bpf_htons(dns_port))
		index_dns(skb, sk, s, p[0]);
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
	PKT_LOOPBACK, /* to 127.0.0.0/8 or ::1: s, d, l4 and off are set */
	PKT_OUT,      /* anywhere else: d is set (zero if not IP) */
	PKT_LISTENER, /* IPv4 to lip, not loopback: s, d, l4 and off are set */
};

/* The packet's addresses (v4-mapped for IPv4), transport protocol and the
 * offset of its transport header; lip: where the listeners are for this
 * network namespace (listen_ip4). */
static __always_inline int
pkt_parse(struct __sk_buff *skb, __be32 lip, __be32 *s, __be32 *d, __u8 *l4, __u32 *off)
{
	__u8 h[40];
	int kind = PKT_LOOPBACK;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, h, 20))
			return PKT_BAD;
		__builtin_memcpy(&d[3], h + 16, 4);
		d[2] = bpf_htonl(0xffff);
		if (lip && d[3] == lip && lip != bpf_htonl(LOOPBACK4))
			kind = PKT_LISTENER;
		else if ((bpf_ntohl(d[3]) >> 24) != 127)
			return PKT_OUT;
		__builtin_memcpy(&s[3], h + 12, 4);
		s[2] = bpf_htonl(0xffff);
		*off = (h[0] & 0x0f) * 4;
		if (*off < 20 || *off > 60)
			return PKT_BAD;
		*l4 = h[9];
		return kind;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 0, h, 40))
			return PKT_BAD;
		__builtin_memcpy(d, h + 24, 16);
		if (!is_loopback6(d))
			return PKT_OUT;
		__builtin_memcpy(s, h + 8, 16);
		*l4 = h[6];
		*off = 40;
		return PKT_LOOPBACK;
	}
	return PKT_OUT;
}

SEC("cgroup_skb/egress")
int
egr_skb_egress(struct __sk_buff *skb)
{
	struct egr_sk_orig *o;
	struct bpf_sock *sk;
	__be32 s[4] = {}, d[4] = {};
	__u32 off = 0;
	__u8 l4 = 0;
	__u64 cookie;
	__be32 lip = listen_ip4(skb_netns(skb));

	switch (pkt_parse(skb, lip, s, d, &l4, &off)) {
	case PKT_BAD:
		return deny_ret();
	case PKT_LOOPBACK:
		return loopback_pkt(skb, s, d, l4, off, lip);
	case PKT_LISTENER:
		if (listener_pkt(skb, s, l4, off) == SYS_PROCEED)
			return SYS_PROCEED;
	}
	sk = skb->sk;
	if (!sk)
		return deny_ret();
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return deny_ret();
	cookie = bpf_get_socket_cookie(skb);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (o->flags & EGR_SK_DIRECT))
		return (o->flags & EGR_SK_VERIFY) ? kv_pkt(skb, sk, o) : SYS_PROCEED;
	if (sk->protocol == IPPROTO_TCP && sk->state == BPF_TCP_CLOSE && is_rst(skb))
		return SYS_PROCEED;
	return skb_drop(skb, sk, d, (__be16)sk->dst_port, EGR_R_SKB_DROP);
}
