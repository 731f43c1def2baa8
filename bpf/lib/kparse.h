// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The first-bytes parser of the kernel-verified path: the name a direct
 * connection's first payload segment asks for, a TLS ClientHello's SNI or
 * an HTTP/1.x request's Host, or why there is none that can be trusted.
 * Pure but for its scratch space; lib/kverify.h judges the name.
 *
 * What passes: one whole ClientHello in one TLS record, the record whole
 * in this segment, every extension within the first KV_BUF bytes, exactly
 * one server_name with one host_name, no encrypted_client_hello; or a
 * request line "METHOD /path HTTP/1.x", its header block ended within the
 * first KV_BUF bytes, exactly one Host. Everything else is a refusal
 * (EGR_R_KV_*): the check never guesses at what a server might read.
 *
 * Verifier notes (clang 14, Linux 6.8+): loops are bpf_loop callbacks whose
 * state lives in the per-CPU map value (a growing offset on the stack never
 * converges), offsets into the buffer are masked (M), and a variable length
 * gets its bound from an asm mask clang cannot drop. The scratch can be
 * re-entered on the same CPU (softirq, preemption): KV_LEVELS buffers per
 * CPU, each claimed by the run that uses it. */
#ifndef EGR_KPARSE_H
#define EGR_KPARSE_H

#include "lib/common.h"

#define KV_BUF	  4096 /* bytes of the first segment read; a power of two */
#define KV_LEVELS 4    /* buffers per CPU: runs at once on one CPU */
#define KV_EXTS	  128  /* extensions walked at most */
#define M(o)	  ((o) & (KV_BUF - 1))

struct kv_scratch {
	__u32 busy; /* claimed by a run (kv_enter) */
	__u8 b[KV_BUF];
	__u32 n;		  /* bytes in b */
	__u32 xend;		  /* TLS: end of the extensions; HTTP: unused */
	__u32 off;		  /* cursor of the loops */
	__u32 res;		  /* a refusal (EGR_R_KV_*) found by a loop; 0 none */
	__u32 noff;		  /* the name: offset in b */
	__u32 nlen;		  /* ... and length */
	__u32 nsni;		  /* TLS: server_name extensions; HTTP: Host fields */
	__u32 hend;		  /* HTTP: offset after the empty line; 0: not seen */
	__u32 lend;		  /* HTTP: offset of the request line's '\n'; 0: not seen */
	__u32 kind;		  /* EGR_VN_TLS or EGR_VN_HTTP once a name is found */
	__u32 hst;		  /* HTTP: where host_cb is in the Host value */
	struct egr_vname_key key; /* the name, lower-case, for egr_vname */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KV_LEVELS);
	__type(key, __u32);
	__type(value, struct kv_scratch);
} egr_kvbuf SEC(".maps");

/* bpf_loop takes a stack pointer as its context: the map value through it */
struct kv_lctx {
	struct kv_scratch *s;
};

static __always_inline __u32
rd1(const struct kv_scratch *s, __u32 o)
{
	return s->b[M(o)];
}

static __always_inline __u32
rd2(const struct kv_scratch *s, __u32 o)
{
	return (s->b[M(o)] << 8) | s->b[M(o + 1)];
}

static __always_inline __u32
lower(__u32 c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* A free scratch buffer of this CPU, claimed (kv_leave(s) after it); NULL
 * when every one is taken. Claimed by compare-and-swap, not by a depth
 * count: with a preemptible kernel a task's run can be interrupted by
 * softirq and preempted by another task's on the same CPU, and those need
 * not end in the order they began. */
static __always_inline struct kv_scratch *
kv_enter(void)
{
	struct kv_scratch *s;

#pragma unroll
	for (__u32 i = 0; i < KV_LEVELS; i++) {
		__u32 k = i;

		s = bpf_map_lookup_elem(&egr_kvbuf, &k);
		if (s && __sync_val_compare_and_swap(&s->busy, 0, 1) == 0)
			return s;
	}
	return NULL;
}

/* Only runs on this CPU share s: a compiler barrier before the store is
 * order enough (clang 14 has no BPF store-release). */
static __always_inline void
kv_leave(struct kv_scratch *s)
{
	asm volatile("" ::: "memory");
	*(volatile __u32 *)&s->busy = 0;
}

/* One extension at s->off per call (TLS). */
static long
ext_cb(__u32 i, struct kv_lctx *l)
{
	struct kv_scratch *s = l->s;
	__u32 off = s->off, t, len, nl;

	if (off + 4 > s->xend)
		return 1; /* all walked */
	if (off + 4 > s->n) {
		s->res = EGR_R_KV_SPLIT;
		return 1;
	}
	t = rd2(s, off);
	len = rd2(s, off + 2);
	if (off + 4 + len > s->xend) {
		s->res = EGR_R_KV_PROTO;
		return 1;
	}
	if (t == 0xfe0d) { /* encrypted_client_hello */
		s->res = EGR_R_KV_ECH;
		return 1;
	}
	if (t == 0) { /* list len(2) type(1) name len(2) name: one host_name only */
		if (s->nsni++ || off + 9 > s->n) {
			s->res = s->nsni > 1 ? EGR_R_KV_PROTO : EGR_R_KV_SPLIT;
			return 1;
		}
		nl = rd2(s, off + 7);
		if (rd1(s, off + 6) != 0 || rd2(s, off + 4) != len - 2 || len != 5 + nl || !nl) {
			s->res = EGR_R_KV_PROTO;
			return 1;
		}
		if (off + 9 + nl > s->n) {
			s->res = EGR_R_KV_SPLIT;
			return 1;
		}
		s->noff = off + 9;
		s->nlen = nl;
	}
	s->off = off + 4 + len;
	return 0;
}

/* TLS: record header(5), handshake type(1) length(3), version(2),
 * random(32), session id, cipher suites, compression, extensions. plen:
 * the segment's payload length (s->n of it were read). */
static __always_inline __u32
kv_tls(struct kv_scratch *s, __u32 plen)
{
	struct kv_lctx l = {s};
	__u32 rec, end, lim, short_r, off = 43;

	if (s->n < 9)
		return EGR_R_KV_SPLIT;
	if (rd1(s, 1) != 3 || rd1(s, 5) != 1)
		return EGR_R_KV_PROTO; /* not a handshake record holding a ClientHello */
	rec = rd2(s, 3);
	if (((rd1(s, 6) << 16) | rd2(s, 7)) + 4 != rec)
		return EGR_R_KV_SPLIT; /* the hello spans records, or is not alone */
	end = 5 + rec;
	if (end > plen)
		return EGR_R_KV_SPLIT; /* the rest comes in a later segment */
	lim = end < s->n ? end : s->n;
	short_r = lim == end ? EGR_R_KV_PROTO : EGR_R_KV_SPLIT;
	if (off + 1 > lim)
		return short_r;
	off += 1 + rd1(s, off); /* session id */
	if (off + 2 > lim)
		return short_r;
	off += 2 + rd2(s, off); /* cipher suites */
	if (off + 1 > lim)
		return short_r;
	off += 1 + rd1(s, off); /* compression methods */
	if (off == end)
		return EGR_R_KV_NONAME; /* no extensions at all */
	if (off + 2 > lim)
		return short_r;
	s->xend = off + 2 + rd2(s, off);
	if (s->xend != end)
		return EGR_R_KV_PROTO;
	s->off = off + 2;
	s->res = 0;
	s->nsni = 0;
	bpf_loop(KV_EXTS, ext_cb, &l, 0);
	if (s->res)
		return s->res;
	if (s->off + 4 <= s->xend)
		return EGR_R_KV_PROTO; /* more than KV_EXTS extensions */
	if (!s->nsni)
		return EGR_R_KV_NONAME;
	s->kind = EGR_VN_TLS;
	return EGR_R_KV_OK;
}

/* One byte of the header block at s->off per call (HTTP): line ends,
 * Host fields, the empty line. A line ends at LF, with or without CR before
 * it, as servers accept; a CR elsewhere, a NUL or a folded line is refused. */
static long
hdr_cb(__u32 i, struct kv_lctx *l)
{
	struct kv_scratch *s = l->s;
	__u32 p = s->off, c = rd1(s, p), q = p + 1;

	if (p >= s->n)
		return 1; /* the end of what was read: no empty line */
	s->off = q;
	if (!c || (c == '\r' && q < s->n && rd1(s, q) != '\n')) {
		s->res = EGR_R_KV_PROTO;
		return 1;
	}
	if (c != '\n')
		return 0;
	if (!s->lend)
		s->lend = p;
	if (q >= s->n)
		return 1;
	c = rd1(s, q);
	if (c == '\n' || (c == '\r' && q + 1 < s->n && rd1(s, q + 1) == '\n')) {
		s->hend = q;
		return 1;
	}
	if (c == ' ' || c == '\t') {
		s->res = EGR_R_KV_PROTO; /* obs-fold */
		return 1;
	}
	if (q + 5 < s->n && lower(c) == 'h' && lower(rd1(s, q + 1)) == 'o' &&
	    lower(rd1(s, q + 2)) == 's' && lower(rd1(s, q + 3)) == 't' && rd1(s, q + 4) == ':') {
		s->nsni++;
		s->noff = q + 5;
	}
	return 0;
}

/* One byte of the Host value at s->off per call: blanks, the name (up to
 * a CR, LF, ':' or blank), a port (digits), blanks, the line's end. */
static long
host_cb(__u32 i, struct kv_lctx *l)
{
	struct kv_scratch *s = l->s;
	__u32 p = s->off, c = rd1(s, p);

	if (p >= s->n) {
		s->res = EGR_R_KV_PROTO;
		return 1;
	}
	s->off = p + 1;
	switch (s->hst) {
	case 0: /* leading blanks */
		if (c == ' ' || c == '\t') {
			s->noff = p + 1;
			return 0;
		}
		s->hst = 1;
		/* fallthrough */
	case 1: /* the name */
		if (c != '\r' && c != '\n' && c != ':' && c != ' ' && c != '\t') {
			s->nlen++;
			return 0;
		}
		s->hst = c == ':' ? 2 : 3;
		if (c == ':')
			return 0;
		break;
	case 2: /* the port */
		if (c >= '0' && c <= '9')
			return 0;
		s->hst = 3;
		break;
	}
	if (c == ' ' || c == '\t')
		return 0;
	if (c == '\r' || c == '\n')
		s->hst = 4; /* the line's end: done */
	else
		s->res = EGR_R_KV_PROTO;
	return 1;
}

/* "METHOD /target HTTP/1.x": the method upper-case letters, the target in
 * origin form (an absolute URI would name another host than Host). */
static __always_inline __u32
kv_reqline(struct kv_scratch *s)
{
	__u32 i, e = s->lend;

#pragma unroll
	for (i = 0; i < 16; i++) {
		__u32 c = rd1(s, i);

		if (c == ' ')
			break;
		if (c < 'A' || c > 'Z')
			return EGR_R_KV_PROTO;
	}
	if (i == 0 || i == 16)
		return EGR_R_KV_PROTO;
	if (i == 3 && rd1(s, 0) == 'P' && rd1(s, 1) == 'R' && rd1(s, 2) == 'I' && rd1(s, 4) == '*')
		return EGR_R_KV_H2C; /* "PRI * HTTP/2.0": the h2 preface */
	if (rd1(s, i + 1) != '/')
		return EGR_R_KV_PROTO;
	if (e && rd1(s, e - 1) == '\r')
		e--;
	if (e < i + 11 || rd1(s, e - 9) != ' ' || rd1(s, e - 8) != 'H' || rd1(s, e - 7) != 'T' ||
	    rd1(s, e - 6) != 'T' || rd1(s, e - 5) != 'P' || rd1(s, e - 4) != '/' ||
	    rd1(s, e - 3) != '1' || rd1(s, e - 2) != '.' ||
	    (rd1(s, e - 1) != '0' && rd1(s, e - 1) != '1'))
		return EGR_R_KV_PROTO;
	return 0;
}

static __always_inline __u32
kv_http(struct kv_scratch *s)
{
	struct kv_lctx l = {s};
	__u32 r;

	s->off = 0;
	s->res = 0;
	s->nsni = 0;
	s->hend = 0;
	s->lend = 0;
	bpf_loop(KV_BUF, hdr_cb, &l, 0);
	if (s->res)
		return s->res;
	if (!s->lend)
		return EGR_R_KV_SPLIT; /* not even the request line */
	r = kv_reqline(s);
	if (r)
		return r;
	if (!s->hend)
		return EGR_R_KV_SPLIT; /* the header block goes on past what was read */
	if (s->nsni != 1)
		return s->nsni ? EGR_R_KV_PROTO : EGR_R_KV_NONAME;
	s->off = s->noff;
	s->nlen = 0;
	s->hst = 0;
	bpf_loop(EGR_NAME_LEN + 16, host_cb, &l, 0);
	if (s->res)
		return s->res;
	if (s->hst != 4)
		return EGR_R_KV_PROTO; /* a value longer than any name */
	if (s->nlen && rd1(s, s->noff + s->nlen - 1) == '.')
		s->nlen--; /* a trailing dot names the same host */
	if (!s->nlen)
		return EGR_R_KV_NONAME;
	s->kind = EGR_VN_HTTP;
	return EGR_R_KV_OK;
}

/* One byte of the name per call into s->key.name, lower-case; a byte no
 * host name has refuses it. */
static long
name_cb(__u32 i, struct kv_lctx *l)
{
	struct kv_scratch *s = l->s;
	__u64 j = i;
	__u32 c;

	if (i >= s->nlen)
		return 1;
	c = lower(rd1(s, s->noff + i));
	if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	      c == '_')) {
		s->res = EGR_R_KV_NAME;
		return 1;
	}
	asm volatile("%0 &= 0xff" : "+r"(j)); /* clang 14 drops a plain mask */
	s->key.name[j] = c;
	return 0;
}

/* Parses the first n bytes in s->b of a payload of plen bytes. Returns
 * EGR_R_KV_OK with s->key.name and s->kind set, or the refusal. */
static __always_inline __u32
kv_parse(struct kv_scratch *s, __u32 plen)
{
	struct kv_lctx l = {s};
	__u32 r, c = s->n ? rd1(s, 0) : 0;

	s->kind = 0;
	s->nlen = 0;
	__builtin_memset(&s->key, 0, sizeof(s->key));
	if (c == 0x16)
		r = kv_tls(s, plen);
	else if (c >= 'A' && c <= 'Z')
		r = kv_http(s);
	else
		r = EGR_R_KV_PROTO;
	if (r != EGR_R_KV_OK)
		return r;
	if (s->nlen > 253)
		return EGR_R_KV_NAME;
	s->res = 0;
	bpf_loop(253, name_cb, &l, 0);
	return s->res ? s->res : EGR_R_KV_OK;
}

/* Reads the first bytes of the payload at off (plen bytes) into s and
 * parses them. */
static __always_inline __u32
kv_load_parse(struct __sk_buff *skb, struct kv_scratch *s, __u32 off, __u32 plen)
{
	__u64 n = plen > KV_BUF ? KV_BUF : plen;

	if (!n)
		return EGR_R_KV_PROTO;
	n -= 1;
	asm volatile("%0 &= 0xfff" : "+r"(n)); /* [0, KV_BUF - 1], kept by clang 14 */
	n += 1;
	if (bpf_skb_load_bytes(skb, off, s->b, n))
		return EGR_R_KV_PROTO;
	s->n = n;
	return kv_parse(s, plen);
}

#endif /* EGR_KPARSE_H */
