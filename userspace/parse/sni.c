// SPDX-License-Identifier: Apache-2.0
/* The first bytes of a stream on the transparent and CONNECT paths: which
 * protocol it looks like (sniff_protocol) and, for TLS, the server name the
 * client asks for in its ClientHello (RFC 8446 §4.1.2, RFC 6066 §3). The
 * handshake may span several TLS records; its bytes are reassembled into a
 * bounded buffer on the stack and walked field by field, every length checked
 * against what contains it, so a name is reported only from a ClientHello
 * whose lengths all add up. Pure, nothing allocated or retained. Declared in
 * parse.h. */
#include <string.h>

#include "parse/parse.h"

#define TLS_CT_HANDSHAKE    0x16
#define TLS_HS_CLIENT_HELLO 1
#define TLS_RECORD_HDR	    5
#define TLS_RECORD_MAX	    16384 /* 2^14, TLSPlaintext.length (RFC 8446 §5.1) */
#define TLS_EXT_SNI	    0
#define SNI_HOST_NAME	    0
#define SNIFF_TOKEN_MAX	    23 /* longest method http_parse_request() takes */

/* Big-endian cursor over [p, end). Reads past the end set bad instead. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static size_t
rd_left(const struct rd *r)
{
	return r->end - r->p;
}

static const uint8_t *
rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *s = r->p;

	if (r->bad || n > rd_left(r)) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	return s;
}

static uint32_t
rd_u(struct rd *r, size_t n)
{
	const uint8_t *s = rd_bytes(r, n);
	uint32_t v = 0;
	size_t i;

	for (i = 0; s && i < n; i++)
		v = v << 8 | s[i];
	return v;
}

/* Sub-cursor over the next n bytes, for a length-prefixed vector. */
static struct rd
rd_sub(struct rd *r, size_t n)
{
	struct rd sub = {0};
	const uint8_t *s = rd_bytes(r, n);

	sub.p = s;
	sub.end = s ? s + n : NULL;
	sub.bad = !s;
	return sub;
}

static bool
sni_char_ok(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

/* server_name extension data: ServerNameList<1..2^16-1> of {name_type,
 * opaque<1..2^16-1>}. Only host_name (0) counts, and only once; other name
 * types (none defined) are skipped. */
static enum parse_result
sni_ext(struct rd ext, const uint8_t **host, size_t *hlen)
{
	struct rd list = rd_sub(&ext, rd_u(&ext, 2));

	if (list.bad || rd_left(&ext) || !rd_left(&list))
		return PARSE_ERROR;
	while (rd_left(&list)) {
		uint8_t type = rd_u(&list, 1);
		struct rd nm = rd_sub(&list, rd_u(&list, 2));
		size_t i, n = rd_left(&nm);

		if (nm.bad || !n)
			return PARSE_ERROR;
		if (type != SNI_HOST_NAME)
			continue;
		if (*host)
			return PARSE_ERROR;
		for (i = 0; i < n; i++)
			if (!sni_char_ok(nm.p[i]))
				return PARSE_ERROR;
		*host = nm.p;
		*hlen = n;
	}
	return PARSE_DONE;
}

/* ClientHello body (after the 4-byte handshake header). */
static enum parse_result
client_hello(struct rd r, const uint8_t **host, size_t *hlen)
{
	struct rd sid, cs, comp, exts;
	bool seen_sni = false;

	if (rd_u(&r, 1) != 3) /* legacy_version major: SSL 3 / TLS */
		return PARSE_ERROR;
	rd_bytes(&r, 1 + 32); /* minor, random */
	sid = rd_sub(&r, rd_u(&r, 1));
	cs = rd_sub(&r, rd_u(&r, 2));
	comp = rd_sub(&r, rd_u(&r, 1));
	if (r.bad || rd_left(&sid) > 32 || !rd_left(&cs) || rd_left(&cs) % 2 || !rd_left(&comp))
		return PARSE_ERROR;
	if (!rd_left(&r))
		return PARSE_DONE; /* no extensions at all (TLS <= 1.2) */
	exts = rd_sub(&r, rd_u(&r, 2));
	if (exts.bad || rd_left(&r))
		return PARSE_ERROR;
	while (rd_left(&exts)) {
		uint16_t type = rd_u(&exts, 2);
		struct rd ext = rd_sub(&exts, rd_u(&exts, 2));

		if (ext.bad)
			return PARSE_ERROR;
		if (type != TLS_EXT_SNI)
			continue;
		if (seen_sni) /* RFC 8446 §4.2: one extension of a type */
			return PARSE_ERROR;
		seen_sni = true;
		if (sni_ext(ext, host, hlen) != PARSE_DONE)
			return PARSE_ERROR;
	}
	return PARSE_DONE;
}

/* A record header, possibly cut short: content type handshake, version
 * 0x0301-0x0304, a length a handshake fragment may have. */
static enum parse_result
record_header(const uint8_t *p, size_t n, size_t *rlen)
{
	if (n >= 1 && p[0] != TLS_CT_HANDSHAKE)
		return PARSE_ERROR;
	if (n >= 2 && p[1] != 3)
		return PARSE_ERROR;
	if (n >= 3 && (p[2] < 1 || p[2] > 4))
		return PARSE_ERROR;
	if (n < TLS_RECORD_HDR)
		return PARSE_MORE;
	*rlen = (size_t)p[3] << 8 | p[4];
	if (!*rlen || *rlen > TLS_RECORD_MAX)
		return PARSE_ERROR;
	return PARSE_DONE;
}

enum parse_result
tls_parse_sni(const uint8_t *buf, size_t len, size_t max_len, char *name, size_t namelen)
{
	uint8_t hs[TLS_HELLO_MAX];
	size_t lim = len < max_len ? len : max_len;
	size_t off = 0, have = 0, need = 0, hlen = 0, i;
	enum parse_result more = len >= max_len ? PARSE_TOO_LONG : PARSE_MORE;
	const uint8_t *host = NULL;
	struct rd r;

	if (namelen)
		name[0] = '\0';
	/* Gather the handshake message: 4 header bytes, then need in all. */
	while (!need || have < need) {
		size_t rlen = 0, avail, take;
		enum parse_result res = record_header(buf + off, lim - off, &rlen);

		if (res == PARSE_MORE)
			return more;
		if (res != PARSE_DONE)
			return res;
		avail = lim - off - TLS_RECORD_HDR;
		if (avail > rlen)
			avail = rlen;
		take = avail < sizeof(hs) - have ? avail : sizeof(hs) - have;
		memcpy(hs + have, buf + off + TLS_RECORD_HDR, take);
		have += take;
		if (have && hs[0] != TLS_HS_CLIENT_HELLO)
			return PARSE_ERROR;
		if (!need && have >= 4) {
			need = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
			if (need > sizeof(hs) || need + TLS_RECORD_HDR > max_len)
				return PARSE_TOO_LONG;
		}
		if (need && have >= need)
			break;
		if (avail < rlen)
			return more; /* this record is still arriving */
		off += TLS_RECORD_HDR + rlen;
	}

	r.p = hs + 4;
	r.end = hs + need;
	r.bad = false;
	if (client_hello(r, &host, &hlen) != PARSE_DONE)
		return PARSE_ERROR;
	if (hlen >= namelen)
		return PARSE_TOO_LONG;
	for (i = 0; i < hlen; i++)
		name[i] = host[i] >= 'A' && host[i] <= 'Z' ? host[i] + ('a' - 'A') : host[i];
	name[hlen] = '\0';
	return PARSE_DONE;
}

int
sniff_protocol(const uint8_t *buf, size_t len)
{
	size_t i;

	if (!len)
		return -1;
	if (buf[0] == TLS_CT_HANDSHAKE) {
		if (len < 2)
			return -1;
		if (buf[1] != 3)
			return 0;
		if (len < 3)
			return -1;
		return buf[2] <= 4 ? 1 : 0;
	}
	for (i = 0; i < len; i++) {
		uint8_t c = buf[i];

		if (c == ' ')
			return i ? 2 : 0;
		if (i >= SNIFF_TOKEN_MAX)
			return 0;
		if (!(c >= 'A' && c <= 'Z') && !(i && (c == '-' || c == '_')))
			return 0;
	}
	return -1;
}
