// SPDX-License-Identifier: GPL-2.0
/* The enforcement programs attached to a sandbox cgroup. connect4/6 and
 * sendmsg4/6 decide every TCP connect and UDP send: redirect to egressctl's
 * listeners (transparent TCP, DNS), let through (fast path, the sandbox's own
 * loopback sockets, the proxy), or deny with an errno. recvmsg/getpeername
 * translate redirected peers back; sockops indexes redirected connections by
 * local address for the proxy; sock_create refuses raw, ping, SCTP, UDP-Lite
 * and MPTCP sockets; bind4/6 keep the sandbox off egressctl's ports and off
 * addresses and ports that sockets outside it hold; sock_release frees the
 * per-socket records; the unix hooks refuse abstract addresses;
 * cgroup_skb/egress drops whatever else would leave, and loopback packets
 * that would reach a socket outside the sandbox. Every deny (and redirect,
 * when asked, and loopback allow) is reported on egr_events. IPv4 addresses
 * are handled in v4-mapped form (::ffff:a.b.c.d) throughout.
 *
 * "The sandbox's own" loopback socket is decided from the socket that will
 * receive: bpf_sk_lookup_tcp/udp, the kernel's own receive lookup, returns
 * it, and it is ours when it was created in the sandbox cgroup or below (a
 * socket's cgroup is fixed at creation: who holds it later, or where it was
 * passed, changes nothing), and so is every member of its SO_REUSEPORT
 * group. Nothing is remembered about binds, so nothing can go stale. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "egress_abi.h"
#include "net.h"
#include "maps.h"

char LICENSE[] SEC("license") = "GPL";

/* Tunables, set by the loader before load (host byte order; 0 = none). */
const volatile __u16 tproxy_port = 0;	  /* transparent TCP listener on 127.0.0.1 */
const volatile __u16 dns_port = 0;	  /* DNS responder (UDP and TCP) on 127.0.0.1 */
const volatile __u16 proxy_ports[4] = {}; /* HTTP/SOCKS listeners on 127.0.0.1 */
const volatile __u8 emit_redirects = 1;	  /* report redirects, not only denies */
const volatile __u8 audit_mode = 0;	  /* record what would be denied, deny nothing */
const volatile __u64 sandbox_cgid = 0;	  /* the cgroup attached to; 0: nothing is ours */

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;
extern void *bpf_rdonly_cast(void *obj, __u32 btf_id) __ksym __weak;

#define CG_DEPTH      8	  /* cgroup levels below the sandbox's that still count as ours */
#define REUSEPORT_MAX 256 /* members of a SO_REUSEPORT group checked; larger: not ours */

struct decision {
	__u32 ip4;     /* new destination (network order) when redirecting */
	__u16 port;    /* new destination port (network order) */
	__u16 skflags; /* EGR_SK_* to record on the socket */
	__u8 verdict;  /* enum egr_verdict */
	__u8 reason;   /* enum egr_reason */
	__u8 index;    /* record who connected, for the proxy's lookup */
	__u8 lookup;   /* loopback: allowed only if the receiver is ours, else err */
	int err;       /* errno for a deny */
};

static __always_inline void
map4(__be32 *a, __be32 ip4)
{
	a[0] = 0;
	a[1] = 0;
	a[2] = bpf_htonl(0xffff);
	a[3] = ip4;
}

static __always_inline int
is_mapped(const __be32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

/* 127.0.0.0/8 and 0.0.0.0/8: connect() to 0.0.0.0 reaches the local host. */
static __always_inline int
is_local4(__be32 ip4)
{
	__u32 h = bpf_ntohl(ip4);

	return (h >> 24) == 127 || (h >> 24) == 0;
}

/* ::1 and :: (the unspecified address also means this host). */
static __always_inline int
is_local6(const __be32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && (a[3] == 0 || a[3] == bpf_htonl(1));
}

static __always_inline int
is_own_port(__u16 port_be)
{
	__u16 p = bpf_ntohs(port_be);

	if (!p)
		return 0;
	if (p == tproxy_port || p == dns_port)
		return 1;
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (proxy_ports[i] && p == proxy_ports[i])
			return 1;
	return 0;
}

static __always_inline void
count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&egr_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline void
emit(__u8 hook, __u8 verdict, __u8 reason, int err, __u8 family, __u8 type, __u16 proto,
     const __be32 *addr, __be16 port)
{
	struct egr_event *e;
	__u64 id;

	e = bpf_ringbuf_reserve(&egr_events, sizeof(*e), 0);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->time_ns = bpf_ktime_get_boot_ns();
	e->cgroup_id = bpf_get_current_cgroup_id();
	id = bpf_get_current_pid_tgid();
	e->pid = (__u32)id;
	e->tgid = id >> 32;
	e->uid = (__u32)bpf_get_current_uid_gid();
	e->family = family;
	e->type = type;
	e->protocol = proto;
	e->verdict = verdict;
	e->reason = reason;
	e->hook = hook;
	e->err = err;
	if (addr) {
		e->addr[0] = addr[0];
		e->addr[1] = addr[1];
		e->addr[2] = addr[2];
		e->addr[3] = addr[3];
	}
	e->port = port;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

/* A fast-path entry for (addr, port, proto) that has not expired. */
static __always_inline int
fast_hit(const __be32 *addr, __be16 port, __u8 proto)
{
	struct egr_fast_key k = {};
	struct egr_fast_val *v;

	k.addr[0] = addr[0];
	k.addr[1] = addr[1];
	k.addr[2] = addr[2];
	k.addr[3] = addr[3];
	k.port = port;
	k.proto = proto;
	v = bpf_map_lookup_elem(&egr_fast, &k);
	if (!v)
		return 0;
	if (v->expires_ns && v->expires_ns < bpf_ktime_get_boot_ns()) {
		bpf_map_delete_elem(&egr_fast, &k);
		return 0;
	}
	v->hits++;
	return 1;
}

/* Was this socket created in the sandbox cgroup or below it? s is any
 * kernel socket (read through bpf_rdonly_cast: faulting reads give 0). */
static __always_inline int
sock_ours(struct sock *s)
{
	struct cgroup_subsys_state *css = &s->sk_cgrp_data.cgroup->self;
	__u64 want = sandbox_cgid;

	if (!want)
		return 0;
#pragma unroll
	for (int i = 0; i < CG_DEPTH; i++) {
		if (!css)
			return 0;
		if (css->cgroup->kn->id == want)
			return 1;
		css = css->parent;
	}
	return 0;
}

struct group_walk {
	struct sock_reuseport *r;
	__u32 n;
	int ours;
};

static long
group_member(__u64 i, void *arg)
{
	struct group_walk *w = arg;
	struct sock *m = NULL;
	unsigned long at;

	if (i >= w->n)
		return 1;
	at = (unsigned long)w->r + bpf_core_field_offset(struct sock_reuseport, socks) + i * 8;
	if (bpf_probe_read_kernel(&m, sizeof(m), (void *)at) || !m ||
	    !sock_ours(bpf_rdonly_cast(m, bpf_core_type_id_kernel(struct sock)))) {
		w->ours = 0;
		return 1;
	}
	return 0;
}

/* s is ours, and so is every socket that shares its SO_REUSEPORT group
 * (the kernel picks a member per connection or datagram: by a hash of the
 * addresses and ports, or by the group's own BPF program). */
static __always_inline int
receiver_ours_sk(struct bpf_sock *sk)
{
	struct sock *s = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct sock));
	struct group_walk w = {};

	if (!sock_ours(s))
		return 0;
	w.r = s->sk_reuseport_cb;
	if (!w.r)
		return 1;
	w.n = w.r->num_socks; /* the open members; closed ones take nothing new */
	if (w.n > REUSEPORT_MAX)
		return 0;
	w.ours = 1;
	bpf_loop(REUSEPORT_MAX, group_member, &w, 0);
	return w.ours;
}

enum {
	RCV_NONE = 0,
	RCV_OTHER = 1,
	RCV_OURS = 2
};

/* Who receives a connection (TCP) or a datagram (UDP) from src:sport to
 * dst:dport: nobody, a socket of this sandbox (receiver_ours_sk), or any
 * other. The lookup is the kernel's receive lookup, in the caller's network
 * namespace: a connected socket, else the listener or bound socket with the
 * most specific address (IPv4 also reaches [::] sockets without
 * IPV6_V6ONLY), and a SO_REUSEPORT group's member. */
static __always_inline int
receiver(void *ctx, const __be32 *dst, __be16 dport, const __be32 *src, __be16 sport, __u8 proto)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	int ours;

	if (is_mapped(dst)) {
		t.ipv4.saddr = src[3];
		t.ipv4.daddr = dst[3];
		t.ipv4.sport = sport;
		t.ipv4.dport = dport;
		if (proto == IPPROTO_TCP)
			sk = bpf_sk_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
		else
			sk = bpf_sk_lookup_udp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	} else {
		__builtin_memcpy(t.ipv6.saddr, src, 16);
		__builtin_memcpy(t.ipv6.daddr, dst, 16);
		t.ipv6.sport = sport;
		t.ipv6.dport = dport;
		if (proto == IPPROTO_TCP)
			sk = bpf_sk_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
		else
			sk = bpf_sk_lookup_udp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	}
	if (!sk)
		return RCV_NONE;
	ours = receiver_ours_sk(sk);
	bpf_sk_release(sk);
	return ours ? RCV_OURS : RCV_OTHER;
}

static __always_inline void
deny(struct decision *d, __u8 reason, int err)
{
	d->verdict = EGR_V_DENY;
	d->reason = reason;
	d->err = err;
}

static __always_inline void
redirect(struct decision *d, __u16 port_host, __u8 reason, __u16 flags)
{
	d->verdict = EGR_V_REDIRECT;
	d->reason = reason;
	d->ip4 = bpf_htonl(LOOPBACK4);
	d->port = bpf_htons(port_host);
	d->skflags = flags;
	d->index = 1;
}

/* A loopback destination: the decision is the receiving socket's
 * (receiver_ours), looked up once the hook has it all. */
static __always_inline void
local(struct decision *d, int err)
{
	d->verdict = EGR_V_ALLOW;
	d->reason = EGR_R_LOCAL;
	d->lookup = 1;
	d->err = err;
}

/* TCP to an IPv4 destination (plain or v4-mapped). */
static __always_inline void
decide_tcp4(const __be32 *dst, __be16 port, struct decision *d)
{
	__be32 ip4 = dst[3];

	if (ip4 == bpf_htonl(LOOPBACK4) && is_own_port(port)) {
		/* no record: sockops indexes it by its peer address */
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_PROXY;
		return;
	}
	if (fast_hit(dst, port, IPPROTO_TCP)) {
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_FASTPATH;
		d->skflags = EGR_SK_DIRECT;
		return;
	}
	if (port == bpf_htons(53)) {
		if (dns_port)
			redirect(d, dns_port, EGR_R_DNS, EGR_SK_REDIRECTED);
		else
			deny(d, EGR_R_NO_LISTENER, ECONNREFUSED);
		return;
	}
	if (is_local4(ip4)) {
		local(d, ECONNREFUSED);
		return;
	}
	if (tproxy_port)
		redirect(d, tproxy_port, EGR_R_TRANSPARENT, EGR_SK_REDIRECTED);
	else
		deny(d, EGR_R_NO_LISTENER, ECONNREFUSED);
}

/* A UDP datagram (connect or sendmsg) to an IPv4 destination. */
static __always_inline void
decide_udp4(const __be32 *dst, __be16 port, struct decision *d)
{
	__be32 ip4 = dst[3];

	if (ip4 == bpf_htonl(LOOPBACK4) && dns_port && port == bpf_htons(dns_port)) {
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
			redirect(d, dns_port, EGR_R_DNS, EGR_SK_DNS);
		} else {
			deny(d, EGR_R_NO_LISTENER, EPERM);
		}
		return;
	}
	if (fast_hit(dst, port, IPPROTO_UDP)) {
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_FASTPATH;
		d->skflags = EGR_SK_DIRECT;
		return;
	}
	if (is_local4(ip4))
		local(d, EPERM);
	else
		deny(d, EGR_R_UDP, EPERM);
}

/* Native IPv6 (not v4-mapped): only the sandbox's own loopback sockets and
 * fast-path entries. */
static __always_inline void
decide6(const __be32 *dst, __be16 port, __u8 proto, struct decision *d)
{
	if (fast_hit(dst, port, proto)) {
		d->verdict = EGR_V_ALLOW;
		d->reason = EGR_R_FASTPATH;
		d->skflags = EGR_SK_DIRECT;
		return;
	}
	if (is_local6(dst))
		local(d, proto == IPPROTO_TCP ? ECONNREFUSED : EPERM);
	else
		deny(d, EGR_R_IPV6, ENETUNREACH);
}

/* Socket types and protocols that have no business reaching a sock_addr
 * hook (most are refused at creation already). */
static __always_inline int
other_proto(__u32 type, __u32 proto, struct decision *d)
{
	if (type == SOCK_STREAM && proto == IPPROTO_TCP)
		return 0;
	if (type == SOCK_DGRAM && proto == IPPROTO_UDP)
		return 0;
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)
		deny(d, EGR_R_PING, EPERM);
	else if (proto == IPPROTO_UDPLITE)
		deny(d, EGR_R_UDPLITE, EPERM);
	else
		deny(d, EGR_R_PROTO, EPERM);
	return 1;
}

/* Loopback destinations: the catch-all lets their packets pass anyway. */
static __always_inline int
is_loopback(const __be32 *a)
{
	if (is_mapped(a))
		return (bpf_ntohl(a[3]) >> 24) == 127;
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1);
}

static __always_inline void
record(struct egr_sk_orig *o, const __be32 *dst, __be16 port, __u32 type, struct decision *d,
       __u64 cookie)
{
	__u64 id;

	if (d->skflags) { /* what getpeername/recvmsg translate back to */
		o->addr[0] = dst[0];
		o->addr[1] = dst[1];
		o->addr[2] = dst[2];
		o->addr[3] = dst[3];
		o->port = port;
		o->flags |= d->skflags;
	}
	if (!d->index)
		return;
	o->flags |= EGR_SK_INDEX;
	o->who.reason = d->reason;
	if (type == SOCK_STREAM)
		return; /* sockops fills the rest, in this same task */
	/* UDP: the catch-all indexes it and must not ask the current task */
	id = bpf_get_current_pid_tgid();
	o->who.cookie = cookie;
	o->who.cgroup_id = bpf_get_current_cgroup_id();
	o->who.addr[0] = dst[0];
	o->who.addr[1] = dst[1];
	o->who.addr[2] = dst[2];
	o->who.addr[3] = dst[3];
	o->who.port = port;
	o->who.pid = (__u32)id;
	o->who.tgid = id >> 32;
	o->who.uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(o->who.comm, sizeof(o->who.comm));
}

/* The connect/sendmsg record of a socket: egr_socks, else egr_sk (full map). */
static __always_inline struct egr_sk_orig *
sock_rec(struct bpf_sock *sk, __u64 cookie)
{
	struct egr_sk_orig *o = bpf_map_lookup_elem(&egr_socks, &cookie);

	if (o || !sk)
		return o;
	return bpf_sk_storage_get(&egr_sk, sk, 0, 0);
}

/* The socket's record to change (sendmsg: look up first, it repeats), or a
 * new one: an egr_socks entry keyed by the socket cookie. Creating
 * sk_storage costs an allocation and several irq-disabling locks per
 * socket; a preallocated hash insert takes one bucket lock. When egr_socks
 * is full the record goes to egr_sk instead, where every reader looks
 * second. v is the new record's content when it is created here. */
static __always_inline struct egr_sk_orig *
rec_for(struct bpf_sock *sk, __u64 cookie, __u8 hook, struct egr_sk_orig *v, int *created)
{
	struct egr_sk_orig *o = NULL;

	*created = 0;
	if (hook == EGR_H_SENDMSG4 || hook == EGR_H_SENDMSG6)
		o = sock_rec(sk, cookie);
	if (o)
		return o;
	if (!bpf_map_update_elem(&egr_socks, &cookie, v, BPF_NOEXIST)) {
		*created = 1;
		return NULL;
	}
	o = bpf_map_lookup_elem(&egr_socks, &cookie); /* lost a race */
	if (!o && sk)
		o = bpf_sk_storage_get(&egr_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	return o;
}

/* Record what the socket needs later (getpeername, recvmsg, skb, sockops). */
static __always_inline void
remember(struct bpf_sock_addr *ctx, struct bpf_sock *sk, __u8 hook, const __be32 *dst, __be16 port,
	 __u32 type, struct decision *d)
{
	struct egr_sk_orig *o, v = {};
	__u64 cookie;
	int created;

	if (!d->skflags && !d->index)
		return;
	/* a loopback fast-path entry is found again by the catch-all (an
	 * audit-mode would-deny is not: it needs the record) */
	if (d->skflags == EGR_SK_DIRECT && d->verdict != EGR_V_DENY && is_loopback(dst))
		return;
	cookie = bpf_get_socket_cookie(ctx);
	record(&v, dst, port, type, d, cookie);
	o = rec_for(sk, cookie, hook, &v, &created);
	if (o)
		record(o, dst, port, type, d, cookie);
}

/* Whether to report a loopback allow: every connect, and a socket's
 * unconnected sends once per destination in a row (one line per datagram
 * to the sandbox's own server would drown the log). */
static __always_inline int
report_local(struct bpf_sock_addr *ctx, struct bpf_sock *sk, __u8 hook, const __be32 *dst,
	     __be16 port)
{
	struct egr_sk_orig *o, v = {};
	__u64 cookie;
	int created;

	if (hook != EGR_H_SENDMSG4 && hook != EGR_H_SENDMSG6)
		return 1;
	cookie = bpf_get_socket_cookie(ctx);
	o = sock_rec(sk, cookie);
	if (o && (o->flags & EGR_SK_SEEN_LOCAL) && o->seen_port == port &&
	    o->seen_addr[0] == dst[0] && o->seen_addr[1] == dst[1] && o->seen_addr[2] == dst[2] &&
	    o->seen_addr[3] == dst[3])
		return 0;
	v.flags = EGR_SK_SEEN_LOCAL;
	__builtin_memcpy(v.seen_addr, dst, 16);
	v.seen_port = port;
	if (!o)
		o = rec_for(sk, cookie, hook, &v, &created);
	if (o) {
		o->flags |= EGR_SK_SEEN_LOCAL;
		o->seen_addr[0] = dst[0];
		o->seen_addr[1] = dst[1];
		o->seen_addr[2] = dst[2];
		o->seen_addr[3] = dst[3];
		o->seen_port = port;
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
	__u32 fam = 0, p = 0;

	if (sk) {
		/* every field read once at its fixed offset, before any
		 * branch: clang 14 otherwise adds the offset to the socket
		 * pointer, which the verifier refuses */
		fam = sk->family;
		p = sk->src_port;
		a[0] = sk->src_ip6[0];
		a[1] = sk->src_ip6[1];
		a[2] = sk->src_ip6[2];
		a[3] = sk->src_ip6[3];
		src[3] = sk->src_ip4;
		asm volatile("" ::: "memory");
		if (fam == AF_INET)
			map4(a, src[3]);
	}
	*sport = bpf_htons((__u16)p);
	if (is_mapped(dst)) {
		if (!is_mapped(a) || !a[3])
			map4(a, bpf_htonl(LOOPBACK4));
	} else if (is_mapped(a) || !(a[0] | a[1] | a[2] | a[3])) {
		a[0] = 0;
		a[1] = 0;
		a[2] = 0;
		a[3] = bpf_htonl(1);
	}
	src[0] = a[0];
	src[1] = a[1];
	src[2] = a[2];
	src[3] = a[3];
}

static __always_inline int
finish(struct bpf_sock_addr *ctx, struct bpf_sock *sk, __u8 hook, const __be32 *dst, __be16 port,
       __u32 type, __u32 proto, struct decision *d)
{
	if (d->lookup) {
		__be32 src[4];
		__be16 sport;

		local_src(sk, dst, src, &sport);
		if (receiver(ctx, dst, port, src, sport, (__u8)proto) != RCV_OURS)
			deny(d, EGR_R_LOOPBACK, d->err);
	}
	if (d->verdict == EGR_V_DENY) {
		count(audit_mode ? EGR_C_WOULD_DENY : EGR_C_DENY);
		if (audit_mode) {
			emit(hook, EGR_V_WOULD_DENY, d->reason, 0, ctx->family, type, proto, dst,
			     port);
			/* reported here, with its task and reason: the catch-all
			 * lets the socket's packets pass without a second report */
			d->skflags = EGR_SK_DIRECT;
			d->index = 0;
			remember(ctx, sk, hook, dst, port, type, d);
			return SYS_PROCEED;
		}
		emit(hook, EGR_V_DENY, d->reason, d->err, ctx->family, type, proto, dst, port);
		bpf_set_retval(-d->err);
		return SYS_REJECT;
	}
	remember(ctx, sk, hook, dst, port, type, d);
	if (d->verdict == EGR_V_REDIRECT)
		count(EGR_C_REDIRECT);
	else if (d->reason == EGR_R_FASTPATH)
		count(EGR_C_FASTPATH);
	else if (d->reason == EGR_R_LOCAL)
		count(EGR_C_LOCAL);
	if (d->verdict == EGR_V_REDIRECT && emit_redirects)
		emit(hook, EGR_V_REDIRECT, d->reason, 0, ctx->family, type, proto, dst, port);
	else if (d->reason == EGR_R_LOCAL && report_local(ctx, sk, hook, dst, port))
		emit(hook, EGR_V_ALLOW, EGR_R_LOCAL, 0, ctx->family, type, proto, dst, port);
	return SYS_PROCEED;
}

SEC("cgroup/connect4")
int
egr_connect4(struct bpf_sock_addr *ctx)
{
	/* read ctx->sk first, at its fixed offset: clang 14 may otherwise
	 * compute ctx+off in one branch and load it in another, which the
	 * verifier refuses ("dereference of modified ctx ptr") */
	struct bpf_sock *sk = ctx->sk;

	asm volatile("" : "+r"(sk));
	struct decision d = {};
	__u32 type = ctx->type, proto = ctx->protocol;
	__be16 port = (__be16)ctx->user_port;
	__be32 dst[4];

	__be32 ip4 = ctx->user_ip4;

	asm volatile("" : "+r"(ip4)); /* one load, at its offset (above) */
	/* 0.0.0.0 reaches the local host: make it the loopback address the
	 * decision and the receive lookup are about */
	if (!ip4) {
		ip4 = bpf_htonl(LOOPBACK4);
		ctx->user_ip4 = ip4;
	}
	map4(dst, ip4);
	if (!other_proto(type, proto, &d)) {
		if (type == SOCK_STREAM)
			decide_tcp4(dst, port, &d);
		else
			decide_udp4(dst, port, &d);
	}
	if (d.verdict == EGR_V_REDIRECT) {
		ctx->user_ip4 = d.ip4;
		ctx->user_port = d.port;
	}
	return finish(ctx, sk, EGR_H_CONNECT4, dst, port, type, proto, &d);
}

static __always_inline int
addr6_hook(struct bpf_sock_addr *ctx, __u8 hook)
{
	/* read ctx->sk first, at its fixed offset: clang 14 may otherwise
	 * compute ctx+off in one branch and load it in another, which the
	 * verifier refuses ("dereference of modified ctx ptr") */
	struct bpf_sock *sk = ctx->sk;

	asm volatile("" : "+r"(sk));
	struct decision d = {};
	__u32 type = ctx->type, proto = ctx->protocol;
	__be16 port = (__be16)ctx->user_port;
	__be32 dst[4];

	dst[0] = ctx->user_ip6[0];
	dst[1] = ctx->user_ip6[1];
	dst[2] = ctx->user_ip6[2];
	dst[3] = ctx->user_ip6[3];
	/* :: and ::ffff:0.0.0.0 reach the local host: make them ::1 and
	 * ::ffff:127.0.0.1, the addresses decided and looked up */
	if (!(dst[0] | dst[1] | dst[2] | dst[3])) {
		ctx->user_ip6[3] = bpf_htonl(1);
		dst[3] = bpf_htonl(1);
	} else if (is_mapped(dst) && !dst[3]) {
		ctx->user_ip6[3] = bpf_htonl(LOOPBACK4);
		dst[3] = bpf_htonl(LOOPBACK4);
	}
	if (!other_proto(type, proto, &d)) {
		if (!is_mapped(dst))
			decide6(dst, port, proto, &d);
		else if (type == SOCK_STREAM)
			decide_tcp4(dst, port, &d);
		else
			decide_udp4(dst, port, &d);
	}
	if (d.verdict == EGR_V_REDIRECT) {
		ctx->user_ip6[3] = d.ip4; /* stays v4-mapped */
		ctx->user_port = d.port;
	}
	return finish(ctx, sk, hook, dst, port, type, proto, &d);
}

SEC("cgroup/connect6")
int
egr_connect6(struct bpf_sock_addr *ctx)
{
	return addr6_hook(ctx, EGR_H_CONNECT6);
}

/* Unconnected UDP sends. On an AF_INET6 socket a v4-mapped destination runs
 * this program too (ctx->family is then AF_INET6). */
SEC("cgroup/sendmsg4")
int
egr_sendmsg4(struct bpf_sock_addr *ctx)
{
	/* read ctx->sk first, at its fixed offset: clang 14 may otherwise
	 * compute ctx+off in one branch and load it in another, which the
	 * verifier refuses ("dereference of modified ctx ptr") */
	struct bpf_sock *sk = ctx->sk;

	asm volatile("" : "+r"(sk));
	struct decision d = {};
	__u32 type = ctx->type, proto = ctx->protocol;
	__be16 port = (__be16)ctx->user_port;
	__be32 dst[4];

	__be32 ip4 = ctx->user_ip4;

	asm volatile("" : "+r"(ip4)); /* one load, at its offset (above) */
	if (!ip4) {		      /* 0.0.0.0: the local host (connect4) */
		ip4 = bpf_htonl(LOOPBACK4);
		ctx->user_ip4 = ip4;
	}
	map4(dst, ip4);
	if (!other_proto(type, proto, &d))
		decide_udp4(dst, port, &d);
	if (d.verdict == EGR_V_REDIRECT) {
		ctx->user_ip4 = d.ip4;
		ctx->user_port = d.port;
	}
	return finish(ctx, sk, EGR_H_SENDMSG4, dst, port, type, proto, &d);
}

SEC("cgroup/sendmsg6")
int
egr_sendmsg6(struct bpf_sock_addr *ctx)
{
	return addr6_hook(ctx, EGR_H_SENDMSG6);
}

/* Reverse translation: the socket was redirected (getpeername) or sent DNS to
 * the responder (recvmsg): report the original peer. These hooks must return 1. */
static __always_inline struct egr_sk_orig *
orig_of(struct bpf_sock_addr *ctx, __u16 want)
{
	struct bpf_sock *sk = ctx->sk;
	struct egr_sk_orig *o;

	asm volatile("" : "+r"(sk));
	if (!sk)
		return NULL;
	o = sock_rec(sk, bpf_get_socket_cookie(ctx));
	if (!o || !(o->flags & want))
		return NULL;
	return o;
}

static __always_inline int
is_redirect_src(__be32 ip4, __be16 port)
{
	__u16 p = bpf_ntohs(port);

	return ip4 == bpf_htonl(LOOPBACK4) && p && (p == dns_port || p == tproxy_port);
}

SEC("cgroup/recvmsg4")
int
egr_recvmsg4(struct bpf_sock_addr *ctx)
{
	struct egr_sk_orig *o = orig_of(ctx, EGR_SK_DNS | EGR_SK_REDIRECTED);

	if (o && is_redirect_src(ctx->user_ip4, (__be16)ctx->user_port)) {
		ctx->user_ip4 = o->addr[3];
		ctx->user_port = o->port;
	}
	return SYS_PROCEED;
}

SEC("cgroup/recvmsg6")
int
egr_recvmsg6(struct bpf_sock_addr *ctx)
{
	struct egr_sk_orig *o = orig_of(ctx, EGR_SK_DNS | EGR_SK_REDIRECTED);
	__be32 a[4];

	if (!o)
		return SYS_PROCEED;
	a[0] = ctx->user_ip6[0];
	a[1] = ctx->user_ip6[1];
	a[2] = ctx->user_ip6[2];
	a[3] = ctx->user_ip6[3];
	if (is_mapped(a) && is_redirect_src(a[3], (__be16)ctx->user_port)) {
		ctx->user_ip6[3] = o->addr[3];
		ctx->user_port = o->port;
	}
	return SYS_PROCEED;
}

SEC("cgroup/getpeername4")
int
egr_getpeername4(struct bpf_sock_addr *ctx)
{
	struct egr_sk_orig *o = orig_of(ctx, EGR_SK_REDIRECTED | EGR_SK_DNS);

	if (o && is_redirect_src(ctx->user_ip4, (__be16)ctx->user_port)) {
		ctx->user_ip4 = o->addr[3];
		ctx->user_port = o->port;
	}
	return SYS_PROCEED;
}

SEC("cgroup/getpeername6")
int
egr_getpeername6(struct bpf_sock_addr *ctx)
{
	struct egr_sk_orig *o = orig_of(ctx, EGR_SK_REDIRECTED | EGR_SK_DNS);
	__be32 a[4];

	if (!o)
		return SYS_PROCEED;
	a[0] = ctx->user_ip6[0];
	a[1] = ctx->user_ip6[1];
	a[2] = ctx->user_ip6[2];
	a[3] = ctx->user_ip6[3];
	if (is_mapped(a) && is_redirect_src(a[3], (__be16)ctx->user_port)) {
		ctx->user_ip6[3] = o->addr[3];
		ctx->user_port = o->port;
	}
	return SYS_PROCEED;
}

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

/* TCP_CONNECT_CB runs in the connecting task before the SYN leaves, with the
 * local port chosen: index redirected connections, and connections to
 * egressctl's own listeners, for the proxy's lookup. */
SEC("sockops")
int
egr_sockops(struct bpf_sock_ops *ctx)
{
	struct egr_conn_key k = {};
	struct egr_conn_val w = {};
	struct egr_sk_orig *o;
	struct bpf_sock *sk;
	__u32 op, family, lport, lip4, l6[3], cbflags, newstate;
	__be32 rip4;
	__be16 rport;
	__u64 cookie, id;
	int own;

	op = ctx->op;
	newstate = ctx->args[1];
	asm volatile("" ::: "memory");
	if (op == BPF_SOCK_OPS_STATE_CB)
		return state_cb(ctx, newstate);
	if (op != BPF_SOCK_OPS_TCP_CONNECT_CB)
		return 1;
	family = ctx->family;
	lport = ctx->local_port;
	lip4 = ctx->local_ip4;
	l6[0] = ctx->local_ip6[0];
	l6[1] = ctx->local_ip6[1];
	l6[2] = ctx->local_ip6[2];
	cbflags = ctx->bpf_sock_ops_cb_flags;
	asm volatile("" ::: "memory");
	sk = ctx->sk;
	if (!sk)
		return 1;
	rip4 = sk->dst_ip4;
	rport = sk->dst_port;
	if (family == AF_INET6 &&
	    !(sk->dst_ip6[0] == 0 && sk->dst_ip6[1] == 0 && sk->dst_ip6[2] == bpf_htonl(0xffff)))
		rip4 = 0; /* native IPv6: never one of our (IPv4) listeners */
	own = rip4 == bpf_htonl(LOOPBACK4) && is_own_port(rport);
	/* other loopback peers: nothing recorded (remember), nothing to index */
	if (!own && (bpf_ntohl(rip4) >> 24) == 127)
		return 1;
	cookie = bpf_get_socket_cookie(ctx);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (o->flags & EGR_SK_DIRECT))
		arm_close_cb(ctx, o, cbflags);
	if (!o)
		o = bpf_sk_storage_get(&egr_sk, sk, 0, 0);
	if (o && (o->flags & EGR_SK_INDEX)) {
		w.reason = o->who.reason;
		w.addr[0] = o->addr[0];
		w.addr[1] = o->addr[1];
		w.addr[2] = o->addr[2];
		w.addr[3] = o->addr[3];
		w.port = o->port;
	} else if (own) {
		w.reason = EGR_R_PROXY;
		map4(w.addr, rip4);
		w.port = rport;
	} else {
		return 1;
	}
	w.cookie = cookie;
	w.cgroup_id = bpf_get_current_cgroup_id();
	id = bpf_get_current_pid_tgid();
	w.pid = (__u32)id;
	w.tgid = id >> 32;
	w.uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(w.comm, sizeof(w.comm));
	if (family == AF_INET6 && !(lip4 && l6[2] == bpf_htonl(0xffff))) {
		k.addr[0] = l6[0];
		k.addr[1] = l6[1];
		k.addr[2] = l6[2];
		k.addr[3] = ctx->local_ip6[3];
	} else {
		map4(k.addr, lip4);
	}
	k.port = bpf_htons((__u16)lport);
	k.proto = IPPROTO_TCP;
	bpf_map_update_elem(&egr_conns, &k, &w, BPF_ANY);
	return 1;
}

static __always_inline int
sock_deny(struct bpf_sock *ctx, __u8 reason, int err)
{
	count(audit_mode ? EGR_C_WOULD_DENY : EGR_C_DENY);
	if (audit_mode) {
		struct egr_sk_orig *o;

		emit(EGR_H_SOCK_CREATE, EGR_V_WOULD_DENY, reason, 0, ctx->family, ctx->type,
		     ctx->protocol, NULL, 0);
		o = bpf_sk_storage_get(&egr_sk, ctx, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (o)
			o->flags |= EGR_SK_DIRECT; /* reported once, here */
		return SYS_PROCEED;
	}
	emit(EGR_H_SOCK_CREATE, EGR_V_DENY, reason, err, ctx->family, ctx->type, ctx->protocol,
	     NULL, 0);
	bpf_set_retval(-err);
	return SYS_REJECT;
}

/* Runs for AF_INET/AF_INET6 only; other families are the seccomp filter's. */
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

/* Refuse binds to egressctl's listener ports on loopback or the wildcard,
 * so nothing in the sandbox can stand in for the proxy; and binds to an
 * address and port where a socket from outside the sandbox would receive
 * (its SO_REUSEPORT group, a more specific address in front of its
 * wildcard, a SO_REUSEADDR UDP share): neither its connections nor its
 * datagrams go to the sandbox, whichever socket came first. */
static __always_inline int
bind_check(struct bpf_sock_addr *ctx, __u8 hook, const __be32 *a)
{
	__be16 port = (__be16)ctx->user_port;
	__u32 family = ctx->family, type = ctx->type, proto = ctx->protocol;
	int local = is_mapped(a) ? is_local4(a[3]) : is_local6(a);
	__be32 any[4] = {}; /* from anywhere, any port */

	asm volatile("" ::: "memory"); /* ctx read at fixed offsets (see connect4) */
	if (local && is_own_port(port) && !audit_mode) {
		emit(hook, EGR_V_DENY, EGR_R_BIND_PROXY, EADDRINUSE, family, type, proto, a, port);
		bpf_set_retval(-EADDRINUSE);
		return SYS_REJECT;
	}
	if (!port || (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return SYS_PROCEED; /* an ephemeral port is one nobody holds */
	/* who a connection or datagram to a:port would reach now: nobody,
	 * or ours (and its whole group) */
	if (receiver(ctx, a, port, any, 0, (__u8)proto) != RCV_OTHER)
		return SYS_PROCEED;
	count(audit_mode ? EGR_C_WOULD_DENY : EGR_C_DENY);
	if (audit_mode) {
		emit(hook, EGR_V_WOULD_DENY, EGR_R_BIND_FOREIGN, 0, family, type, proto, a, port);
		return SYS_PROCEED;
	}
	emit(hook, EGR_V_DENY, EGR_R_BIND_FOREIGN, EADDRINUSE, family, type, proto, a, port);
	bpf_set_retval(-EADDRINUSE);
	return SYS_REJECT;
}

SEC("cgroup/bind4")
int
egr_bind4(struct bpf_sock_addr *ctx)
{
	__be32 a[4];

	map4(a, ctx->user_ip4);
	return bind_check(ctx, EGR_H_BIND4, a);
}

SEC("cgroup/bind6")
int
egr_bind6(struct bpf_sock_addr *ctx)
{
	__be32 a[4];

	a[0] = ctx->user_ip6[0];
	a[1] = ctx->user_ip6[1];
	a[2] = ctx->user_ip6[2];
	a[3] = ctx->user_ip6[3];
	return bind_check(ctx, EGR_H_BIND6, a);
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

/* Abstract unix addresses (sun_path[0] == 0) are a network of their own in a
 * shared netns: refuse them; filesystem sockets are left to file modes.
 * Loaded as BPF_CGROUP_UNIX_CONNECT/SENDMSG by the loader (libbpf 1.1 does
 * not know these sections). */
static __always_inline int
unix_check(struct bpf_sock_addr *ctx, __u8 hook)
{
	struct bpf_sock_addr_kern *k;
	struct sockaddr_un *sun;
	__be32 name[4] = {};
	__u32 len;

	if (!bpf_cast_to_kern_ctx || !bpf_rdonly_cast)
		return SYS_REJECT;
	k = bpf_cast_to_kern_ctx(ctx);
	len = k->uaddrlen;
	if (len <= 2) /* unnamed (autobind) */
		return SYS_PROCEED;
	sun = bpf_rdonly_cast(k->uaddr, bpf_core_type_id_kernel(struct sockaddr_un));
	if (sun->sun_path[0] != 0)
		return SYS_PROCEED;
	/* the first 16 bytes of the name; userspace trims to the length */
	bpf_probe_read_kernel(name, sizeof(name), &sun->sun_path[1]);
	emit(hook, audit_mode ? EGR_V_WOULD_DENY : EGR_V_DENY, EGR_R_ABSTRACT_UNIX,
	     audit_mode ? 0 : EPERM, AF_UNIX, ctx->type, 0, name,
	     bpf_htons((__u16)(k->uaddrlen - 3)));
	return audit_mode ? SYS_PROCEED : SYS_REJECT;
}

SEC("cgroup/connect_unix")
int
egr_connect_unix(struct bpf_sock_addr *ctx)
{
	return unix_check(ctx, EGR_H_CONNECT_UNIX);
}

SEC("cgroup/sendmsg_unix")
int
egr_sendmsg_unix(struct bpf_sock_addr *ctx)
{
	return unix_check(ctx, EGR_H_SENDMSG_UNIX);
}

/* A UDP datagram to the DNS responder: index who sent it by its source
 * address and port, from the connect/sendmsg-time record of its socket, so
 * the responder can attribute the query. (At connect() time a UDP socket
 * has no port yet; its first datagram has one.) A socket without such a
 * record removes whatever entry that address and port had: the responder
 * then refuses the datagram rather than credit it to an earlier socket. */
static __always_inline void
index_dns(struct __sk_buff *skb, struct bpf_sock *sk, __be32 saddr, __be16 sport)
{
	struct egr_conn_key k = {};
	struct egr_sk_orig *o = NULL;

	map4(k.addr, saddr);
	k.port = sport;
	k.proto = IPPROTO_UDP;
	if (sk)
		o = sock_rec(sk, bpf_get_socket_cookie(skb));
	if (!o || !(o->flags & EGR_SK_INDEX)) {
		bpf_map_delete_elem(&egr_conns, &k);
		return;
	}
	bpf_map_update_elem(&egr_conns, &k, &o->who, BPF_ANY);
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
 * are dropped silently). Runs in softirq for some packets: no current-task
 * helpers here. */
static __always_inline int
skb_drop(struct __sk_buff *skb, struct bpf_sock *sk, const __be32 *d, __be16 port, __u8 reason)
{
	struct egr_sk_orig *o;
	struct egr_event *e;

	o = bpf_sk_storage_get(&egr_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return audit_mode ? SYS_PROCEED : SYS_REJECT;
	if (o->flags & EGR_SK_DIRECT)
		return SYS_PROCEED;
	if (o->flags & EGR_SK_SKB_SEEN)
		return audit_mode ? SYS_PROCEED : SYS_REJECT;
	o->flags |= EGR_SK_SKB_SEEN; /* report a socket once, not every packet */
	count(audit_mode ? EGR_C_WOULD_DENY : EGR_C_DENY);
	e = bpf_ringbuf_reserve(&egr_events, sizeof(*e), 0);
	if (e) {
		__builtin_memset(e, 0, sizeof(*e));
		e->time_ns = bpf_ktime_get_boot_ns();
		e->cgroup_id = bpf_skb_cgroup_id(skb);
		e->uid = (__u32)-1;
		e->family = sk->family;
		e->type = sk->type;
		e->protocol = sk->protocol;
		e->verdict = audit_mode ? EGR_V_WOULD_DENY : EGR_V_DENY;
		e->reason = reason;
		e->hook = EGR_H_SKB;
		e->err = audit_mode ? 0 : EPERM;
		e->addr[0] = d[0];
		e->addr[1] = d[1];
		e->addr[2] = d[2];
		e->addr[3] = d[3];
		e->port = port;
		bpf_ringbuf_submit(e, 0);
	}
	return audit_mode ? SYS_PROCEED : SYS_REJECT;
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
loopback_pkt(struct __sk_buff *skb, const __be32 *s, const __be32 *d, __u8 l4, __u32 off)
{
	struct bpf_sock *sk;
	__be16 p[2];
	__u8 fl;

	if (l4 != IPPROTO_TCP && l4 != IPPROTO_UDP)
		/* sock_create refuses raw, ping and the other protocols;
		 * an IPv6 extension header here means the destination
		 * options or a routing header a socket asked for */
		return is_mapped(d) || audit_mode ? SYS_PROCEED : SYS_REJECT;
	if (bpf_skb_load_bytes(skb, off, p, sizeof(p)))
		return audit_mode ? SYS_PROCEED : SYS_REJECT;
	sk = skb->sk;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (d[3] == bpf_htonl(LOOPBACK4) && is_mapped(d) && is_own_port(p[1])) {
		if (l4 == IPPROTO_UDP && dns_port && p[1] == bpf_htons(dns_port))
			index_dns(skb, sk, s[3], p[0]);
		return SYS_PROCEED;
	}
	if (l4 == IPPROTO_TCP) {
		if (bpf_skb_load_bytes(skb, off + 13, &fl, 1))
			return audit_mode ? SYS_PROCEED : SYS_REJECT;
		if ((fl & 0x12) != 0x02) /* not a SYN (a SYN-ACK answers someone) */
			return SYS_PROCEED;
	}
	if (fast_hit(d, p[1], l4))
		return SYS_PROCEED;
	if (receiver(skb, d, p[1], s, p[0], l4) == RCV_OURS)
		return SYS_PROCEED;
	if (!sk)
		return audit_mode ? SYS_PROCEED : SYS_REJECT;
	if (audit_mode) {
		/* connect/sendmsg reported this socket's would-deny already,
		 * with its task (finish): not a second time here */
		struct egr_sk_orig *o = sock_rec(sk, bpf_get_socket_cookie(skb));

		if (o && (o->flags & EGR_SK_DIRECT))
			return SYS_PROCEED;
	}
	return skb_drop(skb, sk, d, p[1], EGR_R_LOOPBACK);
}

/* Catch-all: a packet from the sandbox leaves only towards loopback (see
 * loopback_pkt) or from a socket that connect approved for the fast path.
 * Runs in softirq for some packets: no current-task helpers here. */
SEC("cgroup_skb/egress")
int
egr_skb_egress(struct __sk_buff *skb)
{
	struct egr_sk_orig *o;
	struct bpf_sock *sk;
	__be32 s[4] = {}, d[4] = {};
	__u8 h[40];
	__u64 cookie;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		__u32 off;

		if (bpf_skb_load_bytes(skb, 0, h, 20))
			return audit_mode ? SYS_PROCEED : SYS_REJECT;
		__builtin_memcpy(&d[3], h + 16, 4);
		d[2] = bpf_htonl(0xffff);
		if ((bpf_ntohl(d[3]) >> 24) == 127) {
			__builtin_memcpy(&s[3], h + 12, 4);
			s[2] = bpf_htonl(0xffff);
			off = (h[0] & 0x0f) * 4;
			if (off < 20 || off > 60)
				return audit_mode ? SYS_PROCEED : SYS_REJECT;
			return loopback_pkt(skb, s, d, h[9], off);
		}
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 0, h, 40))
			return audit_mode ? SYS_PROCEED : SYS_REJECT;
		__builtin_memcpy(d, h + 24, 16);
		if (d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == bpf_htonl(1)) {
			__builtin_memcpy(s, h + 8, 16);
			return loopback_pkt(skb, s, d, h[6], 40);
		}
	}
	sk = skb->sk;
	if (!sk)
		return audit_mode ? SYS_PROCEED : SYS_REJECT;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return audit_mode ? SYS_PROCEED : SYS_REJECT;
	cookie = bpf_get_socket_cookie(skb);
	o = bpf_map_lookup_elem(&egr_socks, &cookie);
	if (o && (o->flags & EGR_SK_DIRECT))
		return SYS_PROCEED;
	if (sk->protocol == IPPROTO_TCP && sk->state == BPF_TCP_CLOSE && is_rst(skb))
		return SYS_PROCEED;
	return skb_drop(skb, sk, d, (__be16)sk->dst_port, EGR_R_SKB_DROP);
}
