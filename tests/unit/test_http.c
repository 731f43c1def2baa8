// SPDX-License-Identifier: Apache-2.0
/* Unit tests for userspace/parse/http.c: table-driven, one cmocka test per row.
 * Every accepted request form and every rejection parse.h lists has a row;
 * every accepted request is also cut at each byte to check that a prefix of
 * a valid head is PARSE_MORE and never an error. Inputs are copied into
 * exact-size heap buffers so that ASan flags any read past len. Then the
 * max_head limit, pipelining, header lookup, hop-by-hop detection and the
 * chunked decoder (in one go, byte by byte, at odd splits). */
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

#include "parse/parse.h"

#define BIG 65536 /* max_head when the limit is not under test */

static struct http_request req; /* 5 KiB: not on the stack of every test */

static enum parse_result
parse_n(const char *s, size_t n, size_t max_head, size_t *consumed)
{
	char *p = dup_exact(s, n);
	enum parse_result r = http_parse_request(p, n, max_head, &req, consumed);

	free(p);
	return r;
}

/* ---- accepted requests ------------------------------------------------- */

struct accept_case {
	const char *name;
	const char *raw;
	const char *method;
	const char *host;
	uint16_t port;
	bool connect;
	bool absolute;
	const char *target;
	int minor;
	bool keep_alive;
	enum http_body body;
	uint64_t body_len;
	size_t nheaders;
};

static const struct accept_case accept_cases[] = {
	{"absolute-port-path-query",
	 "GET http://Example.COM:8080/p/a?q=1&r=%20 HTTP/1.1\r\nHost: example.com:8080\r\n"
	 "User-Agent: t\r\n\r\n",
	 "GET", "example.com", 8080, false, true, "/p/a?q=1&r=%20", 1, true, HTTP_BODY_NONE, 0, 2},
	{"absolute-no-path", "GET http://example.com HTTP/1.1\r\n\r\n", "GET", "example.com", 80,
	 false, true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-query-no-path", "GET http://example.com?x=1 HTTP/1.0\r\n\r\n", "GET",
	 "example.com", 80, false, true, "/?x=1", 0, false, HTTP_BODY_NONE, 0, 0},
	{"absolute-scheme-case", "GET HTTP://example.com/ HTTP/1.1\r\n\r\n", "GET", "example.com",
	 80, false, true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-ipv6", "GET http://[2001:DB8::1]:8080/x HTTP/1.1\r\n\r\n", "GET", "2001:db8::1",
	 8080, false, true, "/x", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-ipv6-default-port", "HEAD http://[::1]/ HTTP/1.1\r\n\r\n", "HEAD", "::1", 80,
	 false, true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-ipv4", "GET http://192.0.2.1:1/ HTTP/1.1\r\n\r\n", "GET", "192.0.2.1", 1, false,
	 true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-port-65535", "GET http://h:65535/ HTTP/1.1\r\n\r\n", "GET", "h", 65535, false,
	 true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-port-leading-zeros", "GET http://h:0080/ HTTP/1.1\r\n\r\n", "GET", "h", 80,
	 false, true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-uri-wins-over-host",
	 "GET http://a.example/ HTTP/1.1\r\nHost: b.example:9\r\n\r\n", "GET", "a.example", 80,
	 false, true, "/", 1, true, HTTP_BODY_NONE, 0, 1},
	{"absolute-empty-host-header", "GET http://a.example/ HTTP/1.1\r\nHost:\r\n\r\n", "GET",
	 "a.example", 80, false, true, "/", 1, true, HTTP_BODY_NONE, 0, 1},
	{"absolute-trailing-dot", "GET http://Example.com./ HTTP/1.1\r\n\r\n", "GET",
	 "example.com.", 80, false, true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"absolute-underscore", "GET http://_svc.example/ HTTP/1.1\r\n\r\n", "GET", "_svc.example",
	 80, false, true, "/", 1, true, HTTP_BODY_NONE, 0, 0},
	{"connect", "CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", "CONNECT",
	 "example.com", 443, true, false, "", 1, true, HTTP_BODY_NONE, 0, 1},
	{"connect-ipv6", "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", "CONNECT", "2001:db8::1",
	 8443, true, false, "", 1, true, HTTP_BODY_NONE, 0, 0},
	{"connect-ipv4", "CONNECT 192.0.2.7:22 HTTP/1.1\r\n\r\n", "CONNECT", "192.0.2.7", 22, true,
	 false, "", 1, true, HTTP_BODY_NONE, 0, 0},
	{"connect-http10", "CONNECT h:443 HTTP/1.0\r\n\r\n", "CONNECT", "h", 443, true, false, "",
	 0, false, HTTP_BODY_NONE, 0, 0},
	{"connect-content-length-0", "CONNECT h:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	 "CONNECT", "h", 443, true, false, "", 1, true, HTTP_BODY_LENGTH, 0, 1},
	{"origin", "GET /index.html HTTP/1.1\r\nHost: WWW.Example.com\r\n\r\n", "GET",
	 "www.example.com", 80, false, false, "/index.html", 1, true, HTTP_BODY_NONE, 0, 1},
	{"origin-host-port", "GET /?a=b HTTP/1.1\r\nHost: h.example:8080\r\n\r\n", "GET",
	 "h.example", 8080, false, false, "/?a=b", 1, true, HTTP_BODY_NONE, 0, 1},
	{"origin-host-ipv6", "GET / HTTP/1.1\r\nhost: [2001:db8::a]:81\r\n\r\n", "GET",
	 "2001:db8::a", 81, false, false, "/", 1, true, HTTP_BODY_NONE, 0, 1},
	{"origin-http10-no-host", "GET / HTTP/1.0\r\n\r\n", "GET", "", 80, false, false, "/", 0,
	 false, HTTP_BODY_NONE, 0, 0},
	{"origin-http10-empty-host", "GET / HTTP/1.0\r\nHost: \r\n\r\n", "GET", "", 80, false,
	 false, "/", 0, false, HTTP_BODY_NONE, 0, 1},
	{"asterisk-options", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", "OPTIONS", "h", 80, false,
	 false, "*", 1, true, HTTP_BODY_NONE, 0, 1},
	{"content-length", "POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 42\r\n\r\n", "POST", "h",
	 80, false, false, "/f", 1, true, HTTP_BODY_LENGTH, 42, 2},
	{"content-length-list-and-repeat",
	 "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Length: 7, 7\r\ncontent-length:7\r\n\r\n", "PUT",
	 "h", 80, false, false, "/f", 1, true, HTTP_BODY_LENGTH, 7, 3},
	{"content-length-max",
	 "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n", "POST", "h",
	 80, false, false, "/", 1, true, HTTP_BODY_LENGTH, UINT64_MAX, 2},
	{"content-length-leading-zeros",
	 "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 007\r\n\r\n", "POST", "h", 80, false, false,
	 "/", 1, true, HTTP_BODY_LENGTH, 7, 2},
	{"chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", "POST", "h",
	 80, false, false, "/", 1, true, HTTP_BODY_CHUNKED, 0, 2},
	{"chunked-after-gzip",
	 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n", "POST", "h", 80,
	 false, false, "/", 1, true, HTTP_BODY_CHUNKED, 0, 2},
	{"chunked-over-two-lines",
	 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: "
	 "chunked\r\n\r\n",
	 "POST", "h", 80, false, false, "/", 1, true, HTTP_BODY_CHUNKED, 0, 3},
	{"chunked-after-coding-with-params",
	 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: x;q=\"a,b\" ; r=1 ,chunked\r\n\r\n",
	 "POST", "h", 80, false, false, "/", 1, true, HTTP_BODY_CHUNKED, 0, 2},
	{"connection-close-11", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", "GET",
	 "h", 80, false, false, "/", 1, false, HTTP_BODY_NONE, 0, 2},
	{"connection-close-in-list",
	 "GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n", "GET", "h", 80, false,
	 false, "/", 1, false, HTTP_BODY_NONE, 0, 2},
	{"keep-alive-10", "GET / HTTP/1.0\r\nHost: h\r\nConnection: Keep-Alive\r\n\r\n", "GET", "h",
	 80, false, false, "/", 0, true, HTTP_BODY_NONE, 0, 2},
	{"keep-alive-and-close-10",
	 "GET / HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", "GET",
	 "h", 80, false, false, "/", 0, false, HTTP_BODY_NONE, 0, 3},
	{"leading-empty-lines", "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", "GET", "h", 80, false,
	 false, "/", 1, true, HTTP_BODY_NONE, 0, 1},
	{"ows-and-empty-values",
	 "GET / HTTP/1.1\r\nHost:h\r\nX-Empty:\r\nX-Ws: \t v  w \t\r\nX-Obs: \xc3\xa9t\xe9\r\n\r\n",
	 "GET", "h", 80, false, false, "/", 1, true, HTTP_BODY_NONE, 0, 4},
	{"method-token-chars", "M-SEARCH_x.1!~ /x HTTP/1.1\r\nHost: h\r\n\r\n", "M-SEARCH_x.1!~",
	 "h", 80, false, false, "/x", 1, true, HTTP_BODY_NONE, 0, 1},
	{"method-23-chars", "ABCDEFGHIJKLMNOPQRSTUVW / HTTP/1.1\r\nHost: h\r\n\r\n",
	 "ABCDEFGHIJKLMNOPQRSTUVW", "h", 80, false, false, "/", 1, true, HTTP_BODY_NONE, 0, 1},
	{"target-uri-chars", "GET /a/b;c=d?e=f&g[]=h|i~'!$()*+,:@ HTTP/1.1\r\nHost: h\r\n\r\n",
	 "GET", "h", 80, false, false, "/a/b;c=d?e=f&g[]=h|i~'!$()*+,:@", 1, true, HTTP_BODY_NONE,
	 0, 1},
};

static void
run_accept(void **state)
{
	const struct accept_case *c = *state;
	size_t n = strlen(c->raw), consumed = 0;

	assert_int_equal(parse_n(c->raw, n, BIG, &consumed), PARSE_DONE);
	assert_int_equal(consumed, n);
	assert_string_equal(req.method, c->method);
	assert_string_equal(req.host, c->host);
	assert_int_equal(req.port, c->port);
	assert_int_equal(req.connect, c->connect);
	assert_int_equal(req.absolute, c->absolute);
	assert_string_equal(req.target, c->target);
	assert_int_equal(req.version_minor, c->minor);
	assert_int_equal(req.keep_alive, c->keep_alive);
	assert_int_equal(req.body, c->body);
	assert_true(req.body_len == c->body_len);
	assert_int_equal(req.nheaders, c->nheaders);
}

/* Every proper prefix of a valid head needs more; none is an error. */
static void
run_prefixes(void **state)
{
	const struct accept_case *c = *state;
	size_t n = strlen(c->raw), i, consumed;

	for (i = 0; i < n; i++) {
		consumed = 12345;
		if (parse_n(c->raw, i, BIG, &consumed) != PARSE_MORE)
			fail_msg("prefix of %zu bytes: not PARSE_MORE", i);
		assert_int_equal(consumed, 12345);
	}
}

/* ---- rejected requests ------------------------------------------------- */

struct reject_case {
	const char *name;
	const char *raw;
	size_t len; /* 0: strlen(raw) */
	enum parse_result want;
};

#define H "Host: h\r\n"

static const struct reject_case reject_cases[] = {
	/* request line */
	{"version-2.0", "GET / HTTP/2.0\r\n" H "\r\n", 0, PARSE_ERROR},
	{"version-1.2", "GET / HTTP/1.2\r\n" H "\r\n", 0, PARSE_ERROR},
	{"version-lowercase", "GET / http/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"version-trailing-space", "GET / HTTP/1.1 \r\n" H "\r\n", 0, PARSE_ERROR},
	{"version-missing", "GET /\r\n" H "\r\n", 0, PARSE_ERROR},
	{"version-http09", "GET /\r\n\r\n", 0, PARSE_ERROR},
	{"double-space", "GET  / HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"tab-separator", "GET\t/ HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"leading-space", " GET / HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"extra-word", "GET / x HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"method-not-token", "GE(T / HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"method-24-chars", "ABCDEFGHIJKLMNOPQRSTUVWX / HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"method-only", "GET\r\n\r\n", 0, PARSE_ERROR},
	{"binary-garbage", "\x16\x03\x01\x02\x00\x01", 0, PARSE_ERROR},
	/* request-target */
	{"https-absolute", "GET https://example.com/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ftp-absolute", "GET ftp://example.com/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"no-scheme", "GET example.com/ HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"http-no-slashes", "GET http:example.com/ HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"empty-authority", "GET http:///x HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"userinfo", "GET http://user@host/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"userinfo-password", "GET http://u:pw@host/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"userinfo-empty", "GET http://@host/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"fragment", "GET /a#b HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"target-del", "GET /a\x7f HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"target-ctl", "GET /a\x01 HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"target-non-ascii", "GET /\xc3\xa9 HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"asterisk-not-options", "GET * HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"absolute-port-0", "GET http://h:0/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"absolute-port-65536", "GET http://h:65536/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"absolute-port-huge", "GET http://h:99999999999999999999/ HTTP/1.1\r\n\r\n", 0,
	 PARSE_ERROR},
	{"absolute-port-empty", "GET http://h:/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"absolute-port-sign", "GET http://h:+80/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"absolute-host-pct", "GET http://ex%61mple.com/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"absolute-host-subdelim", "GET http://a!b.example/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-unbracketed", "GET http://2001:db8::1/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-bad-literal", "GET http://[2001:db8::g]/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-no-close", "GET http://[2001:db8::1/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-junk-after", "GET http://[::1]x/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-empty", "GET http://[]/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-zone", "GET http://[fe80::1%25eth0]/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"ipv6-ipvfuture", "GET http://[v1.x]/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	/* CONNECT */
	{"connect-no-port", "CONNECT example.com HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-empty-port", "CONNECT example.com: HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-port-0", "CONNECT example.com:0 HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-port-65536", "CONNECT example.com:65536 HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-port-alpha", "CONNECT example.com:44a HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-ipv6-no-port", "CONNECT [::1] HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-userinfo", "CONNECT u@example.com:443 HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-path", "CONNECT example.com:443/x HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-origin-form", "CONNECT / HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"connect-absolute", "CONNECT http://h:443/ HTTP/1.1\r\n\r\n", 0, PARSE_ERROR},
	{"connect-body", "CONNECT h:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 0, PARSE_ERROR},
	{"connect-chunked", "CONNECT h:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 0,
	 PARSE_ERROR},
	/* header lines */
	{"no-colon", "GET / HTTP/1.1\r\n" H "X-Foo bar\r\n\r\n", 0, PARSE_ERROR},
	{"space-before-colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 0, PARSE_ERROR},
	{"tab-before-colon", "GET / HTTP/1.1\r\n" H "X-A\t: b\r\n\r\n", 0, PARSE_ERROR},
	{"obs-fold", "GET / HTTP/1.1\r\n" H "X-A: b\r\n c\r\n\r\n", 0, PARSE_ERROR},
	{"obs-fold-tab", "GET / HTTP/1.1\r\n" H "X-A: b\r\n\tc\r\n\r\n", 0, PARSE_ERROR},
	{"ws-after-request-line", "GET / HTTP/1.1\r\n " H "\r\n", 0, PARSE_ERROR},
	{"empty-name", "GET / HTTP/1.1\r\n" H ": b\r\n\r\n", 0, PARSE_ERROR},
	{"name-not-token", "GET / HTTP/1.1\r\n" H "X(A): b\r\n\r\n", 0, PARSE_ERROR},
	{"value-ctl", "GET / HTTP/1.1\r\n" H "X-A: a\x01z\r\n\r\n", 0, PARSE_ERROR},
	{"value-del", "GET / HTTP/1.1\r\n" H "X-A: a\x7fz\r\n\r\n", 0, PARSE_ERROR},
	{"nul-in-value", "GET / HTTP/1.1\r\n" H "X-A: a\0z\r\n\r\n", 37, PARSE_ERROR},
	{"nul-in-target", "GET /\0 HTTP/1.1\r\n" H "\r\n", 28, PARSE_ERROR},
	{"nul-alone", "\0", 1, PARSE_ERROR},
	{"bare-cr-value", "GET / HTTP/1.1\r\n" H "X-A: a\rz\r\n\r\n", 0, PARSE_ERROR},
	{"bare-cr-request-line", "GET /\r HTTP/1.1\r\n" H "\r\n", 0, PARSE_ERROR},
	{"bare-lf", "GET / HTTP/1.1\nHost: h\n\n", 0, PARSE_ERROR},
	{"bare-lf-end", "GET / HTTP/1.1\r\n" H "\n", 0, PARSE_ERROR},
	{"lf-cr", "GET / HTTP/1.1\r\n" H "\n\r\n", 0, PARSE_ERROR},
	/* Content-Length */
	{"cl-alpha", "POST / HTTP/1.1\r\n" H "Content-Length: abc\r\n\r\n", 0, PARSE_ERROR},
	{"cl-negative", "POST / HTTP/1.1\r\n" H "Content-Length: -1\r\n\r\n", 0, PARSE_ERROR},
	{"cl-plus", "POST / HTTP/1.1\r\n" H "Content-Length: +1\r\n\r\n", 0, PARSE_ERROR},
	{"cl-hex", "POST / HTTP/1.1\r\n" H "Content-Length: 0x10\r\n\r\n", 0, PARSE_ERROR},
	{"cl-inner-space", "POST / HTTP/1.1\r\n" H "Content-Length: 1 2\r\n\r\n", 0, PARSE_ERROR},
	{"cl-empty", "POST / HTTP/1.1\r\n" H "Content-Length:\r\n\r\n", 0, PARSE_ERROR},
	{"cl-only-commas", "POST / HTTP/1.1\r\n" H "Content-Length: ,\r\n\r\n", 0, PARSE_ERROR},
	{"cl-list-differs", "POST / HTTP/1.1\r\n" H "Content-Length: 1, 2\r\n\r\n", 0, PARSE_ERROR},
	{"cl-lines-differ",
	 "POST / HTTP/1.1\r\n" H "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", 0, PARSE_ERROR},
	{"cl-overflow", "POST / HTTP/1.1\r\n" H "Content-Length: 18446744073709551616\r\n\r\n", 0,
	 PARSE_ERROR},
	{"cl-overflow-long",
	 "POST / HTTP/1.1\r\n" H "Content-Length: 99999999999999999999999999999\r\n\r\n", 0,
	 PARSE_ERROR},
	/* Transfer-Encoding */
	{"cl-and-te",
	 "POST / HTTP/1.1\r\n" H "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-and-cl",
	 "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-gzip-only", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip\r\n\r\n", 0, PARSE_ERROR},
	{"te-chunked-not-last", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked, gzip\r\n\r\n",
	 0, PARSE_ERROR},
	{"te-chunked-not-last-lines",
	 "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-chunked-twice", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked, chunked\r\n\r\n",
	 0, PARSE_ERROR},
	{"te-chunked-params", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked;x=1\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-empty", "POST / HTTP/1.1\r\n" H "Transfer-Encoding:\r\n\r\n", 0, PARSE_ERROR},
	{"te-not-token", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chu nked\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-quoted-chunked",
	 "POST / HTTP/1.1\r\n" H "Transfer-Encoding: x;q=\", chunked\"\r\n\r\n", 0, PARSE_ERROR},
	{"te-bad-param", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: x;q, chunked\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-chunked-suffix", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: xchunked\r\n\r\n", 0,
	 PARSE_ERROR},
	{"te-in-http10", "POST / HTTP/1.0\r\n" H "Transfer-Encoding: chunked\r\n\r\n", 0,
	 PARSE_ERROR},
	/* Host */
	{"host-missing-11", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n", 0, PARSE_ERROR},
	{"host-empty-11", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 0, PARSE_ERROR},
	{"host-twice", "GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", 0, PARSE_ERROR},
	{"host-twice-absolute", "GET http://h/ HTTP/1.1\r\nHost: h\r\nhost: i\r\n\r\n", 0,
	 PARSE_ERROR},
	{"host-invalid-absolute", "GET http://h/ HTTP/1.1\r\nHost: a b\r\n\r\n", 0, PARSE_ERROR},
	{"host-userinfo", "GET / HTTP/1.1\r\nHost: u@h\r\n\r\n", 0, PARSE_ERROR},
	{"host-port-0", "GET / HTTP/1.1\r\nHost: h:0\r\n\r\n", 0, PARSE_ERROR},
	{"host-list", "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 0, PARSE_ERROR},
	{"host-bad-ipv6", "GET / HTTP/1.1\r\nHost: [::g]\r\n\r\n", 0, PARSE_ERROR},
	{"connect-host-invalid", "CONNECT h:443 HTTP/1.1\r\nHost: a/b\r\n\r\n", 0, PARSE_ERROR},
};

static void
run_reject(void **state)
{
	const struct reject_case *c = *state;
	size_t n = c->len ? c->len : strlen(c->raw), consumed = 12345;

	assert_int_equal(parse_n(c->raw, n, BIG, &consumed), c->want);
	assert_int_equal(consumed, 12345);
}

/* ---- limits ------------------------------------------------------------ */

/* Names and targets at the edge of their fields. */
static void
test_field_limits(void **state)
{
	static char buf[8192], fill[4096];
	char name[300];
	size_t consumed;
	int n;

	(void)state;
	memset(fill, 'p', sizeof(fill) - 1);
	memset(name, 'a', 255);
	name[255] = '\0';
	n = snprintf(buf, sizeof(buf), "GET http://%s/ HTTP/1.1\r\n\r\n", name);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_DONE);
	assert_string_equal(req.host, name);
	n = snprintf(buf, sizeof(buf), "CONNECT %s:443 HTTP/1.1\r\n\r\n", name);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_DONE);
	name[255] = 'a';
	name[256] = '\0';
	n = snprintf(buf, sizeof(buf), "GET http://%s/ HTTP/1.1\r\n\r\n", name);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_ERROR);
	n = snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", name);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_ERROR);

	/* target[2048]: 2047 bytes fit, 2048 do not */
	n = snprintf(buf, sizeof(buf), "GET /%.*s HTTP/1.1\r\nHost: h\r\n\r\n", 2046, fill);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_DONE);
	assert_int_equal(strlen(req.target), 2047);
	n = snprintf(buf, sizeof(buf), "GET /%.*s HTTP/1.1\r\nHost: h\r\n\r\n", 2047, fill);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_TOO_LONG);
	/* absolute-form: the leading "/" added to "?q" counts too */
	n = snprintf(buf, sizeof(buf), "GET http://h?%.*s HTTP/1.1\r\n\r\n", 2045, fill);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_DONE);
	assert_int_equal(strlen(req.target), 2047);
	n = snprintf(buf, sizeof(buf), "GET http://h?%.*s HTTP/1.1\r\n\r\n", 2046, fill);
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_TOO_LONG);
}

static void
test_max_headers(void **state)
{
	static char buf[8192];
	size_t consumed, n;
	int i;

	(void)state;
	n = sprintf(buf, "GET / HTTP/1.1\r\nHost: h\r\n");
	for (i = 1; i < HTTP_MAX_HEADERS; i++)
		n += sprintf(buf + n, "X-%d: %d\r\n", i, i);
	memcpy(buf + n, "\r\n", 2);
	assert_int_equal(parse_n(buf, n + 2, BIG, &consumed), PARSE_DONE);
	assert_int_equal(req.nheaders, HTTP_MAX_HEADERS);
	assert_int_equal(consumed, n + 2);
	n += sprintf(buf + n, "X-last: 1\r\n\r\n");
	assert_int_equal(parse_n(buf, n, BIG, &consumed), PARSE_ERROR);
}

static void
test_max_head(void **state)
{
	static const char r[] = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
	size_t n = sizeof(r) - 1, consumed;
	char junk[600];

	(void)state;
	assert_int_equal(parse_n(r, n, n, &consumed), PARSE_DONE);
	assert_int_equal(consumed, n);
	assert_int_equal(parse_n(r, n, n - 1, &consumed), PARSE_TOO_LONG);
	assert_int_equal(parse_n(r, n, n - 2, &consumed), PARSE_TOO_LONG);
	assert_int_equal(parse_n(r, n, 1, &consumed), PARSE_TOO_LONG);
	/* not there yet and under the limit: more */
	assert_int_equal(parse_n(r, n - 1, n, &consumed), PARSE_MORE);
	assert_int_equal(parse_n(r, n - 1, n - 1, &consumed), PARSE_TOO_LONG);
	/* a line that never ends */
	memset(junk, 'a', sizeof(junk));
	memcpy(junk, "GET /", 5);
	assert_int_equal(parse_n(junk, 511, 512, &consumed), PARSE_MORE);
	assert_int_equal(parse_n(junk, 512, 512, &consumed), PARSE_TOO_LONG);
	assert_int_equal(parse_n(junk, sizeof(junk), 512, &consumed), PARSE_TOO_LONG);
	/* empty lines before the request line count */
	for (n = 0; n < sizeof(junk); n += 2)
		memcpy(junk + n, "\r\n", 2);
	assert_int_equal(parse_n(junk, 510, 512, &consumed), PARSE_MORE);
	assert_int_equal(parse_n(junk, sizeof(junk), 512, &consumed), PARSE_TOO_LONG);
	assert_int_equal(parse_n(junk, 0, 512, &consumed), PARSE_MORE);
}

/* Pipelined requests: consumed stops at the end of the first head. */
static void
test_pipelined(void **state)
{
	static const char two[] = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
				  "GET http://b/x HTTP/1.1\r\n\r\n"
				  "\r\nGET /c HTTP/1.1\r\nHost: c\r\n\r\nGET /d";
	size_t n = sizeof(two) - 1, off = 0, consumed;

	(void)state;
	assert_int_equal(parse_n(two, n, BIG, &consumed), PARSE_DONE);
	assert_int_equal(consumed,
			 strlen("POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"));
	assert_string_equal(req.target, "/a");
	assert_int_equal(req.body, HTTP_BODY_LENGTH);
	off = consumed + req.body_len;
	assert_int_equal(parse_n(two + off, n - off, BIG, &consumed), PARSE_DONE);
	assert_string_equal(req.host, "b");
	assert_string_equal(req.target, "/x");
	off += consumed;
	assert_int_equal(parse_n(two + off, n - off, BIG, &consumed), PARSE_DONE);
	assert_int_equal(consumed, strlen("\r\nGET /c HTTP/1.1\r\nHost: c\r\n\r\n"));
	assert_string_equal(req.host, "c");
	off += consumed;
	assert_int_equal(parse_n(two + off, n - off, BIG, &consumed), PARSE_MORE);
}

/* ---- header lookup and hop-by-hop -------------------------------------- */

static const char hdr_req[] = "GET http://h/ HTTP/1.1\r\n"
			      "Host: h\r\n"
			      "X-Trim: \t  spaced value \t\r\n"
			      "Connection: keep-alive, X-Private , ,Upgrade\r\n"
			      "connection: x-second\r\n"
			      "Keep-Alive: timeout=5\r\n"
			      "Proxy-Connection: keep-alive\r\n"
			      "Proxy-Authorization: Basic eA==\r\n"
			      "TE: trailers\r\n"
			      "Trailer: X-Sum\r\n"
			      "Upgrade: websocket\r\n"
			      "X-Private: 1\r\n"
			      "X-Second: 2\r\n"
			      "X-Privat: 3\r\n"
			      "Accept: */*\r\n"
			      "X-Empty:\r\n"
			      "\r\n";

static void
test_find_header(void **state)
{
	size_t n = sizeof(hdr_req) - 1, consumed;
	char *buf = dup_exact(hdr_req, n);
	const struct http_header *h;

	(void)state;
	assert_int_equal(http_parse_request(buf, n, BIG, &req, &consumed), PARSE_DONE);
	h = http_find_header(&req, "x-trim");
	assert_non_null(h);
	assert_int_equal(h->name_len, 6);
	assert_memory_equal(h->name, "X-Trim", 6);
	assert_int_equal(h->value_len, strlen("spaced value"));
	assert_memory_equal(h->value, "spaced value", h->value_len);
	h = http_find_header(&req, "CONNECTION");
	assert_non_null(h);
	assert_memory_equal(h->value, "keep-alive", 10); /* the first of two */
	h = http_find_header(&req, "x-empty");
	assert_non_null(h);
	assert_int_equal(h->value_len, 0);
	assert_null(http_find_header(&req, "X-Missing"));
	assert_null(http_find_header(&req, "X-Trimmed"));
	assert_null(http_find_header(&req, "X-Tri"));
	assert_null(http_find_header(&req, ""));
	free(buf);
}

static void
test_hop_headers(void **state)
{
	static const struct {
		const char *name;
		bool hop;
	} want[] = {
		{"Host", false},
		{"X-Trim", false},
		{"Connection", true},
		{"connection", true},
		{"Keep-Alive", true},
		{"Proxy-Connection", true},
		{"Proxy-Authorization", true},
		{"TE", true},
		{"Trailer", true},
		{"Upgrade", true},
		{"X-Private", true}, /* named in Connection */
		{"X-Second", true},  /* named in the second Connection line */
		{"X-Privat", false},
		{"Accept", false},
		{"X-Empty", false},
	};
	static const struct http_header te = {"transfer-encoding", 17, "chunked", 7};
	size_t n = sizeof(hdr_req) - 1, consumed, i;
	char *buf = dup_exact(hdr_req, n);

	(void)state;
	assert_int_equal(http_parse_request(buf, n, BIG, &req, &consumed), PARSE_DONE);
	for (i = 0; i < NCASES(want); i++) {
		const struct http_header *h = http_find_header(&req, want[i].name);

		assert_non_null(h);
		if (http_is_hop_header(&req, h) != want[i].hop)
			fail_msg("%s: hop-by-hop should be %d", want[i].name, want[i].hop);
	}
	assert_true(http_is_hop_header(&req, &te));
	free(buf);
}

/* ---- chunked ----------------------------------------------------------- */

struct chunk_case {
	const char *name;
	const char *raw;
	enum parse_result want;
	size_t used; /* in one go; (size_t)-1: all of raw */
};

#define ALL ((size_t)-1)

static const struct chunk_case chunk_cases[] = {
	{"simple", "5\r\nhello\r\n0\r\n\r\n", PARSE_DONE, ALL},
	{"stops-at-end", "5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n", PARSE_DONE, 15},
	{"several", "3\r\nabc\r\n4\r\ndefg\r\n1\r\n\r\r\n0\r\n\r\n", PARSE_DONE, ALL},
	{"hex-digits", "A\r\n0123456789\r\nb\r\n0123456789a\r\n0\r\n\r\n", PARSE_DONE, ALL},
	{"leading-zeros", "0005\r\nhello\r\n000\r\n\r\n", PARSE_DONE, ALL},
	{"data-with-crlf", "4\r\n\r\n\r\n\r\n0\r\n\r\n", PARSE_DONE, ALL},
	{"extensions", "5;name=val\r\nhello\r\n0;last\r\n\r\n", PARSE_DONE, ALL},
	{"extension-bws", "5 \t;a=\"q;x\" ;b\r\nhello\r\n0\r\n\r\n", PARSE_DONE, ALL},
	{"trailers", "0\r\nX-Sum: abc\r\nY:\r\nZ:\t\xff\r\n\r\n", PARSE_DONE, ALL},
	{"trailers-after-data", "2\r\nhi\r\n0\r\nX: 1\r\n\r\nrest", PARSE_DONE, 18},
	{"max-size", "ffffffffffffffff\r\nxyz", PARSE_MORE, ALL},
	{"partial-size", "1f", PARSE_MORE, ALL},
	{"partial-data", "5\r\nhel", PARSE_MORE, ALL},
	{"partial-trailer", "0\r\nX-Sum: a", PARSE_MORE, ALL},
	{"partial-end", "0\r\n\r", PARSE_MORE, ALL},
	{"empty", "", PARSE_MORE, ALL},
	{"no-digits", "\r\n", PARSE_ERROR, 0},
	{"no-digits-ext", ";x\r\n", PARSE_ERROR, 0},
	{"not-hex", "x\r\n", PARSE_ERROR, 0},
	{"negative", "-1\r\n", PARSE_ERROR, 0},
	{"0x-prefix", "0x5\r\n", PARSE_ERROR, 1},
	{"plus", "+5\r\n", PARSE_ERROR, 0},
	{"ws-before-size", " 5\r\n", PARSE_ERROR, 0},
	{"ws-without-ext", "5 \r\nhello\r\n", PARSE_ERROR, 2},
	{"bare-lf-size", "5\nhello\r\n", PARSE_ERROR, 1},
	{"bare-cr-size", "5\rhello\r\n", PARSE_ERROR, 2},
	{"ext-ctl", "5;\x01\r\nhello\r\n", PARSE_ERROR, 2},
	{"ext-bare-lf", "5;a\nhello\r\n", PARSE_ERROR, 3},
	{"data-no-crlf", "5\r\nhelloX\r\n0\r\n\r\n", PARSE_ERROR, 8},
	{"data-cr-no-lf", "5\r\nhello\rX0\r\n\r\n", PARSE_ERROR, 9},
	{"data-too-long", "2\r\nhello\r\n", PARSE_ERROR, 5},
	{"overflow", "10000000000000000\r\n", PARSE_ERROR, 16},
	{"overflow-long", "fffffffffffffffffffff\r\n", PARSE_ERROR, 16},
	{"trailer-obs-fold", "0\r\nX: a\r\n b\r\n\r\n", PARSE_ERROR, 9},
	{"trailer-no-colon", "0\r\nXa\r\n\r\n", PARSE_ERROR, 5},
	{"trailer-ws-before-colon", "0\r\nX : a\r\n\r\n", PARSE_ERROR, 4},
	{"trailer-empty-name", "0\r\n: a\r\n\r\n", PARSE_ERROR, 3},
	{"trailer-ctl", "0\r\nX: \x01\r\n\r\n", PARSE_ERROR, 6},
	{"trailer-bare-lf", "0\r\nX: a\n\r\n", PARSE_ERROR, 7},
	{"end-no-lf", "0\r\n\r\r", PARSE_ERROR, 4},
	{"last-chunk-no-crlf", "0\r\nX", PARSE_MORE, ALL},
};

static size_t
chunk_used(const struct chunk_case *c)
{
	return c->used == ALL ? strlen(c->raw) : c->used;
}

/* Feeds raw in pieces of step(i) bytes; returns the first non-MORE result
 * (or MORE) with the bytes used in total. */
static enum parse_result
feed_split(const char *raw, size_t n, size_t (*step)(size_t), size_t *total)
{
	struct http_chunked c = {0};
	enum parse_result r = PARSE_MORE;
	size_t off = 0, k = 0, used;

	*total = 0;
	while (off < n) {
		size_t len = step(k++);
		char *p;

		if (len > n - off)
			len = n - off;
		p = dup_exact(raw + off, len);
		r = http_chunked_feed(&c, p, len, &used);
		free(p);
		assert_true(used <= len);
		*total += used;
		if (r != PARSE_MORE)
			break;
		assert_int_equal(used, len);
		off += len;
	}
	/* finished states are sticky */
	if (r == PARSE_DONE || r == PARSE_ERROR || r == PARSE_TOO_LONG) {
		enum parse_result again = http_chunked_feed(&c, "0\r\n\r\n", 5, &used);

		assert_int_equal(again, r == PARSE_DONE ? PARSE_DONE : PARSE_ERROR);
		assert_int_equal(used, 0);
	}
	return r;
}

static size_t
step_all(size_t k)
{
	(void)k;
	return SIZE_MAX;
}

static size_t
step_one(size_t k)
{
	(void)k;
	return 1;
}

static size_t
step_odd(size_t k)
{
	return 1 + (k * 7 + 3) % 5;
}

static void
run_chunk(void **state)
{
	const struct chunk_case *c = *state;
	size_t n = strlen(c->raw), used;

	assert_int_equal(feed_split(c->raw, n, step_all, &used), c->want);
	assert_int_equal(used, chunk_used(c));
	assert_int_equal(feed_split(c->raw, n, step_one, &used), c->want);
	assert_int_equal(used, chunk_used(c));
	assert_int_equal(feed_split(c->raw, n, step_odd, &used), c->want);
	assert_int_equal(used, chunk_used(c));
}

/* Lines over 4 KiB: the size line (digits or extensions) and trailers. */
static void
test_chunk_line_limits(void **state)
{
	static char buf[8300];
	size_t used;

	(void)state;
	/* 4096 bytes of line before CR are fine */
	memset(buf, '0', 4095);
	memcpy(buf + 4095, "5\r\nhello\r\n0\r\n\r\n", 16);
	assert_int_equal(feed_split(buf, 4110, step_all, &used), PARSE_DONE);
	assert_int_equal(used, 4110);
	memset(buf, '0', 4096);
	memcpy(buf + 4096, "5\r\n", 3);
	assert_int_equal(feed_split(buf, 4099, step_all, &used), PARSE_TOO_LONG);
	assert_int_equal(used, 4096);
	assert_int_equal(feed_split(buf, 4099, step_one, &used), PARSE_TOO_LONG);
	assert_int_equal(used, 4096);

	buf[0] = '5';
	buf[1] = ';';
	memset(buf + 2, 'e', 8000);
	assert_int_equal(feed_split(buf, 8002, step_odd, &used), PARSE_TOO_LONG);
	assert_int_equal(used, 4096);

	memcpy(buf, "0\r\nX:", 5);
	memset(buf + 5, 'v', 8000);
	assert_int_equal(feed_split(buf, 5 + 4094, step_all, &used), PARSE_MORE);
	assert_int_equal(feed_split(buf, 5 + 4095, step_all, &used), PARSE_TOO_LONG);
	assert_int_equal(used, 3 + 4096);
}

/* A long body: data runs are taken whole, not byte by byte. */
static void
test_chunk_big_data(void **state)
{
	static char buf[70000];
	struct http_chunked c = {0};
	size_t used;

	(void)state;
	memcpy(buf, "10000\r\n", 7);
	memset(buf + 7, 'd', 65536);
	memcpy(buf + 7 + 65536, "\r\n0\r\n\r\n", 7);
	assert_int_equal(http_chunked_feed(&c, buf, 100, &used), PARSE_MORE);
	assert_int_equal(used, 100);
	assert_true(c.remaining == 65536 - 93);
	assert_int_equal(http_chunked_feed(&c, buf + 100, 7 + 65536 + 7 - 100, &used), PARSE_DONE);
	assert_int_equal(used, 7 + 65536 + 7 - 100);
}

/* ---- an API's requests (http_parse_api_request) ------------------------ */

/* The Docker Engine API's: a target longer than req.target holds (a
 * build's query), an empty Host (docker's hijacked requests) or none;
 * no absolute form. */
static void
test_api_request(void **state)
{
	static char buf[8192];
	size_t consumed, n;
	int t;

	(void)state;
	t = snprintf(buf, sizeof(buf), "POST /build?buildargs=");
	memset(buf + t, 'a', 3000);
	n = (size_t)t + 3000;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, " HTTP/1.1\r\nHost: docker\r\n\r\n");
	assert_int_equal(http_parse_request(buf, n, BIG, &req, &consumed), PARSE_TOO_LONG);
	assert_int_equal(http_parse_api_request(buf, n, BIG, &req, &consumed), PARSE_DONE);
	assert_int_equal(consumed, n);
	assert_string_equal(req.target, "");
	assert_int_equal(req.raw_target_len, 17 + 3000);
	assert_memory_equal(req.raw_target, "/build?buildargs=aaa", 20);
	n = (size_t)snprintf(buf, sizeof(buf),
			     "POST /containers/x/attach HTTP/1.1\r\nHost: \r\n"
			     "Upgrade: tcp\r\n\r\n");
	assert_int_equal(http_parse_request(buf, n, BIG, &req, &consumed), PARSE_ERROR);
	assert_int_equal(http_parse_api_request(buf, n, BIG, &req, &consumed), PARSE_DONE);
	assert_string_equal(req.target, "/containers/x/attach");
	assert_string_equal(req.host, "");
	n = (size_t)snprintf(buf, sizeof(buf), "GET /_ping HTTP/1.1\r\n\r\n");
	assert_int_equal(http_parse_api_request(buf, n, BIG, &req, &consumed), PARSE_DONE);
	n = (size_t)snprintf(buf, sizeof(buf), "GET http://docker/_ping HTTP/1.1\r\n\r\n");
	assert_int_equal(http_parse_api_request(buf, n, BIG, &req, &consumed), PARSE_ERROR);
	n = (size_t)snprintf(buf, sizeof(buf), "CONNECT docker:80 HTTP/1.1\r\n\r\n");
	assert_int_equal(http_parse_api_request(buf, n, BIG, &req, &consumed), PARSE_ERROR);
	n = (size_t)snprintf(buf, sizeof(buf), "OPTIONS * HTTP/1.1\r\n\r\n");
	assert_int_equal(http_parse_api_request(buf, n, BIG, &req, &consumed), PARSE_ERROR);
}

/* ---- main ---------------------------------------------------------------- */

int
main(void)
{
	const struct CMUnitTest misc[] = {
		cmocka_unit_test(test_field_limits),	  cmocka_unit_test(test_max_headers),
		cmocka_unit_test(test_max_head),	  cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_find_header),	  cmocka_unit_test(test_hop_headers),
		cmocka_unit_test(test_chunk_line_limits), cmocka_unit_test(test_chunk_big_data),
		cmocka_unit_test(test_api_request),
	};
	int failed = 0;

	failed += RUN_TABLE("http_accept", accept_cases, run_accept);
	failed += RUN_TABLE("http_prefixes", accept_cases, run_prefixes);
	failed += RUN_TABLE("http_reject", reject_cases, run_reject);
	failed += RUN_TABLE("http_chunked", chunk_cases, run_chunk);
	failed += cmocka_run_group_tests_name("http_misc", misc, NULL, NULL);
	return failed ? 1 : 0;
}
