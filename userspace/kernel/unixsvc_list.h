// SPDX-License-Identifier: Apache-2.0
/* The list of filesystem unix socket names that bpf/unix.c denies or lets
 * through, as plain data: what the loader writes into egr_unix_paths
 * (loader_unix_set) and checks a take-over against (root_len). Built,
 * matched and named by sandbox/unixsvc.c (whose header includes this one);
 * kept here so that the kernel side reads it without depending on the
 * sandbox, which stands above it. */
#ifndef UNIXSVC_LIST_H
#define UNIXSVC_LIST_H

#include <stdbool.h>
#include <stddef.h>

#define UNIXSVC_MAX	 128
#define UNIXSVC_PATH_MAX 108 /* sizeof(sun_path) */

struct unixsvc_entry {
	char path[UNIXSVC_PATH_MAX]; /* absolute; one "/run/user/" + "*" + "/" allowed */
	bool allow;		     /* --allow-unix: let through (over a "*" entry too) */
};

struct unixsvc {
	struct unixsvc_entry e[UNIXSVC_MAX];
	int n;
	size_t root_len; /* test builds: the length of the prefix of every default */
};

#endif /* UNIXSVC_LIST_H */
