// SPDX-License-Identifier: Apache-2.0
/* Response heads from upstream servers (see http_resp.h). The bytes come
 * from whatever server an allowed name points at: treated as hostile. */
#include <string.h>
#include <strings.h>

#include "parse/http_resp.h"

static bool
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("!#$%&'*+-.^_`|~", c);
}

/* Finds the end of the head: returns the length including the blank line,
 * 0 if incomplete, -1 on a bare CR or NUL. */
static long
head_end(const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (b[i] == 0 || (b[i] == '\n' && (i == 0 || b[i - 1] != '\r')))
			return -1;
		if (b[i] == '\r' && (i + 1 >= len || b[i + 1] != '\n'))
			return i + 1 >= len ? 0 : -1;
		if (b[i] == '\n' && i >= 1 && b[i - 1] == '\r' && i >= 3 && b[i - 2] == '\n' &&
		    b[i - 3] == '\r')
			return (long)i + 1;
	}
	return 0;
}

static bool
token_in_list(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok), i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && !strncasecmp(v + s, tok, tl))
			return true;
	}
	return false;
}

/* The last coding of a Transfer-Encoding value. */
static bool
last_is_chunked(const char *v, size_t n)
{
	size_t e = n, s;

	while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	s = e;
	while (s > 0 && v[s - 1] != ',')
		s--;
	while (s < e && (v[s] == ' ' || v[s] == '\t'))
		s++;
	return e - s == 7 && !strncasecmp(v + s, "chunked", 7);
}

static int
parse_length(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i = 0;
	bool any = false;

	/* a list of identical values ("5, 5") is allowed */
	while (i < n) {
		uint64_t y = 0;
		size_t d = 0;

		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		while (i < n && v[i] >= '0' && v[i] <= '9') {
			if (y > (UINT64_MAX - 9) / 10)
				return -1;
			y = y * 10 + (uint64_t)(v[i] - '0');
			i++;
			d++;
		}
		if (!d)
			return -1;
		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i < n && v[i] != ',')
			return -1;
		if (i < n)
			i++;
		if (any && y != x)
			return -1;
		x = y;
		any = true;
	}
	if (!any)
		return -1;
	*out = x;
	return 0;
}

enum parse_result
http_parse_response(const char *buf, size_t len, size_t max_head, bool head_request,
		    struct http_response *r, size_t *consumed)
{
	bool have_len = false, chunked = false, te = false, keep_alive = false;
	long end = head_end(buf, len < max_head ? len : max_head);
	size_t i, line_end;

	memset(r, 0, sizeof(*r));
	if (end < 0)
		return PARSE_ERROR;
	if (end == 0)
		return len >= max_head ? PARSE_TOO_LONG : PARSE_MORE;
	/* status line: HTTP/1.x SP 3DIGIT SP reason */
	if (end < 17 || memcmp(buf, "HTTP/1.", 7) || (buf[7] != '0' && buf[7] != '1') ||
	    buf[8] != ' ')
		return PARSE_ERROR;
	r->version_minor = buf[7] - '0';
	for (i = 9; i < 12; i++)
		if (buf[i] < '0' || buf[i] > '9')
			return PARSE_ERROR;
	r->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (r->status < 100 || (buf[12] != ' ' && buf[12] != '\r'))
		return PARSE_ERROR;
	line_end = 12;
	while (buf[line_end] != '\r')
		line_end++;
	i = line_end + 2;
	while (i + 2 <= (size_t)end && buf[i] != '\r') {
		struct http_header *h;
		size_t ns = i, ne, vs, ve;

		while (i < (size_t)end && is_tchar((unsigned char)buf[i]))
			i++;
		ne = i;
		if (ne == ns || buf[i] != ':')
			return PARSE_ERROR;
		i++;
		while (buf[i] == ' ' || buf[i] == '\t')
			i++;
		vs = i;
		while (buf[i] != '\r')
			i++;
		ve = i;
		while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
			ve--;
		i += 2;
		if (r->nheaders == HTTP_MAX_HEADERS)
			return PARSE_ERROR;
		h = &r->headers[r->nheaders++];
		h->name = buf + ns;
		h->name_len = ne - ns;
		h->value = buf + vs;
		h->value_len = ve - vs;
		if (h->name_len == 14 && !strncasecmp(h->name, "content-length", 14)) {
			uint64_t v;

			if (parse_length(h->value, h->value_len, &v) ||
			    (have_len && v != r->body_len))
				return PARSE_ERROR;
			have_len = true;
			r->body_len = v;
		} else if (h->name_len == 17 && !strncasecmp(h->name, "transfer-encoding", 17)) {
			te = true;
			chunked = last_is_chunked(h->value, h->value_len);
		} else if (h->name_len == 10 && !strncasecmp(h->name, "connection", 10)) {
			if (token_in_list(h->value, h->value_len, "close"))
				r->close = true;
			if (token_in_list(h->value, h->value_len, "keep-alive"))
				keep_alive = true;
		}
	}
	if (r->version_minor == 0 && !keep_alive)
		r->close = true;
	*consumed = (size_t)end;
	if (head_request || (r->status >= 100 && r->status < 200) || r->status == 204 ||
	    r->status == 304) {
		r->body = HTTP_BODY_NONE;
	} else if (te) {
		if (chunked) {
			r->body = HTTP_BODY_CHUNKED;
		} else {
			r->until_close = true;
			r->close = true;
		}
	} else if (have_len) {
		r->body = HTTP_BODY_LENGTH;
	} else {
		r->until_close = true;
		r->close = true;
	}
	return PARSE_DONE;
}

enum parse_result
http_connect_feed(struct http_connect_reader *r, const char *data, size_t n, size_t *take,
		  int *status)
{
	struct http_response resp;
	size_t room = sizeof(r->head) - r->len, m = n < room ? n : room, used = 0;
	enum parse_result res;

	*take = 0;
	memcpy(r->head + r->len, data, m);
	res = http_parse_response(r->head, r->len + m, sizeof(r->head), true, &resp, &used);
	if (res == PARSE_MORE) {
		if (m < n)
			return PARSE_TOO_LONG;
		r->len += m;
		*take = m;
		return PARSE_MORE;
	}
	if (res != PARSE_DONE)
		return res;
	/* the head did not end within what was taken before (that was
	 * PARSE_MORE), so it ends in data */
	if (used <= r->len)
		return PARSE_ERROR;
	*take = used - r->len;
	r->len = used;
	*status = resp.status;
	return PARSE_DONE;
}
