// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the answer reader of userspace/cli/ask.c: what is typed
 * on the question terminal (by the user, or by the terminal itself in reply
 * to a query the confined command printed). The input is fed byte by byte
 * through lines as the asker does. Invariants: the line stays within its
 * buffer and holds printable ASCII only; the echo is the byte itself,
 * "\b \b" or nothing; an answer other than no comes only from an untainted
 * line that is y/yes/a/always; a line holding any byte outside 0x20-0x7e
 * (backspace aside) says no. ask_sanitize() leaves only printable ASCII. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/ask.h"

static void
check_answer(const struct ask_line *l, bool unclean)
{
	enum ask_answer a = ask_line_answer(l);
	char w[sizeof(l->buf)];
	size_t s = 0, e = l->len;

	if (a == ASK_NO)
		return;
	if (l->tainted || unclean)
		abort();
	while (s < e && l->buf[s] == ' ')
		s++;
	while (e > s && l->buf[e - 1] == ' ')
		e--;
	memcpy(w, l->buf + s, e - s);
	w[e - s] = '\0';
	if (a == ASK_ONCE && strcasecmp(w, "y") && strcasecmp(w, "yes"))
		abort();
	if (a == ASK_ALWAYS && strcasecmp(w, "a") && strcasecmp(w, "always"))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ask_line l;
	char echo[8], out[128], *src;
	bool unclean = false;
	size_t i;

	memset(&l, 0, sizeof(l));
	for (i = 0; i < size; i++) {
		enum ask_feed f = ask_line_feed(&l, data[i], echo);

		if (l.len >= sizeof(l.buf))
			abort();
		for (size_t j = 0; j < l.len; j++)
			if (l.buf[j] < 0x20 || l.buf[j] > 0x7e)
				abort();
		if (echo[0] && strcmp(echo, "\b \b") && !(echo[0] == (char)data[i] && !echo[1]))
			abort();
		if (data[i] != '\r' && data[i] != '\n' && data[i] != 0x7f && data[i] != 0x08 &&
		    (data[i] < 0x20 || data[i] > 0x7e))
			unclean = true;
		if (f == ASK_F_MORE)
			continue;
		if (f == ASK_F_DONE)
			check_answer(&l, unclean);
		memset(&l, 0, sizeof(l));
		unclean = false;
	}

	src = malloc(size + 1);
	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	ask_sanitize(out, sizeof(out), src);
	for (i = 0; out[i]; i++)
		if (out[i] < 0x20 || out[i] > 0x7e)
			abort();
	if (i >= sizeof(out) || (i < sizeof(out) - 1 && i != strlen(src)))
		abort();
	free(src);
	return 0;
}
