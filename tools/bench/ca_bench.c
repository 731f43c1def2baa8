// SPDX-License-Identifier: Apache-2.0
/* Benchmark of HTTPS inspection's leaf certificates (userspace/inspect/ca.c):
 * a CA made as a run makes it, then N names each used once (a leaf minted:
 * its key is the run's one leaf key, its certificate signed by the CA),
 * then the same names again M times over (cache hits), each on a new
 * server SSL object. The SSL objects' own cost (SSL_new, SSL_free) is
 * measured alone and taken off, so that "hit" is what inspect_ca_use()
 * adds to a connection whose name is cached. Thread CPU time. Prints one
 * JSON object {"mint_us", "hit_ns", "ssl_ns", "names", "hits"}.
 *
 *   gcc -O2 -std=gnu11 -D_GNU_SOURCE -Iuserspace tools/bench/ca_bench.c \
 *       userspace/inspect/ca.c -lssl -lcrypto -o /tmp/ca_bench && /tmp/ca_bench [N [M]]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <openssl/ssl.h>

#include "inspect/ca.h"

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* rounds times over n names: a new server SSL each, given the name's leaf
 * (use) or not; the thread CPU time it took, -1 when one failed. */
static double
names(struct inspect_ca *ca, SSL_CTX *ctx, int n, int rounds, bool use)
{
	char err[256], name[64];
	double t0 = now_ns();

	for (int k = 0; k < rounds; k++)
		for (int i = 0; i < n; i++) {
			SSL *ssl = SSL_new(ctx);

			snprintf(name, sizeof(name), "host%d.bench.test", i);
			if (!ssl || (use && inspect_ca_use(ca, ssl, name, err, sizeof(err)))) {
				fprintf(stderr, "ca_bench: %s: %s\n", name, ssl ? err : "SSL_new");
				return -1;
			}
			SSL_free(ssl);
		}
	return now_ns() - t0;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, m = argc > 2 ? atoi(argv[2]) : 50;
	char err[256];
	struct inspect_ca *ca = inspect_ca_new(NULL, NULL, err, sizeof(err));
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	double mint, hit, base;

	if (!ca || !ctx || n < 1 || n > CA_LEAF_CACHE || m < 1) {
		fprintf(stderr, "ca_bench: %s\n",
			ca ? "bad arguments (N: 1 to the cache's size)" : err);
		return 1;
	}
	mint = names(ca, ctx, n, 1, true); /* first use: minted */
	hit = names(ca, ctx, n, m, true);  /* cached */
	base = names(ca, ctx, n, m, false);
	if (mint < 0 || hit < 0 || base < 0)
		return 1;
	printf("{\"mint_us\":%.1f,\"hit_ns\":%.0f,\"ssl_ns\":%.0f,\"names\":%d,\"hits\":%d}\n",
	       mint / n / 1e3, (hit - base) / ((double)n * m), base / ((double)n * m), n, n * m);
	SSL_CTX_free(ctx);
	inspect_ca_free(ca);
	return 0;
}
