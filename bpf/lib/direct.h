// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Direct sockets: a connect the programs let go straight to its
 * destination (the fast path, the kernel-verified path) is approved for
 * that address and port only, for the socket's whole life. Every packet of
 * such a socket must go there: the catch-all compares each one with the
 * socket's record (direct_pkt), since nothing else does -- an IPv6 routing
 * header (IPV6_RTHDR, no privilege needed) or an IPv4 source route
 * (IP_OPTIONS, CAP_NET_RAW) sends the packet to its first hop, an IPsec
 * policy or a route's encapsulation wraps it for another host, and
 * TCP_REPAIR or Fast Open data need no connect at the time. A packet that
 * carries IPv4 options or an IPv6 extension header, or goes to another
 * address, port or protocol, is dropped, and so is every later packet of
 * the socket (EGR_SK_DREJECT): reported once, with who connected, and ended
 * by egr_kv_kill as a refused kernel-verified connection is. connect4/6
 * refuse a socket that has options set already (sock_ip_opts), so the
 * common case fails at once instead of at its first packet. */
#ifndef EGR_DIRECT_H
#define EGR_DIRECT_H

#include "lib/common.h"
#include "lib/addr.h"
#include "lib/events.h"
#include "lib/kverify.h"
#include "lib/maps.h"
#include "lib/tunables.h"

/* A packet as the catch-all sees it: addresses (v4-mapped for IPv4), the
 * protocol after the fixed IP header and where that header ends (IPv4:
 * after its options). */
struct pkt {
	__be32 s[4];
	__be32 d[4];
	__u32 off;
	__u8 l4;
	__u8 opts; /* IPv4 options, or an IPv6 extension header (is_exthdr) */
};

/* The hop-by-hop header the kernel itself puts before TCP in an IPv6
 * packet over 64 KiB (BIG TCP, a device's gso_max_size above 65536): a
 * payload length of 0 and one jumbo payload option (RFC 2675), as the
 * kernel's ipv6_has_hopopt_jumbo() tells it. It says how long the packet
 * is, nothing of where it goes; a socket's own options come after it. h:
 * the packet's first 40 bytes, j: the 8 after them. */
static __always_inline int
is_jumbo(const __u8 *h, const __u8 *j)
{
	return h[6] == 0 && h[4] == 0 && h[5] == 0 && j[0] == IPPROTO_TCP && j[1] == 0 &&
	       j[2] == 0xc2 && j[3] == 4;
}

/* IPv6 extension headers (RFC 8200 and later): hop-by-hop, routing,
 * fragment, ESP, AH, destination options, mobility, HIP, shim6. */
static __always_inline int
is_exthdr(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 44 || nh == 50 || nh == 51 || nh == 60 || nh == 135 ||
	       nh == 139 || nh == 140;
}

/* 0 when the packet goes where the socket's record says (o), else why not. */
static __always_inline __u8
direct_where(struct __sk_buff *skb, struct bpf_sock *sk, const struct egr_sk_orig *o,
	     const struct pkt *p, __be16 *dport)
{
	__u32 proto = sk->protocol;

	ctx_loaded();
	*dport = 0;
	if (p->opts)
		return EGR_R_IPOPTS;
	if (p->l4 != proto)
		return EGR_R_DIRECT_MOVED; /* IPsec, IP in IP, GRE: another host unwraps it */
	if (bpf_skb_load_bytes(skb, p->off + 2, dport, sizeof(*dport)))
		return EGR_R_DIRECT_MOVED;
	/* UDP goes direct in audit mode only, and its record is the last
	 * datagram's destination: another datagram's is judged by sendmsg */
	if (proto != IPPROTO_TCP)
		return 0;
	if (!addr_eq(p->d, o->addr) || *dport != o->port)
		return EGR_R_DIRECT_MOVED;
	return 0;
}

/* A direct socket's packet that goes elsewhere: the socket is refused for
 * good and reported once, naming who connected (connect's record) and
 * where the packet was going; userspace ends it on the event
 * (loader_is_refusal). In audit mode reported once, and passed. */
static __always_inline int
direct_refuse(struct __sk_buff *skb, struct bpf_sock *sk, struct egr_sk_orig *o,
	      const struct pkt *p, __u8 reason, __be16 dport)
{
	if (audit_mode) {
		if (!(o->flags & EGR_SK_SKB_SEEN)) {
			o->flags |= EGR_SK_SKB_SEEN;
			count_deny();
			emit_rec(skb, sk, &o->who, EGR_V_WOULD_DENY, reason, 0, p->d, dport, NULL);
		}
		return SYS_PROCEED;
	}
	o->flags |= EGR_SK_KREJECT | EGR_SK_DREJECT;
	count_deny();
	emit_rec(skb, sk, &o->who, EGR_V_DENY, reason, ECONNABORTED, p->d, dport, NULL);
	return SYS_REJECT;
}

/* A packet of a socket whose record says EGR_SK_DIRECT. Pre-existing
 * sockets (the attach found them connected) are not confined; in audit
 * mode, a socket whose connect was a would-deny was reported then. */
static __always_inline int
direct_pkt(struct __sk_buff *skb, struct bpf_sock *sk, struct egr_sk_orig *o, const struct pkt *p)
{
	__be16 dport;
	__u8 r;

	if (o->flags & EGR_SK_PREEXISTING)
		return SYS_PROCEED;
	if (o->flags & EGR_SK_DREJECT)
		return SYS_REJECT;
	if (audit_mode && (o->flags & EGR_SK_SKB_SEEN))
		return SYS_PROCEED;
	r = direct_where(skb, sk, o, p, &dport);
	if (r)
		return direct_refuse(skb, sk, o, p, r, dport);
	if (!(o->flags & EGR_SK_VERIFY))
		return SYS_PROCEED;
	/* a global function's result is any number to the verifier */
	return kv_judge(skb, o, p->off) == SYS_PROCEED ? SYS_PROCEED : SYS_REJECT;
}

#endif /* EGR_DIRECT_H */
