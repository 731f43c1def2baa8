// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the proxy's protocol state machines (userspace/proxy/:
 * socks_proxy.c, http_proxy.c, tproxy.c and judge.c, with http_ex.c's
 * forwarded head), one cmocka test per table row, each over a fake
 * connection core whose client is a bufferevent_pair (conn_fake.h): no
 * socket, no root. A row is a listener's protocol, a policy, what the
 * client sends (writes apart wait for the reply between them), and maybe
 * the timer firing after it; it asserts every byte the client got back,
 * the decision, where the upstream connect went, and whether the
 * connection was relayed, closed or reset. The SOCKS5 greeting and
 * request, HTTP CONNECT and absolute-URI heads, and the transparent
 * listener's first-bytes judge (TLS SNI, HTTP Host, silence). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "table.h"

#include "conn_fake.h"
#include "proxy/proto.h"

struct bytes {
	const char *p;
	size_t n;
};
#define B(s)                                                                                       \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}

/* the SOCKS5 client's opening: version 5, one method, no authentication */
#define S5_HELLO   "\x05\x01\x00"
/* the replies */
#define S5_NOAUTH  "\x05\x00"
#define S5_REP(r)  "\x05" r "\x00\x01\x00\x00\x00\x00\x00\x00" /* bound 0.0.0.0:0 */
#define S5_OK	   S5_REP("\x00")
#define S5_DENIED  S5_REP("\x02")
#define S5_REFUSED S5_REP("\x05")

#define HELLO_MAX 128

struct proto_case {
	const char *name;
	const struct proto_ops *ops; /* the listener's protocol */
	const char *allow[3], *deny[3];
	uint32_t orig4;	      /* transparent: the original destination (host order) ... */
	uint16_t orig_port;   /* ... and port */
	const char *learned;  /* the responder's name for it */
	struct bytes send[3]; /* the client's writes, one after the other */
	const char *hello;    /* then a TLS ClientHello naming this */
	size_t hello_cut;     /* ... only its first bytes, when not 0 */
	bool fire;	      /* then the timer fires (silence, or the head timeout) */
	bool up_ok;	      /* the upstream connect succeeds (else ECONNREFUSED) */
	/* what the client got, and what happened */
	struct bytes reply; /* every byte ... */
	bool prefix;	    /* ... or the first ones */
	char decided;	    /* the last decision: 'a' allowed, 'd' denied; 0 none */
	const char *up;	    /* "HOST:PORT" connected to; NULL: no connect */
	bool relayed;
	const char *closed; /* why it was closed; NULL: still open */
	bool reset;	    /* ... with a reset */
	const char *uout;   /* the head to forward upstream (plain HTTP) */
	bool inspected;	    /* handed to the inspector (HTTPS inspection: conn_inspect) */
	int silence_ms;	    /* the silence the transparent listener gives (0: not checked) */
};

/* SOCKS5 requests: CONNECT to a name (its length first), to an address */
#define S5_NAME(len, name, port) "\x05\x01\x00\x03" len name port
#define X_TEST_22		 S5_NAME("\x06", "x.test", "\x00\x16")
#define ALLOWED_443		 S5_NAME("\x0c", "allowed.test", "\x01\xbb")

static const struct proto_case cases[] = {
	/* ---- SOCKS5: greeting, request, reply ---- */
	{.name = "socks5-tcp-rule-connects-first",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B(S5_HELLO X_TEST_22)},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'a',
	 .up = "x.test:22",
	 .relayed = true},
	{.name = "socks5-greeting-split",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B("\x05"), B("\x01\x00"), B(X_TEST_22)},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'a',
	 .up = "x.test:22",
	 .relayed = true},
	{.name = "socks5-request-split",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B(S5_HELLO), B("\x05\x01\x00\x03\x06x.t"), B("est\x00\x16")},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'a',
	 .up = "x.test:22",
	 .relayed = true},
	{.name = "socks5-no-acceptable-method",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B("\x05\x01\x02")},
	 .reply = B("\x05\xff"),
	 .closed = "replied"},
	{.name = "socks5-version-4",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B("\x04\x01\x00\x16\xcb\x00\x71\x07\x00")},
	 .reply = B(""),
	 .closed = "bad socks5 greeting"},
	{.name = "socks5-upstream-refused",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B(S5_HELLO X_TEST_22)},
	 .reply = B(S5_NOAUTH S5_REFUSED),
	 .decided = 'a',
	 .up = "x.test:22",
	 .closed = "replied"},
	{.name = "socks5-name-no-rule-could-allow",
	 .ops = &socks5_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B(S5_HELLO S5_NAME("\x0a", "other.test", "\x01\xbb"))},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_DENIED),
	 .decided = 'd',
	 .closed = "replied"},
	{.name = "socks5-deny-rule",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .deny = {"x.test"},
	 .send = {B(S5_HELLO X_TEST_22)},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_DENIED),
	 .decided = 'd',
	 .closed = "replied"},
	{.name = "socks5-udp-associate",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B(S5_HELLO "\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_REP("\x07")),
	 .closed = "replied"},
	{.name = "socks5-address-type-5",
	 .ops = &socks5_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .send = {B(S5_HELLO "\x05\x01\x00\x05\x00\x00\x00\x00\x00\x00")},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_REP("\x08")),
	 .closed = "replied"},
	{.name = "socks5-ipv4-address-rule",
	 .ops = &socks5_proto_ops,
	 .allow = {"203.0.113.7"},
	 .send = {B(S5_HELLO "\x05\x01\x00\x01\xcb\x00\x71\x07\x1f\x90")},
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'a',
	 .up = ":8080",
	 .relayed = true},
	/* a name only host rules allow: success first, then the tunnel's
	 * first bytes must name it */
	{.name = "socks5-host-rule-then-sni",
	 .ops = &socks5_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B(S5_HELLO ALLOWED_443)},
	 .hello = "allowed.test",
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'a',
	 .up = "allowed.test:443",
	 .relayed = true},
	{.name = "socks5-host-rule-sni-elsewhere",
	 .ops = &socks5_proto_ops,
	 .allow = {"allowed.test", "other.test"},
	 .send = {B(S5_HELLO ALLOWED_443)},
	 .hello = "other.test",
	 .up_ok = true,
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'd',
	 .closed = "denied",
	 .reset = true},

	/* ---- the HTTP proxy: CONNECT and absolute-URI heads ---- */
	{.name = "connect-allowed",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 200 Connection established\r\n\r\n"),
	 .decided = 'a',
	 .up = "allowed.test:443",
	 .relayed = true},
	{.name = "connect-head-split",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("CONNECT allowed.test:443 HT"), B("TP/1.1\r\nHost: allowed.test:443\r\n"),
		  B("\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 200 Connection established\r\n\r\n"),
	 .decided = 'a',
	 .up = "allowed.test:443",
	 .relayed = true},
	{.name = "connect-denied",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 403 Forbidden\r\nx-proxy-error: blocked-by-allowlist\r\n"),
	 .prefix = true,
	 .decided = 'd',
	 .closed = "replied"},
	{.name = "connect-deny-rule",
	 .ops = &http_proto_ops,
	 .allow = {"**.allowed.test"},
	 .deny = {"bad.allowed.test"},
	 .send = {B("CONNECT bad.allowed.test:443 HTTP/1.1\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 403 Forbidden\r\nx-proxy-error: blocked-by-denylist\r\n"),
	 .prefix = true,
	 .decided = 'd',
	 .closed = "replied"},
	{.name = "connect-upstream-refused",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")},
	 .reply = B("HTTP/1.1 502 Bad Gateway\r\n"),
	 .prefix = true,
	 .decided = 'a',
	 .up = "allowed.test:443",
	 .closed = "replied"},
	{.name = "absolute-uri-forwarded-head",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("GET http://allowed.test/p?q=1 HTTP/1.1\r\nHost: elsewhere.test\r\n"
		    "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n")},
	 .reply = B("HTTP/1.1 502 Bad Gateway\r\n"),
	 .prefix = true,
	 .decided = 'a',
	 .up = "allowed.test:80",
	 .closed = "replied",
	 .uout = "GET /p?q=1 HTTP/1.1\r\nHost: allowed.test\r\nAccept: */*\r\nConnection: "
		 "close\r\n\r\n"},
	{.name = "absolute-uri-denied",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("GET http://other.test:8080/ HTTP/1.1\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 403 Forbidden\r\nx-proxy-error: blocked-by-allowlist\r\n"),
	 .prefix = true,
	 .decided = 'd',
	 .closed = "replied"},
	{.name = "origin-form-is-no-proxy-request",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 400 Bad Request\r\n"),
	 .prefix = true,
	 .closed = "replied"},
	{.name = "malformed-head",
	 .ops = &http_proto_ops,
	 .allow = {"allowed.test"},
	 .send = {B("GET\x01 http://allowed.test/ HTTP/1.1\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 400 Bad Request\r\n"),
	 .prefix = true,
	 .closed = "replied"},

	/* ---- HTTPS inspection: what the policy allows only inspected goes
	 * to the inspector, never upstream as it is ---- */
	{.name = "connect-inspected",
	 .ops = &http_proto_ops,
	 .allow = {"api.test|GET"},
	 .send = {B("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")},
	 .reply = B("HTTP/1.1 200 Connection established\r\n\r\n"),
	 .decided = 'a',
	 .inspected = true},
	{.name = "transparent-tls-inspected",
	 .ops = &tproxy_proto_ops,
	 .allow = {"api.test|GET"},
	 .orig4 = 0xcb007107,
	 .orig_port = 443,
	 .hello = "api.test",
	 .reply = B(""),
	 .decided = 'a',
	 .inspected = true,
	 .silence_ms = 1000},
	{.name = "socks5-tls-inspected",
	 .ops = &socks5_proto_ops,
	 .allow = {"api.test|GET"},
	 .send = {B(S5_HELLO S5_NAME("\x08", "api.test", "\x01\xbb"))},
	 .hello = "api.test",
	 .reply = B(S5_NOAUTH S5_OK),
	 .decided = 'a',
	 .inspected = true},

	/* ---- the transparent listener's first-bytes judge ---- */
	{.name = "transparent-tls-allowed",
	 .ops = &tproxy_proto_ops,
	 .allow = {"allowed.test"},
	 .orig4 = 0xcb007107,
	 .orig_port = 443,
	 .hello = "allowed.test",
	 .up_ok = true,
	 .reply = B(""),
	 .decided = 'a',
	 .up = "allowed.test:443",
	 .relayed = true,
	 .silence_ms = 1000},
	{.name = "transparent-tls-denied",
	 .ops = &tproxy_proto_ops,
	 .allow = {"allowed.test"},
	 .orig4 = 0xcb007107,
	 .orig_port = 443,
	 .hello = "other.test",
	 .up_ok = true,
	 .reply = B(""),
	 .decided = 'd',
	 .closed = "denied",
	 .reset = true,
	 .silence_ms = 1000},
	{.name = "transparent-tls-unfinished",
	 .ops = &tproxy_proto_ops,
	 .allow = {"allowed.test"},
	 .orig4 = 0xcb007107,
	 .orig_port = 443,
	 .hello = "allowed.test",
	 .hello_cut = 20,
	 .fire = true,
	 .up_ok = true,
	 .reply = B(""),
	 .closed = "client head timeout",
	 .silence_ms = 1000},
	{.name = "transparent-http-stream",
	 .ops = &tproxy_proto_ops,
	 .allow = {"allowed.test"},
	 .orig4 = 0xcb007107,
	 .orig_port = 80,
	 .send = {B("GET /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n")},
	 .reply = B("HTTP/1.1 502 Bad Gateway\r\n"),
	 .prefix = true,
	 .decided = 'a',
	 .up = "allowed.test:80",
	 .closed = "replied",
	 .uout = "GET /x HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n",
	 .silence_ms = 1000},
	{.name = "transparent-http-stream-denied",
	 .ops = &tproxy_proto_ops,
	 .allow = {"allowed.test"},
	 .orig4 = 0xcb007107,
	 .orig_port = 80,
	 .send = {B("GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n")},
	 .up_ok = true,
	 .reply = B("HTTP/1.1 403 Forbidden\r\n"),
	 .prefix = true,
	 .decided = 'd',
	 .closed = "replied",
	 .silence_ms = 1000},
	{.name = "transparent-silent-address-rule",
	 .ops = &tproxy_proto_ops,
	 .allow = {"203.0.113.7:22"},
	 .orig4 = 0xcb007107,
	 .orig_port = 22,
	 .fire = true,
	 .up_ok = true,
	 .reply = B(""),
	 .decided = 'a',
	 .up = ":22",
	 .relayed = true,
	 .silence_ms = 1000},
	{.name = "transparent-silent-denied",
	 .ops = &tproxy_proto_ops,
	 .allow = {"allowed.test"},
	 .orig4 = 0xcb007107,
	 .orig_port = 22,
	 .fire = true,
	 .up_ok = true,
	 .reply = B(""),
	 .decided = 'd',
	 .closed = "denied",
	 .reset = true,
	 .silence_ms = 1000},
	{.name = "transparent-silent-learned-name",
	 .ops = &tproxy_proto_ops,
	 .allow = {"tcp://x.test:22"},
	 .orig4 = 0xcb007107,
	 .orig_port = 22,
	 .learned = "x.test",
	 .fire = true,
	 .up_ok = true,
	 .reply = B(""),
	 .decided = 'a',
	 .up = "x.test:22",
	 .relayed = true,
	 .silence_ms = 1000},
	{.name = "transparent-other-bytes",
	 .ops = &tproxy_proto_ops,
	 .allow = {"tcp://x.test:7"},
	 .orig4 = 0xcb007107,
	 .orig_port = 7,
	 .learned = "x.test",
	 .send = {B("\x00\x01 binary, not TLS nor HTTP\r\n")},
	 .up_ok = true,
	 .reply = B(""),
	 .decided = 'a',
	 .up = "x.test:7",
	 .relayed = true,
	 .silence_ms = 1000},
};

/* A TLS 1.2 ClientHello naming name (one record, one cipher suite) into
 * out; its length. */
static size_t
client_hello(const char *name, uint8_t *out)
{
	size_t nl = strlen(name), ext = 9 + nl, body = 2 + 32 + 1 + 4 + 2 + 2 + ext, n = 0;

	assert_true(nl < HELLO_MAX - 64);
	out[n++] = 0x16, out[n++] = 3, out[n++] = 1; /* handshake record */
	out[n++] = (uint8_t)((body + 4) >> 8), out[n++] = (uint8_t)(body + 4);
	out[n++] = 1, out[n++] = 0; /* ClientHello */
	out[n++] = (uint8_t)(body >> 8), out[n++] = (uint8_t)body;
	out[n++] = 3, out[n++] = 3; /* TLS 1.2 */
	memset(out + n, 0x5a, 32);  /* random */
	n += 32;
	out[n++] = 0;		    /* no session id */
	out[n++] = 0, out[n++] = 2; /* one cipher suite */
	out[n++] = 0x13, out[n++] = 1;
	out[n++] = 1, out[n++] = 0; /* null compression */
	out[n++] = (uint8_t)(ext >> 8), out[n++] = (uint8_t)ext;
	out[n++] = 0, out[n++] = 0; /* server_name */
	out[n++] = (uint8_t)((nl + 5) >> 8), out[n++] = (uint8_t)(nl + 5);
	out[n++] = (uint8_t)((nl + 3) >> 8), out[n++] = (uint8_t)(nl + 3);
	out[n++] = 0; /* host_name */
	out[n++] = (uint8_t)(nl >> 8), out[n++] = (uint8_t)nl;
	memcpy(out + n, name, nl);
	return n + nl;
}

static void
run_proto(void **state)
{
	const struct proto_case *t = *state;
	struct evbuffer_ptr none;
	char up[300];
	size_t got;

	fake_open(t->allow, t->deny);
	fake.learned = t->learned;
	if (t->up_ok)
		fake.up_fd = open("/dev/null", O_RDWR | O_CLOEXEC); /* no socket */
	if (t->orig_port) {
		fake.c.who.addr[2] = htonl(0xffff);
		fake.c.who.addr[3] = htonl(t->orig4);
		fake.c.who.port = htons(t->orig_port);
	}
	fake_start(t->ops);
	if (t->silence_ms)
		assert_int_equal(fake.timer_ms, t->silence_ms);
	for (int i = 0; i < 3 && t->send[i].p; i++)
		fake_send(t->send[i].p, t->send[i].n);
	if (t->hello) {
		uint8_t hello[HELLO_MAX];
		size_t n = client_hello(t->hello, hello);

		fake_send(hello, t->hello_cut ? t->hello_cut : n);
	}
	if (t->fire)
		fake_fire_timer();

	got = evbuffer_get_length(fake.out);
	if (t->prefix)
		assert_true(got >= t->reply.n);
	else
		assert_int_equal(got, t->reply.n);
	none = evbuffer_search(fake.out, t->reply.p, t->reply.n, NULL);
	if (t->reply.n)
		assert_int_equal(none.pos, 0);
	assert_int_equal(fake.allowed, t->decided == 'a' ? 1 : t->decided == 'd' ? 0 : -1);
	if (t->up) {
		assert_true(fake.up_called);
		snprintf(up, sizeof(up), "%s:%u", fake.up_host, fake.up_port);
		assert_string_equal(up, t->up);
	} else {
		assert_false(fake.up_called);
	}
	assert_int_equal(fake.relayed, t->relayed);
	if (t->closed) {
		assert_true(fake.closed);
		assert_string_equal(fake.why, t->closed);
	} else {
		assert_false(fake.closed);
	}
	assert_int_equal(fake.aborted, t->reset);
	assert_int_equal(fake.inspected, t->inspected);
	if (t->uout) {
		assert_non_null(fake.c.uout);
		assert_int_equal(fake.c.uoutlen, strlen(t->uout));
		assert_memory_equal(fake.c.uout, t->uout, fake.c.uoutlen);
	}
	fake_close();
}

int
main(void)
{
	return RUN_TABLE("proto", cases, run_proto) ? 1 : 0;
}
