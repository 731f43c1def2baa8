// SPDX-License-Identifier: Apache-2.0
/* A process's umask and resource limits (see plimits.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "lib/plimits.h"

_Static_assert(RLIM_NLIMITS == PLIMITS_N, "the resource limits are Linux's 16");
_Static_assert(RLIM_INFINITY == PLIMITS_INF, "unlimited is all ones");

void
plimits_get(struct plimits *l)
{
	memset(l, 0, sizeof(*l));
	l->umask = umask(0);
	umask(l->umask);
	for (int i = 0; i < PLIMITS_N; i++) {
		struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};

		getrlimit((__rlimit_resource_t)i, &r);
		l->cur[i] = r.rlim_cur;
		l->max[i] = r.rlim_max;
	}
	l->set = true;
}

/* v as text: decimal, or "-" for unlimited. */
static const char *
numtext(uint64_t v, char *b, size_t len)
{
	if (v == PLIMITS_INF)
		return "-";
	snprintf(b, len, "%" PRIu64, v);
	return b;
}

int
plimits_format(const struct plimits *l, char *buf, size_t len)
{
	size_t off = 0;
	int n = snprintf(buf, len, "%03o", (unsigned)l->umask);

	for (int i = 0; n >= 0 && (size_t)n < len - off && i < PLIMITS_N; i++) {
		char a[24], b[24];

		off += (size_t)n;
		n = snprintf(buf + off, len - off, " %s:%s", numtext(l->cur[i], a, sizeof(a)),
			     numtext(l->max[i], b, sizeof(b)));
	}
	return n < 0 || (size_t)n >= len - off ? -ENOSPC : 0;
}

/* One number or "-" up to sep; s advanced past sep. */
static int
num(const char **s, char sep, uint64_t *v)
{
	char *e;

	if (**s == '-') {
		*v = PLIMITS_INF;
		e = (char *)*s + 1;
	} else {
		if (**s < '0' || **s > '9')
			return -EINVAL;
		errno = 0;
		*v = strtoull(*s, &e, 10);
		if (errno || *v == PLIMITS_INF)
			return -EINVAL;
	}
	if (*e != sep)
		return -EINVAL;
	*s = sep ? e + 1 : e;
	return 0;
}

int
plimits_parse(const char *s, struct plimits *l)
{
	unsigned long m;
	char *e;

	memset(l, 0, sizeof(*l));
	if (s[0] < '0' || s[0] > '7')
		return -EINVAL;
	m = strtoul(s, &e, 8);
	if (m > 0777 || *e != ' ')
		return -EINVAL;
	l->umask = (mode_t)m;
	s = e + 1;
	for (int i = 0; i < PLIMITS_N; i++) {
		if (num(&s, ':', &l->cur[i]) || num(&s, i + 1 < PLIMITS_N ? ' ' : 0, &l->max[i]) ||
		    l->cur[i] > l->max[i]) {
			memset(l, 0, sizeof(*l));
			return -EINVAL;
		}
	}
	l->set = true;
	return 0;
}

int
plimits_apply(const struct plimits *l, int *which)
{
	umask(l->umask);
	for (int i = 0; i < PLIMITS_N; i++) {
		struct rlimit now, r;

		if (getrlimit((__rlimit_resource_t)i, &now)) {
			*which = i;
			return -errno;
		}
		r.rlim_max = l->max[i] < now.rlim_max ? l->max[i] : now.rlim_max;
		r.rlim_cur = l->cur[i] < r.rlim_max ? l->cur[i] : r.rlim_max;
		if ((r.rlim_cur != now.rlim_cur || r.rlim_max != now.rlim_max) &&
		    setrlimit((__rlimit_resource_t)i, &r)) {
			*which = i;
			return -errno;
		}
	}
	return 0;
}
