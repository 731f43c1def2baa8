// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* sockops: index redirected TCP connections, and connections to egressctl's
 * own listeners, by the client's local address for the proxy's lookup
 * (egr_conns) at TCP_CONNECT_CB; free a fast-path socket's record once TCP
 * is done with it (TCP_CLOSE); mark a connection a listener accepted from
 * an address of egressctl's own network namespace (PASSIVE_ESTABLISHED).
 *
 * A piece of the egress object, included by egress.bpf.c. */
#include "lib/common.h"
#include "lib/addr.h"
#include "lib/maps.h"
#include "lib/record.h"
#include "lib/tunables.h"

/* A fast-path TCP socket still sends after close() (data, FIN, retransmits),
 * so its record must outlive the file: ask for TCP state callbacks, and free
 * the record once both sock_release and TCP_CLOSE have been seen. */
static __always_inline void
arm_close_cb(struct bpf_sock_ops *ctx, struct egr_sk_orig *o, __u32 cbflags)
{
	if (!(o->flags & EGR_SK_CLOSE_CB)) {
		if (bpf_sock_ops_cb_flags_set(ctx, cbflags | BPF_SOCK_OPS_STATE_CB_FLAG))
			return; /* sock_release frees it then */
		o->flags |= EGR_SK_CLOSE_CB;
	}
	__sync_fetch_and_and(&o->life, ~EGR_LIFE_CLOSED); /* connecting (again) */
}

/* TCP_CLOSE: the last packet of the socket that needs its record has left
 * (an RST may follow; the catch-all lets that pass on its own). */
static __always_inline int
state_cb(struct bpf_sock_ops *ctx, __u32 newstate)
{
	struct egr_sk_orig *o;
	__u64 cookie;

	if (newstate != BPF_TCP_CLOSE)
		return 1;
	cookie = bpf_get_socket_cookie(ctx);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (__sync_fetch_and_or(&o->life, EGR_LIFE_CLOSED) & EGR_LIFE_RELEASED))
		bpf_map_delete_elem(&egr_socks, &cookie);
	return 1;
}

/* What TCP_CONNECT_CB reads of its context and its socket. */
struct connect_cb {
	struct bpf_sock *sk;
	__u32 family;
	__u32 lport; /* host order */
	__be32 lip4;
	__be32 l6[4];
	__u32 cbflags;
	__be32 rip4;  /* the peer if IPv4 or v4-mapped, else 0 */
	__be16 rport; /* network order */
	__u8 rlo6;    /* the peer is ::1 (native IPv6) */
};

/* The peer's address and port, once TCP chose the local port. 0 if the
 * context has no socket. */
static __always_inline int
connect_cb_load(struct bpf_sock_ops *ctx, struct connect_cb *c)
{
	__be32 r6[4];

	c->family = ctx->family;
	c->lport = ctx->local_port;
	c->lip4 = ctx->local_ip4;
	c->l6[0] = ctx->local_ip6[0];
	c->l6[1] = ctx->local_ip6[1];
	c->l6[2] = ctx->local_ip6[2];
	c->l6[3] = ctx->local_ip6[3];
	c->cbflags = ctx->bpf_sock_ops_cb_flags;
	c->sk = ctx->sk;
	ctx_loaded();
	if (!c->sk)
		return 0;
	c->rip4 = c->sk->dst_ip4;
	c->rport = c->sk->dst_port;
	r6[0] = c->sk->dst_ip6[0];
	r6[1] = c->sk->dst_ip6[1];
	r6[2] = c->sk->dst_ip6[2];
	r6[3] = c->sk->dst_ip6[3];
	ctx_loaded();
	if (c->family == AF_INET6 && !(r6[0] == 0 && r6[1] == 0 && r6[2] == bpf_htonl(0xffff))) {
		c->rip4 = 0; /* native IPv6: one of our listeners only on ::1 (--ipv6) */
		c->rlo6 = is_loopback6(r6);
	}
	return 1;
}

/* TCP_CONNECT_CB runs in the connecting task before the SYN leaves, with the
 * local port chosen: the egr_conns entry, keyed by the local address and
 * port the proxy's accept() will see as the peer's. */
static __always_inline int
connect_cb(struct bpf_sock_ops *ctx)
{
	struct egr_conn_key k = {};
	struct egr_conn_val w = {};
	struct connect_cb c = {};
	struct egr_sk_orig *o;
	__u64 cookie, netns;
	__be32 lip;
	int own;

	if (!connect_cb_load(ctx, &c))
		return 1;
	netns = bpf_get_netns_cookie(ctx);
	lip = listen_ip4(netns);
	own = (lip && c.rip4 == lip && is_own_port(c.rport)) ||
	      (c.rlo6 && listen_ip6(netns) && is_own_port(c.rport));
	/* other loopback peers: nothing recorded (remember), nothing to index */
	if (!own && (bpf_ntohl(c.rip4) >> 24) == 127)
		return 1;
	cookie = bpf_get_socket_cookie(ctx);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (o->flags & EGR_SK_VERIFY)) /* and the backstop's callback */
		arm_close_cb(ctx, o, c.cbflags | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
	else if (o && (o->flags & EGR_SK_DIRECT))
		arm_close_cb(ctx, o, c.cbflags);
	if (!o)
		o = bpf_sk_storage_get(&egr_sk, c.sk, 0, 0);
	if (o && (o->flags & EGR_SK_INDEX)) {
		w.reason = o->who.reason;
		addr_copy(w.addr, o->addr);
		w.port = o->port;
	} else if (own) {
		struct egr_sk_orig live = {};

		w.reason = EGR_R_PROXY;
		map4(w.addr, c.rip4);
		if (c.rlo6) {
			w.addr[2] = 0;
			w.addr[3] = bpf_htonl(1);
		}
		w.port = c.rport;
		/* a record while it lives, so that conns_put sees an entry of
		 * this socket as live; freed at sock_release */
		if (!o && lip != bpf_htonl(LOOPBACK4))
			bpf_map_update_elem(&egr_socks, &cookie, &live, BPF_NOEXIST);
	} else {
		return 1;
	}
	who_task(&w, cookie, netns);
	if (o && (o->flags & EGR_SK_INDEX))
		o->who = w; /* the catch-all's name for it, should it drop a packet */
	if (c.family == AF_INET6 && !(c.lip4 && c.l6[2] == bpf_htonl(0xffff)))
		addr_copy(k.addr, c.l6);
	else
		map4(k.addr, c.lip4);
	k.port = bpf_htons((__u16)c.lport);
	k.proto = IPPROTO_TCP;
	conns_put(&k, &w);
	return 1;
}

#define SOL_TCP		 6
#define TCP_USER_TIMEOUT 18

/* The backstop of the kernel-verified path (lib/kverify.h), in
 * tcp_transmit_skb before the catch-all sees the segment: a refused
 * connection that egr_kv_kill did not end (another network namespace, no
 * userspace) times out at its next send attempt, ~200 ms on (the zero-window
 * probe timer), instead of probing for minutes. Once the first bytes
 * passed, the callback is switched off: it costs the first segments only. */
static __always_inline int
kv_backstop(struct bpf_sock_ops *ctx, __u32 cbflags)
{
	__u64 cookie = bpf_get_socket_cookie(ctx);
	struct egr_sk_orig *o = bpf_map_lookup_elem(&egr_socks, &cookie);
	int ms = 1;

	if (o && (o->flags & EGR_SK_KREJECT)) {
		if (!(o->flags & EGR_SK_KARMED)) {
			o->flags |= EGR_SK_KARMED;
			bpf_setsockopt(ctx, SOL_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
		}
		return 1;
	}
	if (!o || !(o->flags & EGR_SK_VERIFY))
		bpf_sock_ops_cb_flags_set(ctx, cbflags & ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
	return 1;
}

/* PASSIVE_ESTABLISHED: a listener of the sandbox accepted a connection
 * (after the handshake, or at a Fast Open SYN, before the child sends
 * anything). Its peer at an address of egressctl's own network namespace
 * (egr_hostaddr: the host, a bridge's gateway): EGR_SK_PASSIVE, and the
 * catch-all lets it answer. Any other peer (a client elsewhere reaching a
 * container's port) gets nothing: the catch-all drops what it is sent, as
 * it drops the listener's SYN-ACK to it. */
static __always_inline int
passive_cb(struct bpf_sock_ops *ctx)
{
	struct egr_hostaddr_key k = {};
	struct bpf_sock *sk = ctx->sk;
	struct egr_sk_orig *o;

	if (!sk)
		return 1;
	if (ctx->family == AF_INET) {
		map4(k.addr, ctx->remote_ip4);
	} else {
		k.addr[0] = ctx->remote_ip6[0];
		k.addr[1] = ctx->remote_ip6[1];
		k.addr[2] = ctx->remote_ip6[2];
		k.addr[3] = ctx->remote_ip6[3];
	}
	ctx_loaded();
	/* a loopback peer needs no mark: the catch-all passes what answers
	 * it (loopback_pkt), and the record would cost an allocation */
	if ((is_mapped(k.addr) && (bpf_ntohl(k.addr[3]) >> 24) == 127) || is_loopback6(k.addr))
		return 1;
	if (!bpf_map_lookup_elem(&egr_hostaddr, &k))
		return 1;
	o = bpf_sk_storage_get(&egr_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (o)
		o->flags |= EGR_SK_PASSIVE;
	return 1;
}

SEC("sockops")
int
egr_sockops(struct bpf_sock_ops *ctx)
{
	__u32 op = ctx->op, newstate = ctx->args[1], cbflags = ctx->bpf_sock_ops_cb_flags;

	ctx_loaded();
	if (op == BPF_SOCK_OPS_HDR_OPT_LEN_CB)
		return kv_backstop(ctx, cbflags);
	if (op == BPF_SOCK_OPS_STATE_CB)
		return state_cb(ctx, newstate);
	if (op == BPF_SOCK_OPS_TCP_CONNECT_CB)
		return connect_cb(ctx);
	if (op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return passive_cb(ctx);
	return 1;
}
