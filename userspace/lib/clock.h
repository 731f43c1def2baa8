/* Monotonic seconds: for expiry times (caches, idle timeouts), never for
 * what is shown to users. */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

#endif /* CLOCK_H */
