// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Addresses: always four 32-bit words in network order, IPv4 in v4-mapped
 * form (::ffff:a.b.c.d), as in every map key and event (egress_abi.h). The
 * classes the decisions use, the one copy and comparison of a whole
 * address, and the one place a sock_addr context's address is read
 * (sa_load4/6) and rewritten (sa_store_ip4). */
#ifndef EGR_ADDR_H
#define EGR_ADDR_H

#include "lib/common.h"

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

/* An address on the stack, in a map value or in an event. (Context fields
 * are never copied: the verifier wants them loaded word by word at their
 * offsets, where they are read: sa_load6, local_src, sockops.) */
static __always_inline void
addr_copy(__be32 *dst, const __be32 *src)
{
	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	dst[3] = src[3];
}

static __always_inline int
addr_eq(const __be32 *a, const __be32 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

static __always_inline int
addr_is_zero(const __be32 *a)
{
	return !(a[0] | a[1] | a[2] | a[3]);
}

/* ::1 */
static __always_inline int
is_loopback6(const __be32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1);
}

/* IPv6 that carries IPv4 (NAT64 64:ff9b::/32: RFC 6052's /96 and RFC
 * 8215's 64:ff9b:1::/48; 6to4 2002::/16, Teredo 2001::/32, IPv4-compatible ::/96 and SIIT
 * ::ffff:0:0:0/96): --ipv6 refuses it, never judged as a v6 address that
 * would slip past the IPv4 rules. (::, ::1 are local; v4-mapped is IPv4.) */
static __always_inline int
is_v4_in_v6(const __be32 *a)
{
	__u32 w0 = bpf_ntohl(a[0]);

	if (w0 == 0x0064ff9b || (w0 >> 16) == 0x2002 || w0 == 0x20010000)
		return 1;
	if (w0 || a[1])
		return 0;
	if (a[2] == bpf_htonl(0xffff0000))
		return 1;
	return a[2] == 0 && bpf_ntohl(a[3]) > 1;
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

/* Loopback destinations (127.0.0.0/8, ::1): the catch-all lets their
 * packets pass anyway. */
static __always_inline int
is_loopback(const __be32 *a)
{
	if (is_mapped(a))
		return (bpf_ntohl(a[3]) >> 24) == 127;
	return is_loopback6(a);
}

/* What a sock_addr hook reads of its context: every field it uses, each
 * once at its fixed offset before any branch (ctx_loaded). */
struct sa {
	struct bpf_sock *sk; /* the socket */
	__u32 family;	     /* the socket's: AF_INET6 also for a v4-mapped address */
	__u32 type;
	__u32 proto;
	__be32 addr[4]; /* user_ip4 (v4-mapped) or user_ip6 */
	__be16 port;	/* user_port */
	__u8 v6;	/* a *6 hook: the address is user_ip6 */
	__u64 netns;	/* the socket's network namespace (cookie) */
};

static __always_inline void
sa_load4(struct bpf_sock_addr *ctx, struct sa *a)
{
	a->sk = ctx->sk;
	a->family = ctx->family;
	a->type = ctx->type;
	a->proto = ctx->protocol;
	a->port = (__be16)ctx->user_port;
	map4(a->addr, ctx->user_ip4);
	a->v6 = 0;
	ctx_loaded();
	a->netns = bpf_get_netns_cookie(ctx);
}

static __always_inline void
sa_load6(struct bpf_sock_addr *ctx, struct sa *a)
{
	a->sk = ctx->sk;
	a->family = ctx->family;
	a->type = ctx->type;
	a->proto = ctx->protocol;
	a->port = (__be16)ctx->user_port;
	a->addr[0] = ctx->user_ip6[0];
	a->addr[1] = ctx->user_ip6[1];
	a->addr[2] = ctx->user_ip6[2];
	a->addr[3] = ctx->user_ip6[3];
	a->v6 = 1;
	ctx_loaded();
	a->netns = bpf_get_netns_cookie(ctx);
}

/* Rewrites an IPv6 destination to ::1 (a *6 hook, native IPv6). */
static __always_inline void
sa_store_lo6(struct bpf_sock_addr *ctx)
{
	ctx->user_ip6[0] = 0;
	ctx->user_ip6[1] = 0;
	ctx->user_ip6[2] = 0;
	ctx->user_ip6[3] = bpf_htonl(1);
}

/* Rewrites an IPv6 destination to a (the original, translating back). */
static __always_inline void
sa_store_ip6(struct bpf_sock_addr *ctx, const __be32 *a)
{
	ctx->user_ip6[0] = a[0];
	ctx->user_ip6[1] = a[1];
	ctx->user_ip6[2] = a[2];
	ctx->user_ip6[3] = a[3];
}

/* Rewrites the address to ip4 (network order): user_ip4, or the last word
 * of user_ip6 (a v4-mapped address stays v4-mapped; :: becomes ::1). The
 * port is the caller's (ctx->user_port). */
static __always_inline void
sa_store_ip4(struct bpf_sock_addr *ctx, const struct sa *a, __be32 ip4)
{
	if (a->v6)
		ctx->user_ip6[3] = ip4;
	else
		ctx->user_ip4 = ip4;
}

#endif /* EGR_ADDR_H */
