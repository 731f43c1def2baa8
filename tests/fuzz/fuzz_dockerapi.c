// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target for dockerapi/: what a confined job sends to egressctl's
 * docker socket. The input is a request head (for http_parse_api_request
 * and, its first line's method and target, dk_classify, dk_build_target,
 * dk_target_with_id) and, after the blank line, a JSON body judged as each
 * kind (dk_judge_body) and as dockerd's answer about a container
 * (dk_owned). Besides memory errors it checks what the judge promises: a
 * create it lets through names the job's cgroup as the parent where
 * dockerd will read it and asks for no privileged container; a body it
 * let through prints as JSON that parses again; a rewritten build target
 * carries exactly one cgroupparent, the job's, last; a registry named
 * has a port; a refusal is an "egressctl: " message. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockerapi/hostpath.h"
#include "dockerapi/json.h"
#include "dockerapi/rules.h"
#include "parse/parse.h"

#define PARENT "/egressctl/fuzz"

static int
host_path(void *arg, const char *path, bool ro, char *why, size_t whylen)
{
	const struct dk_paths *p = arg;

	return dk_paths_judge(p, path, ro, why, whylen);
}

static void
check_refusal(const struct dk_verdict *v)
{
	if (strncmp(v->msg, "egressctl: ", 11) || v->status < 400 || v->status > 599)
		abort();
}

/* A create let through: dockerd reads HostConfig, or the top level when
 * there is none; there the parent must be the job's. */
static void
check_create(const struct dj *doc)
{
	const struct dj *hc = dj_get(doc, "HostConfig"), *eff = dj_is_object(hc) ? hc : doc;
	const char *parent = dj_str(dj_get(eff, "CgroupParent"));
	char err[160], *text;
	struct dj *again;

	if (!parent || strcmp(parent, PARENT) || dj_is_true(dj_get(eff, "Privileged")) ||
	    dj_is_true(dj_get(doc, "Privileged")))
		abort();
	text = dj_print(doc);
	if (!text)
		return;
	again = dj_parse(text, strlen(text), err, sizeof(err));
	if (!again)
		abort();
	dj_free(again);
	free(text);
}

static void
judge_bodies(const char *body, size_t n, const struct dk_ctx *ctx)
{
	static const enum dk_kind kinds[] = {DK_CREATE, DK_EXEC, DK_UPDATE, DK_VOLUME, DK_START};
	char err[160], id[80];
	struct dk_verdict v;
	struct dj *doc;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct dk_route r = {.kind = kinds[k]};

		doc = dj_parse(body, n, err, sizeof(err));
		if (!doc)
			return;
		if (dk_judge_body(&r, doc, ctx, &v))
			check_refusal(&v);
		else if (kinds[k] == DK_CREATE)
			check_create(doc);
		if (dk_owned(doc, ctx, &r, id, sizeof(id), &v))
			check_refusal(&v);
		else if (strlen(id) != 64)
			abort();
		dj_free(doc);
	}
}

/* The query as Go splits it ('&' after the first '?'): exactly one pair
 * whose key decodes to cgroupparent, the last, with the job's cgroup. */
static void
check_build(const char *out)
{
	const char *q = strchr(out, '?'), *pair, *amp, *eq, *last = NULL;
	char key[64];
	int n = 0;

	if (!q)
		abort();
	for (pair = q + 1; pair; pair = amp ? amp + 1 : NULL) {
		size_t plen;

		amp = strchr(pair, '&');
		plen = amp ? (size_t)(amp - pair) : strlen(pair);
		eq = memchr(pair, '=', plen);
		if (!dk_unescape(pair, eq ? (size_t)(eq - pair) : plen, true, key, sizeof(key)) &&
		    !strcmp(key, "cgroupparent")) {
			n++;
			last = eq ? eq + 1 : pair + plen;
		}
	}
	if (n != 1 || strcmp(last, PARENT))
		abort();
}

static void
judge_target(const struct http_request *req, const struct dk_ctx *ctx)
{
	static char out[DK_TARGET_MAX];
	struct dk_route r;
	struct dk_verdict v;

	if (dk_classify(req->method, req->raw_target, req->raw_target_len, "text/plain", &r, &v)) {
		check_refusal(&v);
		return;
	}
	if (r.registry[0] &&
	    (!r.rport || !memchr(r.registry, 0, sizeof(r.registry)) || !r.rwhat[0]))
		abort();
	if (r.kind == DK_BUILD) {
		if (dk_build_target(req->raw_target, req->raw_target_len, ctx, out, sizeof(out),
				    &v))
			check_refusal(&v);
		else
			check_build(out);
	}
	if (r.own &&
	    !dk_target_with_id(req->raw_target, req->raw_target_len, &r,
			       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			       out, sizeof(out)) &&
	    strncmp(out, r.version[0] ? "/v" : "/containers/", r.version[0] ? 2 : 12))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct http_request req;
	static const char mi[] = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
	struct dk_paths paths;
	struct dk_ctx ctx = {.parent = PARENT, .place = true, .host_path = host_path};
	char *buf = malloc(size ? size : 1);
	size_t used;

	if (!buf)
		return 0;
	memcpy(buf, data, size); /* exact size: ASan sees any over-read */
	if (dk_paths_init(&paths, mi, NULL, NULL)) {
		free(buf);
		return 0;
	}
	ctx.arg = &paths;
	if (http_parse_api_request(buf, size, 65536, &req, &used) == PARSE_DONE) {
		if (used > size || !req.raw_target || req.raw_target < buf ||
		    req.raw_target + req.raw_target_len > buf + used)
			abort();
		judge_target(&req, &ctx);
		judge_bodies(buf + used, size - used, &ctx);
	} else {
		judge_bodies(buf, size, &ctx);
	}
	dk_paths_free(&paths);
	free(buf);
	return 0;
}
