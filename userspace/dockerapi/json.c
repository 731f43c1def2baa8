// SPDX-License-Identifier: Apache-2.0
/* The Docker API's JSON bodies over cJSON (see json.h): the one file of
 * dockerapi/ that names the library. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cJSON.h>

#include "dockerapi/json.h"

#define J(n)  ((cJSON *)(n))
#define CJ(n) ((const cJSON *)(n))

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
	const char *end = NULL;
	long bad = utf8_bad_at((const unsigned char *)buf, len);
	cJSON *root;

	if (bad >= 0) {
		snprintf(err, errlen, "the body is not UTF-8 (byte %ld)", bad);
		return NULL;
	}
	if (memchr(buf, 0, len)) {
		snprintf(err, errlen, "the body holds a NUL byte");
		return NULL;
	}
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		snprintf(err, errlen, "the body is not JSON (near byte %ld)",
			 end ? (long)(end - buf) : 0L);
		return NULL;
	}
	while (end && end < buf + len &&
	       (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	if (!end || end != buf + len) {
		snprintf(err, errlen, "the body holds more than one JSON value");
		cJSON_Delete(root);
		return NULL;
	}
	return (struct dj *)root;
}

void
dj_free(struct dj *doc)
{
	cJSON_Delete(J(doc));
}

char *
dj_print(const struct dj *doc)
{
	return cJSON_PrintUnformatted(CJ(doc));
}

bool
dj_is_object(const struct dj *n)
{
	return n && cJSON_IsObject(CJ(n));
}

bool
dj_is_array(const struct dj *n)
{
	return n && cJSON_IsArray(CJ(n));
}

bool
dj_is_null(const struct dj *n)
{
	return !n || cJSON_IsNull(CJ(n));
}

bool
dj_is_true(const struct dj *n)
{
	return n && cJSON_IsTrue(CJ(n));
}

bool
dj_is_false(const struct dj *n)
{
	return n && cJSON_IsFalse(CJ(n));
}

bool
dj_is_string(const struct dj *n)
{
	return n && cJSON_IsString(CJ(n));
}

const char *
dj_str(const struct dj *n)
{
	return dj_is_string(n) ? CJ(n)->valuestring : NULL;
}

struct dj *
dj_get(const struct dj *obj, const char *key)
{
	const cJSON *m;

	if (!dj_is_object(obj))
		return NULL;
	for (m = CJ(obj)->child; m; m = m->next)
		if (m->string && !strcasecmp(m->string, key))
			return (struct dj *)m;
	return NULL;
}

int
dj_count(const struct dj *n)
{
	if (!n || !(cJSON_IsObject(CJ(n)) || cJSON_IsArray(CJ(n))))
		return 0;
	return cJSON_GetArraySize(CJ(n));
}

struct dj *
dj_at(const struct dj *n, int i)
{
	if (!n || !(cJSON_IsObject(CJ(n)) || cJSON_IsArray(CJ(n))))
		return NULL;
	return (struct dj *)cJSON_GetArrayItem(CJ(n), i);
}

const char *
dj_key(const struct dj *member)
{
	return member ? CJ(member)->string : NULL;
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
	const cJSON *a, *b;

	if (!dj_is_object(obj))
		return 0;
	for (a = CJ(obj)->child; a; a = a->next) {
		if (!a->string || !key_printable(a->string)) {
			snprintf(bad, badlen, "a key with bytes outside printable ASCII");
			return -EINVAL;
		}
		for (b = a->next; b; b = b->next)
			if (b->string && !strcasecmp(a->string, b->string)) {
				snprintf(bad, badlen, "\"%.64s\" twice", a->string);
				return -EINVAL;
			}
	}
	return 0;
}

static void
remove_ci(cJSON *obj, const char *key)
{
	cJSON *m = obj->child, *next;

	for (; m; m = next) {
		next = m->next;
		if (m->string && !strcasecmp(m->string, key))
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, m));
	}
}

int
dj_set_str(struct dj *obj, const char *key, const char *val)
{
	cJSON *s;

	if (!dj_is_object(obj))
		return -EINVAL;
	remove_ci(J(obj), key);
	s = cJSON_CreateString(val);
	if (!s || !cJSON_AddItemToObject(J(obj), key, s)) {
		cJSON_Delete(s);
		return -ENOMEM;
	}
	return 0;
}

struct dj *
dj_object_member(struct dj *obj, const char *key)
{
	struct dj *m = dj_get(obj, key);
	cJSON *o;

	if (dj_is_object(m))
		return m;
	if (!dj_is_object(obj) || !dj_is_null(m))
		return NULL;
	remove_ci(J(obj), key);
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToObject(J(obj), key, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return (struct dj *)o;
}

char *
dj_message_json(const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;

	if (o && cJSON_AddStringToObject(o, "message", msg))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}
