// SPDX-License-Identifier: Apache-2.0
/* The path of a request target as the policy's path rules judge it, and
 * as the request is then sent upstream: one normal form, so that what the
 * server sees is what was judged. Pure, fuzzed (tests/fuzz/fuzz_path.c). */
#ifndef PARSE_PATH_H
#define PARSE_PATH_H

#include <stddef.h>

#include "parse/parse.h"

/* Normalises target (an origin-form request target, "/a/b?q", or "*" of
 * OPTIONS) into out (outlen bytes, NUL included), query included:
 *  - percent-escapes of unreserved bytes (A-Z a-z 0-9 - . _ ~) decoded,
 *    the hex digits of every other escape upper-cased;
 *  - "." and ".." segments resolved (RFC 3986 §5.2.4; ".." at the root
 *    stays at the root), runs of '/' made one;
 *  - the query ("?..." to the end) kept as it was sent.
 * *pathlen is the length of the path part of out (before any '?').
 * PARSE_ERROR for a target that does not start with '/' (but "*"), a '%'
 * without two hex digits, an escaped NUL (%00), a backslash (raw or %5C:
 * some servers take it for '/'), an escaped '/' (%2F) next to a "." or
 * ".." piece of its segment (a server that decodes it would resolve it),
 * bytes outside visible ASCII; PARSE_TOO_LONG when out is too small. */
enum parse_result http_path_normalize(const char *target, char *out, size_t outlen,
				      size_t *pathlen);

#endif /* PARSE_PATH_H */
