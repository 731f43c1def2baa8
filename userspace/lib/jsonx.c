// SPDX-License-Identifier: Apache-2.0
/* JSON over jansson (see jsonx.h): values as egressctl writes them, text
 * both ways, and where a parse error is, in words: its line and column,
 * the nesting that was too deep, the path of the object that has a key
 * twice. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonx.h"

#define JSONX_REAL_DIGITS 15 /* a real's significant digits in the text */
#define JSONX_PATH_LEVELS 64 /* levels a duplicate key's path names */
#define JSONX_SHOW_MAX	  40 /* bytes of a key or of jansson's words shown */

json_t *
jsonx_number(double v)
{
	if (isnan(v) || isinf(v))
		return json_null();
	if (v == trunc(v) && v > -9.2e18 && v < 9.2e18)
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* Bytes of the UTF-8 sequence s (n bytes) starts with (1 to 4), or 0
 * when it is none: cut short, overlong, a surrogate, beyond U+10FFFF. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t want;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		want = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		want = 3;
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		want = 4;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (n < want || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < want; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return want;
}

/* Offset of the first byte of buf (len) that is not UTF-8, or len. */
static size_t
utf8_bad_at(const char *buf, size_t len)
{
	const unsigned char *u = (const unsigned char *)buf;
	size_t i = 0, n;

	while (i < len && (n = utf8_len(u + i, len - i)))
		i += n;
	return i;
}

json_t *
jsonx_string(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n, left;
	char *fixed, *w;
	json_t *j;

	if (!s)
		return NULL;
	j = json_string(s);
	if (j)
		return j;
	left = strlen(s);
	fixed = malloc(left * 3 + 1); /* each byte at most U+FFFD's three */
	if (!fixed)
		return NULL;
	for (w = fixed; *u; u += n, left -= n) {
		n = utf8_len(u, left);
		if (n) {
			memcpy(w, u, n);
			w += n;
		} else {
			memcpy(w, "\xef\xbf\xbd", 3);
			w += 3;
			n = 1;
		}
	}
	*w = 0;
	j = json_string_nocheck(fixed);
	free(fixed);
	return j;
}

int
jsonx_set_str(json_t *o, const char *k, const char *s)
{
	return json_object_set_new(o, k, jsonx_string(s));
}

int
jsonx_set_int(json_t *o, const char *k, long long v)
{
	return json_object_set_new(o, k, json_integer(v));
}

int
jsonx_set_bool(json_t *o, const char *k, bool v)
{
	return json_object_set_new(o, k, json_boolean(v));
}

int
jsonx_set_null(json_t *o, const char *k)
{
	return json_object_set_new(o, k, json_null());
}

json_t *
jsonx_add_array(json_t *o, const char *k)
{
	json_t *a = json_array();

	return json_object_set_new(o, k, a) ? NULL : a;
}

json_t *
jsonx_add_object(json_t *o, const char *k)
{
	json_t *a = json_object();

	return json_object_set_new(o, k, a) ? NULL : a;
}

const char *
jsonx_get_str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

bool
jsonx_get_true(const json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

double
jsonx_get_num(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

char *
jsonx_line(const json_t *j)
{
	return j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY |
					 JSON_REAL_PRECISION(JSONX_REAL_DIGITS))
		 : NULL;
}

char *
jsonx_pretty(const json_t *j)
{
	return j ? json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY |
					 JSON_REAL_PRECISION(JSONX_REAL_DIGITS))
		 : NULL;
}

char *
jsonx_pretty_ascii(const json_t *j)
{
	return j ? json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_ENSURE_ASCII |
					 JSON_REAL_PRECISION(JSONX_REAL_DIGITS))
		 : NULL;
}

void
jsonx_line_col(const char *buf, size_t off, unsigned int *line, unsigned int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* n bytes of in, printable ASCII ('?' for other bytes), at most
 * JSONX_SHOW_MAX of them, into out. */
static void
show(const char *in, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n && i < JSONX_SHOW_MAX && in[i] && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)in[i];

		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (outlen)
		out[o] = 0;
}

/* Byte offset of the bracket that opens nesting level limit + 1 in the
 * first len bytes (strings skipped), or -1. */
static long
too_deep_at(const char *buf, size_t len, unsigned int limit)
{
	unsigned int depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > limit)
				return (long)i;
		} else if ((c == ']' || c == '}') && depth) {
			depth--;
		}
	}
	return -1;
}

/* One open array or object, as the path scanner sees it. */
struct path_level {
	bool arr;
	bool want_key;	    /* an object between '{' or ',' and its next key */
	unsigned int idx;   /* an array's current element */
	size_t key, keylen; /* an object's current key (raw bytes of buf) */
};

/* The JSON path ("allow[2]", "targets[0].allow") of the array or object
 * that byte off of buf (a parsed prefix) is in; returns where the string
 * off is in starts, or SIZE_MAX. */
static size_t
path_at(const char *buf, size_t off, char *path, size_t pathlen)
{
	struct path_level lv[JSONX_PATH_LEVELS];
	size_t str = SIZE_MAX, n = 0;
	unsigned int depth = 0;
	char key[JSONX_SHOW_MAX + 1];

	for (size_t i = 0; i < off; i++) {
		struct path_level *top =
			depth && depth <= JSONX_PATH_LEVELS ? &lv[depth - 1] : NULL;
		char c = buf[i];

		if (str != SIZE_MAX) {
			if (c == '\\') {
				i++;
			} else if (c == '"') {
				if (top && !top->arr && top->want_key) {
					top->key = str + 1;
					top->keylen = i - str - 1;
					top->want_key = false;
				}
				str = SIZE_MAX;
			}
		} else if (c == '"') {
			str = i;
		} else if (c == '{' || c == '[') {
			if (depth < JSONX_PATH_LEVELS)
				lv[depth] =
					(struct path_level){.arr = c == '[', .want_key = c == '{'};
			depth++;
		} else if ((c == '}' || c == ']') && depth) {
			depth--;
		} else if (c == ',' && top) {
			top->idx += top->arr;
			top->want_key = !top->arr;
		}
	}
	path[0] = 0;
	for (unsigned int l = 0; l + 1 < depth && l < JSONX_PATH_LEVELS && n < pathlen; l++) {
		if (lv[l].arr) {
			n += (size_t)snprintf(path + n, pathlen - n, "[%u]", lv[l].idx);
		} else {
			show(buf + lv[l].key, lv[l].keylen, key, sizeof(key));
			n += (size_t)snprintf(path + n, pathlen - n, "%s%s", n ? "." : "", key);
		}
	}
	return str;
}

static void
deep_error(const char *buf, size_t deep, unsigned int max_depth, char *errbuf, size_t errlen)
{
	unsigned int line, col;

	jsonx_line_col(buf, deep, &line, &col);
	snprintf(errbuf, errlen,
		 "JSON nesting too deep (limit %u) at line %u, column %u (byte offset %zu)",
		 max_depth, line, col, deep);
}

/* errbuf: what jansson said, at its place; or that the nesting was too
 * deep, when a bracket too deep (deep) comes before that place. */
static void
parse_error(const char *buf, size_t len, const json_error_t *e, long deep, unsigned int max_depth,
	    char *errbuf, size_t errlen)
{
	enum json_error_code code = json_error_code(e);
	size_t pos = e->position > 0 ? (size_t)e->position : 0, off, str, toklen;
	const char *tok;
	char path[256], key[JSONX_SHOW_MAX + 1], what[JSONX_SHOW_MAX * 3];
	unsigned int line, col;

	/* jansson's position is past the byte it stopped at: the end, for
	 * an input cut short */
	off = code == json_error_premature_end_of_input || !pos ? pos : pos - 1;
	if (off > len)
		off = len;
	if (deep >= 0 && (size_t)deep <= off) {
		deep_error(buf, (size_t)deep, max_depth, errbuf, errlen);
		return;
	}
	if (code == json_error_duplicate_key && off < len && buf[off] == '"' &&
	    (str = path_at(buf, off, path, sizeof(path))) != SIZE_MAX) {
		show(buf + str + 1, off - str - 1, key, sizeof(key));
		jsonx_line_col(buf, str, &line, &col);
		snprintf(errbuf, errlen,
			 "%s%sduplicate key \"%s\" at line %u, column %u (byte offset %zu)", path,
			 path[0] ? ": " : "", key, line, col, str);
		return;
	}
	/* "... near 'tok'": the place is where tok starts; bytes that are
	 * not UTF-8, where the first is */
	tok = strstr(e->text, " near '");
	if (code == json_error_invalid_utf8) {
		off = utf8_bad_at(buf, len);
	} else if (tok && code != json_error_premature_end_of_input) {
		tok += 7;
		toklen = strlen(tok) - 1;
		if (toklen && tok[toklen] == '\'' && toklen <= off + 1 &&
		    !memcmp(buf + off + 1 - toklen, tok, toklen))
			off = off + 1 - toklen;
	}
	show(e->text, strlen(e->text), what, sizeof(what));
	jsonx_line_col(buf, off, &line, &col);
	snprintf(errbuf, errlen, "JSON syntax error at line %u, column %u (byte offset %zu): %s",
		 line, col, off, what);
}

json_t *
jsonx_parse(const char *buf, size_t len, unsigned int max_depth, size_t *end, char *errbuf,
	    size_t errlen)
{
	json_error_t e;
	json_t *j;
	long deep;

	j = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK,
		       &e);
	if (j) {
		*end = e.position > 0 && (size_t)e.position <= len ? (size_t)e.position : len;
		deep = too_deep_at(buf, *end, max_depth);
		if (deep < 0)
			return j;
		json_decref(j);
		deep_error(buf, (size_t)deep, max_depth, errbuf, errlen);
		return NULL;
	}
	deep = too_deep_at(buf, len, max_depth);
	parse_error(buf, len, &e, deep, max_depth, errbuf, errlen);
	return NULL;
}
