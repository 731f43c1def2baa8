// SPDX-License-Identifier: Apache-2.0
/* JSON as egressctl writes and reads it, over jansson: numbers that are
 * whole stay integers, every string is valid UTF-8 whatever bytes it came
 * from, one-line and indented text, and a parse error's place (line,
 * column, byte offset; the JSON path for a duplicate key) in the words
 * every reader of a file uses. jansson keeps an object's keys in the order
 * they were set, and a key set again keeps its place. */
#ifndef JSONX_H
#define JSONX_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

/* v as JSON: an integer when it is whole and fits 64 bits, else a real. */
json_t *jsonx_number(double v);

/* s as a JSON string (NULL for NULL): bytes that are not UTF-8 become
 * U+FFFD, so that a name from a client never makes a document fail. */
json_t *jsonx_string(const char *s);

/* o[k] = the value; nothing when o is NULL. 0, or -1. */
int jsonx_set_str(json_t *o, const char *k, const char *s);
int jsonx_set_int(json_t *o, const char *k, long long v);
int jsonx_set_bool(json_t *o, const char *k, bool v);
int jsonx_set_null(json_t *o, const char *k);
/* A new array or object as o[k], borrowed from o; NULL on failure. */
json_t *jsonx_add_array(json_t *o, const char *k);
json_t *jsonx_add_object(json_t *o, const char *k);

/* o[k] if it is a string, else NULL; o[k] is true; o[k]'s number (0 when
 * it is none). */
const char *jsonx_get_str(const json_t *o, const char *k);
bool jsonx_get_true(const json_t *o, const char *k);
double jsonx_get_num(const json_t *o, const char *k);

/* j as one line (no spaces) or indented by two; malloc'd, without a
 * newline; NULL on failure. */
char *jsonx_line(const json_t *j);
char *jsonx_pretty(const json_t *j);
/* The same with every character past ASCII as \uXXXX: for what a terminal
 * shows that others wrote (a C1 control, U+0080 to U+009F, is one to some
 * terminals, as ESC is). */
char *jsonx_pretty_ascii(const json_t *j);

/* Parses len bytes (no NUL needed): any value at the top level, a
 * duplicate key refused, a nesting deeper than max_depth refused. Stops
 * after the value: *end is where it ended (data after it is the caller's
 * to judge). NULL with errbuf set to "JSON syntax error at line L,
 * column C (byte offset O): what" (or "PATH: duplicate key \"K\" at ...",
 * "JSON nesting too deep (limit N) at ..."). */
json_t *jsonx_parse(const char *buf, size_t len, unsigned int max_depth, size_t *end, char *errbuf,
		    size_t errlen);

/* 1-based line and column (in bytes) of byte off of buf. */
void jsonx_line_col(const char *buf, size_t off, unsigned int *line, unsigned int *col);

#endif /* JSONX_H */
