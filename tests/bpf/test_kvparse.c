// SPDX-License-Identifier: Apache-2.0
/* BPF_PROG_TEST_RUN of the kernel-verified path's first-bytes parser
 * (bpf/lib/kparse.h, in tests/bpf/kv_parse.bpf.c), on hand-built
 * ClientHellos and HTTP heads: what passes (a name found, and which), and
 * why everything else is refused. Needs root (exit 77 otherwise). The
 * judgment of the name against the DNS answers, the drop and the ending of
 * the connection are the e2e suite's (tests/e2e/kverify.sh). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress_abi.h"
#include "tests/bpf/kv_parse.skel.h"

#define WANT "ok.kv.test"

static struct kv_parse_bpf *skel;

/* ---- building first bytes --------------------------------------------- */

struct buf {
	uint8_t b[8192];
	size_t n;
};

static void
put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void
put16(struct buf *b, unsigned v)
{
	uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	put(b, x, 2);
}

static void
ext(struct buf *b, unsigned type, const void *body, size_t n)
{
	put16(b, type);
	put16(b, (unsigned)n);
	put(b, body, n);
}

static void
ext_sni(struct buf *b, const char *name)
{
	uint8_t x[300];
	size_t n = strlen(name);

	x[0] = (uint8_t)((n + 3) >> 8);
	x[1] = (uint8_t)(n + 3);
	x[2] = 0;
	x[3] = (uint8_t)(n >> 8);
	x[4] = (uint8_t)n;
	memcpy(x + 5, name, n);
	ext(b, 0, x, n + 5);
}

struct hello {
	const char *sni;  /* NULL: no server_name */
	size_t key_share; /* bytes of key share before the SNI (0: none) */
	bool grease, ech, dup;
	size_t pad_to;	 /* a padding extension up to this record size */
	size_t *sni_off; /* where the name went, from the payload's start */
};

/* A TLS record holding one ClientHello. */
static void
build_hello(struct buf *out, const struct hello *h)
{
	static uint8_t big[4096];
	struct buf e = {.n = 0}, body = {.n = 0};
	uint8_t rnd[32] = {1}, cs[] = {0x13, 0x01, 0x13, 0x02, 0xc0, 0x2b};

	if (h->grease) {
		ext(&e, 0x1a1a, "", 0);
		ext(&e, 0x000a, "\x00\x04\x2a\x2a\x00\x1d", 6);
	}
	ext(&e, 0x002b, "\x02\x03\x04", 3);
	if (h->key_share)
		ext(&e, 0x0033, big, h->key_share);
	if (h->ech)
		ext(&e, 0xfe0d, "\x00\x00\x01", 3);
	if (h->sni && h->sni_off)
		*h->sni_off = 5 + 4 + 2 + 32 + 1 + 2 + sizeof(cs) + 2 + 2 + e.n + 9;
	if (h->sni)
		ext_sni(&e, h->sni);
	if (h->dup)
		ext_sni(&e, "other.test");
	if (h->grease)
		ext(&e, 0x3a3a, "\x00", 1);
	put(&body, "\x03\x03", 2);
	put(&body, rnd, 32);
	put(&body, "\x00", 1); /* no session id */
	put16(&body, sizeof(cs));
	put(&body, cs, sizeof(cs));
	put(&body, "\x01\x00", 2);
	if (h->pad_to > 5 + 4 + body.n + 2 + e.n + 4)
		ext(&e, 0x0015, big, h->pad_to - (5 + 4 + body.n + 2 + e.n + 4));
	put16(&body, (unsigned)e.n);
	put(&body, e.b, e.n);
	put(out, "\x16\x03\x01", 3);
	put16(out, (unsigned)(body.n + 4));
	put(out, "\x01\x00", 2);
	put16(out, (unsigned)body.n);
	put(out, body.b, body.n);
}

/* The parser's answer for payload p[0..n). A test run's packet is at most
 * a page less the skb's head and tail room (about 3.7 KB): a hello past
 * the KV_BUF bytes the program reads cannot be built here. */
static int
run(const void *p, size_t n)
{
	uint8_t frame[3700] = {0};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)(n + 14),
		    .repeat = 1);

	frame[12] = 0x88; /* ethertype 0x88b5 (local experimental): not parsed as IP */
	frame[13] = 0xb5;
	assert_true(n + 14 <= sizeof(frame));
	memcpy(frame + 14, p, n);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.kv_parse_test), &o), 0);
	return (int)o.retval;
}

#define OK_TLS	(EGR_R_KV_OK | EGR_VN_TLS << 8 | 0x10000)
#define OK_HTTP (EGR_R_KV_OK | EGR_VN_HTTP << 8 | 0x10000)

static int
run_str(const char *s)
{
	return run(s, strlen(s));
}

/* ---- TLS ---------------------------------------------------------------- */

static void
tls_valid(void **state)
{
	struct buf b = {.n = 0};

	(void)state;
	build_hello(&b, &(struct hello){.sni = WANT});
	assert_int_equal(run(b.b, b.n), OK_TLS);
	b.n = 0;
	build_hello(&b, &(struct hello){.sni = "OK.KV.Test"}); /* names compare lower-case */
	assert_int_equal(run(b.b, b.n), OK_TLS);
	b.n = 0;
	build_hello(&b, &(struct hello){.sni = "evil.kv.test"}); /* parsed, another name */
	assert_int_equal(run(b.b, b.n), EGR_R_KV_OK | EGR_VN_TLS << 8);
}

static void
tls_large(void **state)
{
	struct buf b = {.n = 0};
	size_t off = 0;

	(void)state;
	/* a post-quantum hybrid hello: 1.8 KB, the SNI behind the key share */
	build_hello(&b, &(struct hello){.sni = WANT,
					.key_share = 1300,
					.grease = true,
					.pad_to = 1800,
					.sni_off = &off});
	assert_int_equal(b.n, 1800);
	assert_true(off > 1300);
	assert_memory_equal(b.b + off, WANT, strlen(WANT));
	assert_int_equal(run(b.b, b.n), OK_TLS);
	b.n = 0;
	build_hello(&b, &(struct hello){.sni = WANT, .key_share = 3000, .pad_to = 3600});
	assert_int_equal(run(b.b, b.n), OK_TLS);
}

static void
tls_grease(void **state)
{
	struct buf b = {.n = 0};

	(void)state;
	build_hello(&b, &(struct hello){.sni = WANT, .grease = true, .pad_to = 517});
	assert_int_equal(run(b.b, b.n), OK_TLS);
}

static void
tls_refused(void **state)
{
	struct buf b = {.n = 0};

	(void)state;
	build_hello(&b, &(struct hello){.sni = NULL, .grease = true});
	assert_int_equal(run(b.b, b.n), EGR_R_KV_NONAME);
	b.n = 0;
	build_hello(&b, &(struct hello){.sni = WANT, .ech = true});
	assert_int_equal(run(b.b, b.n), EGR_R_KV_ECH);
	b.n = 0;
	build_hello(&b, &(struct hello){.sni = WANT, .dup = true});
	assert_int_equal(run(b.b, b.n), EGR_R_KV_PROTO);
}

static void
tls_truncated(void **state)
{
	struct buf b = {.n = 0};
	size_t off = 0;

	(void)state;
	build_hello(&b, &(struct hello){
				.sni = WANT, .key_share = 1300, .pad_to = 1800, .sni_off = &off});
	/* the first write of a hello written in two: the SNI is even in it */
	assert_int_equal(run(b.b, off + 40), EGR_R_KV_SPLIT);
	assert_int_equal(run(b.b, 900), EGR_R_KV_SPLIT);
	assert_int_equal(run(b.b, 5), EGR_R_KV_SPLIT);
	assert_int_equal(run(b.b, b.n - 1), EGR_R_KV_SPLIT);
	/* a record header that claims less than the hello holds */
	b.b[4] = (uint8_t)(b.b[4] - 1);
	assert_int_equal(run(b.b, b.n), EGR_R_KV_SPLIT);
}

/* ---- HTTP ---------------------------------------------------------------- */

static void
http_host(void **state)
{
	(void)state;
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: ok.kv.test\r\nAccept: */*\r\n\r\n"),
			 OK_HTTP);
	assert_int_equal(
		run_str("POST /x HTTP/1.0\r\nUser-Agent: t\r\nhost:OK.kv.test:8080  \r\n\r\n"
			"body"),
		OK_HTTP);
	assert_int_equal(run_str("GET / HTTP/1.1\nHost: ok.kv.test.\n\n"), OK_HTTP);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: evil.kv.test\r\n\r\n"),
			 EGR_R_KV_OK | EGR_VN_HTTP << 8);
	/* a bare LF ends the head for a server: the Host after it is not its */
	assert_int_equal(
		run_str("GET / HTTP/1.1\nHost: evil.kv.test\n\r\nHost: ok.kv.test\r\n\r\n"),
		EGR_R_KV_OK | EGR_VN_HTTP << 8);
}

static void
http_refused(void **state)
{
	(void)state;
	assert_int_equal(run_str("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"), EGR_R_KV_NONAME);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: ok.kv.test\r\nHost: evil.test\r\n\r\n"),
			 EGR_R_KV_PROTO);
	assert_int_equal(run_str("GET http://evil.test/ HTTP/1.1\r\nHost: ok.kv.test\r\n\r\n"),
			 EGR_R_KV_PROTO);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: ok.kv.test\r\nX-Long: "), EGR_R_KV_SPLIT);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nX: a\r\n folded\r\nHost: ok.kv.test\r\n\r\n"),
			 EGR_R_KV_PROTO);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: ok.kv.test x\r\n\r\n"), EGR_R_KV_PROTO);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: ok\rkv.test\r\n\r\n"), EGR_R_KV_PROTO);
	assert_int_equal(run_str("GET / HTTP/2\r\nHost: ok.kv.test\r\n\r\n"), EGR_R_KV_PROTO);
	assert_int_equal(run_str("GET / HTTP/1.1\r\nHost: ok_kv!test\r\n\r\n"), EGR_R_KV_NAME);
}

static void
h2c_and_other(void **state)
{
	(void)state;
	assert_int_equal(run("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0", 33),
			 EGR_R_KV_H2C);
	assert_int_equal(run_str("SSH-2.0-OpenSSH_9.2\r\n"), EGR_R_KV_PROTO);
	assert_int_equal(run("\0\1\2 binary", 10), EGR_R_KV_PROTO);
	assert_int_equal(run_str("\x17\x03\x03\x00\x10"), EGR_R_KV_PROTO); /* not a hello */
}

/* The parser's cost per run (BPF_PROG_TEST_RUN's average over repeat),
 * printed for docs/kernel.md, never asserted: timings are ratios in the
 * benchmark, not tests. */
static void
cost(void **state)
{
	uint8_t frame[3700] = {0x0};
	struct buf b = {.n = 0};
	const char *http = "GET /x HTTP/1.1\r\nHost: ok.kv.test\r\nUser-Agent: curl/7.88.1\r\n"
			   "Accept: */*\r\n\r\n";
	size_t sizes[] = {517, 1800, 0};

	(void)state;
	for (int i = 0; i < 3; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .repeat = 20000);

		b.n = 0;
		if (sizes[i])
			build_hello(&b, &(struct hello){.sni = WANT,
							.grease = true,
							.key_share = sizes[i] > 600 ? 1216 : 32,
							.pad_to = sizes[i]});
		else
			put(&b, http, strlen(http));
		frame[12] = 0x88;
		frame[13] = 0xb5;
		memcpy(frame + 14, b.b, b.n);
		o.data_size_in = (uint32_t)(b.n + 14);
		assert_int_equal(
			bpf_prog_test_run_opts(bpf_program__fd(skel->progs.kv_parse_test), &o), 0);
		assert_true((o.retval & 0xff) == EGR_R_KV_OK);
		printf("# parse %s of %zu bytes: %u ns per run\n",
		       sizes[i] ? "ClientHello" : "HTTP head", b.n, o.duration);
	}
}

/* Every buffer of every CPU claimed: the run gets none (the program says
 * -1; the catch-all drops the segment unjudged and TCP sends it again).
 * After a run its buffer is free again. */
static void
claim(void **state)
{
	int fd = bpf_map__fd(skel->maps.egr_kvbuf), ncpu = libbpf_num_possible_cpus();
	size_t vsz = (bpf_map__value_size(skel->maps.egr_kvbuf) + 7) &
		     ~(size_t)7; /* per CPU, 8-aligned */
	char *v = calloc((size_t)ncpu, vsz);
	struct buf b = {.n = 0};

	(void)state;
	assert_non_null(v);
	build_hello(&b, &(struct hello){.sni = WANT});
	assert_int_equal(run(b.b, b.n), OK_TLS);
	for (uint32_t k = 0; k < bpf_map__max_entries(skel->maps.egr_kvbuf); k++) {
		assert_int_equal(bpf_map_lookup_elem(fd, &k, v), 0);
		for (int c = 0; c < ncpu; c++)
			assert_int_equal(*(uint32_t *)(v + (size_t)c * vsz), 0); /* busy */
		for (int c = 0; c < ncpu; c++)
			*(uint32_t *)(v + (size_t)c * vsz) = 1;
		assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	}
	assert_int_equal(run(b.b, b.n), -1);
	memset(v, 0, (size_t)ncpu * vsz);
	for (uint32_t k = 0; k < bpf_map__max_entries(skel->maps.egr_kvbuf); k++)
		assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	assert_int_equal(run(b.b, b.n), OK_TLS);
	free(v);
}

static int
setup(void **state)
{
	char key[EGR_NAME_LEN] = WANT;
	uint32_t one = 1;

	(void)state;
	skel = kv_parse_bpf__open_and_load();
	if (!skel)
		return -1;
	return bpf_map_update_elem(bpf_map__fd(skel->maps.want), key, &one, BPF_ANY);
}

static int
teardown(void **state)
{
	(void)state;
	kv_parse_bpf__destroy(skel);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tls_valid),	 cmocka_unit_test(tls_large),
		cmocka_unit_test(tls_grease),	 cmocka_unit_test(tls_refused),
		cmocka_unit_test(tls_truncated), cmocka_unit_test(http_host),
		cmocka_unit_test(http_refused),	 cmocka_unit_test(h2c_and_other),
		cmocka_unit_test(cost),		 cmocka_unit_test(claim),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_kvparse: needs root (BPF_PROG_TEST_RUN)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
