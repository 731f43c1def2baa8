/* Durations (see duration.h): exact integer arithmetic, no strtod, so "0.1"
 * is 100,000,000 ns on every libc and locale; hex, exponents, signs,
 * spaces, "inf" and "nan" are refused where timeout(1) takes them through
 * strtod, because a policy option should read the same to everyone. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"

#define NS_PER_S    1000000000ull
#define FRAC_DIGITS 18 /* fraction digits kept exactly; any later nonzero one rounds up */

static int
fail(char *errbuf, size_t errlen, int err, const char *s)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen,
			 err == -ERANGE
				 ? "%s: longer than %llu days"
				 : "%s: expected a number of seconds, with an optional s, m, "
				   "h or d suffix (e.g. 30, 1.5, 2m, 1h)",
			 s, DURATION_MAX_NS / NS_PER_S / 86400);
	return err;
}

int
duration_parse(const char *s, uint64_t *ns, char *errbuf, size_t errlen)
{
	unsigned __int128 whole = 0, frac = 0, den = 1, total, unit = NS_PER_S;
	bool digits = false, sticky = false;
	const char *p = s;
	int nfrac = 0;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!s)
		return fail(errbuf, errlen, -EINVAL, "(null)");
	for (; *p >= '0' && *p <= '9'; p++) {
		digits = true;
		whole = whole * 10 + (unsigned)(*p - '0');
		if (whole > DURATION_MAX_NS) /* seconds alone already too many */
			return fail(errbuf, errlen, -ERANGE, s);
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
	if (!digits)
		return fail(errbuf, errlen, -EINVAL, s);
	switch (*p) {
	case '\0':
	case 's':
		break;
	case 'm':
		unit *= 60;
		break;
	case 'h':
		unit *= 3600;
		break;
	case 'd':
		unit *= 86400;
		break;
	default:
		return fail(errbuf, errlen, -EINVAL, s);
	}
	if (*p && p[1])
		return fail(errbuf, errlen, -EINVAL, s);
	/* frac/den of a unit, rounded up: a positive duration never reads as 0 */
	total = whole * unit + (frac * unit + den - 1) / den;
	if (sticky && (frac * unit) % den == 0)
		total++;
	if (total > DURATION_MAX_NS)
		return fail(errbuf, errlen, -ERANGE, s);
	*ns = (uint64_t)total;
	return 0;
}

void
duration_format(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		uint64_t ns;
		char suffix;
	} units[] = {{86400 * NS_PER_S, 'd'}, {3600 * NS_PER_S, 'h'}, {60 * NS_PER_S, 'm'}};
	char frac[16];
	int n;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
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
