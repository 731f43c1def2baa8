// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/parse/socks5.c: greetings and requests, table-driven,
 * one cmocka test per row; every proper prefix of an accepted message must
 * be PARSE_MORE. Inputs are copied into exact-size heap buffers so that ASan
 * flags any read past len. Then reply building for IPv4, IPv6 and NULL. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>
#include "exact.h"
#include "table.h"

#include "parse/parse.h"

#define NOTHING (const uint8_t *)"", 0

/* ---- greeting ---------------------------------------------------------- */

struct greeting_case {
	const char *name;
	const uint8_t *raw;
	size_t len;
	enum parse_result want;
	bool no_auth;
	size_t consumed;
};

static const struct greeting_case greeting_cases[] = {
	{"no-auth-only", MSG(5, 1, 0), PARSE_DONE, true, 3},
	{"userpass-only", MSG(5, 1, 2), PARSE_DONE, false, 3},
	{"gssapi-userpass", MSG(5, 2, 1, 2), PARSE_DONE, false, 4},
	{"no-auth-last", MSG(5, 3, 1, 2, 0), PARSE_DONE, true, 5},
	{"private-methods", MSG(5, 2, 0x80, 0xfe), PARSE_DONE, false, 4},
	{"no-acceptable-offered", MSG(5, 1, 0xff), PARSE_DONE, false, 3},
	{"followed-by-request", MSG(5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80), PARSE_DONE, true, 3},
	{"empty", NOTHING, PARSE_MORE, false, 0},
	{"socks4", MSG(4, 1, 0, 80, 127, 0, 0, 1, 0), PARSE_ERROR, false, 0},
	{"http", MSG('G', 'E', 'T', ' '), PARSE_ERROR, false, 0},
	{"version-only", MSG(5), PARSE_MORE, false, 0},
	{"nmethods-0", MSG(5, 0), PARSE_ERROR, false, 0},
	{"methods-short", MSG(5, 3, 0, 1), PARSE_MORE, false, 0},
	{"nmethods-255-short", MSG(5, 255, 0), PARSE_MORE, false, 0},
};

static void
run_greeting(void **state)
{
	const struct greeting_case *c = *state;
	size_t len = c->len, consumed = 999;
	bool no_auth = !c->no_auth;
	uint8_t *p;

	p = dup_exact(c->raw, len);
	assert_int_equal(socks5_parse_greeting(p, len, &no_auth, &consumed), c->want);
	free(p);
	if (c->want != PARSE_DONE) {
		assert_int_equal(consumed, 999);
		return;
	}
	assert_int_equal(no_auth, c->no_auth);
	assert_int_equal(consumed, c->consumed);
}

static void
test_greeting_255_methods(void **state)
{
	uint8_t g[2 + 255];
	size_t i, consumed;
	bool no_auth = true;

	(void)state;
	g[0] = 5;
	g[1] = 255;
	for (i = 0; i < 255; i++)
		g[2 + i] = i + 1; /* 1..255: everything but no-auth */
	for (i = 0; i < sizeof(g); i++) {
		uint8_t *p = dup_exact(g, i);

		assert_int_equal(socks5_parse_greeting(p, i, &no_auth, &consumed), PARSE_MORE);
		free(p);
	}
	assert_int_equal(socks5_parse_greeting(g, sizeof(g), &no_auth, &consumed), PARSE_DONE);
	assert_false(no_auth);
	assert_int_equal(consumed, sizeof(g));
	g[sizeof(g) - 1] = 0;
	assert_int_equal(socks5_parse_greeting(g, sizeof(g), &no_auth, &consumed), PARSE_DONE);
	assert_true(no_auth);
}

/* ---- request ----------------------------------------------------------- */

struct request_case {
	const char *name;
	const uint8_t *raw;
	size_t len;
	enum parse_result want;
	uint8_t cmd;  /* checked on PARSE_DONE */
	uint8_t atyp; /* checked on PARSE_DONE, and on errors when nonzero */
	const char *host;
	uint16_t port;
	size_t consumed;
};

static const struct request_case request_cases[] = {
	{"connect-ipv4", MSG(5, 1, 0, 1, 192, 0, 2, 1, 0x01, 0xbb), PARSE_DONE, 1, 1, "192.0.2.1",
	 443, 10},
	{"connect-ipv4-port-0", MSG(5, 1, 0, 1, 0, 0, 0, 0, 0, 0), PARSE_DONE, 1, 1, "0.0.0.0", 0,
	 10},
	{"connect-ipv6",
	 MSG(5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x1f, 0x90),
	 PARSE_DONE, 1, 4, "2001:db8::1", 8080, 22},
	{"connect-ipv6-mapped",
	 MSG(5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 0, 80), PARSE_DONE,
	 1, 4, "::ffff:127.0.0.1", 80, 22},
	{"connect-domain",
	 MSG(5, 1, 0, 3, 11, 'E', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0xff, 0xff),
	 PARSE_DONE, 1, 3, "Example.com", 65535, 18},
	{"connect-domain-1", MSG(5, 1, 0, 3, 1, 'a', 0, 22), PARSE_DONE, 1, 3, "a", 22, 8},
	{"connect-domain-literal", MSG(5, 1, 0, 3, 7, '1', '.', '2', '.', '3', '.', '4', 0, 80),
	 PARSE_DONE, 1, 3, "1.2.3.4", 80, 14},
	{"connect-domain-trailing", MSG(5, 1, 0, 3, 2, 'a', 'b', 1, 0, 'G', 'E', 'T'), PARSE_DONE,
	 1, 3, "ab", 256, 9},
	{"bind", MSG(5, 2, 0, 1, 10, 0, 0, 1, 0x30, 0x39), PARSE_DONE, 2, 1, "10.0.0.1", 12345, 10},
	{"udp-associate", MSG(5, 3, 0, 1, 0, 0, 0, 0, 0, 0), PARSE_DONE, 3, 1, "0.0.0.0", 0, 10},
	{"unknown-cmd", MSG(5, 9, 0, 3, 1, 'h', 0, 1), PARSE_DONE, 9, 3, "h", 1, 8},
	{"cmd-0", MSG(5, 0, 0, 1, 1, 2, 3, 4, 0, 1), PARSE_DONE, 0, 1, "1.2.3.4", 1, 10},
	/* errors */
	{"version-4", MSG(4, 1, 0, 1, 1, 2, 3, 4, 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"version-0", MSG(0), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"rsv-1", MSG(5, 1, 1, 1, 1, 2, 3, 4, 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"rsv-ff-short", MSG(5, 1, 0xff), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"atyp-0", MSG(5, 1, 0, 0, 1, 2, 3, 4, 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"atyp-2", MSG(5, 1, 0, 2, 1, 2, 3, 4, 0, 80), PARSE_ERROR, 0, 2, NULL, 0, 0},
	{"atyp-5", MSG(5, 1, 0, 5), PARSE_ERROR, 0, 5, NULL, 0, 0},
	{"atyp-8", MSG(5, 1, 0, 8, 1, 2, 3, 4, 0, 80), PARSE_ERROR, 0, 8, NULL, 0, 0},
	{"atyp-ff", MSG(5, 1, 0, 0xff), PARSE_ERROR, 0, 0xff, NULL, 0, 0},
	{"domain-len-0", MSG(5, 1, 0, 3, 0, 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"domain-nul", MSG(5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"domain-nul-short", MSG(5, 1, 0, 3, 9, 'a', 0), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"domain-nul-first", MSG(5, 1, 0, 3, 1, 0, 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"domain-space", MSG(5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"domain-newline", MSG(5, 1, 0, 3, 2, 'a', '\n', 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	{"domain-del", MSG(5, 1, 0, 3, 2, 'a', 0x7f, 0, 80), PARSE_ERROR, 0, 0, NULL, 0, 0},
	/* incomplete */
	{"empty", NOTHING, PARSE_MORE, 0, 0, NULL, 0, 0},
	{"ipv4-short", MSG(5, 1, 0, 1, 1, 2, 3, 4, 0), PARSE_MORE, 0, 0, NULL, 0, 0},
	{"ipv6-short", MSG(5, 1, 0, 4, 0, 0, 0, 0), PARSE_MORE, 0, 0, NULL, 0, 0},
	{"domain-no-len", MSG(5, 1, 0, 3), PARSE_MORE, 0, 0, NULL, 0, 0},
	{"domain-short", MSG(5, 1, 0, 3, 200, 'a', 'b'), PARSE_MORE, 0, 0, NULL, 0, 0},
};

static void
run_request(void **state)
{
	const struct request_case *c = *state;
	size_t len = c->len, consumed = 999, i;
	struct socks5_request req;
	uint8_t *p;

	memset(&req, 0xa5, sizeof(req));
	p = dup_exact(c->raw, len);
	assert_int_equal(socks5_parse_request(p, len, &req, &consumed), c->want);
	free(p);
	if (c->want != PARSE_DONE) {
		assert_int_equal(consumed, 999);
		if (c->atyp) /* the caller answers an unknown ATYP with 0x08 */
			assert_int_equal(req.atyp, c->atyp);
		return;
	}
	assert_int_equal(req.cmd, c->cmd);
	assert_int_equal(req.atyp, c->atyp);
	assert_string_equal(req.host, c->host);
	assert_int_equal(req.port, c->port);
	assert_int_equal(consumed, c->consumed);
	if (c->atyp == 1)
		assert_memory_equal(req.addr, c->raw + 4, 4);
	if (c->atyp == 4)
		assert_memory_equal(req.addr, c->raw + 4, 16);

	/* every proper prefix needs more */
	for (i = 0; i < c->consumed; i++) {
		p = dup_exact(c->raw, i);
		if (socks5_parse_request(p, i, &req, &consumed) != PARSE_MORE)
			fail_msg("prefix of %zu bytes: not PARSE_MORE", i);
		free(p);
	}
}

/* The longest domain: 255 bytes, NUL-terminated in host[256]. */
static void
test_request_domain_255(void **state)
{
	uint8_t m[4 + 1 + 255 + 2];
	struct socks5_request req;
	size_t consumed, i;

	(void)state;
	memcpy(m, "\x05\x01\x00\x03\xff", 5);
	memset(m + 5, 'd', 255);
	m[260] = 0x01;
	m[261] = 0xbb;
	for (i = 0; i < sizeof(m); i++) {
		uint8_t *p = dup_exact(m, i);

		assert_int_equal(socks5_parse_request(p, i, &req, &consumed), PARSE_MORE);
		free(p);
	}
	memset(req.host, 'x', sizeof(req.host));
	assert_int_equal(socks5_parse_request(m, sizeof(m), &req, &consumed), PARSE_DONE);
	assert_int_equal(consumed, sizeof(m));
	assert_int_equal(strlen(req.host), 255);
	assert_int_equal(req.port, 443);
}

/* ---- reply ------------------------------------------------------------- */

static void
test_reply_ipv4(void **state)
{
	static const uint8_t want[] = {5, 0, 0, 1, 192, 0, 2, 9, 0x1f, 0x90};
	uint8_t out[22], a4[4] = {192, 0, 2, 9};

	(void)state;
	memset(out, 0xee, sizeof(out));
	assert_int_equal(socks5_build_reply(SOCKS5_SUCCEEDED, a4, AF_INET, 8080, out), 10);
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(out[10], 0xee); /* nothing past the reply */
}

static void
test_reply_ipv6(void **state)
{
	uint8_t out[22], a6[16], want[22] = {5, 0, 0, 4};

	(void)state;
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::5", a6), 1);
	memcpy(want + 4, a6, 16);
	want[20] = 0x01;
	want[21] = 0xbb;
	assert_int_equal(socks5_build_reply(SOCKS5_SUCCEEDED, a6, AF_INET6, 443, out), 22);
	assert_memory_equal(out, want, sizeof(want));
}

static void
test_reply_null(void **state)
{
	static const struct {
		enum socks5_reply rep;
		uint8_t code;
	} codes[] = {
		{SOCKS5_SUCCEEDED, 0x00},	   {SOCKS5_GENERAL_FAILURE, 0x01},
		{SOCKS5_NOT_ALLOWED, 0x02},	   {SOCKS5_NET_UNREACHABLE, 0x03},
		{SOCKS5_HOST_UNREACHABLE, 0x04},   {SOCKS5_CONN_REFUSED, 0x05},
		{SOCKS5_TTL_EXPIRED, 0x06},	   {SOCKS5_CMD_NOT_SUPPORTED, 0x07},
		{SOCKS5_ATYP_NOT_SUPPORTED, 0x08},
	};
	uint8_t out[22], a4[4] = {1, 2, 3, 4};
	size_t i;

	(void)state;
	for (i = 0; i < NCASES(codes); i++) {
		uint8_t want[10] = {5, codes[i].code, 0, 1, 0, 0, 0, 0, 0, 0};

		memset(out, 0xee, sizeof(out));
		/* NULL addr: 0.0.0.0:0 whatever the family and port say */
		assert_int_equal(socks5_build_reply(codes[i].rep, NULL, AF_INET6, 8080, out), 10);
		assert_memory_equal(out, want, sizeof(want));
		assert_int_equal(socks5_build_reply(codes[i].rep, NULL, AF_INET, 1, out), 10);
		assert_memory_equal(out, want, sizeof(want));
	}
	/* an address of no family we know is not sent either */
	assert_int_equal(socks5_build_reply(SOCKS5_GENERAL_FAILURE, a4, AF_UNIX, 80, out), 10);
	assert_memory_equal(out, ((uint8_t[]){5, 1, 0, 1, 0, 0, 0, 0, 0, 0}), 10);
}

/* A whole handshake in one buffer, as a client that does not wait sends it. */
static void
test_greeting_then_request(void **state)
{
	static const uint8_t m[] = {5, 2, 0, 2, 5, 1, 0, 3, 4, 'h', 'o', 's', 't', 0, 80};
	struct socks5_request req;
	size_t consumed, off;
	bool no_auth;

	(void)state;
	assert_int_equal(socks5_parse_greeting(m, sizeof(m), &no_auth, &consumed), PARSE_DONE);
	assert_true(no_auth);
	off = consumed;
	assert_int_equal(socks5_parse_request(m + off, sizeof(m) - off, &req, &consumed),
			 PARSE_DONE);
	assert_int_equal(off + consumed, sizeof(m));
	assert_string_equal(req.host, "host");
	assert_int_equal(req.port, 80);
}

/* ---- main ---------------------------------------------------------------- */

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_greeting_255_methods),
		cmocka_unit_test(test_request_domain_255),
		cmocka_unit_test(test_reply_ipv4),
		cmocka_unit_test(test_reply_ipv6),
		cmocka_unit_test(test_reply_null),
		cmocka_unit_test(test_greeting_then_request),
	};
	int failed = 0;

	failed += RUN_TABLE("socks5_greeting", greeting_cases, run_greeting);
	failed += RUN_TABLE("socks5_request", request_cases, run_request);
	failed += cmocka_run_group_tests_name("socks5_misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
