/* Durations on the command line (see duration.h): a bare number is
 * seconds; otherwise number-unit pairs (d, h, m, s), each unit at most once
 * and largest first, as in "1h30m". No fractions: every timer the options
 * set counts whole seconds. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"

static const struct {
	char unit;
	long secs;
} units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};

#define NUNITS (sizeof(units) / sizeof(units[0]))

int
duration_parse(const char *s, long max_s, long *out)
{
	size_t next = 0; /* units[] left to use: each once, largest first */
	long total = 0;
	bool bare = true;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		long v = 0;
		size_t u;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (v > (max_s - (*s - '0')) / 10)
				return -ERANGE;
			v = v * 10 + (*s - '0');
		}
		if (!*s && bare) {
			total = v; /* a bare number: seconds */
			break;
		}
		bare = false;
		for (u = next; u < NUNITS && units[u].unit != *s; u++)
			;
		if (u == NUNITS)
			return -EINVAL; /* no unit, an unknown one, repeated or out of order */
		s++;
		next = u + 1;
		if (v > max_s / units[u].secs || total > max_s - v * units[u].secs)
			return -ERANGE;
		total += v * units[u].secs;
	}
	if (total < 1 || total > max_s)
		return -ERANGE;
	*out = total;
	return 0;
}

void
duration_format(long secs, char *buf, unsigned long len)
{
	size_t n = 0;

	if (!len)
		return;
	buf[0] = 0;
	if (secs <= 0) {
		snprintf(buf, len, "0s");
		return;
	}
	for (size_t u = 0; u < NUNITS && secs; u++) {
		long v = secs / units[u].secs;

		if (!v)
			continue;
		secs -= v * units[u].secs;
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%ld%c", v, units[u].unit);
	}
}
