// SPDX-License-Identifier: Apache-2.0
/* Durations (see duration.h): exact integer arithmetic, no strtod, so "0.1"
 * is 100,000,000 ns on every libc and locale; hex, exponents, signs,
 * spaces, "inf" and "nan" are refused where timeout(1) takes them through
 * strtod, because a policy option should read the same to everyone. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/duration.h"

#define NS_PER_S    1000000000ull
#define FRAC_DIGITS 18 /* fraction digits kept exactly; any later nonzero one rounds up */

static const struct {
	char suffix;
	uint64_t ns;
} units[] = {
	{'d', 86400 * NS_PER_S}, {'h', 3600 * NS_PER_S}, {'m', 60 * NS_PER_S}, {'s', NS_PER_S}};

#define NUNITS (sizeof(units) / sizeof(units[0]))

static int
fail(char *errbuf, size_t errlen, int err, const char *s)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen,
			 err == -ERANGE
				 ? "%s: longer than %llu days"
				 : "%s: expected a number of seconds, with an optional s, m, "
				   "h or d suffix (e.g. 30, 1.5, 2m, 1h30m)",
			 s, DURATION_MAX_NS / NS_PER_S / 86400);
	return err;
}

/* One number at *pp ("12", "1.5", ".5") times unit ns, rounded up; the
 * fraction is kept exactly to FRAC_DIGITS digits, any nonzero digit after
 * them rounds up. Returns false when there is no digit. */
static bool
component(const char **pp, uint64_t unit, unsigned __int128 *out, bool *toobig)
{
	unsigned __int128 whole = 0, frac = 0, den = 1, v;
	const char *p = *pp;
	bool digits = false, sticky = false;
	int nfrac = 0;

	for (; *p >= '0' && *p <= '9'; p++) {
		digits = true;
		if (whole <= DURATION_MAX_NS) /* keep scanning; the caller says ERANGE */
			whole = whole * 10 + (unsigned)(*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			digits = true;
			if (nfrac < FRAC_DIGITS) {
				frac = frac * 10 + (unsigned)(*p - '0');
				den *= 10;
				nfrac++;
			} else if (*p != '0') {
				sticky = true;
			}
		}
	}
	*pp = p;
	if (!digits)
		return false;
	if (whole > DURATION_MAX_NS) {
		*toobig = true;
		return true;
	}
	/* frac/den of a unit, rounded up: a positive duration never reads as 0 */
	v = whole * unit + (frac * unit + den - 1) / den;
	if (sticky && (frac * unit) % den == 0)
		v++;
	*out = v;
	return true;
}

int
duration_parse(const char *s, uint64_t *ns, char *errbuf, size_t errlen)
{
	unsigned __int128 total = 0;
	size_t next = 0; /* units[] still usable: each once, largest first */
	const char *p = s;
	bool toobig = false;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!s)
		return fail(errbuf, errlen, -EINVAL, "(null)");
	do {
		const char *start = p;
		unsigned __int128 v = 0;
		size_t u;

		/* the unit decides the value, so find it first */
		while ((*p >= '0' && *p <= '9') || *p == '.')
			p++;
		if (!*p && start == s) {
			u = NUNITS - 1; /* a bare number: seconds */
		} else {
			for (u = next; u < NUNITS && units[u].suffix != *p; u++)
				;
			if (u == NUNITS) /* none, unknown, repeated or out of order */
				return fail(errbuf, errlen, -EINVAL, s);
		}
		p = start;
		if (!component(&p, units[u].ns, &v, &toobig) || (*p && *p != units[u].suffix))
			return fail(errbuf, errlen, -EINVAL, s);
		if (*p)
			p++;
		next = u + 1;
		if (!toobig) {
			total += v;
			toobig = total > DURATION_MAX_NS;
		}
	} while (*p);
	if (toobig)
		return fail(errbuf, errlen, -ERANGE, s);
	*ns = (uint64_t)total;
	return 0;
}

int
duration_parse_secs(const char *s, long min_s, long max_s, long *secs, char *errbuf, size_t errlen)
{
	char lo[32], hi[32];
	uint64_t ns;
	int r = duration_parse(s, &ns, errbuf, errlen);

	if (r == -EINVAL)
		return r;
	duration_format_secs(min_s, lo, sizeof(lo));
	duration_format_secs(max_s, hi, sizeof(hi));
	if (!r && ns % NS_PER_S) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s: whole seconds only (from %s to %s)", s, lo,
				 hi);
		return -EINVAL;
	}
	if (r || ns / NS_PER_S < (uint64_t)min_s || ns / NS_PER_S > (uint64_t)max_s) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s: expected a duration from %s to %s", s, lo,
				 hi);
		return -ERANGE;
	}
	*secs = (long)(ns / NS_PER_S);
	return 0;
}

void
duration_format(uint64_t ns, char *buf, size_t len)
{
	char frac[16];
	int n;

	if (!len)
		return;
	for (size_t i = 0; i < NUNITS - 1; i++) {
		if (ns && ns % units[i].ns == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(ns / units[i].ns),
				 units[i].suffix);
			return;
		}
	}
	if (ns % NS_PER_S == 0) {
		snprintf(buf, len, "%llus", (unsigned long long)(ns / NS_PER_S));
		return;
	}
	n = snprintf(frac, sizeof(frac), "%09llu", (unsigned long long)(ns % NS_PER_S));
	while (n > 1 && frac[n - 1] == '0')
		frac[--n] = '\0';
	snprintf(buf, len, "%llu.%ss", (unsigned long long)(ns / NS_PER_S), frac);
}

void
duration_format_secs(long secs, char *buf, size_t len)
{
	duration_format(secs > 0 ? (uint64_t)secs * NS_PER_S : 0, buf, len);
}
