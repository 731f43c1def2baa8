// SPDX-License-Identifier: Apache-2.0
/* Durations on the command line, one syntax for every option: a decimal
 * number of seconds, or of minutes, hours or days with an m, h or d suffix,
 * as timeout(1) writes them ("30", "1.5s", "2m", ".5h", "1d"), or such
 * pairs largest unit first ("1h30m", "1m30s"). Pure, no I/O. */
#ifndef DURATION_H
#define DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Longest duration accepted: 10,000 days (about 27 years). */
#define DURATION_MAX_NS (10000ull * 86400 * 1000000000ull)

/* Parses s into *ns (nanoseconds; "0" is 0, which callers read as "off";
 * a positive value below 1 ns rounds up to 1 ns, never down to 0).
 * Returns 0, or -EINVAL (not a duration) / -ERANGE (over DURATION_MAX_NS)
 * with a message in errbuf; *ns is untouched then. */
int duration_parse(const char *s, uint64_t *ns, char *errbuf, size_t errlen);

/* The same syntax for timers that count whole seconds: *secs from min_s to
 * max_s. A fraction of a second ("1.5s"; "1.5m" is 90 s and fine) is
 * -EINVAL, out of range -ERANGE, with a message naming the range. */
int duration_parse_secs(const char *s, long min_s, long max_s, long *secs, char *errbuf,
			size_t errlen);

/* ns as the shortest exact text duration_parse() reads back in one unit
 * ("90s", "1.5s", "2m"; 250 ms is written "0.25s"); for messages. */
void duration_format(uint64_t ns, char *buf, size_t len);

/* duration_format() of whole seconds. */
void duration_format_secs(long secs, char *buf, size_t len);

#endif /* DURATION_H */
