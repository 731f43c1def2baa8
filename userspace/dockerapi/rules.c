// SPDX-License-Identifier: Apache-2.0
/* Which Docker Engine API requests of a confined job are judged, and how
 * (see rules.h): the target classified as dockerd's router (gorilla/mux)
 * will route it, after the same percent-decoding, /build's query, the
 * rewritten targets, and whether a container is the job's. The bodies are
 * hostcfg.c's. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dockerapi/rules.h"

#define PATH_MAX_DK 4096

void
dk_refuse(struct dk_verdict *v, int status, const char *fmt, ...)
{
	va_list ap;
	int n;

	v->status = status;
	n = snprintf(v->msg, sizeof(v->msg), "egressctl: ");
	va_start(ap, fmt);
	vsnprintf(v->msg + n, sizeof(v->msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
dk_unescape(const char *s, size_t n, bool plus, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '%') {
			int h, l;

			if (n - i < 3)
				return -EINVAL;
			h = hexval(s[i + 1]);
			l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = (char)(h << 4 | l);
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		if (!c)
			return -EINVAL;
		if (o + 1 >= outlen)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = 0;
	return 0;
}

/* A decoded path that gorilla/mux would redirect instead of routing:
 * "//", a "." or ".." segment. */
static bool
path_clean(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *s = p; *s; s++) {
		if (*s != '/')
			continue;
		if (s[1] == '/')
			return false;
		if (s[1] == '.' && (s[2] == '/' || !s[2]))
			return false;
		if (s[1] == '.' && s[2] == '.' && (s[3] == '/' || !s[3]))
			return false;
	}
	return true;
}

/* "/v1.41/x" -> "/x" (the version into ver), as dockerd's routes take an
 * optional "/v{version:[0-9.]+}" prefix */
static const char *
strip_version(const char *p, char *ver, size_t verlen)
{
	size_t i = 2;

	ver[0] = 0;
	if (p[0] != '/' || p[1] != 'v')
		return p;
	while (p[i] == '.' || (p[i] >= '0' && p[i] <= '9'))
		i++;
	if (i == 2 || p[i] != '/' || i - 1 >= verlen)
		return p;
	memcpy(ver, p + 2, i - 2);
	ver[i - 2] = 0;
	return p + i;
}

static bool
prefix_is(const char *p, const char *pre)
{
	size_t n = strlen(pre);

	return !strncmp(p, pre, n) && (p[n] == '/' || p[n] == 0);
}

/* "/containers/{name:.*}/ACTION": the routes' name takes every byte up
 * to the last segment ("attach/ws" is two). 0 with r->id and the action,
 * or -1 when p is no such path. */
static int
container_path(const char *p, struct dk_route *r, char *action, size_t alen)
{
	const char *rest, *last;
	size_t nlen;

	if (strncmp(p, "/containers/", 12))
		return -1;
	rest = p + 12;
	last = strrchr(rest, '/');
	if (!last || last == rest)
		return -1;
	if (!strcmp(last, "/ws") && last - rest > 7 && !strncmp(last - 7, "/attach", 7))
		last -= 7;
	nlen = (size_t)(last - rest);
	if (nlen >= sizeof(r->id) || strlen(last + 1) >= alen)
		return -1;
	memcpy(r->id, rest, nlen);
	r->id[nlen] = 0;
	snprintf(action, alen, "%s", last + 1);
	return 0;
}

/* One name=value pair of a query, decoded as Go's url.ParseQuery does.
 * Calls fn for each; stops at its first non-zero return. */
static int
query_each(const char *q, size_t n, int (*fn)(void *, const char *, const char *), void *arg)
{
	char k[512], val[PATH_MAX_DK];
	size_t i = 0;

	while (i < n) {
		const char *pair = q + i, *amp = memchr(pair, '&', n - i), *eq;
		size_t plen = amp ? (size_t)(amp - pair) : n - i;
		int rc;

		i += plen + 1;
		if (!plen)
			continue;
		eq = memchr(pair, '=', plen);
		if (dk_unescape(pair, eq ? (size_t)(eq - pair) : plen, true, k, sizeof(k)) ||
		    dk_unescape(eq ? eq + 1 : "", eq ? plen - (size_t)(eq - pair) - 1 : 0, true,
				val, sizeof(val)))
			return -EINVAL;
		rc = fn(arg, k, val);
		if (rc)
			return rc;
	}
	return 0;
}

struct qjudge {
	struct dk_verdict *v;
	bool build;
	struct dk_route *r; /* a pull's registry, a build's network */
	bool network_seen;  /* a build's first networkmode read */
};

static int
judge_pair(void *arg, const char *k, const char *val)
{
	struct qjudge *j = arg;

	if (!j->build) { /* POST /images/create */
		if (!strcmp(k, "fromImage") && *val && !j->r->registry[0]) { /* the first counts */
			snprintf(j->r->rwhat, sizeof(j->r->rwhat), "docker pull from");
			if (dk_registry_of(val, j->r->registry, sizeof(j->r->registry),
					   &j->r->rport)) {
				dk_refuse(j->v, 400, "an image name egressctl cannot read");
				return -EPERM;
			}
		}
		if (!strcmp(k, "fromSrc") && *val && strcmp(val, "-")) {
			dk_refuse(
				j->v, 403,
				"docker import of a URL (fromSrc=%.200s) is refused in a confined "
				"job: dockerd would fetch it outside the job's confinement",
				val);
			return -EPERM;
		}
		return 0;
	}
	if (!strcmp(k, "cgroupparent") && *val) { /* docker sends it empty */
		dk_refuse(j->v, 403,
			  "--cgroup-parent is refused in a confined job: its build "
			  "steps run under the job's cgroup");
		return -EPERM;
	}
	if ((!strcmp(k, "version") && *val && strcmp(val, "1")) ||
	    (!strcmp(k, "remote") && !strcmp(val, "client-session"))) {
		dk_refuse(j->v, 403,
			  "BuildKit builds are refused in a confined job: their RUN steps run in "
			  "dockerd's cgroup, outside the job's (build with DOCKER_BUILDKIT=0)");
		return -EPERM;
	}
	if (!strcmp(k, "remote") && *val) {
		dk_refuse(j->v, 403,
			  "a remote build context (%.200s) is refused in a confined job: dockerd "
			  "would fetch it outside the job's confinement",
			  val);
		return -EPERM;
	}
	/* a RUN step has docker's default capabilities, NET_RAW among them:
	 * in the host's network namespace (or another container's) its
	 * AF_PACKET socket would write frames on interfaces no hook of the
	 * job's cgroup sees */
	if (!strcmp(k, "networkmode") &&
	    (!strcmp(val, "host") || !strncmp(val, "container:", 10))) {
		dk_refuse(j->v, 403,
			  "docker build --network %.100s is refused in a confined job: its RUN "
			  "steps could write frames on that network namespace's interfaces (an "
			  "AF_PACKET socket, which no hook of the job's cgroup sees)",
			  val);
		return -EPERM;
	}
	/* any other network (by name or id): its driver is asked of dockerd,
	 * the first value only, as dockerd reads it */
	if (!strcmp(k, "networkmode") && !j->network_seen) {
		j->network_seen = true;
		if (*val && strcmp(val, "default") && strcmp(val, "bridge") &&
		    strcmp(val, "none") &&
		    (size_t)snprintf(j->r->network, sizeof(j->r->network), "%s", val) >=
			    sizeof(j->r->network)) {
			dk_refuse(j->v, 400, "docker build --network: a name too long");
			return -EPERM;
		}
	}
	return 0;
}

int
dk_build_network(const struct dj *inspect, const struct dk_route *r, struct dk_verdict *v)
{
	const char *driver = dj_str(dj_get(inspect, "Driver"));

	if (driver && !strcmp(driver, "bridge"))
		return 0;
	dk_refuse(v, 403,
		  "docker build --network %.128s is refused in a confined job: its driver is "
		  "%.64s, not bridge, and a RUN step (which keeps NET_RAW) could write frames "
		  "on its interfaces that neither the job's hooks nor the packet guard see "
		  "(build on a bridge network, the default)",
		  r->network, driver ? driver : "unknown");
	return -EPERM;
}

static int
judge_query(const char *q, size_t n, bool build, struct dk_route *r, struct dk_verdict *v)
{
	struct qjudge j = {.v = v, .build = build, .r = r};
	int rc;

	if (memchr(q, ';', n)) {
		dk_refuse(v, 400, "a ';' in the query is refused");
		return -EPERM;
	}
	rc = query_each(q, n, judge_pair, &j);
	if (rc == -EINVAL)
		dk_refuse(v, 400, "the query holds a bad percent-escape");
	return rc ? -EPERM : 0;
}

/* Does s[0..n) hold an upper-case letter (docker reads such a first
 * component as a registry)? */
static bool
memchr_upper(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			return true;
	return false;
}

struct qfirst {
	const char *key;
	char *out;
	size_t outlen;
	bool found;
};

static int
first_pair(void *arg, const char *k, const char *val)
{
	struct qfirst *f = arg;

	if (f->found || strcmp(k, f->key))
		return 0;
	f->found = true;
	return (size_t)snprintf(f->out, f->outlen, "%s", val) >= f->outlen ? -EINVAL : 0;
}

/* The first value of key in the query (as Go's FormValue): 0, -EINVAL */
static int
query_first(const char *q, size_t n, const char *key, char *out, size_t outlen)
{
	struct qfirst f = {.key = key, .out = out, .outlen = outlen};

	out[0] = 0;
	return query_each(q, n, first_pair, &f) ? -EINVAL : 0;
}

static bool
is_form(const char *ctype)
{
	return ctype && (strcasestr(ctype, "x-www-form-urlencoded") ||
			 strcasestr(ctype, "multipart/form-data"));
}

/* Endpoints refused but for GET (/grpc whole: BuildKit's own API, whose
 * builds run outside the job; its /session, which only serves a build
 * with what the client has, is left to /build's judgement) */
static const struct {
	const char *prefix, *what, *hint; /* hint: NULL, or what to do instead */
} refused_prefixes[] = {
	{"/grpc", "BuildKit (DOCKER_BUILDKIT=1, docker buildx)",
	 " (build with DOCKER_BUILDKIT=0: the classic builder's RUN steps run in the job's "
	 "cgroup)"},
	/* podman's own API beside docker's (podman --remote): none of its
	 * requests is judged, so none but a GET passes */
	{"/libpod", "podman's own API (/libpod, podman --remote)",
	 " (use the docker CLI on podman's socket: its requests are judged)"},
	{"/plugins", "docker plugin"},
	{"/swarm", "docker swarm"},
	{"/services", "docker service"},
	{"/nodes", "docker node"},
	{"/secrets", "docker secret"},
	{"/configs", "docker config"},
};

/* The routes a request that changes something may take (docker's API,
 * 1.24 to 1.47, as the docker CLI and compose use it): any other is
 * refused but for a GET or HEAD, so that a route egressctl does not know
 * (a newer dockerd's, another server's beside docker's API, as podman's
 * /libpod was) is not forwarded unjudged. */
static const char *const known_prefixes[] = {
	"/containers", "/images", "/build",  "/networks", "/volumes",
	"/exec",       "/auth",	  "/commit", "/session",  "/_ping",
};

static bool
known_route(const char *p)
{
	for (size_t i = 0; i < sizeof(known_prefixes) / sizeof(known_prefixes[0]); i++)
		if (prefix_is(p, known_prefixes[i]))
			return true;
	return false;
}

static int registry_path(const char *method, const char *p, const char *q, size_t qlen,
			 struct dk_route *r);

/* A network or a container's place on one changes: POST
 * /networks/{id}/connect or /disconnect, POST /networks/prune, DELETE
 * /networks/{id} (action set: "connect", "disconnect", "prune",
 * "remove"). */
static bool
network_change(const char *method, const char *p, struct dk_route *r)
{
	const char *id = p + 10, *slash;

	if (strncmp(p, "/networks/", 10) || !*id)
		return false;
	slash = strchr(id, '/');
	if (!strcmp(method, "DELETE") && !slash)
		snprintf(r->action, sizeof(r->action), "remove");
	else if (!strcmp(method, "POST") && !strcmp(id, "prune"))
		snprintf(r->action, sizeof(r->action), "prune");
	else if (!strcmp(method, "POST") && slash && slash != id &&
		 (!strcmp(slash + 1, "connect") || !strcmp(slash + 1, "disconnect")))
		snprintf(r->action, sizeof(r->action), "%s", slash + 1);
	else
		return false;
	return true;
}

static int
classify_container(const char *method, const char *p, struct dk_route *r)
{
	char action[32];

	if (container_path(p, r, action, sizeof(action)))
		return 0;
	if (!strcmp(method, "POST") && !strcmp(action, "update"))
		r->kind = DK_UPDATE, r->body = true;
	else if (!strcmp(method, "POST") && !strcmp(action, "exec"))
		r->kind = DK_EXEC, r->body = true;
	else if (!strcmp(method, "POST") && !strcmp(action, "start"))
		r->kind = DK_START;
	else if ((!strcmp(method, "POST") &&
		  (!strcmp(action, "restart") || !strcmp(action, "attach"))) ||
		 (!strcmp(method, "PUT") && !strcmp(action, "archive")) ||
		 !strcmp(action, "attach/ws"))
		r->kind = DK_CONTAINER_USE;
	else
		r->id[0] = 0;
	r->own = r->kind != DK_OTHER;
	snprintf(r->action, sizeof(r->action), "%s", action);
	return 0;
}

int
dk_classify(const char *method, const char *target, size_t len, const char *ctype,
	    struct dk_route *r, struct dk_verdict *v)
{
	char path[PATH_MAX_DK];
	const char *q = memchr(target, '?', len), *p;
	size_t plen = q ? (size_t)(q - target) : len;

	memset(r, 0, sizeof(*r));
	if (dk_unescape(target, plen, false, path, sizeof(path))) {
		dk_refuse(v, 400, "a bad or overlong path is refused");
		return -EPERM;
	}
	if (!path_clean(path)) {
		dk_refuse(v, 400, "a path with empty, '.' or '..' segments is refused");
		return -EPERM;
	}
	p = strip_version(path, r->version, sizeof(r->version));
	if (q) {
		r->has_query = true;
		r->query = (size_t)(q + 1 - target);
	}
	for (size_t i = 0; i < sizeof(refused_prefixes) / sizeof(refused_prefixes[0]); i++)
		if (prefix_is(p, refused_prefixes[i].prefix) &&
		    (strcmp(method, "GET") || !strcmp(refused_prefixes[i].prefix, "/grpc"))) {
			dk_refuse(v, 403,
				  "%s is refused in a confined job: what it runs is outside "
				  "the job's confinement%s",
				  refused_prefixes[i].what,
				  refused_prefixes[i].hint ? refused_prefixes[i].hint : "");
			return -EPERM;
		}
	if (strcmp(method, "GET") && strcmp(method, "HEAD") && !known_route(p)) {
		dk_refuse(v, 403,
			  "%s %.200s is refused in a confined job: not a route of docker's API "
			  "that egressctl judges",
			  method, p);
		return -EPERM;
	}
	if (!strcmp(method, "POST") && !strcmp(p, "/containers/create")) {
		r->kind = DK_CREATE;
		r->body = true;
	} else if (!strcmp(method, "POST") && !strcmp(p, "/volumes/create")) {
		r->kind = DK_VOLUME;
		r->body = true;
	} else if (!strcmp(method, "POST") && !strcmp(p, "/build")) {
		r->kind = DK_BUILD;
		if (is_form(ctype)) {
			dk_refuse(v, 400, "/build with a form body is refused");
			return -EPERM;
		}
		if (q && judge_query(q + 1, len - plen - 1, true, r, v))
			return -EPERM;
	} else if (!strcmp(method, "POST") && !strcmp(p, "/images/create")) {
		if (is_form(ctype)) {
			dk_refuse(v, 400, "/images/create with a form body is refused");
			return -EPERM;
		}
		if (q && judge_query(q + 1, len - plen - 1, false, r, v))
			return -EPERM;
	} else if (!strcmp(method, "POST") && !strcmp(p, "/auth")) {
		r->kind = DK_AUTH;
		r->body = true;
	} else if (network_change(method, p, r)) {
		r->kind = DK_NETWORK;
	} else if (registry_path(method, p, q ? q + 1 : NULL, q ? len - plen - 1 : 0, r)) {
		dk_refuse(v, 400, "an image name egressctl cannot read");
		return -EPERM;
	} else if (!r->registry[0]) {
		classify_container(method, p, r);
	}
	return 0;
}

/* "/images/{name}/push", "/distribution/{name}/json", "/images/search":
 * the registry dockerd would reach. 0 (r->registry "" for none), -EINVAL */
static int
registry_path(const char *method, const char *p, const char *q, size_t qlen, struct dk_route *r)
{
	char name[512], term[512] = "";
	size_t n = strlen(p);
	const char *what = NULL, *s = NULL, *e = NULL;

	if (!strcmp(method, "POST") && !strncmp(p, "/images/", 8) && n > 13 &&
	    !strcmp(p + n - 5, "/push")) {
		what = "docker push to", s = p + 8, e = p + n - 5;
	} else if (!strcmp(method, "GET") && !strncmp(p, "/distribution/", 14) && n > 19 &&
		   !strcmp(p + n - 5, "/json")) {
		what = "docker manifest of", s = p + 14, e = p + n - 5;
	} else if (!strcmp(method, "GET") && !strcmp(p, "/images/search")) {
		if (q && query_first(q, qlen, "term", term, sizeof(term)))
			return -EINVAL;
		snprintf(r->rwhat, sizeof(r->rwhat), "docker search of");
		if (!strchr(term, '/') ||
		    dk_registry_of(term, r->registry, sizeof(r->registry), &r->rport) ||
		    !strcmp(r->registry, "registry-1.docker.io")) {
			snprintf(r->registry, sizeof(r->registry), "index.docker.io");
			r->rport = 443;
		}
		return 0;
	} else {
		return 0;
	}
	if ((size_t)(e - s) >= sizeof(name))
		return -EINVAL;
	memcpy(name, s, (size_t)(e - s));
	name[e - s] = 0;
	snprintf(r->rwhat, sizeof(r->rwhat), "%s", what);
	return dk_registry_of(name, r->registry, sizeof(r->registry), &r->rport);
}

int
dk_registry_of(const char *ref, char *host, size_t hostlen, unsigned short *port)
{
	const char *slash = strchr(ref, '/'), *colon;
	char dom[300];
	size_t n;
	long v = 443;
	char *end;

	*port = 443;
	n = slash ? (size_t)(slash - ref) : 0;
	if (!slash || !n ||
	    (!memchr(ref, '.', n) && !memchr(ref, ':', n) && strncmp(ref, "localhost", n) &&
	     !memchr_upper(ref, n))) {
		snprintf(host, hostlen, "registry-1.docker.io"); /* docker.io */
		return 0;
	}
	if (n >= sizeof(dom))
		return -EINVAL;
	memcpy(dom, ref, n);
	dom[n] = 0;
	if (!strcmp(dom, "docker.io") || !strcmp(dom, "index.docker.io")) {
		snprintf(host, hostlen, "registry-1.docker.io");
		return 0;
	}
	colon = dom[0] == '[' ? strstr(dom, "]:") : strrchr(dom, ':');
	if (colon) {
		colon += dom[0] == '[';
		v = strtol(colon + 1, &end, 10);
		if (*end || end == colon + 1 || v < 1 || v > 65535)
			return -EINVAL;
		dom[colon - dom] = 0;
	}
	n = strlen(dom);
	if (dom[0] == '[') { /* [v6] */
		if (n < 3 || dom[n - 1] != ']')
			return -EINVAL;
		memmove(dom, dom + 1, n - 2);
		dom[n - 2] = 0;
	}
	if (!dom[0] || (size_t)snprintf(host, hostlen, "%s", dom) >= hostlen)
		return -EINVAL;
	*port = (unsigned short)v;
	return 0;
}

int
dk_auth_registry(const struct dj *body, struct dk_route *r, struct dk_verdict *v)
{
	const char *s = dj_str(dj_get(body, "serveraddress"));
	char ref[300];
	const char *p;
	size_t n;

	snprintf(r->rwhat, sizeof(r->rwhat), "docker login to");
	if (!dj_is_object(body) || dj_check_keys(body, ref, sizeof(ref))) {
		dk_refuse(v, 400, "a login egressctl cannot read");
		return -EPERM;
	}
	if (!s || !*s)
		s = "index.docker.io";
	p = strstr(s, "://");
	p = p ? p + 3 : s;
	n = strcspn(p, "/");
	if (n >= sizeof(ref) - 2) {
		dk_refuse(v, 400, "a login egressctl cannot read");
		return -EPERM;
	}
	snprintf(ref, sizeof(ref), "%.*s/x", (int)n, p);
	if (!strchr(ref, '.') && !strchr(ref, ':') && strncmp(ref, "localhost/", 10))
		snprintf(ref, sizeof(ref), "%.*s./x", (int)n, p); /* a bare name is a host */
	if (dk_registry_of(ref, r->registry, sizeof(r->registry), &r->rport)) {
		dk_refuse(v, 400, "a login egressctl cannot read");
		return -EPERM;
	}
	if (!strcmp(r->registry, "registry-1.docker.io"))
		snprintf(r->registry, sizeof(r->registry), "index.docker.io");
	return 0;
}

static int
append(char *out, size_t outlen, size_t *o, const char *s, size_t n)
{
	if (*o + n + 1 > outlen)
		return -ENAMETOOLONG;
	memcpy(out + *o, s, n);
	*o += n;
	out[*o] = 0;
	return 0;
}

/* The query without its cgroupparent pairs (dockerd takes the first), then
 * ours: into out at *o. */
static int
build_query(const char *q, size_t n, const char *enc, char *out, size_t outlen, size_t *o)
{
	char k[64];
	size_t i = 0;
	bool first = true;

	while (i < n) {
		const char *pair = q + i, *amp = memchr(pair, '&', n - i), *eq;
		size_t plen = amp ? (size_t)(amp - pair) : n - i;

		i += plen + 1;
		eq = memchr(pair, '=', plen);
		if (!plen ||
		    (!dk_unescape(pair, eq ? (size_t)(eq - pair) : plen, true, k, sizeof(k)) &&
		     !strcmp(k, "cgroupparent")))
			continue;
		if (append(out, outlen, o, first ? "?" : "&", 1) ||
		    append(out, outlen, o, pair, plen))
			return -ENAMETOOLONG;
		first = false;
	}
	if (append(out, outlen, o, first ? "?" : "&", 1) ||
	    append(out, outlen, o, "cgroupparent=", 13) || append(out, outlen, o, enc, strlen(enc)))
		return -ENAMETOOLONG;
	return 0;
}

int
dk_build_target(const char *target, size_t len, const struct dk_ctx *c, char *out, size_t outlen,
		struct dk_verdict *v)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *q = memchr(target, '?', len);
	char enc[3 * PATH_MAX_DK];
	size_t o = 0, e = 0, plen = q ? (size_t)(q - target) : len;
	struct dk_route r = {0};

	if (q && judge_query(q + 1, len - plen - 1, true, &r, v))
		return -EPERM;
	for (const unsigned char *s = (const unsigned char *)c->parent; *s && e + 4 < sizeof(enc);
	     s++) {
		if (isalnum(*s) || *s == '/' || *s == '-' || *s == '_' || *s == '.') {
			enc[e++] = (char)*s;
		} else {
			enc[e++] = '%';
			enc[e++] = hex[*s >> 4];
			enc[e++] = hex[*s & 15];
		}
	}
	enc[e] = 0;
	if (append(out, outlen, &o, target, plen) ||
	    build_query(q ? q + 1 : "", q ? len - plen - 1 : 0, enc, out, outlen, &o)) {
		dk_refuse(v, 414, "the build's request target is too long");
		return -EPERM;
	}
	return 0;
}

int
dk_target_with_id(const char *target, size_t len, const struct dk_route *r, const char *id,
		  char *out, size_t outlen)
{
	int n;

	n = snprintf(out, outlen, "%s%s/containers/%s/%s%s%.*s", r->version[0] ? "/v" : "",
		     r->version, id, r->action, r->has_query ? "?" : "",
		     r->has_query ? (int)(len - r->query) : 0,
		     r->has_query ? target + r->query : "");
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static bool
full_id(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

/* docker cp into a container (PUT .../archive) with a read-write bind of
 * a host path: refused, as dockerd writes the archive's files as root,
 * with the owner and set-id bits the archive says (docker 20.10; later
 * ones make them root's), wherever the path leads in the container, a
 * bind included (a link in the container can lead there too). A job can
 * write an archive of a set-uid root file; that file, left in a bind,
 * would run as root on the host. 0, or -EPERM with v set. */
static int
rw_bind(const struct dj *inspect, const struct dk_ctx *c, struct dk_verdict *v)
{
	const struct dj *mounts = dj_get(inspect, "Mounts");
	char why[160];

	for (int i = 0; i < dj_count(mounts); i++) {
		const struct dj *m = dj_at(mounts, i);
		const char *type = dj_str(dj_get(m, "Type")), *src = dj_str(dj_get(m, "Source"));

		if (!type || strcmp(type, "bind") || !dj_is_true(dj_get(m, "RW")))
			continue;
		if (src && c->host_path && c->host_path(c->arg, src, false, why, sizeof(why)) == 1)
			continue; /* docker's socket: nothing is made through it */
		dk_refuse(
			v, 403,
			"docker cp into container %.128s is refused in a confined job: it binds "
			"%.512s read-write, where dockerd would write the archive's files as root, "
			"set-id bits kept (copy into a container without a read-write bind, or "
			"bind the directory and write from inside the container)",
			dj_str(dj_get(inspect, "Id")), src ? src : "a host path");
		return -EPERM;
	}
	return 0;
}

int
dk_owned(const struct dj *inspect, const struct dk_ctx *c, const struct dk_route *r, char *id,
	 size_t idlen, struct dk_verdict *v)
{
	const char *cid = dj_str(dj_get(inspect, "Id"));
	const char *parent = dj_str(dj_get(dj_get(inspect, "HostConfig"), "CgroupParent"));

	if (!cid || !full_id(cid)) {
		dk_refuse(v, 404, "no container %.128s", r->id);
		return -EPERM;
	}
	if (!parent || strcmp(parent, c->parent)) {
		dk_refuse(v, 403,
			  "container %.128s is not one of this job's (it runs under %.200s, not "
			  "%.200s): a confined job may not start, attach to, exec in, update or "
			  "copy into it",
			  r->id, parent && *parent ? parent : "dockerd's cgroup", c->parent);
		return -EPERM;
	}
	if (r->kind == DK_CONTAINER_USE && !strcmp(r->action, "archive") && rw_bind(inspect, c, v))
		return -EPERM;
	snprintf(id, idlen, "%s", cid);
	return 0;
}

/* One component of a slice's path: "NAME.slice", NAME of [A-Za-z0-9_:.]
 * words joined by single '-' (systemd's unit names; its escapes, "\x2d",
 * are refused), its parent's NAME and '-' before its own last word. */
static bool
slice_component(const char *s, size_t n, const char *up, size_t upn)
{
	size_t name = n - 6;

	if (n <= 6 || memcmp(s + name, ".slice", 6) || s[0] == '-' || s[name - 1] == '-')
		return false;
	for (size_t i = 0; i < name; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == ':' || ch == '.' ||
		      ch == '-') ||
		    (ch == '-' && s[i + 1] == '-'))
			return false;
	}
	if (!up) /* a top-level slice is one word */
		return !memchr(s, '-', name);
	return name > upn + 1 && !memcmp(s, up, upn) && s[upn] == '-' &&
	       !memchr(s + upn + 1, '-', name - upn - 1);
}

int
dk_slice_of(const char *cgroup, const char *root, char *out, size_t outlen)
{
	size_t rn = strlen(root), upn = 0, lastn = 0;
	const char *p, *up = NULL, *last = NULL;

	while (rn && root[rn - 1] == '/') /* "/" is the root itself */
		rn--;
	p = cgroup + rn;
	if (strncmp(cgroup, root, rn) || *p != '/')
		return -EINVAL;
	while (*p == '/') {
		const char *s = p + 1, *e = strchrnul(s, '/');

		if (!slice_component(s, (size_t)(e - s), up, upn))
			return -EINVAL;
		up = s;
		upn = (size_t)(e - s) - 6;
		last = s;
		lastn = (size_t)(e - s);
		p = e;
	}
	if (*p || !last)
		return -EINVAL;
	if (lastn >= outlen)
		return -ENAMETOOLONG;
	memcpy(out, last, lastn);
	out[lastn] = 0;
	return 0;
}

bool
dk_filter_selects(const char *filter, const struct dj *c)
{
	if (!strncmp(filter, "network=", 8)) {
		const struct dj *nets = dj_get(dj_get(c, "NetworkSettings"), "Networks");

		for (int i = 0; i < dj_count(nets); i++) {
			const char *k = dj_key_at(nets, i);

			if (k && !fnmatch(filter + 8, k, 0))
				return true;
		}
		return false;
	}
	const char *key = filter + 6, *eq = strchr(key, '=');
	const struct dj *labels = dj_get(c, "Labels");

	for (int i = 0; i < dj_count(labels); i++) {
		const char *k = dj_key_at(labels, i), *v;

		if (!k ||
		    (eq ? strlen(k) != (size_t)(eq - key) || strncmp(k, key, (size_t)(eq - key))
			: strcmp(k, key)))
			continue;
		v = dj_str(dj_get(labels, k));
		return !eq || (v && !strcmp(v, eq + 1));
	}
	return false;
}
