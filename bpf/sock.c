// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* A socket's life: cgroup/sock_create refuses raw, ping, SCTP, UDP-Lite and
 * MPTCP sockets (and any other inet protocol), cgroup/sock_release frees
 * the socket's records. Both run for AF_INET/AF_INET6 only; other families
 * are the seccomp filter's.
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/events.h"
#include "lib/maps.h"
#include "lib/tunables.h"

static __always_inline int
sock_deny(struct bpf_sock *ctx, __u8 reason, int err)
{
	count_deny();
	if (audit_mode) {
		struct egr_sk_orig *o;

		emit(EGR_H_SOCK_CREATE, EGR_V_WOULD_DENY, reason, 0, ctx->family, ctx->type,
		     ctx->protocol, NULL, 0);
		o = bpf_sk_storage_get(&egr_sk, ctx, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (o)
			o->flags |= EGR_SK_DIRECT | EGR_SK_SKB_SEEN; /* reported once, here */
		return SYS_PROCEED;
	}
	emit(EGR_H_SOCK_CREATE, EGR_V_DENY, reason, err, ctx->family, ctx->type, ctx->protocol,
	     NULL, 0);
	bpf_set_retval(-err);
	return SYS_REJECT;
}

SEC("cgroup/sock_create")
int
egr_sock_create(struct bpf_sock *ctx)
{
	__u32 type = ctx->type, proto = ctx->protocol;

	if (type == SOCK_RAW)
		return sock_deny(ctx, EGR_R_RAW, EPERM);
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)
		return sock_deny(ctx, EGR_R_PING, EPERM);
	if (proto == IPPROTO_SCTP)
		return sock_deny(ctx, EGR_R_SCTP, EPROTONOSUPPORT);
	if (proto == IPPROTO_UDPLITE)
		return sock_deny(ctx, EGR_R_UDPLITE, EPROTONOSUPPORT);
	if (proto == IPPROTO_MPTCP_NR)
		return sock_deny(ctx, EGR_R_MPTCP, EPROTONOSUPPORT);
	if ((type == SOCK_STREAM && proto == IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && proto == IPPROTO_UDP))
		return SYS_PROCEED;
	return sock_deny(ctx, EGR_R_PROTO, EPROTONOSUPPORT);
}

/* A UDP socket's egr_conns entry (the DNS responder's index) goes with it:
 * a later datagram from the same address and port, whoever sends it, finds
 * no record instead of this socket's (or another run's) process. */
static __always_inline void
unkey(struct egr_sk_orig *o, __u64 cookie)
{
	struct egr_conn_val *w;

	if (!o || !(o->flags & EGR_SK_KEYED))
		return;
	w = bpf_map_lookup_elem(&egr_conns, &o->key);
	if (w && w->cookie == cookie)
		bpf_map_delete_elem(&egr_conns, &o->key);
}

SEC("cgroup/sock_release")
int
egr_sock_release(struct bpf_sock *ctx)
{
	struct egr_sk_orig *o;
	__u64 cookie;

	/* the connect/sendmsg record: freed now, unless a TCP fast-path
	 * socket still has packets to send (then at TCP_CLOSE, sockops) */
	cookie = bpf_get_socket_cookie(ctx);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	unkey(o, cookie);
	if (o && (!(o->flags & EGR_SK_CLOSE_CB) ||
		  (__sync_fetch_and_or(&o->life, EGR_LIFE_RELEASED) & EGR_LIFE_CLOSED)))
		bpf_map_delete_elem(&egr_socks, &cookie);
	unkey(bpf_sk_storage_get(&egr_sk, ctx, 0, 0), cookie);
	return SYS_PROCEED;
}
