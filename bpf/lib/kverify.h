// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The kernel-verified path: a TCP connect to an address and port the DNS
 * responder answered for a name the policy allows there (egr_vdst) goes
 * direct, marked EGR_SK_VERIFY; the catch-all judges its first payload
 * segment (lib/kparse.h): the SNI or Host must be a name answered with
 * that address and allowed on that port (egr_vname). A match clears the
 * mark and the connection runs at full speed; anything else is dropped,
 * marked EGR_SK_KREJECT (nothing with payload passes after it), reported,
 * and ended: userspace runs egr_kv_kill (bpf/kverify.c) on the event, and
 * sockops arms a short TCP_USER_TIMEOUT in case it cannot. */
#ifndef EGR_KVERIFY_H
#define EGR_KVERIFY_H

#include "lib/common.h"
#include "lib/addr.h"
#include "lib/events.h"
#include "lib/kparse.h"
#include "lib/maps.h"
#include "lib/record.h"
#include "lib/tunables.h"

#define ECONNABORTED 103

/* An answered, unexpired (addr, port) of egr_vdst. */
static __always_inline int
kv_hit(const __be32 *addr, __be16 port)
{
	return dst_hit(&egr_vdst, addr, port, IPPROTO_TCP);
}

/* Does the packet carry pages its sender may still write to (sendfile and
 * splice: SKBFL_SHARED_FRAG; MSG_ZEROCOPY: SKBFL_ZEROCOPY_ENABLE)? The
 * receiver reads them after the check: a name checked there need not be
 * the name sent. -1 when it cannot be told (then refused too). */
static __always_inline int
shared_frags(struct __sk_buff *skb)
{
	struct skb_shared_info *sh;
	struct sk_buff *k;
	unsigned char *head;
	__u8 flags;

	if (!bpf_cast_to_kern_ctx)
		return -1;
	k = bpf_cast_to_kern_ctx(skb);
	if (!k->data_len)
		return 0; /* linear: copied into the skb's own head */
	head = BPF_CORE_READ(k, head);
	sh = (struct skb_shared_info *)(head + BPF_CORE_READ(k, end));
	if (bpf_probe_read_kernel(&flags, sizeof(flags), &sh->flags))
		return -1;
	return (flags & (SKBFL_SHARED_FRAG | SKBFL_ZEROCOPY_ENABLE)) != 0;
}

/* Where a TCP packet's payload starts and how long it is (ihl: where its
 * TCP header starts, pkt_parse's off): 0, or -1 when its headers cannot
 * be read. (A packet with IPv4 options or an IPv6 extension header never
 * gets here: direct_pkt refuses it first.) */
static __always_inline int
tcp_payload(struct __sk_buff *skb, __u32 ihl, __u32 *off, __u32 *plen)
{
	__u32 len = skb->len;
	__u8 b;

	if (ihl > 60)
		return -1;
	if (bpf_skb_load_bytes(skb, ihl + 12, &b, 1))
		return -1;
	*off = ihl + (b >> 4) * 4;
	if (*off > len)
		return -1;
	*plen = len - *off;
	return 0;
}

/* Was s's name answered with the socket's destination, and allowed there
 * for what it is (TLS, HTTP)? EGR_R_KV_OK, EGR_R_KV_NAME (not answered
 * there, or expired), EGR_R_KV_PLAIN (answered, not allowed as HTTP). */
static __always_inline __u32
kv_name_ok(struct kv_scratch *s, const struct egr_sk_orig *o)
{
	struct egr_vname_val *v;

	addr_copy(s->key.addr, o->addr);
	s->key.port = o->port;
	s->key.pad = 0;
	v = bpf_map_lookup_elem(&egr_vname, &s->key);
	if (!v || (v->expires_ns && v->expires_ns < bpf_ktime_get_boot_ns()))
		return EGR_R_KV_NAME;
	if (!(v->flags & s->kind))
		return s->kind == EGR_VN_HTTP ? EGR_R_KV_PLAIN : EGR_R_KV_NAME;
	return EGR_R_KV_OK;
}

/* The decision line of a judged connection: who connected (connect
 * recorded it), where, the name seen. */
static __always_inline void
kv_emit(struct __sk_buff *skb, struct bpf_sock *sk, const struct egr_sk_orig *o, __u8 verdict,
	__u8 reason, const char *name)
{
	emit_rec(skb, sk, &o->who, verdict, reason, verdict == EGR_V_DENY ? ECONNABORTED : 0,
		 o->addr, o->port, name);
}

/* The verdict on a judged first segment (r: EGR_R_KV_OK or a refusal). */
static __always_inline int
kv_verdict(struct __sk_buff *skb, struct bpf_sock *sk, struct egr_sk_orig *o, __u32 r,
	   const char *name)
{
	if (r == EGR_R_KV_OK) {
		o->flags &= ~EGR_SK_VERIFY;
		count(EGR_C_KVERIFIED);
		kv_emit(skb, sk, o, EGR_V_ALLOW, EGR_R_KV_OK, name);
		return SYS_PROCEED;
	}
	count(audit_mode ? EGR_C_WOULD_DENY : EGR_C_KREJECTED);
	kv_emit(skb, sk, o, deny_verdict(), (__u8)r, name);
	if (audit_mode) {
		o->flags &= ~EGR_SK_VERIFY;
		return SYS_PROCEED;
	}
	o->flags |= EGR_SK_KREJECT;
	return SYS_REJECT;
}

/* A packet of a socket marked EGR_SK_VERIFY (o: its record): packets
 * without payload pass (the handshake, ACKs, FIN, RST); the first with
 * payload is judged; after a refusal no payload passes. */
static __always_inline int
kv_pkt(struct __sk_buff *skb, struct bpf_sock *sk, struct egr_sk_orig *o, __u32 ihl)
{
	struct kv_scratch *s;
	char name[64];
	__u32 off, plen, r;
	int hr = tcp_payload(skb, ihl, &off, &plen);

	if (hr && o->flags & EGR_SK_KREJECT)
		return SYS_REJECT;
	if (hr)
		return deny_ret();
	if (!plen)
		return SYS_PROCEED;
	if (o->flags & EGR_SK_KREJECT)
		return SYS_REJECT;
	s = kv_enter();
	if (!s)
		return deny_ret(); /* nested too deep: TCP sends it again */
	r = kv_load_parse(skb, s, off, plen);
	if (r == EGR_R_KV_OK)
		r = kv_name_ok(s, o);
	if (r == EGR_R_KV_OK && shared_frags(skb))
		r = EGR_R_KV_SHARED;
	__builtin_memcpy(name, s->key.name, sizeof(name));
	kv_leave(s);
	return kv_verdict(skb, sk, o, r, name);
}

/* kv_pkt as a function of its own, global: the verifier checks it once,
 * on its own, rather than along every path of the catch-all that reaches
 * it (inlined, it cost 43,000 of the program's 59,000 instructions, most
 * of the time egressctl's start spent loading programs). The socket is
 * read again from the packet: it cannot be an argument. */
__noinline int
kv_judge(struct __sk_buff *skb, struct egr_sk_orig *o, __u32 ihl)
{
	struct bpf_sock *sk = skb->sk;

	if (!o || !sk)
		return deny_ret();
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return deny_ret();
	return kv_pkt(skb, sk, o, ihl);
}

#endif /* EGR_KVERIFY_H */
