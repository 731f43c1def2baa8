// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/proxy/http_fwd.c: the head the proxy forwards for a
 * parsed request, byte for byte (Host as judged, hop-by-hop headers gone,
 * framing headers kept whatever Connection names, our Connection header),
 * which requests count as a WebSocket upgrade, and for every request of a
 * table that the forwarded head parses back to the request that was judged.
 * Inputs are copied into exact-size heap buffers, so ASan flags any read
 * past their end. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include "exact.h"
#include "table.h"

#include "proxy/http_fwd.h"
#include "parse/parse.h"

#define BIG 65536

static struct http_request req, back; /* 5 KiB each: off the stack */

/* Parses raw (exactly sized) into req; the buffer stays alive in *keep
 * because req's headers point into it. */
static void
parse(const char *raw, char **keep)
{
	size_t n = strlen(raw), consumed = 0;

	*keep = dup_exact(raw, n);
	assert_int_equal(http_parse_request(*keep, n, BIG, &req, &consumed), PARSE_DONE);
	assert_int_equal(consumed, n);
}

/* ---- the forwarded head, byte for byte ---------------------------------- */

struct fwd_case {
	const char *name;
	const char *raw;
	bool websocket; /* http_fwd_websocket() says so, and it is passed on */
	const char *want;
};

static const struct fwd_case fwd_cases[] = {
	{"absolute-host-header-replaced",
	 "GET http://a.test:8080/p?q=1 HTTP/1.1\r\nHost: b.test\r\nAccept: */*\r\n\r\n", false,
	 "GET /p?q=1 HTTP/1.1\r\nHost: a.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"},
	{"absolute-host-header-after-others",
	 "GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\nhost: B.test\r\nX-B: 2\r\n\r\n", false,
	 "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\nX-B: 2\r\nConnection: close\r\n\r\n"},
	{"absolute-no-host-http10", "GET http://a.test HTTP/1.0\r\n\r\n", false,
	 "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"},
	{"absolute-ipv6", "GET http://[2001:db8::1]:81/x HTTP/1.1\r\n\r\n", false,
	 "GET /x HTTP/1.1\r\nHost: [2001:db8::1]:81\r\nConnection: close\r\n\r\n"},
	{"absolute-ipv6-port-80", "GET http://[2001:db8::1]/ HTTP/1.1\r\n\r\n", false,
	 "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nConnection: close\r\n\r\n"},
	{"origin-host-line-kept", "GET /x HTTP/1.1\r\nhost: A.Test:8080\r\nX: 1\r\n\r\n", false,
	 "GET /x HTTP/1.1\r\nhost: A.Test:8080\r\nX: 1\r\nConnection: close\r\n\r\n"},
	{"origin-http10", "GET /x HTTP/1.0\r\nHost: a.test\r\nConnection: keep-alive\r\n\r\n",
	 false, "GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"},
	{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", false,
	 "OPTIONS * HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"},
	{"hop-by-hop-dropped",
	 "GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, x-secret\r\nKeep-Alive: 5\r\n"
	 "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nTE: trailers\r\n"
	 "Trailer: X-Sum\r\nUpgrade: h2c\r\nX-Secret: s\r\nX-Kept: k\r\n\r\n",
	 false, "GET /x HTTP/1.1\r\nHost: a\r\nX-Kept: k\r\nConnection: close\r\n\r\n"},
	/* Connection naming the framing or routing headers strips none of them */
	{"connection-names-content-length",
	 "POST /u HTTP/1.1\r\nHost: a\r\nConnection: content-length, host\r\nContent-Length: "
	 "5\r\n\r\n",
	 false, "POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"},
	{"connection-names-transfer-encoding",
	 "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\nConnection: "
	 "Transfer-Encoding\r\n\r\n",
	 false,
	 "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n"
	 "Connection: close\r\n\r\n"},
	{"websocket",
	 "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
	 "Sec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n\r\n",
	 true,
	 "GET /ws HTTP/1.1\r\nHost: a\r\nSec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n"
	 "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
	{"websocket-among-others",
	 "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: h2c, WebSocket\r\nConnection: upgrade\r\n\r\n",
	 true, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
	{"h2c-not-offered",
	 "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
	 "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n",
	 false, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"},
};

static void
run_fwd(void **state)
{
	const struct fwd_case *c = *state;
	char *keep, *out;
	size_t len = 0;

	parse(c->raw, &keep);
	assert_int_equal(http_fwd_websocket(&req), c->websocket);
	out = http_fwd_head(&req, c->websocket, &len);
	assert_non_null(out);
	if (len != strlen(c->want) || memcmp(out, c->want, len))
		fail_msg("forwarded:\n%.*s\nwant:\n%s", (int)len, out, c->want);
	free(out);
	free(keep);
}

/* ---- what is a WebSocket upgrade ---------------------------------------- */

struct ws_case {
	const char *name;
	const char *raw;
	bool websocket;
};

static const struct ws_case ws_cases[] = {
	{"plain", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	 true},
	{"two-connection-lines",
	 "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nconnection: UPGRADE\r\n"
	 "upgrade: WEBSOCKET\r\n\r\n",
	 true},
	{"no-connection-option", "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n", false},
	{"no-upgrade-header", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n\r\n", false},
	{"other-protocol",
	 "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", false},
	{"versioned-token",
	 "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket/13\r\n\r\n",
	 false},
	{"token-prefix",
	 "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrades\r\nUpgrade: websocket\r\n\r\n", false},
	{"post", "POST / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	 false},
	{"http10", "GET / HTTP/1.0\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	 false},
	{"with-body",
	 "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
	 "Content-Length: 3\r\n\r\n",
	 false},
};

static void
run_ws(void **state)
{
	const struct ws_case *c = *state;
	char *keep;

	parse(c->raw, &keep);
	assert_int_equal(http_fwd_websocket(&req), c->websocket);
	free(keep);
}

/* ---- round trip: the forwarded head is the request that was judged ----- */

struct trip_case {
	const char *name;
	const char *raw;
};

static const struct trip_case trip_cases[] = {
	{"absolute", "GET http://a.test:8080/p?q HTTP/1.1\r\nHost: evil.test\r\n\r\n"},
	{"absolute-trailing-dot", "GET http://A.test./ HTTP/1.1\r\n\r\n"},
	{"absolute-ipv4", "HEAD http://192.0.2.1:1/ HTTP/1.0\r\nHost: x\r\n\r\n"},
	{"absolute-ipv6", "GET http://[::1]/ HTTP/1.1\r\n\r\n"},
	{"origin", "GET /i HTTP/1.1\r\nHost: WWW.a.test\r\n\r\n"},
	{"origin-port", "GET /i HTTP/1.1\r\nHost: a.test:81\r\n\r\n"},
	{"origin-ipv6", "GET / HTTP/1.1\r\nhost: [2001:db8::a]:81\r\n\r\n"},
	{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"},
	{"length",
	 "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 7, 7\r\ncontent-length:7\r\n\r\n"},
	{"length-named-in-connection",
	 "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\nConnection: Content-Length\r\n\r\n"},
	{"chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n"},
	{"chunked-named-in-connection",
	 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: "
	 "transfer-encoding, close\r\n\r\n"},
	{"host-named-in-connection", "GET / HTTP/1.1\r\nHost: h\r\nConnection: host\r\n\r\n"},
	{"websocket",
	 "GET /w HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"},
	{"leading-empty-lines", "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"},
	{"method-token", "M-SEARCH_x.1!~ /x HTTP/1.1\r\nHost: h\r\n\r\n"},
};

static void
run_trip(void **state)
{
	const struct trip_case *c = *state;
	char *keep, *out;
	size_t len = 0, consumed = 0;
	bool ws;

	parse(c->raw, &keep);
	ws = http_fwd_websocket(&req);
	out = http_fwd_head(&req, ws, &len);
	assert_non_null(out);
	assert_int_equal(http_parse_request(out, len, len, &back, &consumed), PARSE_DONE);
	assert_int_equal(consumed, len);
	assert_string_equal(back.method, req.method);
	assert_string_equal(back.target, req.target);
	assert_string_equal(back.host, req.host);
	assert_int_equal(back.port, req.port);
	assert_int_equal(back.body, req.body);
	assert_true(back.body_len == req.body_len);
	assert_false(back.absolute);
	assert_int_equal(back.version_minor, 1);
	assert_int_equal(back.keep_alive, ws); /* Connection: close unless upgrading */
	assert_int_equal(http_fwd_websocket(&back), ws);
	assert_int_equal(http_find_header(&back, "upgrade") != NULL, ws);
	/* for a kept upstream connection: keep-alive, all else the same */
	out = http_fwd_keep_alive(out, &len);
	assert_non_null(out);
	assert_int_equal(http_parse_request(out, len, len, &back, &consumed), PARSE_DONE);
	assert_int_equal(consumed, len);
	assert_string_equal(back.target, req.target);
	assert_string_equal(back.host, req.host);
	assert_int_equal(back.body, req.body);
	assert_true(back.keep_alive);
	assert_int_equal(http_fwd_websocket(&back), ws);
	assert_int_equal(http_fwd_upgrades(out, len), ws);
	free(out);
	free(keep);
}

/* ---- main ---------------------------------------------------------------- */

int
main(void)
{
	int failed = 0;

	failed += RUN_TABLE("http_fwd_head", fwd_cases, run_fwd);
	failed += RUN_TABLE("http_fwd_websocket", ws_cases, run_ws);
	failed += RUN_TABLE("http_fwd_round_trip", trip_cases, run_trip);
	return failed ? 1 : 0;
}
