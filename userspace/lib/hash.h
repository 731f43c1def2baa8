// SPDX-License-Identifier: Apache-2.0
/* FNV-1a, the hash of the daemon's small chained tables (DNS cache and
 * learned names, lookup cache, run summary): cheap, and good enough for keys
 * that are not chosen to collide (the tables are bounded). */
#ifndef HASH_H
#define HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_BASIS 2166136261u

/* h (FNV1A_BASIS, or a running hash) extended by n bytes at p. */
static inline uint32_t
fnv1a(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* The same for a NUL-terminated string. */
static inline uint32_t
fnv1a_str(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

#endif /* HASH_H */
