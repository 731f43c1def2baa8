// SPDX-License-Identifier: Apache-2.0
/* The Docker API's JSON bodies as the judge (rules.c) reads and rewrites
 * them. Every JSON call of dockerapi/ is here, behind an opaque node, so
 * that the library under it can change in this one file.
 *
 * dockerd decodes bodies with Go's encoding/json, which matches an
 * object's keys to struct fields without regard to case (and folds the
 * Kelvin sign and the long s to k and s) and takes the last of two keys
 * that match one field; the judge must read what dockerd will. So
 * dj_check_keys() refuses an object in which two keys are equal but for
 * ASCII case, or a key holds a byte outside printable ASCII, and
 * dj_get() is case-insensitive; dj_parse() refuses bytes that are not
 * UTF-8 (Go would read U+FFFD where the judge read the bytes) and
 * anything after the value. */
#ifndef DOCKERAPI_JSON_H
#define DOCKERAPI_JSON_H

#include <stdbool.h>
#include <stddef.h>

struct dj; /* a JSON value (a node of a parsed document) */

/* Parses len bytes: one JSON value and nothing after it but whitespace.
 * NULL with err set (one line) on invalid JSON or UTF-8. */
struct dj *dj_parse(const char *buf, size_t len, char *err, size_t errlen);
void dj_free(struct dj *doc);
/* The document as compact JSON text (malloc'd), or NULL. */
char *dj_print(const struct dj *doc);

bool dj_is_object(const struct dj *n);
bool dj_is_array(const struct dj *n);
bool dj_is_null(const struct dj *n); /* also true for n == NULL (absent) */
bool dj_is_true(const struct dj *n);
bool dj_is_false(const struct dj *n);
bool dj_is_string(const struct dj *n);
/* The string's text, or NULL for anything but a string. */
const char *dj_str(const struct dj *n);

/* A whole number's value into *out: true, or false for anything else. */
bool dj_int(const struct dj *n, long long *out);

/* The member of object obj called key, ignoring ASCII case; NULL. */
struct dj *dj_get(const struct dj *obj, const char *key);
/* Members of an object or elements of an array; 0 for anything else. */
int dj_count(const struct dj *n);
/* Element i of an array, or NULL. */
struct dj *dj_at(const struct dj *n, int i);
/* The key of member i of an object (in the order of the body), or NULL. */
const char *dj_key_at(const struct dj *obj, int i);

/* An object's keys are each printable ASCII and none equals another but
 * for case: 0, or -EINVAL with the offending key in bad. */
int dj_check_keys(const struct dj *obj, char *bad, size_t badlen);

/* Sets obj's member key (every member that matches it ignoring case goes)
 * to the string val: 0 or -ENOMEM. */
int dj_set_str(struct dj *obj, const char *key, const char *val);
/* val appended to the list obj's key names (made when it has none). 0,
 * -EINVAL (key is something else), -ENOMEM. */
int dj_append_str(struct dj *obj, const char *key, const char *val);
/* The i-th member of array arr := the string val. 0, -EINVAL, -ENOMEM. */
int dj_set_at_str(struct dj *arr, int i, const char *val);
/* obj's member key, made an empty object when it is absent or null: the
 * object, or NULL (out of memory, or the member is something else). */
struct dj *dj_object_member(struct dj *obj, const char *key);

/* {"message":"MSG"}: dockerd's error body, as docker prints it
 * (malloc'd), or NULL. */
char *dj_message_json(const char *msg);

#endif /* DOCKERAPI_JSON_H */
