// SPDX-License-Identifier: Apache-2.0
/* The shape of a name: whether its labels look like data sent out in DNS
 * names (the exfiltration a denied lookup may be) rather than a host
 * somebody named. Pure functions over the name's bytes; the summary and
 * --suggest-policy use them so that neither proposes such a name as a
 * rule. Declared in policy.h. */
#include <math.h>
#include <string.h>

#include "policy/policy.h"

/* Is c a vowel (y counted, as names use it as one)? */
static int
vowel(unsigned char c)
{
	return c && strchr("aeiouy", c) != NULL;
}

const char *
policy_label_suspect(const char *label, size_t len)
{
	unsigned int count[256] = {0}, digits = 0, run = 0, maxrun = 0;
	double h = 0;

	if (len >= POLICY_LONG_LABEL)
		return "very long label";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)label[i];

		count[c]++;
		if (c >= '0' && c <= '9')
			digits++;
		if (c == '-' || vowel(c))
			run = 0;
		else if (++run > maxrun)
			maxrun = run;
	}
	/* short: letters and digits mixed with no vowel at all, the way a few
	 * bytes of base64 or base32 read once DNS lowercased them */
	if (len < POLICY_ENTROPY_MIN)
		return len >= POLICY_CODED_MIN && maxrun == len && digits && digits < len
			       ? "encoded-looking label"
			       : NULL;
	for (int c = 0; c < 256; c++)
		if (count[c]) {
			double p = (double)count[c] / (double)len;

			h -= p * log2(p);
		}
	if ((double)digits >= POLICY_DIGITS_MIN * (double)len || maxrun >= POLICY_RUN_MIN ||
	    h >= POLICY_ENTROPY_BITS)
		return "high-entropy label";
	return NULL;
}

const char *
policy_name_suspect(const char *name)
{
	const char *why = NULL;

	for (const char *l = name; *l && !why;) {
		size_t n = strcspn(l, ".");

		why = policy_label_suspect(l, n);
		l += n;
		if (*l == '.')
			l++;
	}
	return why;
}
