// SPDX-License-Identifier: Apache-2.0
/* The rule engine's hash tables (engine.h): open addressing, linear
 * probing, at most 3/4 full, never shrinking; here their growth and
 * insertion, which only building a policy does (the lookup is inline in
 * engine.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/engine.h"
#include "policy/policy.h"

static struct hslot *
htab_slot(struct hslot *slots, size_t mask, const void *key, size_t klen, uint64_t hash)
{
	size_t i;

	for (i = hash & mask;; i = (i + 1) & mask) {
		struct hslot *s = &slots[i];

		if (!s->hash || (s->hash == hash && s->klen == klen && !memcmp(s->key, key, klen)))
			return s;
	}
}

int
htab_grow(struct htab *t)
{
	size_t cap = t->slots ? (t->mask + 1) * 2 : 8, i;
	struct hslot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; t->slots && i <= t->mask; i++) {
		const struct hslot *s = &t->slots[i];

		if (s->hash)
			*htab_slot(slots, cap - 1, s->key, s->klen, s->hash) = *s;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = cap - 1;
	return 0;
}

/* Makes room for one more key, so that the next htab_insert() cannot fail. */
int
htab_reserve(struct htab *t)
{
	if (t->slots && (t->used + 1) * 4 <= (t->mask + 1) * 3)
		return 0;
	return htab_grow(t);
}

/* The slot of key, created if new; htab_reserve() first. key must live as
 * long as the table; hash is hash_key() for names, hash_addr() otherwise. */
struct hslot *
htab_insert(struct htab *t, const void *key, size_t klen, uint64_t hash)
{
	struct hslot *s = htab_slot(t->slots, t->mask, key, klen, hash);

	if (!s->hash) {
		*s = (struct hslot){.hash = hash, .key = key, .klen = klen};
		t->used++;
	}
	return s;
}

void
htab_free(struct htab *t)
{
	free(t->slots);
	t->slots = NULL;
}
