/* Durations as timeout(1) writes them: a decimal number of seconds, or of
 * minutes, hours or days with an m, h or d suffix ("30", "1.5s", "2m",
 * ".5h", "1d"). For --timeout and --kill-after; pure, no I/O. */
#ifndef DURATION_H
#define DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Longest duration accepted: 10,000 days (about 27 years). */
#define DURATION_MAX_NS (10000ull * 86400 * 1000000000ull)

/* Parses s into *ns (nanoseconds; "0" is 0, which callers read as "off";
 * a positive value below 1 ns rounds up to 1 ns, never down to 0).
 * Returns 0, or -EINVAL (not a duration) / -ERANGE (over DURATION_MAX_NS)
 * with a message in errbuf ("expected a number of seconds, with an
 * optional s, m, h or d suffix"). */
int duration_parse(const char *s, uint64_t *ns, char *errbuf, size_t errlen);

/* ns as the shortest exact text duration_parse() reads back ("90s",
 * "1.5s", "2m", "250ms" is written "0.25s"); for messages. */
void duration_format(uint64_t ns, char *buf, size_t len);

#endif /* DURATION_H */
