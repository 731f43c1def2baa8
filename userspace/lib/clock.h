// SPDX-License-Identifier: Apache-2.0
/* Clocks: monotonic seconds for expiry times (caches, idle timeouts),
 * never for what is shown to users, and monotonic nanoseconds for
 * durations; and wall-clock times as users read them (RFC 3339, UTC,
 * milliseconds). */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static inline uint64_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

static inline uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "2026-12-01T19:52:23.214Z" for ms milliseconds since the epoch; buf of
 * at least 25 bytes. */
static inline void
rfc3339_ms(uint64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03uZ", (unsigned)(ms % 1000));
}

#endif /* CLOCK_H */
