// SPDX-License-Identifier: Apache-2.0
/* DNS messages on the wire (RFC 1035 §4, EDNS0 RFC 6891): the responder's
 * only view of a query or of an upstream answer, and its only way to write
 * one. Names are decompressed with every pointer going strictly backwards
 * (before the labels it was reached from, past the header), so a chain
 * cannot loop, and at most DNS_MAX_WIRE bytes long with labels of at most
 * 63; label types 0b01 and 0b10 are refused. A name is handed out in
 * presentation form, lower-cased, with every byte outside [a-z0-9_-] of a
 * label written as \DDD (RFC 1035 §5.1): a label "a.b" becomes "a\046b" and
 * can never pass for two labels, and the responder refuses any name holding
 * a backslash. A name, owner or in rdata, whose presentation form exceeds
 * DNS_MAX_NAME (possible only through escapes) is an error. The rdata of
 * NS, CNAME, PTR, MX, SRV and SOA is expanded into uncompressed lower-case
 * wire form and must parse to exactly its rdlen; A and AAAA must be 4 and
 * 16 bytes, TXT a run of character-strings; every other type (SVCB and
 * HTTPS, whose rdata is never compressed, RFC 9460 §2.2; unknown types, RFC
 * 3597) is kept byte for byte. Responses are written with the client's
 * question bytes, owner names equal to the question compressed to it,
 * nothing else compressed. Pure: no I/O, no allocation. */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>

#include "dns/wire.h"

#define DNS_HDR_LEN	 12
#define DNS_RR_FIXED	 10 /* type, class, ttl, rdlength */
#define DNS_OPT_LEN	 11 /* root owner, then the fixed part, no options */
#define DNS_MAX_LABEL	 63
#define DNS_MAX_JUMPS	 64 /* pointers per name; each already goes further back */
#define DNS_PTR		 0xc0
#define DNS_OPCODE_QUERY 0
#define EDNS_DO		 0x8000 /* in the low 16 bits of the OPT TTL */
#define EDNS_MIN_SIZE	 512	/* smaller advertised sizes count as 512 (RFC 6891 §6.2.5) */

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t
lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* ---- names ---- */

/* Reads the possibly compressed name at *off of msg[0, len) into wire,
 * uncompressed and lower-cased, and into orig (may be NULL) in the case it
 * was sent. Each pointer must land past the header and before the first
 * label of the stretch it ends, so every jump goes strictly backwards;
 * DNS_MAX_JUMPS bounds them once more. Moves *off past the bytes in place
 * (through the first pointer). Returns the wire length or -1. */
static int
name_read(const uint8_t *msg, size_t len, size_t *off, uint8_t *wire, uint8_t *orig)
{
	size_t pos = *off, seg = *off, end = 0, n = 0, to, i;
	int jumps = 0;
	uint8_t c;

	for (;;) {
		if (pos >= len)
			return -1;
		c = msg[pos];
		if ((c & DNS_PTR) == DNS_PTR) {
			if (len - pos < 2)
				return -1;
			to = (size_t)(c & ~DNS_PTR) << 8 | msg[pos + 1];
			if (to < DNS_HDR_LEN || to >= seg || ++jumps > DNS_MAX_JUMPS)
				return -1;
			if (!end)
				end = pos + 2;
			pos = seg = to;
			continue;
		}
		if (c & DNS_PTR) /* 0b01 (extended, RFC 6891 §5) and 0b10 */
			return -1;
		if (c >= len - pos || n + 1 + c > DNS_MAX_WIRE)
			return -1;
		wire[n] = c;
		if (orig)
			orig[n] = c;
		for (i = 1; i <= c; i++) {
			wire[n + i] = lower(msg[pos + i]);
			if (orig)
				orig[n + i] = msg[pos + i];
		}
		n += 1 + c;
		pos += 1 + c;
		if (!c)
			break;
	}
	*off = end ? end : pos;
	return (int)n;
}

static bool
pres_plain(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Appends c to out[0, outlen) at *n, keeping room for the final NUL. */
static bool
pres_put(char *out, size_t outlen, size_t *n, char c)
{
	if (*n + 1 >= outlen)
		return false;
	out[(*n)++] = c;
	return true;
}

/* Uncompressed wire form (exactly wlen bytes, ending in the root label) to
 * presentation form: lower case, no trailing dot, "" for the root, every
 * other byte of a label as \DDD. Returns 0 or -1 (malformed, or out is too
 * small). */
static int
wire_to_pres(const uint8_t *wire, size_t wlen, char *out, size_t outlen)
{
	size_t pos = 0, n = 0, i;
	uint8_t c = 1, b;

	if (!outlen)
		return -1;
	while (pos < wlen && (c = wire[pos++])) {
		if (c > DNS_MAX_LABEL || c > wlen - pos)
			return -1;
		if (n && !pres_put(out, outlen, &n, '.'))
			return -1;
		for (i = 0; i < c; i++) {
			b = lower(wire[pos + i]);
			if (pres_plain(b)) {
				if (!pres_put(out, outlen, &n, (char)b))
					return -1;
			} else {
				if (n + 4 >= outlen)
					return -1;
				snprintf(out + n, 5, "\\%03u", b);
				n += 4;
			}
		}
		pos += c;
	}
	if (c || pos != wlen) /* the root label must end it, exactly */
		return -1;
	out[n] = '\0';
	return 0;
}

/* Presentation form (as wire_to_pres writes it; \DDD and \X escapes, one
 * trailing dot allowed, "" or "." for the root) to lower-case wire form in
 * out, which holds DNS_MAX_WIRE bytes. Returns the wire length or -1. */
static int
pres_to_wire(const char *name, uint8_t *out)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t n = 0, lab;
	unsigned int v;
	uint8_t c;

	if (!strcmp(name, "."))
		s++;
	while (*s) {
		if (n >= DNS_MAX_WIRE - 1) /* room for this byte and the root */
			return -1;
		lab = n++;
		out[lab] = 0;
		while (*s && *s != '.') {
			c = *s++;
			if (c == '\\') {
				if (s[0] >= '0' && s[0] <= '9') {
					if (s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9')
						return -1;
					v = (s[0] - '0') * 100u + (s[1] - '0') * 10u + (s[2] - '0');
					if (v > 255)
						return -1;
					c = (uint8_t)v;
					s += 3;
				} else if (*s) {
					c = *s++;
				} else {
					return -1;
				}
			}
			if (out[lab] == DNS_MAX_LABEL || n >= DNS_MAX_WIRE - 1)
				return -1;
			out[n++] = lower(c);
			out[lab]++;
		}
		if (!out[lab])
			return -1; /* empty label */
		if (*s == '.')
			s++;
	}
	out[n++] = 0;
	return (int)n;
}

static bool
wire_equal_nocase(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lower(a[i]) != lower(b[i]))
			return false;
	return true;
}

/* ---- records ---- */

struct rr_hdr {
	uint8_t owner[DNS_MAX_WIRE];
	int owner_len;
	uint16_t type;
	uint16_t rclass;
	uint32_t ttl;
	uint16_t rdlen;
	size_t rdoff; /* rdata is msg[rdoff, rdoff + rdlen) */
};

/* Owner, fixed fields and the bounds of the rdata of the record at *off;
 * moves *off past it. Returns 0 or -1. */
static int
rr_hdr_read(const uint8_t *msg, size_t len, size_t *off, struct rr_hdr *h)
{
	const uint8_t *p;

	h->owner_len = name_read(msg, len, off, h->owner, NULL);
	if (h->owner_len < 0 || len - *off < DNS_RR_FIXED)
		return -1;
	p = msg + *off;
	h->type = get16(p);
	h->rclass = get16(p + 2);
	h->ttl = get32(p + 4);
	h->rdlen = get16(p + 8);
	*off += DNS_RR_FIXED;
	if (h->rdlen > len - *off)
		return -1;
	h->rdoff = *off;
	*off += h->rdlen;
	return 0;
}

/* The rdata of h into rr->rdata, names expanded (see the top of the file).
 * Returns 0 or -1 when it does not parse to exactly rdlen bytes or does not
 * fit DNS_MAX_RDATA. */
static int
rdata_expand(const uint8_t *msg, const struct rr_hdr *h, struct dns_rr *rr)
{
	size_t off = h->rdoff, end = h->rdoff + h->rdlen, before = 0, after = 0, n;
	int names = 0, i, wl;

	switch (h->type) {
	case DNS_T_A:
		if (h->rdlen != 4)
			return -1;
		break;
	case DNS_T_AAAA:
		if (h->rdlen != 16)
			return -1;
		break;
	case DNS_T_TXT: /* one or more <character-string>s, filling rdlen */
		if (!h->rdlen)
			return -1;
		while (off < end)
			off += 1 + msg[off];
		if (off != end)
			return -1;
		break;
	case DNS_T_NS:
	case DNS_T_CNAME:
	case DNS_T_PTR:
		names = 1;
		break;
	case DNS_T_MX:
		before = 2;
		names = 1;
		break;
	case DNS_T_SRV:
		before = 6;
		names = 1;
		break;
	case DNS_T_SOA:
		names = 2;
		after = 20;
		break;
	}
	if (!names) {
		if (h->rdlen > DNS_MAX_RDATA)
			return -1;
		memcpy(rr->rdata, msg + h->rdoff, h->rdlen);
		rr->rdlen = h->rdlen;
		return 0;
	}
	if (h->rdlen < before + after)
		return -1;
	memcpy(rr->rdata, msg + off, before);
	n = before;
	off += before;
	for (i = 0; i < names; i++) {
		uint8_t w[DNS_MAX_WIRE];
		char pres[DNS_MAX_NAME + 1];

		/* end as the length: labels in place must stay inside rdata.
		 * The name must have a presentation form that fits, as owners
		 * must, so that dns_rdata_name() cannot fail on it. */
		wl = name_read(msg, end, &off, w, NULL);
		if (wl < 0 || n + (size_t)wl > DNS_MAX_RDATA ||
		    wire_to_pres(w, (size_t)wl, pres, sizeof(pres)))
			return -1;
		memcpy(rr->rdata + n, w, (size_t)wl);
		n += (size_t)wl;
	}
	if (end - off != after || n + after > DNS_MAX_RDATA)
		return -1;
	memcpy(rr->rdata + n, msg + off, after);
	rr->rdlen = (uint16_t)(n + after);
	return 0;
}

/* The OPT record h into q; opts must be well-formed (RFC 6891 §6.1.2).
 * Returns 0, -1 if malformed, or 1 if its version is not 0. */
static int
opt_read(const uint8_t *msg, const struct rr_hdr *h, struct dns_query *q)
{
	size_t off = h->rdoff, end = h->rdoff + h->rdlen;

	if (h->owner_len != 1) /* must be the root */
		return -1;
	while (off < end) {
		if (end - off < 4 || get16(msg + off + 2) > end - off - 4)
			return -1;
		off += 4 + get16(msg + off + 2);
	}
	q->edns = true;
	q->edns_size = h->rclass < EDNS_MIN_SIZE ? EDNS_MIN_SIZE : h->rclass;
	q->edns_do = h->ttl & EDNS_DO;
	return (h->ttl >> 16 & 0xff) ? 1 : 0;
}

/* The question at *off into q. Returns 0 or -1. */
static int
question_read(const uint8_t *msg, size_t len, size_t *off, struct dns_query *q)
{
	uint8_t wire[DNS_MAX_WIRE];
	int wl;

	wl = name_read(msg, len, off, wire, q->name_wire);
	if (wl < 0 || len - *off < 4 || wire_to_pres(wire, (size_t)wl, q->name, sizeof(q->name)))
		return -1;
	q->name_wire_len = (uint8_t)wl;
	q->qtype = get16(msg + *off);
	q->qclass = get16(msg + *off + 2);
	*off += 4;
	return 0;
}

static void
query_reset(struct dns_query *q)
{
	memset(q, 0, sizeof(*q));
	q->edns_size = EDNS_MIN_SIZE;
	q->no_question = true;
}

/* Queries: a QR = 1 message is FORMERR here; the caller should drop rather
 * than answer it, or two responders could bounce errors forever. A second
 * OPT is FORMERR (RFC 6891 §6.1.1), an OPT of another version BADVERS
 * (§6.1.3), other additional records (TSIG, cookies' kin) are skipped
 * unread, and bytes after the last record are FORMERR. */
int
dns_parse_query(const uint8_t *buf, size_t len, struct dns_query *q, bool *id_ok)
{
	struct rr_hdr h;
	size_t off = DNS_HDR_LEN;
	unsigned int i, ar;
	bool badvers = false;
	int r;

	query_reset(q);
	*id_ok = false;
	if (len < DNS_HDR_LEN)
		return DNS_R_FORMERR;
	q->id = get16(buf);
	q->flags = get16(buf + 2);
	*id_ok = true;
	if (q->flags & DNS_F_QR)
		return DNS_R_FORMERR;
	if ((q->flags & DNS_F_OPCODE) >> 11 != DNS_OPCODE_QUERY)
		return DNS_R_NOTIMP;
	if (get16(buf + 4) != 1 || get16(buf + 6) || get16(buf + 8))
		return DNS_R_FORMERR;
	if (question_read(buf, len, &off, q))
		return DNS_R_FORMERR;
	q->no_question = false;
	ar = get16(buf + 10);
	for (i = 0; i < ar; i++) {
		if (rr_hdr_read(buf, len, &off, &h))
			return DNS_R_FORMERR;
		if (h.type != DNS_T_OPT)
			continue;
		if (q->edns)
			return DNS_R_FORMERR;
		r = opt_read(buf, &h, q);
		if (r < 0) {
			q->edns = false;
			q->edns_size = EDNS_MIN_SIZE;
			q->edns_do = false;
			return DNS_R_FORMERR;
		}
		badvers = r > 0;
	}
	if (off != len)
		return DNS_R_FORMERR;
	return badvers ? DNS_R_BADVERS : 0;
}

/* Responses: opcode must be QUERY too; OPT only in additional, at most one,
 * any version; TTLs above 2^31 - 1 read as 0 (RFC 2181 §8); no bytes after
 * the last record; more than DNS_MAX_RRS records is an error. */
int
dns_parse_response(const uint8_t *buf, size_t len, struct dns_msg *m)
{
	unsigned int cnt[3], s, i;
	struct rr_hdr h;
	struct dns_rr *rr;
	size_t off = DNS_HDR_LEN;

	memset(m, 0, offsetof(struct dns_msg, rr));
	query_reset(&m->q);
	if (len < DNS_HDR_LEN)
		return -1;
	m->id = m->q.id = get16(buf);
	m->flags = m->q.flags = get16(buf + 2);
	m->rcode = m->flags & DNS_F_RCODE;
	if (!(m->flags & DNS_F_QR) || (m->flags & DNS_F_OPCODE) >> 11 != DNS_OPCODE_QUERY)
		return -1;
	if (get16(buf + 4) != 1 || question_read(buf, len, &off, &m->q))
		return -1;
	m->q.no_question = false;
	for (s = 0; s < 3; s++)
		cnt[s] = get16(buf + 6 + 2 * s);
	for (s = 0; s < 3; s++) {
		for (i = 0; i < cnt[s]; i++) {
			if (rr_hdr_read(buf, len, &off, &h))
				return -1;
			if (h.type == DNS_T_OPT) {
				if (s != DNS_S_ADDITIONAL || m->q.edns ||
				    opt_read(buf, &h, &m->q) < 0)
					return -1;
				continue;
			}
			if (m->nrr >= DNS_MAX_RRS)
				return -1;
			rr = &m->rr[m->nrr];
			rr->section = (enum dns_section)s;
			if (wire_to_pres(h.owner, (size_t)h.owner_len, rr->name, sizeof(rr->name)))
				return -1;
			rr->type = h.type;
			rr->rclass = h.rclass;
			rr->ttl = h.ttl > INT32_MAX ? 0 : h.ttl;
			if (rdata_expand(buf, &h, rr))
				return -1;
			m->nrr++;
		}
	}
	return off == len ? 0 : -1;
}

/* ---- building ---- */

/* Bounded writer: a write that does not fit sets bad and writes nothing. */
struct wr {
	uint8_t *buf;
	size_t len;
	size_t cap;
	bool bad;
};

static void
wr_bytes(struct wr *w, const void *p, size_t n)
{
	if (w->bad || n > w->cap - w->len) {
		w->bad = true;
		return;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void
wr16(struct wr *w, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	wr_bytes(w, b, sizeof(b));
}

static void
wr32(struct wr *w, uint32_t v)
{
	wr16(w, (uint16_t)(v >> 16));
	wr16(w, (uint16_t)v);
}

static void
wr_header(uint8_t *out, uint16_t id, uint16_t flags, const uint16_t cnt[4])
{
	int i;

	out[0] = (uint8_t)(id >> 8);
	out[1] = (uint8_t)id;
	out[2] = (uint8_t)(flags >> 8);
	out[3] = (uint8_t)flags;
	for (i = 0; i < 4; i++) {
		out[4 + 2 * i] = (uint8_t)(cnt[i] >> 8);
		out[5 + 2 * i] = (uint8_t)cnt[i];
	}
}

static void
wr_opt(struct wr *w, uint8_t ext_rcode, bool dnssec_ok)
{
	wr_bytes(w, "", 1);
	wr16(w, DNS_T_OPT);
	wr16(w, DNS_EDNS_SIZE);
	wr32(w, (uint32_t)ext_rcode << 24 | (dnssec_ok ? EDNS_DO : 0));
	wr16(w, 0);
}

size_t
dns_udp_max(const struct dns_query *q)
{
	if (!q->edns || q->edns_size <= EDNS_MIN_SIZE)
		return EDNS_MIN_SIZE;
	return q->edns_size < DNS_EDNS_SIZE ? q->edns_size : DNS_EDNS_SIZE;
}

int
dns_build_query(const struct dns_query *q, uint8_t *out, size_t outlen)
{
	uint16_t cnt[4] = {1, 0, 0, q->edns ? 1 : 0};
	struct wr w = {out, DNS_HDR_LEN, outlen, outlen < DNS_HDR_LEN};
	uint8_t wire[DNS_MAX_WIRE];
	int wl;

	wl = pres_to_wire(q->name, wire);
	if (wl < 0 || w.bad)
		return -1;
	wr_bytes(&w, wire, (size_t)wl);
	wr16(&w, q->qtype);
	wr16(&w, q->qclass);
	if (q->edns)
		wr_opt(&w, 0, false); /* no DO: we hand out no signatures */
	if (w.bad)
		return -1;
	wr_header(out, q->id, DNS_F_RD, cnt);
	return (int)w.len;
}

/* The question goes out in the client's bytes when they spell q->name;
 * records in section order (answer, authority, additional), each keeping
 * its place within its section; OPT-typed records in rrs are skipped, the
 * OPT is ours. When the limit is reached every later record is dropped
 * too, and TC is set only if an answer or authority record was among them:
 * leaving out additional data does not make an answer partial (RFC 2181
 * §9). The OPT always fits (its room is kept back) and carries the high
 * bits of rcode; an extended rcode without EDNS is sent as SERVFAIL. The
 * opcode (RFC 1035 §4.1.1: a NOTIMP reply to STATUS says STATUS, or dig
 * discards it) and CD (RFC 6840 §5.9) are copied from the query, as RD is. */
int
dns_build_response(const struct dns_query *q, int rcode, const struct dns_rr *rrs, int nrr,
		   size_t max_len, uint8_t *out, size_t outlen)
{
	uint16_t cnt[4] = {0, 0, 0, 0}, flags;
	uint8_t wire[DNS_MAX_WIRE];
	const uint8_t *qw = wire;
	size_t limit = max_len < outlen ? max_len : outlen, mark;
	struct wr w = {out, DNS_HDR_LEN, limit, limit < DNS_HDR_LEN};
	const struct dns_rr *rr;
	bool truncated = false, tc = false;
	int wl, s, i;

	if (rcode < 0 || rcode > 0xfff || nrr < 0 || (nrr && !rrs))
		return -1;
	for (i = 0; i < nrr; i++)
		if ((unsigned int)rrs[i].section > DNS_S_ADDITIONAL || rrs[i].rdlen > DNS_MAX_RDATA)
			return -1;
	if (rcode > DNS_F_RCODE && !q->edns)
		rcode = DNS_R_SERVFAIL;
	if (!q->no_question) {
		wl = pres_to_wire(q->name, wire);
		if (wl < 0)
			return -1;
		if (q->name_wire_len == wl && wire_equal_nocase(q->name_wire, wire, (size_t)wl))
			qw = q->name_wire;
		wr_bytes(&w, qw, (size_t)wl);
		wr16(&w, q->qtype);
		wr16(&w, q->qclass);
		cnt[0] = 1;
	}
	if (q->edns)
		w.cap = w.cap > DNS_OPT_LEN ? w.cap - DNS_OPT_LEN : 0;
	if (w.bad || w.len > w.cap)
		return -1;
	for (s = DNS_S_ANSWER; s <= DNS_S_ADDITIONAL && !truncated; s++) {
		for (i = 0; i < nrr && !truncated; i++) {
			rr = &rrs[i];
			if ((int)rr->section != s || rr->type == DNS_T_OPT)
				continue;
			mark = w.len;
			if (!q->no_question && !strcmp(rr->name, q->name)) {
				wr16(&w, DNS_PTR << 8 | DNS_HDR_LEN);
			} else {
				wl = pres_to_wire(rr->name, wire);
				if (wl < 0)
					return -1;
				wr_bytes(&w, wire, (size_t)wl);
			}
			wr16(&w, rr->type);
			wr16(&w, rr->rclass);
			wr32(&w, rr->ttl);
			wr16(&w, rr->rdlen);
			wr_bytes(&w, rr->rdata, rr->rdlen);
			if (w.bad) {
				w.len = mark;
				w.bad = false;
				truncated = true;
				tc = s != DNS_S_ADDITIONAL;
				break;
			}
			cnt[1 + s]++;
		}
	}
	if (q->edns) {
		w.cap += DNS_OPT_LEN;
		wr_opt(&w, (uint8_t)(rcode >> 4), q->edns_do);
		cnt[3]++;
	}
	if (w.bad)
		return -1;
	flags = DNS_F_QR | DNS_F_RA | (q->flags & (DNS_F_OPCODE | DNS_F_RD | DNS_F_CD)) |
		(rcode & DNS_F_RCODE);
	if (tc)
		flags |= DNS_F_TC;
	wr_header(out, q->id, flags, cnt);
	return (int)w.len;
}

int
dns_rdata_name(const struct dns_rr *rr, char *out, size_t outlen)
{
	size_t off, i;

	switch (rr->type) {
	case DNS_T_NS:
	case DNS_T_CNAME:
	case DNS_T_PTR:
	case DNS_T_SOA: /* its first name, the primary server */
		off = 0;
		break;
	case DNS_T_MX:
		off = 2;
		break;
	case DNS_T_SRV:
		off = 6;
		break;
	default:
		return -1;
	}
	if (rr->rdlen > DNS_MAX_RDATA || off >= rr->rdlen)
		return -1;
	/* find where the name ends; no pointers in expanded rdata */
	for (i = off; i < rr->rdlen && rr->rdata[i]; i += 1 + rr->rdata[i])
		if (rr->rdata[i] > DNS_MAX_LABEL)
			return -1;
	if (i >= rr->rdlen || i + 1 - off > DNS_MAX_WIRE)
		return -1;
	return wire_to_pres(rr->rdata + off, i + 1 - off, out, outlen);
}

int
dns_svcb_strip_ech(uint8_t *rdata, uint16_t *rdlen)
{
	size_t len = *rdlen, off = 2;

	if (len < 3)
		return 0;
	while (off < len && rdata[off]) { /* TargetName: uncompressed labels */
		if (rdata[off] > 63)
			return 0;
		off += 1u + rdata[off];
	}
	off++;
	while (off + 4 <= len) {
		uint16_t key = (uint16_t)(rdata[off] << 8 | rdata[off + 1]);
		size_t vlen = (size_t)(rdata[off + 2] << 8 | rdata[off + 3]);

		if (off + 4 + vlen > len)
			return 0;
		if (key == DNS_SVC_ECH) {
			memmove(rdata + off, rdata + off + 4 + vlen, len - off - 4 - vlen);
			*rdlen = (uint16_t)(len - 4 - vlen);
			return 1;
		}
		off += 4 + vlen;
	}
	return 0;
}

bool
dns_rr_addr(const struct dns_rr *rr, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (rr->type == DNS_T_A && rr->rdlen == 4) {
		ss->ss_family = AF_INET;
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, rr->rdata, 4);
		return true;
	}
	if (rr->type == DNS_T_AAAA && rr->rdlen == 16) {
		ss->ss_family = AF_INET6;
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, rr->rdata, 16);
		return true;
	}
	return false;
}
