// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the JSON policy loader in userspace/policy/config.c:
 * arbitrary bytes (not NUL-terminated: the loader must honour len) go to
 * config_load_buf() with a roomy and a tight error buffer. Besides memory
 * errors and leaks (ASan) it checks that the outcome is consistent: 0 with
 * an empty message or -errno with a non-empty one, the same answer and rule
 * count both times, and no rules added beyond what the input could hold.
 * A policy that loads then has its header hooks checked against its
 * secrets (policy_hooks_check()), with the same answer both times. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy *a = policy_new(), *b = policy_new();
	char big[512], tiny[8];
	char *buf = malloc(size ? size : 1); /* exact size: ASan catches a read past len */
	int ea, eb;

	if (!a || !b || !buf)
		goto out;
	memcpy(buf, data, size);
	ea = config_load_buf(a, buf, size, "fuzz.json", big, sizeof(big));
	eb = config_load_buf(b, buf, size, "fuzz.json", tiny, sizeof(tiny));
	if (ea != eb || policy_count(a) != policy_count(b))
		abort();
	if (ea > 0 || (!ea && big[0]) || (ea && !big[0]) || strlen(tiny) >= sizeof(tiny))
		abort();
	if (ea && ea != -EINVAL && ea != -ENOMEM && ea != -EFBIG)
		abort();
	if (policy_count(a) > size / 2)
		abort(); /* a rule needs at least two quote characters */
	if (!ea) {
		ea = policy_hooks_check(a, big, sizeof(big));
		eb = policy_hooks_check(b, tiny, sizeof(tiny));
		if (ea != eb || (ea && (ea != -EINVAL || !big[0])) || strlen(tiny) >= sizeof(tiny))
			abort();
	}
out:
	free(buf);
	policy_free(a);
	policy_free(b);
	return 0;
}
