// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for userspace/parse/http.c. The input is parsed as a request
 * head (exactly sized: ASan sees any read past len); a parsed head must be
 * self-consistent (fields terminated, lower-case host, headers inside the
 * head), parse the same way under a limit of exactly its size, and be
 * PARSE_MORE when cut short. The head the proxy would forward for it
 * (http_fwd.h) must parse back to the same method, target, host, port and
 * body framing, in origin-form, with no upgrade offered unless it is a
 * WebSocket one. The bytes after the head (all of them if it
 * did not parse) then go to http_chunked_feed() twice: in one go and in
 * pieces whose sizes come from the input, and both runs must agree on the
 * result and on how many bytes belong to the body, as must
 * http_chunked_decode() (its data never longer). With a rule's header
 * hooks (proxy/http_hook.h: Cookie stripped, Authorization set from a
 * secret when the request sends its placeholder), the head forwarded
 * parses back the same way, holds no Cookie, and holds one Authorization,
 * the value's, exactly when the hooks' judge accepts the request. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/http_fwd.h"
#include "proxy/http_hook.h"
#include "parse/parse.h"
#include "policy/policy.h"
#include "policy/secret.h"

#define MAX_HEAD 8192

static struct http_request req, req2;

/* What a server gets for req is what was judged. */
static void
check_forwarded(bool websocket)
{
	size_t len = 0, consumed = 0;
	char *head = http_fwd_head(&req, websocket, &len);

	if (!head)
		abort();
	if (http_parse_request(head, len, len, &req2, &consumed) != PARSE_DONE || consumed != len)
		abort();
	if (strcmp(req2.method, req.method) || strcmp(req2.target, req.target) ||
	    strcmp(req2.host, req.host) || req2.port != req.port || req2.absolute ||
	    req2.body != req.body || req2.body_len != req.body_len || req2.version_minor != 1 ||
	    req2.keep_alive != websocket || http_fwd_websocket(&req2) != websocket ||
	    (http_find_header(&req2, "upgrade") != NULL) != websocket)
		abort();
	free(head);
}

/* The hooks, and a store whose secret T (for api.test) has a value. */
static const char *const strip_v[] = {"cookie"};
static const struct policy_hook_set set_v[] = {
	{.name = "Authorization", .secret = "T", .prefix = "Bearer ", .placeholder = true},
};
static const struct policy_hooks hooks = {.strip = strip_v, .nstrip = 1, .set = set_v, .nset = 1};
static struct secrets *sec;

static void
hook_store(void)
{
	struct policy *p = policy_new();
	char err[200];

	if (!p || policy_add_secret_arg(p, "T=env:X@api.test", err, sizeof(err)))
		abort();
	sec = secrets_new(p);
	if (!sec || secrets_set_value(sec, 0, "real", 4))
		abort();
	policy_free(p);
}

static void
check_hooked(bool tls)
{
	size_t len = 0, consumed = 0, nauth = 0;
	unsigned int which = 0;
	bool ok = http_hook_judge(&hooks, sec, "api.test", tls, &req, &which) == POLICY_HOOK_OK;
	char *head = http_hook_head(&req, false, &hooks, sec, "api.test", tls, &len, NULL);

	if (!head)
		abort();
	if (http_parse_request(head, len, len, &req2, &consumed) != PARSE_DONE || consumed != len)
		abort();
	if (strcmp(req2.method, req.method) || strcmp(req2.target, req.target) ||
	    strcmp(req2.host, req.host) || req2.port != req.port || req2.body != req.body ||
	    req2.body_len != req.body_len || http_find_header(&req2, "cookie"))
		abort();
	for (size_t i = 0; i < req2.nheaders; i++) {
		const struct http_header *h = &req2.headers[i];

		if (h->name_len != 13 || strncasecmp(h->name, "authorization", 13))
			continue;
		nauth++;
		if (h->value_len != 11 || memcmp(h->value, "Bearer real", 11))
			abort();
	}
	if (nauth != (ok ? 1u : 0u) || (ok && !tls))
		abort();
	secrets_wipe_free(head, len);
}

static void
check_str(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap))
		abort();
}

static void
check_head(const char *buf, size_t size, size_t consumed)
{
	size_t i, n;

	if (!consumed || consumed > size || consumed > MAX_HEAD)
		abort();
	check_str(req.method, sizeof(req.method));
	check_str(req.host, sizeof(req.host));
	check_str(req.target, sizeof(req.target));
	if (!req.method[0] || req.port == 0 || req.version_minor < 0 || req.version_minor > 1)
		abort();
	for (i = 0; req.host[i]; i++)
		if (req.host[i] >= 'A' && req.host[i] <= 'Z')
			abort();
	if (req.connect != !strcmp(req.method, "CONNECT"))
		abort();
	if (req.connect ? req.target[0] || !req.host[0]
			: req.target[0] != '/' && strcmp(req.target, "*"))
		abort();
	if (req.absolute && (req.connect || !req.host[0]))
		abort();
	if (req.body != HTTP_BODY_LENGTH && req.body_len)
		abort();
	if (req.nheaders > HTTP_MAX_HEADERS)
		abort();
	for (i = 0; i < req.nheaders; i++) {
		const struct http_header *h = &req.headers[i], *f;
		char name[MAX_HEAD + 1];

		if (h->name < buf || h->name + h->name_len > buf + consumed || !h->name_len)
			abort();
		if (h->value < buf || h->value + h->value_len > buf + consumed)
			abort();
		n = h->name_len;
		memcpy(name, h->name, n);
		name[n] = '\0';
		f = http_find_header(&req, name);
		if (!f || f > h || f->name_len != n)
			abort();
		(void)http_is_hop_header(&req, h);
	}
}

/* Feeds the body in pieces of 1..64 bytes whose sizes are read from seq. */
static enum parse_result
feed(const char *b, size_t n, const uint8_t *seq, size_t nseq, size_t *total)
{
	struct http_chunked c = {0};
	enum parse_result r = PARSE_MORE;
	size_t off = 0, k = 0, used;

	*total = 0;
	while (off < n) {
		size_t len = seq ? 1 + seq[k++ % nseq] % 64 : n;

		if (len > n - off)
			len = n - off;
		r = http_chunked_feed(&c, b + off, len, &used);
		if (used > len || (r == PARSE_MORE && used != len))
			abort();
		*total += used;
		if (r != PARSE_MORE)
			break;
		off += len;
	}
	/* the end of a body, or bad framing, is final */
	if (r != PARSE_MORE) {
		enum parse_result again = http_chunked_feed(&c, "0\r\n\r\n", 5, &used);

		if (used || again != (r == PARSE_DONE ? PARSE_DONE : PARSE_ERROR))
			abort();
	}
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t consumed = 0, c2 = 0, rest, used1, used2;
	enum parse_result r, r1, r2;

	r = http_parse_request(buf, size, MAX_HEAD, &req, &consumed);
	if (r > PARSE_TOO_LONG)
		abort();
	if (r == PARSE_DONE) {
		check_head(buf, size, consumed);
		/* what follows the head does not matter */
		if (http_parse_request(buf, consumed, MAX_HEAD, &req2, &c2) != PARSE_DONE ||
		    c2 != consumed || strcmp(req.host, req2.host) || req.port != req2.port ||
		    strcmp(req.target, req2.target) || req.body != req2.body)
			abort();
		/* a limit of exactly the head is enough, one less is not */
		if (http_parse_request(buf, size, consumed, &req2, &c2) != PARSE_DONE)
			abort();
		if (http_parse_request(buf, size, consumed - 1, &req2, &c2) != PARSE_TOO_LONG)
			abort();
		/* a prefix of a valid head is never an error */
		if (http_parse_request(buf, consumed - 1, MAX_HEAD, &req2, &c2) != PARSE_MORE)
			abort();
		if (http_parse_request(buf, consumed / 2, MAX_HEAD, &req2, &c2) != PARSE_MORE)
			abort();
		/* (Host, Connection and Upgrade added may pass the header limit) */
		if (!req.connect && req.host[0] && req.nheaders + 3 <= HTTP_MAX_HEADERS) {
			check_forwarded(false);
			if (http_fwd_websocket(&req))
				check_forwarded(true);
			if (!sec)
				hook_store();
			check_hooked(true);
			check_hooked(false);
		}
	}

	/* an API's parse (dockerapi/): the same head, as far as both read it */
	r2 = http_parse_api_request(buf, size, MAX_HEAD, &req2, &c2);
	if (r2 > PARSE_TOO_LONG || (r2 == PARSE_DONE && (!req2.raw_target || req2.host[0] ||
							 req2.raw_target[0] != '/' || c2 > size)))
		abort();
	if (r == PARSE_DONE && !req.absolute && !req.connect && strcmp(req.target, "*") &&
	    (r2 != PARSE_DONE || c2 != consumed || strcmp(req.target, req2.target) ||
	     req.body != req2.body || req.body_len != req2.body_len))
		abort();

	rest = r == PARSE_DONE ? consumed : 0;
	r1 = feed(buf + rest, size - rest, NULL, 0, &used1);
	r2 = feed(buf + rest, size - rest, size ? data : NULL, size, &used2);
	if (r1 != r2 || used1 != used2 || used1 > size - rest)
		abort();
	/* decoding the same bytes frames them the same, its data no longer */
	if (size - rest) {
		char *dec = malloc(size - rest);
		size_t declen = 0, used3 = 0;

		if (!dec)
			abort();
		r2 = http_chunked_decode(buf + rest, size - rest, dec, &declen, &used3);
		if (r2 != r1 || (r1 != PARSE_MORE && used3 != used1) || declen > used3)
			abort();
		free(dec);
	}
	return 0;
}
