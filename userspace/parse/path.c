// SPDX-License-Identifier: Apache-2.0
/* A request target's path in its normal form (see path.h): escapes of
 * unreserved bytes decoded, dot segments resolved, slashes merged, in one
 * pass that never writes more than it reads. What could mean one path to
 * the rules and another to a server is refused instead: a backslash, an
 * escaped NUL, an escaped slash beside a dot piece. */
#include <stdbool.h>
#include <string.h>

#include "parse/path.h"

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool
unreserved(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Is one of the pieces of seg between escaped slashes "." or ".."? Only
 * asked of a segment that has one ("%2F": escapes are upper-case here). */
static bool
escaped_dot_piece(const char *seg, size_t n)
{
	size_t start = 0, i;

	if (!memmem(seg, n, "%2F", 3))
		return false;
	for (i = 0; i <= n; i++) {
		if (i < n && !(i + 3 <= n && !memcmp(seg + i, "%2F", 3)))
			continue;
		if ((i - start == 1 && seg[start] == '.') ||
		    (i - start == 2 && seg[start] == '.' && seg[start + 1] == '.'))
			return true;
		start = i + 3;
		i += 2;
	}
	return false;
}

/* One segment of target from *i (up to '/' or end) decoded into out at *o.
 * Returns PARSE_DONE, PARSE_ERROR or PARSE_TOO_LONG. */
static enum parse_result
copy_segment(const char *t, size_t end, size_t *i, char *out, size_t outlen, size_t *o)
{
	static const char hex[] = "0123456789ABCDEF";

	while (*i < end && t[*i] != '/') {
		unsigned char c = (unsigned char)t[*i];
		int hi, lo, v;

		if (*o + 4 > outlen)
			return PARSE_TOO_LONG;
		if (c < 0x21 || c > 0x7e || c == '\\')
			return PARSE_ERROR;
		if (c != '%') {
			out[(*o)++] = (char)c;
			(*i)++;
			continue;
		}
		if (*i + 2 >= end || (hi = hexval(t[*i + 1])) < 0 || (lo = hexval(t[*i + 2])) < 0)
			return PARSE_ERROR;
		v = hi * 16 + lo;
		if (v == 0 || v == '\\')
			return PARSE_ERROR;
		if (unreserved(v)) {
			out[(*o)++] = (char)v;
		} else {
			out[(*o)++] = '%';
			out[(*o)++] = hex[v >> 4];
			out[(*o)++] = hex[v & 15];
		}
		*i += 3;
	}
	return PARSE_DONE;
}

enum parse_result
http_path_normalize(const char *target, char *out, size_t outlen, size_t *pathlen)
{
	const char *q;
	size_t end, i = 1, o = 1, qlen;

	if (!target || !out || outlen < 2)
		return PARSE_TOO_LONG;
	if (!strcmp(target, "*")) {
		memcpy(out, "*", 2);
		*pathlen = 1;
		return PARSE_DONE;
	}
	if (target[0] != '/')
		return PARSE_ERROR;
	q = strchr(target, '?');
	end = q ? (size_t)(q - target) : strlen(target);
	out[0] = '/';
	while (i <= end) {
		size_t seg = o, n;
		bool slash;
		enum parse_result r = copy_segment(target, end, &i, out, outlen, &o);

		if (r != PARSE_DONE)
			return r;
		n = o - seg;
		slash = i < end; /* the segment ended with a '/' */
		if (n && escaped_dot_piece(out + seg, n))
			return PARSE_ERROR;
		if (n == 1 && out[seg] == '.') {
			o = seg;
		} else if (n == 2 && out[seg] == '.' && out[seg + 1] == '.') {
			o = seg;
			if (o > 1) /* drop the segment before, keep its leading '/' */
				for (o--; out[o - 1] != '/'; o--)
					;
		} else if (n && slash) {
			out[o++] = '/';
		}
		if (!slash)
			break;
		i++;
	}
	*pathlen = o;
	qlen = q ? strlen(q) : 0;
	if (o + qlen + 1 > outlen)
		return PARSE_TOO_LONG;
	memcpy(out + o, q ? q : "", qlen + 1);
	return PARSE_DONE;
}
