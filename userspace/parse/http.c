// SPDX-License-Identifier: Apache-2.0
/* HTTP/1.x request heads and chunked body framing, as the proxy reads them
 * from untrusted clients (RFC 9110, RFC 9112): the request line in its
 * absolute, authority (CONNECT), origin and asterisk forms, header fields,
 * the framing headers (Content-Length, Transfer-Encoding), Host and
 * Connection, plus an incremental chunked decoder. Pure functions over
 * (buffer, length): nothing allocated or retained, input never assumed to be
 * NUL-terminated, every copy bounded; anything ambiguous is an error rather
 * than a guess, because a proxy that frames a message differently from the
 * server behind it is a request-smuggling hole. Declared in parse.h. Past
 * 800 lines as one idea: the request head and the chunked framing share
 * their token rules, and a proxy's framing must be read in one place to be
 * read the same way. */
#include <string.h>
#include <arpa/inet.h>

#include "parse/parse.h"

#define HTTP_LINE_MAX 4096 /* chunk-size and trailer lines */
#define HTTP_PORT     80

/* tchar (RFC 9110 §5.6.2): the bytes of methods, field names and codings. */
static bool
is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c);
}

static bool
is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* field-vchar or whitespace: what a field value may hold (RFC 9110 §5.5). */
static bool
is_field_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static unsigned char
to_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Case-insensitive comparison of two (pointer, length) strings. */
static bool
ieq_n(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (to_lower(a[i]) != to_lower(b[i]))
			return false;
	return true;
}

/* Case-insensitive comparison of (s, n) with the C string lit. */
static bool
ieq(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!lit[i] || to_lower(s[i]) != to_lower(lit[i]))
			return false;
	return !lit[n];
}

/* Next element of a comma-separated list (RFC 9110 §5.6.1) in [*p, end),
 * with OWS trimmed; commas inside quoted strings do not split. Empty
 * elements come back with *n == 0 for the caller to skip. False at the end. */
static bool
list_next(const char **p, const char *end, const char **elem, size_t *n)
{
	const char *s = *p, *e;
	bool quoted = false;

	if (!s)
		return false;
	for (e = s; e < end && (quoted || *e != ','); e++) {
		if (*e == '"')
			quoted = !quoted;
		else if (quoted && *e == '\\' && e + 1 < end)
			e++;
	}
	*p = e < end ? e + 1 : NULL; /* NULL: that was the last element */
	while (s < e && is_ows(*s))
		s++;
	while (e > s && is_ows(e[-1]))
		e--;
	*elem = s;
	*n = e - s;
	return true;
}

/* ---- request head ---- */

#define METHOD_MAX (sizeof(((struct http_request *)0)->method) - 1)
#define HOST_MAX   (sizeof(((struct http_request *)0)->host) - 1)
#define TARGET_MAX (sizeof(((struct http_request *)0)->target) - 1)

/* Where the head lies in buf: after any empty lines that precede the request
 * line (RFC 9112 §2.2) up to and including the blank line. Rejects NUL, CR
 * not followed by LF, LF not preceded by CR, and a method that cannot be a
 * token, as soon as it sees them, so a client that speaks something else is
 * turned away without waiting for max_head bytes. None of these checks can
 * fail on a prefix of a valid head. */
static enum parse_result
head_bounds(const char *buf, size_t len, size_t max_head, size_t *start, size_t *end)
{
	size_t lim = len < max_head ? len : max_head;
	size_t i, line_len = 0;
	bool started = false, in_method = true;

	*start = 0;
	for (i = 0; i < lim; i++) {
		unsigned char c = buf[i];

		if (c == '\0' || c == '\n')
			return PARSE_ERROR;
		if (c == '\r') {
			if (i + 1 == lim)
				break;
			if (buf[i + 1] != '\n')
				return PARSE_ERROR;
			i++;
			if (line_len == 0 && !started)
				*start = i + 1;
			else if (line_len == 0) {
				*end = i + 1;
				return PARSE_DONE;
			}
			in_method = false;
			line_len = 0;
			continue;
		}
		started = true;
		line_len++;
		if (!in_method)
			continue;
		if (c == ' ') {
			if (line_len == 1)
				return PARSE_ERROR;
			in_method = false;
		} else if (!is_tchar(c) || line_len > METHOD_MAX) {
			return PARSE_ERROR;
		}
	}
	return len >= max_head ? PARSE_TOO_LONG : PARSE_MORE;
}

/* Copies (s, n) lower-cased into host; false when it does not fit. */
static bool
copy_host(char host[HOST_MAX + 1], const char *s, size_t n)
{
	size_t i;

	if (n > HOST_MAX)
		return false;
	for (i = 0; i < n; i++)
		host[i] = to_lower(s[i]);
	host[n] = '\0';
	return true;
}

/* authority = host [ ":" port ] (RFC 9110 §4.2, RFC 3986 §3.2) without
 * userinfo. host is an IPv6 literal in brackets (checked with inet_pton,
 * stored without them) or a name / IPv4 address made of [A-Za-z0-9.-_]:
 * percent-encoding and the other sub-delims are legal URI syntax but never a
 * DNS name, and letting them through would only give policy something odd
 * to match. The port, when present, has 1-65535 and no empty value. Returns
 * 0, or -1 when malformed. */
static int
parse_authority(const char *s, size_t n, bool need_port, char host[HOST_MAX + 1], uint16_t *port)
{
	const char *h = s, *end = s + n, *p;
	size_t hlen;
	uint32_t v = 0;

	if (!n || memchr(s, '@', n))
		return -1;
	if (s[0] == '[') {
		char tmp[INET6_ADDRSTRLEN];
		struct in6_addr a6;
		const char *rb = memchr(s, ']', n);

		if (!rb)
			return -1;
		h = s + 1;
		hlen = rb - h;
		if (!hlen || hlen >= sizeof(tmp))
			return -1;
		memcpy(tmp, h, hlen);
		tmp[hlen] = '\0';
		if (inet_pton(AF_INET6, tmp, &a6) != 1)
			return -1;
		p = rb + 1;
		if (p < end && *p != ':')
			return -1;
	} else {
		for (p = s; p < end && *p != ':'; p++) {
			unsigned char c = *p;

			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
				return -1;
		}
		hlen = p - s;
		if (!hlen)
			return -1;
	}
	if (p == end) {
		if (need_port)
			return -1;
		v = HTTP_PORT;
	} else {
		if (++p == end)
			return -1; /* "host:" */
		for (; p < end; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			v = v * 10 + (*p - '0');
			if (v > 65535)
				return -1;
		}
		if (!v)
			return -1;
	}
	if (!copy_host(host, h, hlen))
		return -1;
	*port = v;
	return 0;
}

/* request-target bytes: visible ASCII; no fragment (RFC 9112 §3.2). */
static bool
target_chars_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c < 0x21 || c > 0x7e || c == '#')
			return false;
	}
	return true;
}

/* Copies the origin-form target; the absolute form's may lack the leading
 * slash ("http://h?q" → "/?q", "http://h" → "/"). A target that does not
 * fit is an error, or with long_ok (an API's origin-form target, which
 * raw_target names) leaves target "". */
static enum parse_result
set_target(struct http_request *req, const char *s, size_t n, bool long_ok)
{
	size_t off = 0;

	if (long_ok && n > TARGET_MAX) {
		req->target[0] = '\0';
		return PARSE_DONE;
	}
	if (!n || s[0] != '/')
		req->target[off++] = '/';
	if (n > TARGET_MAX - off)
		return PARSE_TOO_LONG;
	memcpy(req->target + off, s, n);
	req->target[off + n] = '\0';
	return PARSE_DONE;
}

/* method SP request-target SP HTTP-version; single spaces, nothing else. */
static enum parse_result
parse_request_line(const char *line, size_t n, struct http_request *req, bool long_ok)
{
	const char *end = line + n, *sp1, *sp2, *t, *a;
	size_t tlen, i;

	sp1 = memchr(line, ' ', n);
	if (!sp1 || sp1 == line || (size_t)(sp1 - line) > METHOD_MAX)
		return PARSE_ERROR;
	for (i = 0; line + i < sp1; i++) {
		if (!is_tchar(line[i]))
			return PARSE_ERROR;
		req->method[i] = line[i];
	}
	req->method[i] = '\0';
	t = sp1 + 1;
	sp2 = memchr(t, ' ', end - t);
	if (!sp2 || sp2 == t)
		return PARSE_ERROR;
	tlen = sp2 - t;
	if (end - (sp2 + 1) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7))
		return PARSE_ERROR;
	if (sp2[8] == '0')
		req->version_minor = 0;
	else if (sp2[8] == '1')
		req->version_minor = 1;
	else
		return PARSE_ERROR;
	if (!target_chars_ok(t, tlen))
		return PARSE_ERROR;
	req->raw_target = t;
	req->raw_target_len = tlen;

	if (!strcmp(req->method, "CONNECT")) {
		req->connect = true;
		if (parse_authority(t, tlen, true, req->host, &req->port))
			return PARSE_ERROR;
		req->target[0] = '\0';
		return PARSE_DONE;
	}
	if (t[0] == '/')
		return set_target(req, t, tlen, long_ok);
	if (tlen == 1 && t[0] == '*') {
		if (strcmp(req->method, "OPTIONS"))
			return PARSE_ERROR;
		strcpy(req->target, "*");
		return PARSE_DONE;
	}
	/* absolute-form; only http: CONNECT carries https. */
	if (tlen < 7 || !ieq(t, 7, "http://"))
		return PARSE_ERROR;
	req->absolute = true;
	a = t + 7;
	for (i = 0; a + i < sp2 && a[i] != '/' && a[i] != '?'; i++)
		;
	if (parse_authority(a, i, false, req->host, &req->port))
		return PARSE_ERROR;
	return set_target(req, a + i, sp2 - (a + i), false);
}

/* Content-Length (RFC 9110 §8.6, RFC 9112 §6.3): a list of the same
 * decimal value, possibly repeated over several lines, is that value; any
 * other byte, a different value or one past 2^64-1 is an error. */
static enum parse_result
content_length(const char *v, size_t n, bool *seen, uint64_t *len)
{
	const char *p = v, *e;
	size_t elen, i;
	bool any = false;

	while (list_next(&p, v + n, &e, &elen)) {
		uint64_t x = 0;

		if (!elen)
			continue;
		for (i = 0; i < elen; i++) {
			unsigned d = (unsigned char)e[i] - '0';

			if (d > 9 || x > (UINT64_MAX - d) / 10)
				return PARSE_ERROR;
			x = x * 10 + d;
		}
		if (*seen && x != *len)
			return PARSE_ERROR;
		*seen = true;
		*len = x;
		any = true;
	}
	return any ? PARSE_DONE : PARSE_ERROR;
}

/* A quoted-string (RFC 9110 §5.6.4) starting at s[0] == '"'; its length, or
 * 0 when unterminated or holding a control byte. */
static size_t
quoted_len(const char *s, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"')
			return i + 1;
		if (c == '\\' && ++i == n)
			return 0;
		if (!is_field_char(s[i]))
			return 0;
	}
	return 0;
}

/* transfer-coding = token *( OWS ";" OWS token "=" ( token / quoted-string ) ).
 * Returns the length of the coding name, or 0 when malformed; *params says
 * whether parameters followed. */
static size_t
coding_name(const char *s, size_t n, bool *params)
{
	size_t i = 0, name;

	while (i < n && is_tchar(s[i]))
		i++;
	name = i;
	*params = false;
	while (i < n) {
		size_t q;

		while (i < n && is_ows(s[i]))
			i++;
		if (i == n || s[i++] != ';')
			return 0;
		while (i < n && is_ows(s[i]))
			i++;
		q = i;
		while (i < n && is_tchar(s[i]))
			i++;
		if (i == q || i == n || s[i++] != '=' || i == n)
			return 0;
		if (s[i] == '"') {
			q = quoted_len(s + i, n - i);
			if (!q)
				return 0;
			i += q;
		} else {
			q = i;
			while (i < n && is_tchar(s[i]))
				i++;
			if (i == q)
				return 0;
		}
		*params = true;
	}
	return name;
}

/* Transfer-Encoding (RFC 9112 §6.1): codings apply in order over every
 * line; chunked must be the last one and may appear once, without
 * parameters. *chunked_last tracks whether the latest coding was chunked. */
static enum parse_result
transfer_encoding(const char *v, size_t n, bool *chunked_last)
{
	const char *p = v, *e;
	size_t elen;
	bool any = false;

	while (list_next(&p, v + n, &e, &elen)) {
		size_t name;
		bool params;

		if (!elen)
			continue;
		name = coding_name(e, elen, &params);
		if (!name || *chunked_last)
			return PARSE_ERROR;
		*chunked_last = ieq(e, name, "chunked");
		if (*chunked_last && params)
			return PARSE_ERROR;
		any = true;
	}
	return any ? PARSE_DONE : PARSE_ERROR;
}

/* Connection options that matter here: close and keep-alive. */
static void
connection_options(const char *v, size_t n, bool *close, bool *keep)
{
	const char *p = v, *e;
	size_t elen;

	while (list_next(&p, v + n, &e, &elen)) {
		if (ieq(e, elen, "close"))
			*close = true;
		else if (ieq(e, elen, "keep-alive"))
			*keep = true;
	}
}

/* field-line = field-name ":" OWS field-value OWS (RFC 9112 §5). */
static enum parse_result
parse_field_line(const char *line, size_t n, struct http_header *h)
{
	const char *colon = memchr(line, ':', n), *v, *end = line + n;
	size_t i;

	if (!colon || colon == line)
		return PARSE_ERROR;
	for (i = 0; line + i < colon; i++)
		if (!is_tchar(line[i]))
			return PARSE_ERROR; /* also whitespace before ':' and obs-fold */
	for (v = colon + 1; v < end; v++)
		if (!is_field_char(*v))
			return PARSE_ERROR;
	v = colon + 1;
	while (v < end && is_ows(*v))
		v++;
	while (end > v && is_ows(end[-1]))
		end--;
	h->name = line;
	h->name_len = colon - line;
	h->value = v;
	h->value_len = end - v;
	return PARSE_DONE;
}

/* req as nothing was parsed yet. */
static void
request_reset(struct http_request *req)
{
	req->method[0] = req->host[0] = req->target[0] = '\0';
	req->raw_target = NULL;
	req->raw_target_len = 0;
	req->port = 0;
	req->connect = req->absolute = req->keep_alive = false;
	req->version_minor = 0;
	req->body = HTTP_BODY_NONE;
	req->body_len = 0;
	req->nheaders = 0;
}

static enum parse_result
parse_request(const char *buf, size_t len, size_t max_head, struct http_request *req,
	      size_t *consumed, bool long_ok)
{
	const char *line, *eol, *head_end, *host_v = NULL;
	size_t start, end, host_n = 0, nhost = 0;
	bool cl_seen = false, te_seen = false, chunked_last = false;
	bool conn_close = false, conn_keep = false;
	uint64_t cl = 0;
	enum parse_result r;

	r = head_bounds(buf, len, max_head, &start, &end);
	if (r != PARSE_DONE)
		return r;

	request_reset(req);
	/* head_bounds() vouched for CRLF after every line up to the blank one. */
	head_end = buf + end - 2;
	line = buf + start;
	eol = memchr(line, '\r', head_end - line);
	r = parse_request_line(line, eol - line, req, long_ok);
	if (r != PARSE_DONE)
		return r;

	for (line = eol + 2; line < head_end; line = eol + 2) {
		struct http_header *h;

		eol = memchr(line, '\r', head_end - line);
		if (req->nheaders == HTTP_MAX_HEADERS)
			return PARSE_ERROR;
		h = &req->headers[req->nheaders++];
		if (parse_field_line(line, eol - line, h) != PARSE_DONE)
			return PARSE_ERROR;
		if (ieq(h->name, h->name_len, "host")) {
			nhost++;
			host_v = h->value;
			host_n = h->value_len;
		} else if (ieq(h->name, h->name_len, "content-length")) {
			if (content_length(h->value, h->value_len, &cl_seen, &cl) != PARSE_DONE)
				return PARSE_ERROR;
		} else if (ieq(h->name, h->name_len, "transfer-encoding")) {
			te_seen = true;
			if (transfer_encoding(h->value, h->value_len, &chunked_last) != PARSE_DONE)
				return PARSE_ERROR;
		} else if (ieq(h->name, h->name_len, "connection")) {
			connection_options(h->value, h->value_len, &conn_close, &conn_keep);
		}
	}

	/* Framing (RFC 9112 §6.1, §6.3). Transfer-Encoding in HTTP/1.0 means
	 * faulty framing; a CONNECT request has no content to frame. */
	if (te_seen && (cl_seen || !chunked_last || req->version_minor == 0))
		return PARSE_ERROR;
	if (req->connect && (te_seen || cl))
		return PARSE_ERROR;
	if (te_seen) {
		req->body = HTTP_BODY_CHUNKED;
	} else if (cl_seen) {
		req->body = HTTP_BODY_LENGTH;
		req->body_len = cl;
	}

	/* Host (RFC 9112 §3.2): at most one, always well-formed; it names the
	 * destination only for origin- and asterisk-form, where HTTP/1.1
	 * requires it. An HTTP/1.0 request without one leaves host "" for the
	 * caller to fill in from the original destination. */
	if (nhost > 1)
		return PARSE_ERROR;
	if (long_ok) {
		/* an API's server: the Host header names no destination
		 * (docker sends "docker", or nothing at all) */
		if (req->absolute || req->connect || req->target[0] == '*')
			return PARSE_ERROR;
	} else if (nhost && host_n) {
		char hbuf[HOST_MAX + 1];
		uint16_t hport;

		if (parse_authority(host_v, host_n, false, hbuf, &hport))
			return PARSE_ERROR;
		if (!req->connect && !req->absolute) {
			memcpy(req->host, hbuf, sizeof(hbuf));
			req->port = hport;
		}
	} else if (!req->connect && !req->absolute) {
		if (req->version_minor == 1)
			return PARSE_ERROR;
		req->port = HTTP_PORT;
	}

	req->keep_alive = req->version_minor == 1 ? !conn_close : conn_keep && !conn_close;
	*consumed = end;
	return PARSE_DONE;
}

enum parse_result
http_parse_request(const char *buf, size_t len, size_t max_head, struct http_request *req,
		   size_t *consumed)
{
	return parse_request(buf, len, max_head, req, consumed, false);
}

enum parse_result
http_parse_api_request(const char *buf, size_t len, size_t max_head, struct http_request *req,
		       size_t *consumed)
{
	return parse_request(buf, len, max_head, req, consumed, true);
}

const struct http_header *
http_find_header(const struct http_request *req, const char *name)
{
	size_t i;

	for (i = 0; i < req->nheaders; i++)
		if (ieq(req->headers[i].name, req->headers[i].name_len, name))
			return &req->headers[i];
	return NULL;
}

bool
http_header_has_token(const struct http_request *req, const char *name, const char *token)
{
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];
		const char *p = h->value, *e;
		size_t elen;

		if (!ieq(h->name, h->name_len, name))
			continue;
		while (list_next(&p, h->value + h->value_len, &e, &elen))
			if (ieq(e, elen, token))
				return true;
	}
	return false;
}

bool
http_is_hop_header(const struct http_request *req, const struct http_header *h)
{
	static const char *const hop[] = {
		"connection", "keep-alive", "proxy-connection",	 "proxy-authorization",
		"te",	      "trailer",    "transfer-encoding", "upgrade",
	};
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (ieq(h->name, h->name_len, hop[i]))
			return true;
	for (i = 0; i < req->nheaders; i++) {
		const struct http_header *c = &req->headers[i];
		const char *p = c->value, *e;
		size_t elen;

		if (!ieq(c->name, c->name_len, "connection"))
			continue;
		while (list_next(&p, c->value + c->value_len, &e, &elen))
			if (elen && elen == h->name_len && ieq_n(e, h->name, elen))
				return true;
	}
	return false;
}

/* ---- chunked body (RFC 9112 §7.1) ---- */

enum chunk_state {
	CH_SIZE = 0, /* chunk-size hex digits; remaining accumulates */
	CH_SIZE_WS,  /* BWS after the size: only ";" may follow */
	CH_EXT,	     /* chunk extensions, up to CR */
	CH_SIZE_LF,  /* LF ending the chunk-size line */
	CH_DATA,     /* remaining bytes of chunk data */
	CH_DATA_CR,  /* CRLF after the data */
	CH_DATA_LF,
	CH_TRAILER_START, /* start of a trailer line, or of the final CRLF */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_END_LF, /* LF of the final CRLF */
	CH_DONE,
	CH_FAILED,
};

static bool
is_hex(unsigned char c, unsigned *v)
{
	if (c >= '0' && c <= '9')
		*v = c - '0';
	else if (c >= 'a' && c <= 'f')
		*v = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		*v = c - 'A' + 10;
	else
		return false;
	return true;
}

/* One byte of the framing (not of chunk data) in state c->state: 0 when it
 * was taken, 1 when it ended the body, -1 when it is wrong. */
static int
chunk_step(struct http_chunked *c, unsigned char ch)
{
	unsigned v;

	switch (c->state) {
	case CH_SIZE:
		if (is_hex(ch, &v)) {
			if (c->remaining > UINT64_MAX >> 4)
				return -1;
			c->remaining = c->remaining << 4 | v;
			return 0;
		}
		if (c->line_len <= (ch == '\r' ? 0u : 1u))
			return -1; /* no digits before it */
		if (ch == '\r')
			c->state = CH_SIZE_LF;
		else if (ch == ';')
			c->state = CH_EXT;
		else if (is_ows(ch))
			c->state = CH_SIZE_WS;
		else
			return -1;
		return 0;
	case CH_SIZE_WS:
		if (ch == ';')
			c->state = CH_EXT;
		else if (!is_ows(ch))
			return -1;
		return 0;
	case CH_EXT:
		/* ext names, values, quoted strings: no syntax to enforce
		 * beyond staying on the line */
		if (ch == '\r')
			c->state = CH_SIZE_LF;
		else if (!is_field_char(ch))
			return -1;
		return 0;
	case CH_SIZE_LF:
		if (ch != '\n')
			return -1;
		c->line_len = 0;
		c->state = c->remaining ? CH_DATA : CH_TRAILER_START;
		return 0;
	case CH_DATA_CR:
		if (ch != '\r')
			return -1;
		c->state = CH_DATA_LF;
		return 0;
	case CH_DATA_LF:
		if (ch != '\n')
			return -1;
		c->state = CH_SIZE;
		return 0;
	case CH_TRAILER_START:
		if (ch == '\r') {
			c->state = CH_END_LF;
		} else if (is_tchar(ch)) {
			c->line_len = 1;
			c->state = CH_TRAILER_NAME;
		} else {
			return -1; /* obs-fold, empty name, ... */
		}
		return 0;
	case CH_TRAILER_NAME:
		if (ch == ':')
			c->state = CH_TRAILER_VALUE;
		else if (!is_tchar(ch))
			return -1;
		return 0;
	case CH_TRAILER_VALUE:
		if (ch == '\r')
			c->state = CH_TRAILER_LF;
		else if (!is_field_char(ch))
			return -1;
		return 0;
	case CH_TRAILER_LF:
		if (ch != '\n')
			return -1;
		c->line_len = 0;
		c->state = CH_TRAILER_START;
		return 0;
	case CH_END_LF:
		if (ch != '\n')
			return -1;
		c->state = CH_DONE;
		return 1;
	default:
		return -1;
	}
}

/* http_chunked_feed(), and with out the chunks' data appended at
 * out + *outlen. */
static enum parse_result
chunked_run(struct http_chunked *c, const char *buf, size_t len, size_t *used, char *out,
	    size_t *outlen)
{
	enum parse_result r = PARSE_ERROR;
	size_t i = 0;
	int step;

	*used = 0;
	if (c->state == CH_DONE)
		return PARSE_DONE;
	if (c->state == CH_FAILED)
		return PARSE_ERROR;

	while (i < len) {
		unsigned char ch = buf[i];

		if (c->state == CH_DATA) {
			size_t n = len - i;

			if (n > c->remaining)
				n = c->remaining;
			if (out) {
				memcpy(out + *outlen, buf + i, n);
				*outlen += n;
			}
			c->remaining -= n;
			i += n;
			if (!c->remaining)
				c->state = CH_DATA_CR;
			continue;
		}
		if (c->state == CH_SIZE || c->state == CH_SIZE_WS || c->state == CH_EXT ||
		    c->state == CH_TRAILER_NAME || c->state == CH_TRAILER_VALUE) {
			if (ch != '\r' && ++c->line_len > HTTP_LINE_MAX) {
				r = PARSE_TOO_LONG;
				goto fail;
			}
		}
		step = chunk_step(c, ch);
		if (step < 0)
			goto fail;
		if (step > 0) {
			*used = i + 1;
			return PARSE_DONE;
		}
		i++;
	}
	*used = len;
	return PARSE_MORE;
fail:
	c->state = CH_FAILED;
	*used = i;
	return r;
}

enum parse_result
http_chunked_feed(struct http_chunked *c, const char *buf, size_t len, size_t *used)
{
	return chunked_run(c, buf, len, used, NULL, NULL);
}

enum parse_result
http_chunked_decode(const char *buf, size_t len, char *out, size_t *outlen, size_t *used)
{
	struct http_chunked c = {0};

	*outlen = 0;
	return chunked_run(&c, buf, len, used, out, outlen);
}
