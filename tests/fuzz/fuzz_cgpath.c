// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for the container id of a cgroup path
 * (userspace/daemon/containers.c): the path is named by whoever made the
 * cgroup (a runtime, or a root job in the target), so any bytes. Besides
 * memory errors (ASan) it checks that an id is 64 lower-case hex digits
 * found in the path (case aside), that a tight buffer gets none, and
 * that the --containers address parser takes only what inet_pton does. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

#include "daemon/containers.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[65], tight[64], err[160], *text;
	struct in_addr a;
	uint32_t ip;
	bool got;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	got = ctr_id_of_path(text, id, sizeof(id));
	if (got) {
		if (strlen(id) != 64 || strspn(id, "0123456789abcdef") != 64)
			abort();
		if (!strcasestr(text, id))
			abort();
	} else if (id[0]) {
		abort();
	}
	if (ctr_id_of_path(text, tight, sizeof(tight)) || tight[0])
		abort();
	if (!ctr_parse_addr(text, &ip, err, sizeof(err)) &&
	    (inet_pton(AF_INET, text, &a) != 1 || a.s_addr != ip || !ip))
		abort();
	free(text);
	return 0;
}
