// SPDX-License-Identifier: Apache-2.0
/* Unit tests of the upstream proxy's parts that need no network: its URL
 * and credentials (lib/proxyurl.c: what is refused and why, the Basic
 * value, the file and the variable, which is taken out of the
 * environment), the routes of --upstream-no-proxy (policy/route.c: what
 * goes direct, what is refused; NO_PROXY names and kpath_allows() follow
 * them), the reply to CONNECT read exactly to its head's end
 * (parse/http_resp.c: whole, byte by byte, with the tunnel's bytes behind
 * it, refusals, garbage), and a forwarded head in absolute form with its
 * credentials (proxy/http_fwd.c). Inputs the parsers read are copied to
 * exact-size heap buffers, so ASan flags any read past their end. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <cmocka.h>
#include "exact.h"
#include "table.h"

#include "kernel/kpath.h"
#include "lib/proxyurl.h"
#include "parse/http_resp.h"
#include "policy/policy.h"
#include "proxy/http_fwd.h"

/* ---- the URL ------------------------------------------------------------ */

struct url_case {
	const char *name;
	const char *url;
	const char *host; /* NULL: refused, err containing why */
	int port;
	const char *why;
};

static const struct url_case url_cases[] = {
	{"name", "http://proxy.corp.example:3128", "proxy.corp.example", 3128, NULL},
	{"upper_scheme_and_host", "HTTP://Proxy.Example:8080/", "proxy.example", 8080, NULL},
	{"ipv4", "http://198.18.0.1:3128", "198.18.0.1", 3128, NULL},
	{"ipv6", "http://[2001:db8::1]:3128", "2001:db8::1", 3128, NULL},
	{"https", "https://proxy.example:3128", NULL, 0, "https:// to the upstream proxy is not"},
	{"socks", "socks5://proxy.example:1080", NULL, 0, "expected http://HOST:PORT"},
	{"no_scheme", "proxy.example:3128", NULL, 0, "expected http://HOST:PORT"},
	{"no_port", "http://proxy.example", NULL, 0, "the port is missing"},
	{"no_port_slash", "http://proxy.example/", NULL, 0, "the port is missing"},
	{"port_zero", "http://proxy.example:0", NULL, 0, "a port from 1 to 65535"},
	{"port_big", "http://proxy.example:65536", NULL, 0, "a port from 1 to 65535"},
	{"port_junk", "http://proxy.example:31x", NULL, 0, "a port from 1 to 65535"},
	{"userinfo", "http://user:secret@proxy.example:3128", NULL, 0, "credentials do not go"},
	{"path", "http://proxy.example:3128/x", NULL, 0, "a path or query is not taken"},
	{"query", "http://proxy.example:3128?a", NULL, 0, "a path or query is not taken"},
	{"bad_host", "http://pro xy:3128", NULL, 0, "invalid host name"},
	{"empty_label", "http://a..b:3128", NULL, 0, "invalid host name"},
	{"bad_ipv6", "http://[2001:db8::zz]:3128", NULL, 0, "invalid IPv6 address"},
	{"ipv6_no_port", "http://[2001:db8::1]", NULL, 0, "the port is missing"},
};

static void
run_url(void **state)
{
	const struct url_case *c = *state;
	struct proxyurl u;
	char err[300] = "";
	int r = proxyurl_parse(c->url, &u, err, sizeof(err));

	if (!c->host) {
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, c->why));
		assert_null(strstr(err, "secret")); /* never the credentials */
		return;
	}
	assert_int_equal(r, 0);
	assert_string_equal(u.host, c->host);
	assert_int_equal(u.port, c->port);
	assert_int_equal(strncmp(u.text, "http://", 7), 0);
}

/* ---- the credentials ---------------------------------------------------- */

struct basic_case {
	const char *name;
	const char *cred;
	const char *want; /* NULL: refused with why */
	const char *why;
};

static const struct basic_case basic_cases[] = {
	{"plain", "user:pass", "Basic dXNlcjpwYXNz", NULL},
	{"colon_in_password", "u:p:w", "Basic dTpwOnc=", NULL},
	{"empty_password", "u:", "Basic dTo=", NULL},
	{"utf8", "j\xc3\xbcrgen:pw", "Basic asO8cmdlbjpwdw==", NULL},
	{"no_colon", "users3cr3t", NULL, "no ':' found"},
	{"empty_user", ":s3cr3t", NULL, "the user is empty"},
	{"control", "user:s3cr3t\t", NULL, "a control character"},
	{"del", "user:s3cr3t\x7f", NULL, "a control character"},
};

static void
run_basic(void **state)
{
	const struct basic_case *c = *state;
	char auth[PROXYURL_AUTH_MAX], err[200] = "";
	size_t n = strlen(c->cred);
	char *cred = dup_exact(c->cred, n);
	int r = proxyurl_basic(cred, n, auth, sizeof(auth), err, sizeof(err));

	if (c->want) {
		assert_int_equal(r, 0);
		assert_string_equal(auth, c->want);
	} else {
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, c->why));
		assert_null(strstr(err, "s3cr3t")); /* never quotes the credentials */
	}
	free(cred);
}

static void
test_basic_too_long(void **state)
{
	char cred[PROXYURL_CRED_MAX + 2], auth[PROXYURL_AUTH_MAX], err[200];

	(void)state;
	memset(cred, 'a', sizeof(cred));
	cred[1] = ':';
	assert_int_equal(
		proxyurl_basic(cred, PROXYURL_CRED_MAX, auth, sizeof(auth), err, sizeof(err)), 0);
	assert_int_equal(
		proxyurl_basic(cred, PROXYURL_CRED_MAX + 1, auth, sizeof(auth), err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "longer than 512"));
}

/* The credentials file: written with content, read back. */
struct file_case {
	const char *name;
	const char *content;
	int mode;
	const char *want; /* NULL: refused with why */
	const char *why;
};

static const struct file_case file_cases[] = {
	{"one_line", "user:pass\n", 0600, "Basic dXNlcjpwYXNz", NULL},
	{"no_newline", "user:pass", 0600, "Basic dXNlcjpwYXNz", NULL},
	{"crlf", "user:pass\r\n", 0600, "Basic dXNlcjpwYXNz", NULL},
	{"blank_lines_after", "user:pass\n\n  \n", 0600, "Basic dXNlcjpwYXNz", NULL},
	{"world_readable_warned", "user:pass\n", 0644, "Basic dXNlcjpwYXNz", NULL},
	{"two_lines", "user:s3cr3t\nother:s3cr3t\n", 0600, NULL, "expected one line"},
	{"empty", "", 0600, NULL, "no ':' found"},
	{"no_colon", "users3cr3t\n", 0600, NULL, "no ':' found"},
};

static void
run_file(void **state)
{
	const struct file_case *c = *state;
	char path[] = "/tmp/egr-test-upstream-XXXXXX", auth[PROXYURL_AUTH_MAX], err[400] = "";
	const char *from = NULL;
	int fd = mkstemp(path), r;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, c->content, strlen(c->content)), (ssize_t)strlen(c->content));
	assert_int_equal(fchmod(fd, (mode_t)c->mode), 0);
	close(fd);
	r = proxyurl_credentials(path, auth, sizeof(auth), &from, err, sizeof(err));
	unlink(path);
	if (c->want) {
		assert_int_equal(r, 0);
		assert_string_equal(auth, c->want);
		assert_string_equal(from, path);
		return;
	}
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err, c->why));
	assert_null(strstr(err, "s3cr3t"));
}

static void
test_file_missing(void **state)
{
	char auth[PROXYURL_AUTH_MAX], err[400];
	const char *from;

	(void)state;
	assert_int_equal(proxyurl_credentials("/nonexistent/egr-cred", auth, sizeof(auth), &from,
					      err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/egr-cred"));
}

/* The variable: taken out of the environment (unset, its bytes erased
 * where the environment held them), used when no file is given; a file
 * wins over it. Last in main(): it changes the process's state. */
static void
test_env(void **state)
{
	extern char **environ;
	char auth[PROXYURL_AUTH_MAX], err[400];
	const char *from;
	char *held = NULL;

	(void)state;
	assert_int_equal(setenv(PROXYURL_ENV, "envuser:envpass", 1), 0);
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, PROXYURL_ENV "=", sizeof(PROXYURL_ENV)))
			held = *e;
	assert_non_null(held);
	proxyurl_take_env();
	assert_null(getenv(PROXYURL_ENV));
	assert_null(strstr(held + sizeof(PROXYURL_ENV), "envpass")); /* erased in place */
	assert_int_equal(proxyurl_credentials(NULL, auth, sizeof(auth), &from, err, sizeof(err)),
			 0);
	assert_string_equal(auth, "Basic ZW52dXNlcjplbnZwYXNz");
	assert_string_equal(from, "$" PROXYURL_ENV);
}

static void
test_none(void **state)
{
	char auth[PROXYURL_AUTH_MAX] = "x", err[400];
	const char *from = "x";

	(void)state;
	/* nothing taken yet (test_env runs last) */
	assert_int_equal(proxyurl_credentials(NULL, auth, sizeof(auth), &from, err, sizeof(err)),
			 0);
	assert_string_equal(auth, "");
	assert_null(from);
}

/* ---- the routes --------------------------------------------------------- */

struct list_case {
	const char *name;
	const char *list;
	const char *why; /* NULL: taken */
};

static const struct list_case list_cases[] = {
	{"names", "corp.example, .internal.test,host1", NULL},
	{"cidrs", "10.0.0.0/8,192.0.2.7,2001:db8::/32,[2001:db8:1::]/48,[2001:db8::5]", NULL},
	{"empty_entries", "a.test,,b.test,", NULL},
	{"star", "*", "'*': it would send everything direct"},
	{"wildcard", "*.corp.example", "a name covers the names under it"},
	{"port", "corp.example:8080", "invalid address"},
	{"host_bits", "10.0.0.1/8", "host bits set"},
	{"plen", "10.0.0.0/33", "0-32 for the prefix length"},
	{"plen6", "2001:db8::/129", "0-128 for the prefix length"},
	{"bad_name", "ex ample.test", "expected a host name"},
	{"numeric", "999.1.2.3", "invalid address"},
	{"only_commas", ",,", "a comma-separated list"},
	{"empty", "", "a comma-separated list"},
};

static void
run_list(void **state)
{
	const struct list_case *c = *state;
	char err[300] = "";
	int r = policy_noproxy_check(c->list, err, sizeof(err));

	if (!c->why) {
		assert_int_equal(r, 0);
		return;
	}
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err, c->why));
}

static struct sockaddr_storage *
addr(const char *text, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(443);
	} else {
		assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(443);
	}
	return ss;
}

struct via_case {
	const char *name;
	const char *host; /* NULL: none */
	const char *ip;	  /* NULL: none */
	bool via;	  /* through the upstream proxy */
};

#define NOPROXY "corp.example,.internal.test,10.0.0.0/8,2001:db8:5::/48,192.0.2.7"

static const struct via_case via_cases[] = {
	{"name_elsewhere", "github.com", NULL, true},
	{"name_listed", "corp.example", NULL, false},
	{"name_under", "git.corp.example", NULL, false},
	{"name_not_a_suffix", "evilcorp.example", NULL, true},
	{"dotted_entry_apex", "internal.test", NULL, false},
	{"dotted_entry_under", "a.b.internal.test", NULL, false},
	{"trailing_dot", "corp.example.", NULL, false},
	{"addr_in_cidr", NULL, "10.1.2.3", false},
	{"addr_outside", NULL, "203.0.113.7", true},
	{"addr_exact", NULL, "192.0.2.7", false},
	{"addr_next", NULL, "192.0.2.8", true},
	{"addr6_in_cidr", NULL, "2001:db8:5::9", false},
	{"addr6_outside", NULL, "2001:db8:6::9", true},
	{"v4mapped_in_cidr", NULL, "::ffff:10.9.9.9", false},
	{"literal_host_in_cidr", "10.4.4.4", NULL, false},
	{"literal_host_outside", "203.0.113.9", NULL, true},
	{"literal_host6", "2001:db8:5::1", NULL, false},
	{"name_or_addr_direct", "github.com", "10.1.1.1", false},
	{"name_direct_addr_not", "corp.example", "203.0.113.1", false},
	{"loopback", NULL, "127.0.0.1", false},
	{"loopback6", NULL, "::1", false},
	{"link_local", NULL, "169.254.169.254", false},
	{"link_local6", NULL, "fe80::1", false},
	{"localhost", "localhost", NULL, false},
	{"under_localhost", "db.localhost", NULL, false},
	{"private_not_listed", NULL, "192.168.1.1", true},
};

static void
run_via(void **state)
{
	const struct via_case *c = *state;
	struct policy *p = policy_new();
	struct sockaddr_storage ss;
	char err[300];

	assert_non_null(p);
	assert_false(policy_upstream(p));
	assert_false(policy_via_upstream(p, c->host,
					 c->ip ? (struct sockaddr *)addr(c->ip, &ss)
					       : NULL)); /* none set: direct */
	assert_int_equal(policy_set_upstream(p, true, NOPROXY, err, sizeof(err)), 0);
	assert_true(policy_upstream(p));
	assert_int_equal(
		policy_via_upstream(p, c->host, c->ip ? (struct sockaddr *)addr(c->ip, &ss) : NULL),
		c->via);
	assert_int_equal(policy_set_upstream(p, false, NULL, err, sizeof(err)), 0);
	assert_false(policy_via_upstream(p, c->host, NULL));
	policy_free(p);
}

/* Without exceptions, everything but loopback, link-local and localhost. */
static void
test_via_no_list(void **state)
{
	struct policy *p = policy_new();
	struct sockaddr_storage ss;
	char err[300];

	(void)state;
	assert_int_equal(policy_set_upstream(p, true, NULL, err, sizeof(err)), 0);
	assert_true(policy_via_upstream(p, "corp.example", NULL));
	assert_true(policy_via_upstream(p, NULL, (struct sockaddr *)addr("10.1.2.3", &ss)));
	assert_false(policy_via_upstream(p, NULL, (struct sockaddr *)addr("127.0.0.53", &ss)));
	assert_false(policy_via_upstream(p, "localhost", NULL));
	assert_int_equal(policy_set_upstream(p, true, "*", err, sizeof(err)), -EINVAL);
	assert_true(policy_upstream(p)); /* a bad list changes nothing */
	policy_free(p);
}

/* NO_PROXY lists only the names that go direct; kpath_allows() opens no
 * kernel path for what goes through the upstream proxy. */
static void
test_noproxy_names_and_kpath(void **state)
{
	struct policy *p = policy_new();
	struct sockaddr_storage ss;
	char err[300], buf[512] = "";

	(void)state;
	assert_int_equal(policy_add(p, POLICY_ALLOW, "github.com", NULL, "t", err, sizeof(err)), 0);
	assert_int_equal(
		policy_add(p, POLICY_ALLOW, "**.corp.example", NULL, "t", err, sizeof(err)), 0);
	assert_int_equal(
		policy_add(p, POLICY_ALLOW, "*.internal.test", NULL, "t", err, sizeof(err)), 0);
	assert_int_equal(policy_add(p, POLICY_ALLOW, "tcp://db.corp.example:5432", NULL, "t", err,
				    sizeof(err)),
			 0);
	assert_int_equal(policy_add(p, POLICY_ALLOW, "10.0.0.7:22", NULL, "t", err, sizeof(err)),
			 0);
	assert_int_equal(policy_add(p, POLICY_ALLOW, "203.0.113.7:22", NULL, "t", err, sizeof(err)),
			 0);
	policy_noproxy_names(p, buf, sizeof(buf), 16);
	assert_string_equal(buf, "github.com,corp.example,.internal.test");
	assert_true(kpath_allows(p, addr("140.82.112.3", &ss), "github.com", POLICY_P_TLS, NULL));
	assert_int_equal(policy_set_upstream(p, true, "corp.example,10.0.0.0/8", err, sizeof(err)),
			 0);
	buf[0] = 0;
	policy_noproxy_names(p, buf, sizeof(buf), 16);
	assert_string_equal(buf, "corp.example"); /* *.internal.test: not listed */
	assert_false(kpath_allows(p, addr("140.82.112.3", &ss), "github.com", POLICY_P_TLS, NULL));
	assert_true(
		kpath_allows(p, addr("198.51.100.4", &ss), "git.corp.example", POLICY_P_TLS, NULL));
	{
		struct sockaddr_storage db;

		addr("198.51.100.5", &db);
		((struct sockaddr_in *)&db)->sin_port = htons(5432);
		assert_true(kpath_allows(p, &db, "db.corp.example", POLICY_P_TCP, NULL));
		addr("10.0.0.7", &db);
		((struct sockaddr_in *)&db)->sin_port = htons(22);
		assert_true(kpath_allows(p, &db, NULL, POLICY_P_TCP, NULL));
		addr("203.0.113.7", &db);
		((struct sockaddr_in *)&db)->sin_port = htons(22);
		assert_false(kpath_allows(p, &db, NULL, POLICY_P_TCP, NULL));
	}
	policy_free(p);
}

/* ---- the reply to CONNECT ----------------------------------------------- */

struct reply_case {
	const char *name;
	const char *bytes;
	enum parse_result want;
	int status;
	size_t head; /* bytes of the head, for PARSE_DONE */
};

#define OK200 "HTTP/1.1 200 Connection established\r\n\r\n"

static const struct reply_case reply_cases[] = {
	{"squid_200", OK200, PARSE_DONE, 200, sizeof(OK200) - 1},
	{"with_tunnel_bytes", OK200 "SSH-2.0-banner\r\n", PARSE_DONE, 200, sizeof(OK200) - 1},
	{"headers", "HTTP/1.0 200 OK\r\nVia: 1.1 p\r\nContent-Length: 0\r\n\r\nxyz", PARSE_DONE,
	 200, 50},
	{"refused_403", "HTTP/1.1 403 Forbidden\r\nContent-Length: 5\r\n\r\nnope!", PARSE_DONE, 403,
	 45},
	{"auth_407",
	 "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n",
	 PARSE_DONE, 407, 73},
	{"unfinished", "HTTP/1.1 200 Connection established\r\n", PARSE_MORE, 0, 0},
	{"not_http", "SSH-2.0-OpenSSH\r\n\r\n", PARSE_ERROR, 0, 0},
	{"bare_lf", "HTTP/1.1 200 OK\n\n", PARSE_ERROR, 0, 0},
	{"nul", "HTTP/1.1 200 O\0K\r\n\r\n", PARSE_ERROR, 0, 0},
	{"bad_status", "HTTP/1.1 2x0 OK\r\n\r\n", PARSE_ERROR, 0, 0},
};

static void
run_reply(void **state)
{
	const struct reply_case *c = *state;
	size_t n = strlen(c->bytes) + (strcmp(c->name, "nul") ? 0 : 7);
	char *b = dup_exact(c->bytes, n);
	struct http_connect_reader *r = calloc(1, sizeof(*r));
	size_t take = 0, got = 0;
	int status = 0;
	enum parse_result res;

	/* whole */
	assert_int_equal(res = http_connect_feed(r, b, n, &take, &status), c->want);
	if (res == PARSE_DONE) {
		assert_int_equal(take, c->head);
		assert_int_equal(status, c->status);
	}
	if (res == PARSE_MORE)
		assert_int_equal(take, n);
	/* byte by byte, as a slow proxy sends it: the same end, not a byte more */
	memset(r, 0, sizeof(*r));
	res = PARSE_MORE;
	for (size_t i = 0; i < n && res == PARSE_MORE; i++) {
		char *one = dup_exact(b + i, n - i); /* what is readable now */

		res = http_connect_feed(r, one, 1, &take, &status);
		got += take;
		free(one);
	}
	assert_int_equal(res, c->want);
	if (res == PARSE_DONE) {
		assert_int_equal(got, c->head);
		assert_int_equal(status, c->status);
	}
	free(r);
	free(b);
}

static void
test_reply_too_long(void **state)
{
	struct http_connect_reader *r = calloc(1, sizeof(*r));
	size_t n = HTTP_CONNECT_HEAD_MAX + 100, take = 0, off = 0;
	char *b = malloc(n);
	enum parse_result res = PARSE_MORE;
	int status;

	(void)state;
	memcpy(b, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(b + 20, 'a', n - 20);
	while (res == PARSE_MORE && off < n) {
		res = http_connect_feed(r, b + off, n - off > 4096 ? 4096 : n - off, &take,
					&status);
		off += take;
	}
	assert_int_equal(res, PARSE_TOO_LONG);
	assert_true(off <= HTTP_CONNECT_HEAD_MAX);
	free(b);
	free(r);
}

/* ---- absolute form ------------------------------------------------------ */

struct abs_case {
	const char *name;
	const char *head;
	const char *authority;
	const char *auth;
	const char *want;
};

static const struct abs_case abs_cases[] = {
	{"get", "GET /x?y HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", "a.test", "",
	 "GET http://a.test/x?y HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"},
	{"port_and_auth", "POST /p HTTP/1.1\r\nHost: a.test:8080\r\n\r\n", "a.test:8080",
	 "Basic dTpw",
	 "POST http://a.test:8080/p HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n"
	 "Host: a.test:8080\r\n\r\n"},
	{"options_star", "OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", "a.test", "",
	 "OPTIONS http://a.test HTTP/1.1\r\nHost: a.test\r\n\r\n"},
	{"ipv6", "GET / HTTP/1.1\r\n\r\n", "[2001:db8::1]", "",
	 "GET http://[2001:db8::1]/ HTTP/1.1\r\n\r\n"},
	{"not_a_head", "GARBAGE", "a.test", "", NULL},
};

static void
run_abs(void **state)
{
	const struct abs_case *c = *state;
	size_t n = strlen(c->head), len = 0;
	char *in = dup_exact(c->head, n);
	char *out = http_fwd_absolute(in, n, c->authority, c->auth, &len);

	if (!c->want) {
		assert_null(out);
		free(in);
		return;
	}
	assert_non_null(out);
	assert_int_equal(len, strlen(c->want));
	assert_memory_equal(out, c->want, len);
	free(out);
	free(in);
}

static void
test_upgrades(void **state)
{
	static const char ws[] = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
				 "Upgrade: websocket\r\n\r\n";
	static const char plain[] = "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";

	(void)state;
	assert_true(http_fwd_upgrades(ws, sizeof(ws) - 1));
	assert_false(http_fwd_upgrades(plain, sizeof(plain) - 1));
	assert_false(http_fwd_upgrades("", 0));
}

int
main(void)
{
	const struct CMUnitTest single[] = {
		cmocka_unit_test(test_basic_too_long),
		cmocka_unit_test(test_file_missing),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_via_no_list),
		cmocka_unit_test(test_noproxy_names_and_kpath),
		cmocka_unit_test(test_reply_too_long),
		cmocka_unit_test(test_upgrades),
		cmocka_unit_test(test_env), /* last: it takes the variable */
	};
	int failed = 0;

	failed += RUN_TABLE("proxyurl_parse", url_cases, run_url);
	failed += RUN_TABLE("proxyurl_basic", basic_cases, run_basic);
	failed += RUN_TABLE("proxyurl_credentials", file_cases, run_file);
	failed += RUN_TABLE("noproxy_list", list_cases, run_list);
	failed += RUN_TABLE("via_upstream", via_cases, run_via);
	failed += RUN_TABLE("connect_reply", reply_cases, run_reply);
	failed += RUN_TABLE("fwd_absolute", abs_cases, run_abs);
	failed += cmocka_run_group_tests_name("upstream", single, NULL, NULL);
	return failed ? 1 : 0;
}
