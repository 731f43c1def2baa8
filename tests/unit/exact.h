// SPDX-License-Identifier: Apache-2.0
/* Test input the parsers read from a buffer of exactly its size, so that
 * a read past the end is a heap overflow ASan reports. Include after
 * <cmocka.h>. */
#ifndef EXACT_H
#define EXACT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes written in place, as (pointer, length) arguments. */
#define MSG(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

/* A copy of (s, n) on the heap, exactly n bytes (one for n = 0, unread);
 * free() it. */
static inline void *
dup_exact(const void *s, size_t n)
{
	void *p = malloc(n ? n : 1);

	assert_non_null(p);
	memcpy(p, s, n);
	return p;
}

#endif
