// SPDX-License-Identifier: Apache-2.0
/* The Docker API's JSON bodies over jansson (see json.h): the one file of
 * dockerapi/ that names the library. Keys are matched without regard to
 * case, as dockerd's Go decoder matches them. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>

#include "dockerapi/json.h"

#define J(n)  ((json_t *)(n))
#define CJ(n) ((const json_t *)(n))

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past
 * U+10FFFF. The offset of the first bad byte, or -1. */
static long
utf8_bad_at(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			k = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			k = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			k = 3;
			cp = c & 0x07;
		} else {
			return (long)i;
		}
		if (n - i <= k)
			return (long)i;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return (long)i;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return (long)i;
		i += k + 1;
	}
	return -1;
}

struct dj *
dj_parse(const char *buf, size_t len, char *err, size_t errlen)
{
	long bad = utf8_bad_at((const unsigned char *)buf, len);
	json_error_t e;
	json_t *root;

	if (bad >= 0) {
		snprintf(err, errlen, "the body is not UTF-8 (byte %ld)", bad);
		return NULL;
	}
	if (memchr(buf, 0, len)) {
		snprintf(err, errlen, "the body holds a NUL byte");
		return NULL;
	}
	/* a key twice is refused: which one dockerd takes is not ours to guess;
	 * data after the value too ("more than one JSON value") */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
	if (!root && strstr(e.text, "duplicate")) {
		snprintf(err, errlen, "the body has a key twice (%.60s)", e.text);
		return NULL;
	}
	if (!root) {
		snprintf(err, errlen, "the body is not JSON (near byte %d: %.60s)", e.position,
			 e.text);
		return NULL;
	}
	return (struct dj *)root;
}

void
dj_free(struct dj *doc)
{
	json_decref(J(doc));
}

char *
dj_print(const struct dj *doc)
{
	return json_dumps(CJ(doc), JSON_COMPACT | JSON_ENCODE_ANY);
}

bool
dj_is_object(const struct dj *n)
{
	return n && json_is_object(CJ(n));
}

bool
dj_is_array(const struct dj *n)
{
	return n && json_is_array(CJ(n));
}

bool
dj_is_null(const struct dj *n)
{
	return !n || json_is_null(CJ(n));
}

bool
dj_is_true(const struct dj *n)
{
	return n && json_is_true(CJ(n));
}

bool
dj_is_false(const struct dj *n)
{
	return n && json_is_false(CJ(n));
}

bool
dj_is_string(const struct dj *n)
{
	return n && json_is_string(CJ(n));
}

const char *
dj_str(const struct dj *n)
{
	return dj_is_string(n) ? json_string_value(CJ(n)) : NULL;
}

bool
dj_int(const struct dj *n, long long *out)
{
	if (!n || !json_is_integer(CJ(n)))
		return false;
	*out = (long long)json_integer_value(CJ(n));
	return true;
}

struct dj *
dj_get(const struct dj *obj, const char *key)
{
	const char *k;
	json_t *v;

	if (!dj_is_object(obj))
		return NULL;
	json_object_foreach(J(obj), k, v) {
		if (!strcasecmp(k, key))
			return (struct dj *)v;
	}
	return NULL;
}

int
dj_count(const struct dj *n)
{
	if (dj_is_object(n))
		return (int)json_object_size(CJ(n));
	if (dj_is_array(n))
		return (int)json_array_size(CJ(n));
	return 0;
}

struct dj *
dj_at(const struct dj *n, int i)
{
	return dj_is_array(n) && i >= 0 ? (struct dj *)json_array_get(CJ(n), (size_t)i) : NULL;
}

const char *
dj_key_at(const struct dj *obj, int i)
{
	const char *k;
	json_t *v;
	int at = 0;

	if (!dj_is_object(obj) || i < 0)
		return NULL;
	json_object_foreach(J(obj), k, v) {
		(void)v;
		if (at++ == i)
			return k;
	}
	return NULL;
}

static bool
key_printable(const char *k)
{
	for (; *k; k++)
		if ((unsigned char)*k < 0x20 || (unsigned char)*k > 0x7e)
			return false;
	return true;
}

int
dj_check_keys(const struct dj *obj, char *bad, size_t badlen)
{
	int n = dj_count(obj);

	if (!dj_is_object(obj))
		return 0;
	for (int i = 0; i < n; i++) {
		const char *a = dj_key_at(obj, i);

		if (!a || !key_printable(a)) {
			snprintf(bad, badlen, "a key with bytes outside printable ASCII");
			return -EINVAL;
		}
		for (int j = i + 1; j < n; j++) {
			const char *b = dj_key_at(obj, j);

			if (b && !strcasecmp(a, b)) {
				snprintf(bad, badlen, "\"%.64s\" twice", a);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static void
remove_ci(json_t *obj, const char *key)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, k, v)
	{
		(void)v;
		if (!strcasecmp(k, key))
			json_object_del(obj, k);
	}
}

int
dj_set_str(struct dj *obj, const char *key, const char *val)
{
	json_t *s;

	if (!dj_is_object(obj))
		return -EINVAL;
	remove_ci(J(obj), key);
	s = json_string(val);
	if (!s || json_object_set_new(J(obj), key, s))
		return -ENOMEM;
	return 0;
}

int
dj_append_str(struct dj *obj, const char *key, const char *val)
{
	struct dj *l = dj_get(obj, key);
	json_t *a = NULL, *s;

	if (!dj_is_object(obj) || (!dj_is_null(l) && !dj_is_array(l)))
		return -EINVAL;
	if (dj_is_null(l)) {
		remove_ci(J(obj), key);
		a = json_array();
		if (!a || json_object_set_new(J(obj), key, a))
			return -ENOMEM;
		l = (struct dj *)a;
	}
	s = json_string(val);
	if (!s || json_array_append_new(J(l), s))
		return -ENOMEM;
	return 0;
}

int
dj_set_at_str(struct dj *arr, int i, const char *val)
{
	json_t *s;

	if (!dj_is_array(arr) || i < 0 || (size_t)i >= json_array_size(J(arr)))
		return -EINVAL;
	s = json_string(val);
	if (!s || json_array_set_new(J(arr), (size_t)i, s))
		return -ENOMEM;
	return 0;
}

struct dj *
dj_object_member(struct dj *obj, const char *key)
{
	struct dj *m = dj_get(obj, key);
	json_t *o;

	if (dj_is_object(m))
		return m;
	if (!dj_is_object(obj) || !dj_is_null(m))
		return NULL;
	remove_ci(J(obj), key);
	o = json_object();
	if (!o || json_object_set_new(J(obj), key, o))
		return NULL;
	return (struct dj *)o;
}

char *
dj_message_json(const char *msg)
{
	json_t *o = json_object();
	char *s = NULL;

	if (o && !json_object_set_new(o, "message", json_string(msg)))
		s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}
