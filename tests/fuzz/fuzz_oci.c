// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for an OCI bundle's config.json and dockerd's
 * config.v2.json as selectors read them (daemon/oci.c): a container's
 * runtime writes them and a tenant picks the annotations and labels; each
 * input goes to both parsers. Invariants: a parse that succeeds has at most
 * OCI_MAX_ANNOTATIONS entries, each key non-empty and each key and value a
 * C string, and oci_get finds every key it listed; a failed one says why
 * and leaves nothing. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int rc, struct oci_info *in, const char *err, size_t size)
{
	if (rc == 0) {
		if (in->n < 0 || in->n > OCI_MAX_ANNOTATIONS)
			abort();
		for (int i = 0; i < in->n; i++)
			if (!in->keys[i][0] || !oci_get(in, in->keys[i]) ||
			    strlen(in->vals[i]) > size)
				abort();
		oci_free(in);
	} else if (!err[0] || in->n) {
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_info in;
	char err[400] = "";

	check(oci_parse((const char *)data, size, &in, err, sizeof(err)), &in, err, size);
	err[0] = 0;
	check(oci_parse_docker((const char *)data, size, &in, err, sizeof(err)), &in, err, size);
	return 0;
}
