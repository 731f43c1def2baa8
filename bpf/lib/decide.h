// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The decision of connect4/6 and sendmsg4/6 for one destination: redirect
 * to one of egressctl's listeners (transparent TCP, DNS), let through (fast
 * path, the proxy, the sandbox's own loopback sockets: decided later by the
 * receiving socket), or deny with an errno. Pure but for the fast-path
 * lookup; sock_addr.c carries it out (finish). */
#ifndef EGR_DECIDE_H
#define EGR_DECIDE_H

#include "lib/common.h"
#include "lib/addr.h"
#include "lib/kverify.h"
#include "lib/record.h"
#include "lib/tunables.h"

struct decision {
	__u32 ip4;     /* new destination (network order) when redirecting */
	__u16 port;    /* new destination port (network order) */
	__u16 skflags; /* EGR_SK_* to record on the socket */
	__u8 verdict;  /* enum egr_verdict */
	__u8 reason;   /* enum egr_reason */
	__u8 index;    /* record who connected, for the proxy's lookup */
	__u8 lookup;   /* loopback: allowed only if the receiver is ours, else err */
	__u8 v6;       /* redirecting native IPv6: to ::1 (not ip4) */
	int err;       /* errno for a deny */
};

static __always_inline void
decide_deny(struct decision *d, __u8 reason, int err)
{
	d->verdict = EGR_V_DENY;
	d->reason = reason;
	d->err = err;
}

/* To a listener at lip (listen_ip4); none there (another network
 * namespace without --containers): refused with err. */
static __always_inline void
decide_redirect(struct decision *d, __be32 lip, __u16 port_host, __u8 reason, __u16 flags, int err)
{
	if (!lip) {
		decide_deny(d, EGR_R_NETNS, err);
		return;
	}
	d->verdict = EGR_V_REDIRECT;
	d->reason = reason;
	d->ip4 = lip;
	d->port = bpf_htons(port_host);
	d->skflags = flags;
	d->index = 1;
}

static __always_inline void
decide_fastpath(struct decision *d)
{
	d->verdict = EGR_V_ALLOW;
	d->reason = EGR_R_FASTPATH;
	d->skflags = EGR_SK_DIRECT;
}

/* A loopback destination: the decision is the receiving socket's
 * (receiver_ours), looked up once the hook has it all. */
static __always_inline void
decide_local(struct decision *d, int err)
{
	d->verdict = EGR_V_ALLOW;
	d->reason = EGR_R_LOCAL;
	d->lookup = 1;
	d->err = err;
}

/* Does no allow rule name TCP port port (network order)? Only while the
 * policy's rules all name their ports (egr_ports.enforce). */
static __always_inline bool
port_unnamed(__be16 port)
{
	__u32 k = 0, p = bpf_ntohs(port);
	struct egr_ports *v = bpf_map_lookup_elem(&egr_ports, &k);

	if (!v || !v->enforce)
		return false;
	return !((v->bits[(p >> 6) & (EGR_PORT_WORDS - 1)] >> (p & 63)) & 1);
}

/* TCP to an IPv4 destination (plain or v4-mapped); lip: where the
 * listeners are for the socket's network namespace (listen_ip4). In
 * another namespace 127.0.0.1 is its own loopback, nothing of ours. */
static __always_inline void
decide_tcp4(const __be32 *dst, __be16 port, __be32 lip, struct decision *d)
{
	__be32 ip4 = dst[3];

	if (lip && ip4 == lip && is_own_port(port)) {
		/* no record: sockops indexes it by its peer address */
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_PROXY;
		return;
	}
	if (fast_hit(dst, port, IPPROTO_TCP) || (fast_nets && net_hit(dst))) {
		decide_fastpath(d);
		return;
	}
	if (port == bpf_htons(53)) {
		if (dns_port)
			decide_redirect(d, lip, dns_port, EGR_R_DNS, EGR_SK_REDIRECTED,
					ECONNREFUSED);
		else
			decide_deny(d, EGR_R_NO_LISTENER, ECONNREFUSED);
		return;
	}
	if (is_local4(ip4)) {
		decide_local(d, ECONNREFUSED);
		return;
	}
	if (kv_hit(dst, port)) { /* direct, its first bytes judged (lib/kverify.h) */
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_KVERIFY;
		d->skflags = EGR_SK_DIRECT | EGR_SK_VERIFY;
		return;
	}
	if (port_unnamed(port))
		decide_deny(d, EGR_R_NO_PORT, ECONNREFUSED);
	else if (tproxy_port)
		decide_redirect(d, lip, tproxy_port, EGR_R_TRANSPARENT, EGR_SK_REDIRECTED,
				ECONNREFUSED);
	else
		decide_deny(d, EGR_R_NO_LISTENER, ECONNREFUSED);
}

/* A UDP datagram (connect or sendmsg) to an IPv4 destination; lip as for
 * decide_tcp4. */
static __always_inline void
decide_udp4(const __be32 *dst, __be16 port, __be32 lip, struct decision *d)
{
	__be32 ip4 = dst[3];

	if (lip && ip4 == lip && dns_port && port == bpf_htons(dns_port)) {
		/* straight to the responder: indexed too, or it could
		 * not tell this socket's queries from anyone's */
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_DNS;
		d->index = 1;
		return;
	}
	if (port == bpf_htons(53)) {
		if (dns_port) {
			/* indexed by the catch-all once the datagram has a port */
			decide_redirect(d, lip, dns_port, EGR_R_DNS, EGR_SK_DNS, EPERM);
		} else {
			decide_deny(d, EGR_R_NO_LISTENER, EPERM);
		}
		return;
	}
	if (fast_hit(dst, port, IPPROTO_UDP)) {
		decide_fastpath(d);
		return;
	}
	if (!is_local4(ip4)) {
		decide_deny(d, EGR_R_UDP, EPERM);
	} else if (local_udp_any) {
		/* dockerd's embedded DNS answering whoever asked: no lookup,
		 * and (no lookup) no line per answer */
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_LOCAL;
	} else {
		decide_local(d, EPERM);
	}
}

/* --ipv6: native IPv6 to a listener on ::1 (lip6: listen_ip6; none
 * there: another network namespace, refused with err). */
static __always_inline void
decide_redirect6(struct decision *d, int lip6, __u16 port_host, __u8 reason, __u16 flags, int err)
{
	decide_redirect(d, lip6 ? bpf_htonl(1) : 0, port_host, reason, flags, err);
	d->v6 = 1;
}

/* --ipv6: native IPv6 beyond the fast path and loopback, by the rules of
 * IPv4 (decide_tcp4, decide_udp4): DNS to the responder, TCP to an answered
 * address of the kernel-verified path direct, the rest of TCP to the
 * transparent listener, the rest of UDP refused. IPv4 carried in IPv6 is
 * refused outright: it would be a way around the IPv4 rules. */
static __always_inline void
decide6_on(const __be32 *dst, __be16 port, __u8 proto, int lip6, struct decision *d)
{
	int err = proto == IPPROTO_TCP ? ECONNREFUSED : EPERM;

	if (is_v4_in_v6(dst)) {
		decide_deny(d, EGR_R_V4_IN_V6, ENETUNREACH);
	} else if (port == bpf_htons(53)) {
		if (dns_port)
			decide_redirect6(d, lip6, dns_port, EGR_R_DNS,
					 proto == IPPROTO_TCP ? EGR_SK_REDIRECTED : EGR_SK_DNS,
					 err);
		else
			decide_deny(d, EGR_R_NO_LISTENER, err);
	} else if (proto != IPPROTO_TCP) {
		decide_deny(d, EGR_R_UDP, EPERM);
	} else if (kv_hit(dst, port)) { /* direct, judged as decide_tcp4's */
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_KVERIFY;
		d->skflags = EGR_SK_DIRECT | EGR_SK_VERIFY;
	} else if (port_unnamed(port)) {
		decide_deny(d, EGR_R_NO_PORT, err);
	} else if (tproxy_port) {
		decide_redirect6(d, lip6, tproxy_port, EGR_R_TRANSPARENT, EGR_SK_REDIRECTED, err);
	} else {
		decide_deny(d, EGR_R_NO_LISTENER, err);
	}
}

/* Native IPv6 (not v4-mapped): the sandbox's own loopback sockets and
 * fast-path entries; with --ipv6 also egressctl's listeners on ::1 and
 * the rest by decide6_on. */
static __always_inline void
decide6(const __be32 *dst, __be16 port, __u8 proto, int lip6, struct decision *d)
{
	if (lip6 && is_loopback6(dst) && is_own_port(port)) {
		if (proto == IPPROTO_TCP) {
			d->verdict = EGR_V_ALLOW; /* sockops indexes it */
			d->reason = EGR_R_PROXY;
			return;
		}
		if (dns_port && port == bpf_htons(dns_port)) {
			d->verdict = EGR_V_ALLOW; /* indexed, as decide_udp4 */
			d->reason = EGR_R_DNS;
			d->index = 1;
			return;
		}
	}
	if (fast_hit(dst, port, proto)) {
		decide_fastpath(d);
		return;
	}
	if (is_local6(dst))
		decide_local(d, proto == IPPROTO_TCP ? ECONNREFUSED : EPERM);
	else if (ipv6_on)
		decide6_on(dst, port, proto, lip6, d);
	else
		decide_deny(d, EGR_R_IPV6, ENETUNREACH);
}

/* Socket types and protocols that have no business reaching a sock_addr
 * hook (most are refused at creation already). */
static __always_inline int
decide_other_proto(__u32 type, __u32 proto, struct decision *d)
{
	if (type == SOCK_STREAM && proto == IPPROTO_TCP)
		return 0;
	if (type == SOCK_DGRAM && proto == IPPROTO_UDP)
		return 0;
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)
		decide_deny(d, EGR_R_PING, EPERM);
	else if (proto == IPPROTO_UDPLITE)
		decide_deny(d, EGR_R_UDPLITE, EPERM);
	else
		decide_deny(d, EGR_R_PROTO, EPERM);
	return 1;
}

/* The decision for a destination of a connect (connect4/6) or an
 * unconnected send (sendmsg4/6): v4-mapped destinations by the IPv4 rules
 * (connect6 and sendmsg6 see them for AF_INET6 sockets). */
static __always_inline void
decide_dst(const __be32 *dst, __be16 port, __u32 type, __u32 proto, __be32 lip, int lip6,
	   struct decision *d)
{
	if (decide_other_proto(type, proto, d))
		return;
	if (!is_mapped(dst))
		decide6(dst, port, proto, lip6, d);
	else if (type == SOCK_STREAM)
		decide_tcp4(dst, port, lip, d);
	else
		decide_udp4(dst, port, lip, d);
}

#endif /* EGR_DECIDE_H */
