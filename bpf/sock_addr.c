// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The sock_addr hooks of inet sockets. connect4/6 and sendmsg4/6 decide
 * every TCP connect and UDP send (lib/decide.h) and carry the decision out
 * (finish): rewrite the destination to a listener, record what the socket
 * needs later, report, or refuse with an errno. recvmsg4/6 and
 * getpeername4/6 translate a redirected peer back. bind4/6 keep the sandbox
 * off egressctl's ports and off addresses and ports where a socket outside
 * it would receive.
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/addr.h"
#include "lib/decide.h"
#include "lib/events.h"
#include "lib/maps.h"
#include "lib/receiver.h"
#include "lib/record.h"
#include "lib/tunables.h"

static __always_inline void
record(struct egr_sk_orig *o, const struct sa *a, struct decision *d, __u64 cookie)
{
	if (d->skflags) { /* what getpeername/recvmsg translate back to */
		addr_copy(o->addr, a->addr);
		o->port = a->port;
		o->flags |= d->skflags;
	}
	/* who: for the catch-all's decision lines about a direct socket (its
	 * first bytes judged, a packet sent elsewhere: lib/direct.h), and the
	 * revoke pass's name of one whose process is gone (existing.bpf.c) */
	if (d->skflags & EGR_SK_DIRECT)
		who_task(&o->who, cookie, a->netns);
	if (!d->index)
		return;
	o->flags |= EGR_SK_INDEX;
	o->who.reason = d->reason;
	if (a->type == SOCK_STREAM)
		return; /* sockops fills the rest, in this same task */
	/* UDP: the catch-all indexes it and must not ask the current task */
	who_task(&o->who, cookie, a->netns);
	addr_copy(o->who.addr, a->addr);
	o->who.port = a->port;
}

/* Record what the socket needs later (getpeername, recvmsg, skb, sockops). */
static __always_inline void
remember(struct bpf_sock_addr *ctx, const struct sa *a, __u8 hook, struct decision *d)
{
	struct egr_sk_orig *o, v = {};
	__u64 cookie;
	int created;

	if (!d->skflags && !d->index)
		return;
	/* a loopback fast-path entry is found again by the catch-all (an
	 * audit-mode would-deny is not: it needs the record) */
	if (d->skflags == EGR_SK_DIRECT && d->verdict != EGR_V_DENY && is_loopback(a->addr))
		return;
	cookie = bpf_get_socket_cookie(ctx);
	record(&v, a, d, cookie);
	o = rec_for(a->sk, cookie, hook, &v, &created);
	if (o)
		record(o, a, d, cookie);
}

/* Whether to report a loopback allow: every connect, and a socket's
 * unconnected sends once per destination in a row (one line per datagram
 * to the sandbox's own server would drown the log). */
static __always_inline int
report_local(struct bpf_sock_addr *ctx, const struct sa *a, __u8 hook)
{
	struct egr_sk_orig *o, v = {};
	__u64 cookie;
	int created;

	if (hook != EGR_H_SENDMSG4 && hook != EGR_H_SENDMSG6)
		return 1;
	cookie = bpf_get_socket_cookie(ctx);
	o = sock_rec(a->sk, cookie);
	if (o && (o->flags & EGR_SK_SEEN_LOCAL) && o->seen_port == a->port &&
	    addr_eq(o->seen_addr, a->addr))
		return 0;
	v.flags = EGR_SK_SEEN_LOCAL;
	addr_copy(v.seen_addr, a->addr);
	v.seen_port = a->port;
	if (!o)
		o = rec_for(a->sk, cookie, hook, &v, &created);
	if (o) {
		o->flags |= EGR_SK_SEEN_LOCAL;
		addr_copy(o->seen_addr, a->addr);
		o->seen_port = a->port;
	}
	return 1;
}

/* The address the connect or datagram leaves from, for the receive lookup:
 * the socket's bound address and port, loopback and 0 while unbound (TCP
 * picks its port after connect4/6; a sending UDP socket is bound by then). */
static __always_inline void
local_src(struct bpf_sock *sk, const __be32 *dst, __be32 *src, __be16 *sport)
{
	__be32 a[4] = {};
	__u32 fam = 0, p = 0, ip4 = 0;

	if (sk) {
		fam = sk->family;
		p = sk->src_port;
		a[0] = sk->src_ip6[0];
		a[1] = sk->src_ip6[1];
		a[2] = sk->src_ip6[2];
		a[3] = sk->src_ip6[3];
		ip4 = sk->src_ip4;
		ctx_loaded();
		if (fam == AF_INET)
			map4(a, ip4);
	}
	*sport = bpf_htons((__u16)p);
	if (is_mapped(dst)) {
		if (!is_mapped(a) || !a[3])
			map4(a, bpf_htonl(LOOPBACK4));
	} else if (is_mapped(a) || addr_is_zero(a)) {
		a[0] = 0;
		a[1] = 0;
		a[2] = 0;
		a[3] = bpf_htonl(1);
	}
	addr_copy(src, a);
}

/* A refusal: reported with the task and the errno, or in audit mode only
 * reported (then the catch-all lets the socket's packets pass without a
 * second report). */
static __always_inline int
refuse(struct bpf_sock_addr *ctx, const struct sa *a, __u8 hook, struct decision *d)
{
	count_deny();
	if (audit_mode) {
		emit(hook, EGR_V_WOULD_DENY, d->reason, 0, a->family, a->type, a->proto, a->addr,
		     a->port);
		/* reported: the catch-all neither judges nor reports it again */
		d->skflags = EGR_SK_DIRECT | EGR_SK_SKB_SEEN;
		d->index = 0;
		remember(ctx, a, hook, d);
		return SYS_PROCEED;
	}
	emit(hook, EGR_V_DENY, d->reason, d->err, a->family, a->type, a->proto, a->addr, a->port);
	bpf_set_retval(-d->err);
	return SYS_REJECT;
}

/* Carries a decision out: the loopback lookup it waited for, then refuse,
 * or record, count and report. */
static __always_inline int
finish(struct bpf_sock_addr *ctx, const struct sa *a, __u8 hook, struct decision *d)
{
	if (d->lookup) {
		__be32 src[4];
		__be16 sport;

		local_src(a->sk, a->addr, src, &sport);
		if (receiver(ctx, a->addr, a->port, src, sport, (__u8)a->proto) != RCV_OURS)
			decide_deny(d, EGR_R_LOOPBACK, d->err);
	}
	if (d->verdict == EGR_V_DENY)
		return refuse(ctx, a, hook, d);
	remember(ctx, a, hook, d);
	if (d->verdict == EGR_V_REDIRECT)
		count(EGR_C_REDIRECT);
	else if (d->reason == EGR_R_FASTPATH || d->reason == EGR_R_PEER)
		count(EGR_C_FASTPATH);
	else if (d->reason == EGR_R_LOCAL)
		count(EGR_C_LOCAL);
	if (d->verdict == EGR_V_REDIRECT && emit_redirects)
		emit(hook, EGR_V_REDIRECT, d->reason, 0, a->family, a->type, a->proto, a->addr,
		     a->port);
	else if ((d->reason == EGR_R_FASTPATH || d->reason == EGR_R_PEER) && a->type == SOCK_STREAM)
		/* a direct connection's decision line; it wakes nobody */
		emit_task(hook, EGR_V_ALLOW, d->reason, 0, a->family, a->type, a->proto, a->addr,
			  a->port, BPF_RB_NO_WAKEUP);
	else if (d->reason == EGR_R_LOCAL && d->lookup && report_local(ctx, a, hook))
		emit(hook, EGR_V_ALLOW, EGR_R_LOCAL, 0, a->family, a->type, a->proto, a->addr,
		     a->port);
	return SYS_PROCEED;
}

/* Options the socket carries already that would send its packets to
 * another host than the one judged here (lib/direct.h): IPv4 options (a
 * source route), IPv6 extension headers (IPV6_RTHDR, hop-by-hop and
 * destination options), an outbound IPsec policy of its own (v4: the
 * address is v4-mapped). Read through the kernel's socket
 * (bpf_rdonly_cast): the hook's context has none of them. A global
 * function, which the verifier checks once: inlined, each path to it paid
 * for the load through the kernel's context again (BTF lookups), a third
 * of the time connect4/6 and sendmsg4/6 took to load. */
__noinline int
sock_ip_opts(struct bpf_sock_addr *ctx, __u32 v4)
{
	struct bpf_sock_addr_kern *k;
	struct inet_sock *inet;

	if (!ctx || !bpf_cast_to_kern_ctx || !bpf_rdonly_cast)
		return 0;
	k = bpf_cast_to_kern_ctx(ctx);
	inet = bpf_rdonly_cast(k->sk, bpf_core_type_id_kernel(struct inet_sock));
	if (!inet)
		return 0;
	if (v4) {
		struct ip_options_rcu *o4 = inet->inet_opt;

		if (o4 && o4->opt.optlen)
			return 1;
	} else {
		struct ipv6_pinfo *np = inet->pinet6;
		struct ipv6_txoptions *o6 = np ? np->opt : NULL;

		if (o6 && (o6->opt_nflen || o6->opt_flen))
			return 1;
	}
	return bpf_core_field_exists(inet->sk.sk_policy) && inet->sk.sk_policy[1];
}

/* connect4/6, sendmsg4/6: a is the loaded context. 0.0.0.0, :: and
 * ::ffff:0.0.0.0 reach the local host: they are rewritten to the loopback
 * address they mean first, so that the decision and the receive lookup are
 * about the real destination. */
static __always_inline int
addr_hook(struct bpf_sock_addr *ctx, struct sa *a, __u8 hook)
{
	struct decision d = {};
	__be32 lip = listen_ip4(a->netns);
	int lip6 = listen_ip6(a->netns);

	if (addr_is_zero(a->addr)) {
		a->addr[3] = bpf_htonl(1);
		sa_store_ip4(ctx, a, a->addr[3]);
	} else if (is_mapped(a->addr) && !a->addr[3]) {
		a->addr[3] = bpf_htonl(LOOPBACK4);
		sa_store_ip4(ctx, a, a->addr[3]);
	}
	if (sock_ip_opts(ctx, is_mapped(a->addr))) {
		decide_deny(&d, EGR_R_IPOPTS, EPERM);
	} else if ((a->proto == IPPROTO_TCP || a->proto == IPPROTO_UDP) &&
		   peer_hit(a->netns, a->addr)) {
		/* before port 53: a compose project's own DNS server is a peer */
		decide_fastpath(&d);
		d.reason = EGR_R_PEER;
	} else if (hook != EGR_H_SENDMSG4)
		decide_dst(a->addr, a->port, a->type, a->proto, lip, lip6, &d);
	else if (!decide_other_proto(a->type, a->proto, &d))
		decide_udp4(a->addr, a->port, lip, &d);
	if (d.verdict == EGR_V_REDIRECT) {
		if (d.v6)
			sa_store_lo6(ctx);
		else
			sa_store_ip4(ctx, a, d.ip4);
		ctx->user_port = d.port;
	}
	return finish(ctx, a, hook, &d);
}

SEC("cgroup/connect4")
int
egr_connect4(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load4(ctx, &a);
	return addr_hook(ctx, &a, EGR_H_CONNECT4);
}

SEC("cgroup/connect6")
int
egr_connect6(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load6(ctx, &a);
	return addr_hook(ctx, &a, EGR_H_CONNECT6);
}

/* Unconnected UDP sends. On an AF_INET6 socket a v4-mapped destination runs
 * this program too (ctx->family is then AF_INET6). */
SEC("cgroup/sendmsg4")
int
egr_sendmsg4(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load4(ctx, &a);
	return addr_hook(ctx, &a, EGR_H_SENDMSG4);
}

SEC("cgroup/sendmsg6")
int
egr_sendmsg6(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load6(ctx, &a);
	return addr_hook(ctx, &a, EGR_H_SENDMSG6);
}

/* Reverse translation, for recvmsg and getpeername alike: a socket that was
 * redirected (connect) or sent DNS to the responder (sendmsg) sees the peer
 * it asked for instead of the listener. These hooks must return 1. */
static __always_inline int
translate_back(struct bpf_sock_addr *ctx, const struct sa *a)
{
	struct egr_sk_orig *o;

	if (!a->sk)
		return SYS_PROCEED;
	o = sock_rec(a->sk, bpf_get_socket_cookie(ctx));
	if (!o || !(o->flags & (EGR_SK_DNS | EGR_SK_REDIRECTED)))
		return SYS_PROCEED;
	if (is_mapped(a->addr) && is_redirect_src(a->addr[3], a->port, listen_ip4(a->netns))) {
		sa_store_ip4(ctx, a, o->addr[3]);
		ctx->user_port = o->port;
	} else if (a->v6 && !is_mapped(o->addr) &&
		   is_redirect_src6(a->addr, a->port, listen_ip6(a->netns))) {
		sa_store_ip6(ctx, o->addr);
		ctx->user_port = o->port;
	}
	return SYS_PROCEED;
}

SEC("cgroup/recvmsg4")
int
egr_recvmsg4(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load4(ctx, &a);
	return translate_back(ctx, &a);
}

SEC("cgroup/recvmsg6")
int
egr_recvmsg6(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load6(ctx, &a);
	return translate_back(ctx, &a);
}

SEC("cgroup/getpeername4")
int
egr_getpeername4(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load4(ctx, &a);
	return translate_back(ctx, &a);
}

SEC("cgroup/getpeername6")
int
egr_getpeername6(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load6(ctx, &a);
	return translate_back(ctx, &a);
}

/* Refuse binds to egressctl's listener ports on loopback or the wildcard,
 * so nothing in the sandbox can stand in for the proxy; and binds to an
 * address and port where a socket from outside the sandbox would receive
 * (its SO_REUSEPORT group, a more specific address in front of its
 * wildcard, a SO_REUSEADDR UDP share): neither its connections nor its
 * datagrams go to the sandbox, whichever socket came first. */
static __always_inline int
bind_check(struct bpf_sock_addr *ctx, const struct sa *a, __u8 hook)
{
	int local = is_mapped(a->addr) ? is_local4(a->addr[3]) : is_local6(a->addr);
	__be32 any[4] = {}; /* from anywhere, any port */

	if (local && is_own_port(a->port) && !audit_mode) {
		emit(hook, EGR_V_DENY, EGR_R_BIND_PROXY, EADDRINUSE, a->family, a->type, a->proto,
		     a->addr, a->port);
		bpf_set_retval(-EADDRINUSE);
		return SYS_REJECT;
	}
	if (!a->port || (a->proto != IPPROTO_TCP && a->proto != IPPROTO_UDP))
		return SYS_PROCEED; /* an ephemeral port is one nobody holds */
	/* who a connection or datagram to addr:port would reach now: nobody,
	 * or ours (and its whole group) */
	if (receiver(ctx, a->addr, a->port, any, 0, (__u8)a->proto) != RCV_OTHER)
		return SYS_PROCEED;
	count_deny();
	emit(hook, deny_verdict(), EGR_R_BIND_FOREIGN, audit_mode ? 0 : EADDRINUSE, a->family,
	     a->type, a->proto, a->addr, a->port);
	if (audit_mode)
		return SYS_PROCEED;
	bpf_set_retval(-EADDRINUSE);
	return SYS_REJECT;
}

SEC("cgroup/bind4")
int
egr_bind4(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load4(ctx, &a);
	return bind_check(ctx, &a, EGR_H_BIND4);
}

SEC("cgroup/bind6")
int
egr_bind6(struct bpf_sock_addr *ctx)
{
	struct sa a;

	sa_load6(ctx, &a);
	return bind_check(ctx, &a, EGR_H_BIND6);
}
