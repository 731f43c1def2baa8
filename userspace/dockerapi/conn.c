// SPDX-License-Identifier: Apache-2.0
/* One connection to egressctl's docker socket (see dockerapi.h). Who made
 * it decides its course: anybody but a job's process is relayed to dockerd
 * both ways from the first byte, untouched. A job's process sends one
 * request: its head is read and classified (rules.c), a container named
 * in its path is asked of dockerd first (whose is it? check.c), a JSON
 * body it must have is read whole and judged (hostcfg.c); then it goes
 * to dockerd on a connection of its own with "Connection: close", its own
 * body relayed after it by its framing, and no other byte of the client's
 * is read until dockerd's response head says the stream was taken over
 * (101, or a body that runs until dockerd closes: docker attach, exec,
 * run -i), when bytes go both ways; otherwise the response is relayed
 * until dockerd closes, and the client with it. So no byte the job sends
 * after its request can be read by dockerd as another one, unjudged. A
 * refused request is answered with dockerd's error shape, a JSON
 * {"message": ...} that docker prints, the request's body read off. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "dockerapi/conn.h"
#include "dockerapi/core.h"
#include "dockerapi/rules.h"
#include "lib/log.h"
#include "parse/http_resp.h"
#include "policy/policy.h"

#define DK_TIMEOUT_S   60	    /* a request head, a refusal's leftovers, a check */
#define DK_DISCARD_MAX (256u << 20) /* a refused request's body read off at most */

static void cl_read(struct bufferevent *bev, void *arg);
static void cl_write(struct bufferevent *bev, void *arg);
static void cl_event(struct bufferevent *bev, short what, void *arg);
static void up_read(struct bufferevent *bev, void *arg);
static void up_write(struct bufferevent *bev, void *arg);
static void up_event(struct bufferevent *bev, short what, void *arg);

void
dk_conn_free(struct dk_conn *c)
{
	struct dockerapi *d = c->d;

	LIST_REMOVE(c, entry);
	d->nconns--;
	d->njob -= c->is_job;
	dk_check_cancel(c);
	if (c->cl)
		bufferevent_free(c->cl);
	if (c->up)
		bufferevent_free(c->up);
	if (c->timer)
		event_free(c->timer);
	free(c->head);
	free(c);
}

void
dk_conn_free_all(struct dockerapi *d)
{
	while (!LIST_EMPTY(&d->conns))
		dk_conn_free(LIST_FIRST(&d->conns));
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct dk_conn *c = arg;

	(void)fd;
	(void)what;
	log_info("docker: a connection of %s[%d] timed out (state %d)", c->comm, (int)c->peer.pid,
		 (int)c->st);
	dk_conn_free(c);
}

static void
arm(struct dk_conn *c, bool on)
{
	struct timeval tv = {DK_TIMEOUT_S, 0};

	if (on)
		evtimer_add(c->timer, &tv);
	else
		evtimer_del(c->timer);
}

/* Copies what is in from's input to to's output; stops reading from when
 * to's reader lags (up_write/cl_write read on again). */
static void
move(struct bufferevent *from, struct bufferevent *to)
{
	evbuffer_add_buffer(bufferevent_get_output(to), bufferevent_get_input(from));
	if (evbuffer_get_length(bufferevent_get_output(to)) > DK_HIGH)
		bufferevent_disable(from, EV_READ);
}

/* The request's line for the log: "POST /v1.41/containers/create" */
static void
request_words(const struct dk_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s %.*s", c->req.method,
		 (int)(c->req.raw_target_len > 300 ? 300 : c->req.raw_target_len),
		 c->req.raw_target ? c->req.raw_target : "");
}

/* A line for the job's log: "refused POST /x from docker[12]: MESSAGE" */
void
dk_conn_say(struct dk_conn *c, const char *what, const char *msg)
{
	char words[DK_MSG_MAX + 512], req[360];

	if (!c->d->o.said || !c->is_job)
		return;
	request_words(c, req, sizeof(req));
	snprintf(words, sizeof(words), "%s %s from %s[%d]: %s", what, req, c->comm,
		 (int)c->peer.pid, msg);
	c->d->o.said(c->d->o.arg, c->job.id, words);
}

/* The answer to a refused request, dockerd's error shape; the rest of the
 * request's body is read off before the close, so that the client reads
 * the answer instead of a reset (docker keeps sending a build's context). */
void
dk_conn_reply(struct dk_conn *c, const struct dk_verdict *v)
{
	static const struct {
		int status;
		const char *text;
	} texts[] = {{400, "Bad Request"},
		     {403, "Forbidden"},
		     {404, "Not Found"},
		     {411, "Length Required"},
		     {413, "Content Too Large"},
		     {414, "URI Too Long"},
		     {431, "Request Header Fields Too Large"},
		     {500, "Internal Server Error"},
		     {502, "Bad Gateway"}};
	const char *text = "Error";
	char *json = dj_message_json(v->msg);
	struct evbuffer *out = bufferevent_get_output(c->cl);

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].status == v->status)
			text = texts[i].text;
	evbuffer_add_printf(out,
			    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    v->status, text, json ? strlen(json) : 2, json ? json : "{}");
	free(json);
	dk_check_cancel(c);
	if (c->up) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	c->st = DK_ST_END;
	c->discarded = 0;
	arm(c, true);
	bufferevent_enable(c->cl, EV_READ);
	cl_read(c->cl, c); /* what is there already */
}

/* A refusal: answered, and said in the job's log; in audit mode only said
 * (the caller goes on). Returns true if refused. */
bool
dk_conn_refuse(struct dk_conn *c, const struct dk_verdict *v)
{
	if (c->is_job && c->job.audit) {
		dk_conn_say(c, "would refuse", v->msg);
		return false;
	}
	dk_conn_say(c, "refused", v->msg);
	dk_conn_reply(c, v);
	return true;
}

/* ST_END: the request's body read off (by its framing, or until the client
 * closes, at most DK_DISCARD_MAX), then closed once the answer is out. */
static void
discard(struct dk_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = evbuffer_get_length(in), used = n;
	bool done = c->req.body == HTTP_BODY_NONE || !c->head;

	if (!done && c->req.body == HTTP_BODY_LENGTH) {
		used = c->left < n ? (size_t)c->left : n;
		c->left -= used;
		done = !c->left;
	} else if (!done && n) {
		enum parse_result r =
			http_chunked_feed(&c->ch, (const char *)evbuffer_pullup(in, -1), n, &used);

		done = r != PARSE_MORE;
	}
	evbuffer_drain(in, used);
	c->discarded += used;
	if (done || c->discarded > DK_DISCARD_MAX) {
		c->body_done = true;
		bufferevent_disable(c->cl, EV_READ);
	}
	if (c->body_done && !evbuffer_get_length(bufferevent_get_output(c->cl)))
		dk_conn_free(c);
}

/* ---- the request ---- */

static void
add_header_lines(struct dk_conn *c, struct evbuffer *out, bool new_body)
{
	static const char *const drop[] = {"connection", "keep-alive", "proxy-connection", NULL};
	bool upgrade = http_find_header(&c->req, "upgrade") != NULL;

	for (size_t i = 0; i < c->req.nheaders; i++) {
		const struct http_header *h = &c->req.headers[i];
		bool skip = false;

		for (int k = 0; drop[k]; k++)
			if (h->name_len == strlen(drop[k]) &&
			    !strncasecmp(h->name, drop[k], h->name_len))
				skip = true;
		if (new_body &&
		    ((h->name_len == 14 && !strncasecmp(h->name, "content-length", 14)) ||
		     (h->name_len == 17 && !strncasecmp(h->name, "transfer-encoding", 17))))
			skip = true;
		if (!skip)
			evbuffer_add_printf(out, "%.*s: %.*s\r\n", (int)h->name_len, h->name,
					    (int)h->value_len, h->value);
	}
	/* close whatever dockerd does: a request it does not take over
	 * (Upgrade on another endpoint) ends the connection too */
	evbuffer_add_printf(out, "Connection: %sclose\r\n", upgrade ? "Upgrade, " : "");
}

/* The target as forwarded: the container's full id in its path, the
 * build's cgroup parent in its query. */
static int
forward_target(struct dk_conn *c)
{
	const char *t = c->req.raw_target;
	size_t n = c->req.raw_target_len;
	struct dk_verdict v = {0};
	struct dk_ctx ctx = {.parent = c->parent};

	if (c->route.own && c->id[0])
		return dk_target_with_id(t, n, &c->route, c->id, c->target, sizeof(c->target));
	/* (refused here only in audit mode: the target goes as it was) */
	if (c->route.kind == DK_BUILD && c->place &&
	    !dk_build_target(t, n, &ctx, c->target, sizeof(c->target), &v))
		return 0;
	if (n >= sizeof(c->target))
		return -ENAMETOOLONG;
	memcpy(c->target, t, n);
	c->target[n] = 0;
	return 0;
}

static bool
dial_up(struct dk_conn *c)
{
	int fd = dk_dial(c->d);
	struct dk_verdict v;

	if (fd < 0 || !(c->up = bufferevent_socket_new(c->d->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
		if (fd >= 0)
			close(fd);
		dk_refuse(&v, 502, "dockerd does not answer at %s: %s", c->d->path,
			  strerror(fd < 0 ? -fd : ENOMEM));
		dk_conn_reply(c, &v);
		return false;
	}
	bufferevent_setcb(c->up, up_read, up_write, up_event, c);
	bufferevent_setwatermark(c->up, EV_WRITE, DK_HIGH / 2, 0);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	return true;
}

/* The request to dockerd: its head, and body (judged, rewritten) or the
 * client's own relayed after it (ST_SEND). */
void
dk_conn_forward(struct dk_conn *c, const char *body, size_t blen)
{
	struct evbuffer *out;
	struct dk_verdict v;

	arm(c, false);
	if (c->is_job && c->route.kind == DK_NETWORK && c->d->o.networks &&
	    strcmp(c->route.action, "connect"))
		c->d->o.networks(c->d->o.arg, c->job.id, false);
	if (forward_target(c)) {
		dk_refuse(&v, 414, "the request's target is too long");
		dk_conn_reply(c, &v);
		return;
	}
	if (!dial_up(c))
		return;
	out = bufferevent_get_output(c->up);
	evbuffer_add_printf(out, "%s %s HTTP/1.%d\r\n", c->req.method, c->target,
			    c->req.version_minor);
	add_header_lines(c, out, body != NULL);
	if (body) {
		evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n", blen);
		evbuffer_add(out, body, blen);
		c->st = DK_ST_RESP;
	} else {
		evbuffer_add(out, "\r\n", 2);
		c->st = DK_ST_SEND;
		c->left = c->req.body == HTTP_BODY_LENGTH ? c->req.body_len : 0;
	}
	bufferevent_enable(c->cl, EV_READ);
	cl_read(c->cl, c);
}

/* ST_SEND: the request's own body, by its framing; then ST_RESP. */
static void
send_body(struct dk_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	struct evbuffer *out = bufferevent_get_output(c->up);
	size_t n = evbuffer_get_length(in), used = n;
	bool done = c->req.body == HTTP_BODY_NONE;

	if (!done && c->req.body == HTTP_BODY_LENGTH) {
		used = c->left < n ? (size_t)c->left : n;
		c->left -= used;
		done = !c->left;
	} else if (!done && n) {
		enum parse_result r =
			http_chunked_feed(&c->ch, (const char *)evbuffer_pullup(in, -1), n, &used);

		if (r == PARSE_ERROR || r == PARSE_TOO_LONG) {
			dk_conn_free(c);
			return;
		}
		done = r == PARSE_DONE;
	}
	evbuffer_remove_buffer(in, out, used);
	if (evbuffer_get_length(out) > DK_HIGH)
		bufferevent_disable(c->cl, EV_READ);
	if (done)
		c->st = DK_ST_RESP;
}

/* A registry dockerd would reach for the job, judged by its policy. */
static bool
registry_refused(struct dk_conn *c)
{
	struct dk_route *r = &c->route;
	struct dk_verdict v;
	char why[256] = "";

	if (!r->registry[0] || !c->d->o.judge ||
	    !c->d->o.judge(c->d->o.arg, c->job.id, r->registry, r->rport, why, sizeof(why)))
		return false;
	dk_refuse(&v, 403,
		  "%s %s is refused in a confined job: its policy denies %s:%u (%s), which "
		  "dockerd would reach for it",
		  r->rwhat, r->registry, r->registry, (unsigned)r->rport, why);
	return dk_conn_refuse(c, &v);
}

/* A JSON body, whole: judged, forwarded rewritten. */
static void
judge_body(struct dk_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	struct dk_ctx ctx = {.parent = c->parent,
			     .place = c->place,
			     .host_path = dk_host_path,
			     .arg = c->d,
			     .user_known = c->peer.pid != 0,
			     .uid = c->peer.uid,
			     .gid = c->peer.gid,
			     .job = c->job.id,
			     .idmap = c->job.audit ? NULL : dk_idmap};
	struct dk_verdict v = {0};
	char err[160], *text = NULL;
	struct dj *doc;
	size_t n = (size_t)c->req.body_len;

	if (evbuffer_get_length(in) < n)
		return;
	doc = dj_parse(n ? (const char *)evbuffer_pullup(in, (ssize_t)n) : "", n, err, sizeof(err));
	evbuffer_drain(in, n);
	c->req.body = HTTP_BODY_NONE; /* read */
	if (!doc) {		      /* what cannot be judged is refused, in audit mode too */
		dk_refuse(&v, 400, "%s", err);
		dk_conn_say(c, "refused", v.msg);
		dk_conn_reply(c, &v);
		return;
	}
	if (dk_judge_body(&c->route, doc, &ctx, &v) && dk_conn_refuse(c, &v)) {
		dj_free(doc);
		return;
	}
	if (c->route.kind == DK_AUTH &&
	    ((dk_auth_registry(doc, &c->route, &v) && dk_conn_refuse(c, &v)) ||
	     registry_refused(c))) {
		dj_free(doc);
		return;
	}
	text = dj_print(doc);
	dj_free(doc);
	if (!text) {
		dk_refuse(&v, 500, "out of memory");
		dk_conn_reply(c, &v);
		return;
	}
	dk_conn_forward(c, text, strlen(text));
	free(text);
}

/* After the container check (or without one): read the body, or forward. */
void
dk_conn_checked(struct dk_conn *c)
{
	if (c->route.body) {
		c->st = DK_ST_BODY;
		arm(c, true); /* a body that does not come */
		bufferevent_enable(c->cl, EV_READ);
		judge_body(c);
		return;
	}
	dk_conn_forward(c, NULL, 0);
}

/* What of the request is refused whatever dockerd says. */
static bool
precheck(struct dk_conn *c)
{
	struct dk_verdict v = {0};

	if (c->route.kind == DK_START &&
	    (c->req.body == HTTP_BODY_CHUNKED ||
	     (c->req.body == HTTP_BODY_LENGTH && c->req.body_len > 7))) {
		dk_refuse(&v, 403,
			  "a HostConfig given to docker start is refused in a confined "
			  "job (docker start takes none since API 1.24)");
		return dk_conn_refuse(c, &v);
	}
	if ((c->route.kind == DK_CREATE || c->route.kind == DK_BUILD) && !c->place) {
		if (!strcmp(c->d->driver, "systemd"))
			dk_refuse(
				&v, 403,
				"dockerd's cgroup driver is systemd: a container's parent must be "
				"a systemd slice, and the job's cgroup %s is not one%s, so docker "
				"run and docker build are refused in a confined job (confine the "
				"job as a slice's cgroup, /NAME.slice with its processes below)",
				c->job.cgroup, c->d->sd_known ? "" : " (systemd's root unknown)");
		else
			dk_refuse(&v, 403,
				  "dockerd's cgroup driver is %s: its containers cannot be put "
				  "under the job's cgroup %s, so docker run and docker build are "
				  "refused in a confined job (dockerd --exec-opt "
				  "native.cgroupdriver=cgroupfs)",
				  c->d->driver, c->job.cgroup);
		return dk_conn_refuse(c, &v);
	}
	if (!c->route.body)
		return false;
	if (c->req.body == HTTP_BODY_CHUNKED)
		dk_refuse(&v, 411, "a chunked body is refused here: send its Content-Length");
	else if (c->req.body_len > DK_BODY_MAX)
		dk_refuse(&v, 413, "a request body over %u bytes is refused", DK_BODY_MAX);
	else
		return false;
	dk_conn_reply(c, &v); /* not even in audit mode: it cannot be judged */
	return true;
}

/* A job's request head is in c->req: classified, checked, forwarded. */
static void
start_request(struct dk_conn *c)
{
	const struct http_header *h = http_find_header(&c->req, "content-type");
	char ctype[256] = "";
	struct dk_verdict v = {0};

	if (h)
		snprintf(ctype, sizeof(ctype), "%.*s", (int)h->value_len, h->value);
	c->left = c->req.body == HTTP_BODY_LENGTH ? c->req.body_len : 0;
	memset(&c->ch, 0, sizeof(c->ch));
	if (c->refuse_all) {
		dk_conn_reply(c, &c->pre);
		return;
	}
	if (dk_classify(c->req.method, c->req.raw_target, c->req.raw_target_len, h ? ctype : NULL,
			&c->route, &v) &&
	    dk_conn_refuse(c, &v))
		return;
	if (precheck(c) || registry_refused(c))
		return;
	if (c->route.own || c->route.network[0]) {
		bufferevent_disable(c->cl, EV_READ);
		dk_check_start(c);
		return;
	}
	dk_conn_checked(c);
}

/* ST_HEAD: a request head, whole. */
static void
read_head(struct dk_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cl);
	size_t n = evbuffer_get_length(in), m = n < DK_HEAD_MAX ? n : DK_HEAD_MAX, used;
	struct dk_verdict v = {0};
	enum parse_result r;
	char *buf;

	if (!n)
		return;
	buf = (char *)evbuffer_pullup(in, (ssize_t)m);
	r = http_parse_api_request(buf, m, DK_HEAD_MAX, &c->req, &used);
	if (r == PARSE_MORE && n < DK_HEAD_MAX)
		return;
	if (r != PARSE_DONE) {
		dk_refuse(&v, r == PARSE_ERROR ? 400 : 431, "a request head egressctl cannot read");
		dk_conn_reply(c, &v);
		return;
	}
	c->head = malloc(used);
	if (!c->head) {
		dk_conn_free(c);
		return;
	}
	memcpy(c->head, buf, used);
	evbuffer_drain(in, used);
	/* again from the copy: the headers point into it */
	if (http_parse_api_request(c->head, used, used, &c->req, &used) != PARSE_DONE) {
		dk_conn_free(c);
		return;
	}
	arm(c, false);
	start_request(c);
}

static void
cl_read(struct bufferevent *bev, void *arg)
{
	struct dk_conn *c = arg;

	(void)bev;
	switch (c->st) {
	case DK_ST_HEAD:
		read_head(c);
		break;
	case DK_ST_BODY:
		judge_body(c);
		break;
	case DK_ST_SEND:
		send_body(c);
		break;
	case DK_ST_BOTH:
		move(c->cl, c->up);
		break;
	case DK_ST_END:
		discard(c);
		break;
	default: /* RESP, DOWN, CHECK: nothing more is read now */
		if (evbuffer_get_length(bufferevent_get_input(c->cl)) > DK_RESP_HEAD)
			bufferevent_disable(c->cl, EV_READ);
		break;
	}
}

/* ---- the response ---- */

/* ST_RESP: dockerd's response head: relayed; a stream taken over (101, or
 * a body until close) opens the client's side too. */
static void
read_response(struct dk_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	struct http_response r;
	size_t n, m, used;
	enum parse_result pr;
	char *buf;

	for (;;) {
		n = evbuffer_get_length(in);
		m = n < DK_RESP_HEAD ? n : DK_RESP_HEAD;
		if (!n)
			return;
		buf = (char *)evbuffer_pullup(in, (ssize_t)m);
		pr = http_parse_response(buf, m, DK_RESP_HEAD, !strcmp(c->req.method, "HEAD"), &r,
					 &used);
		if (pr == PARSE_MORE && n < DK_RESP_HEAD)
			return;
		if (pr != PARSE_DONE) {
			log_warnx("docker: dockerd's response to %s[%d] cannot be read: closed",
				  c->comm, (int)c->peer.pid);
			dk_conn_free(c);
			return;
		}
		if (r.status >= 100 && r.status < 200 && r.status != 101) {
			evbuffer_remove_buffer(in, bufferevent_get_output(c->cl), used);
			continue;
		}
		break;
	}
	c->st = r.status == 101 || r.until_close ? DK_ST_BOTH : DK_ST_DOWN;
	if (c->is_job && r.status == 204 && c->d->o.started &&
	    (c->route.kind == DK_START ||
	     (c->route.kind == DK_CONTAINER_USE && !strcmp(c->route.action, "restart"))))
		c->d->o.started(c->d->o.arg, c->job.id, c->route.id);
	if (c->is_job && c->route.kind == DK_NETWORK && c->d->o.networks)
		c->d->o.networks(c->d->o.arg, c->job.id, true);
	move(c->up, c->cl);
	if (c->st == DK_ST_BOTH) {
		bufferevent_enable(c->cl, EV_READ);
		move(c->cl, c->up);
	}
}

static void
up_read(struct bufferevent *bev, void *arg)
{
	struct dk_conn *c = arg;

	(void)bev;
	if (c->st == DK_ST_RESP)
		read_response(c);
	else if (c->st == DK_ST_DOWN || c->st == DK_ST_BOTH)
		move(c->up, c->cl);
}

/* One side's output is written out: read its other side again; pass an
 * end of stream on; close when both ends are done. */
static void
cl_write(struct bufferevent *bev, void *arg)
{
	struct dk_conn *c = arg;
	bool empty = !evbuffer_get_length(bufferevent_get_output(bev));

	if (c->st == DK_ST_END) {
		if (empty && c->body_done)
			dk_conn_free(c);
		return;
	}
	if (c->up && !c->up_eof)
		bufferevent_enable(c->up, EV_READ);
	if (empty && c->up_eof) {
		if (c->st != DK_ST_BOTH || c->cl_eof) {
			dk_conn_free(c);
			return;
		}
		shutdown(bufferevent_getfd(c->cl), SHUT_WR);
	}
}

static void
up_write(struct bufferevent *bev, void *arg)
{
	struct dk_conn *c = arg;

	if (!c->cl_eof && (c->st == DK_ST_BOTH || c->st == DK_ST_SEND))
		bufferevent_enable(c->cl, EV_READ);
	if (c->cl_eof && c->st == DK_ST_BOTH && !evbuffer_get_length(bufferevent_get_output(bev)))
		shutdown(bufferevent_getfd(bev), SHUT_WR);
}

static void
cl_event(struct bufferevent *bev, short what, void *arg)
{
	struct dk_conn *c = arg;

	if ((what & BEV_EVENT_EOF) && c->st == DK_ST_END) {
		c->body_done = true; /* nothing more will come */
		bufferevent_disable(c->cl, EV_READ);
		if (!evbuffer_get_length(bufferevent_get_output(c->cl)))
			dk_conn_free(c);
		return;
	}
	if (!(what & BEV_EVENT_EOF) || c->st != DK_ST_BOTH || !c->up) {
		dk_conn_free(c); /* an error, or a client gone before its answer */
		return;
	}
	c->cl_eof = true;
	(void)bev;
	if (c->up_eof) {
		dk_conn_free(c);
		return;
	}
	if (!evbuffer_get_length(bufferevent_get_output(c->up)))
		shutdown(bufferevent_getfd(c->up), SHUT_WR);
}

static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct dk_conn *c = arg;
	struct dk_verdict v;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	if (c->st == DK_ST_RESP || c->st == DK_ST_SEND) {
		dk_refuse(&v, 502, "dockerd closed the connection before it answered");
		dk_conn_reply(c, &v);
		return;
	}
	if (!(what & BEV_EVENT_EOF)) {
		dk_conn_free(c);
		return;
	}
	c->up_eof = true;
	bufferevent_disable(c->up, EV_READ);
	cl_write(c->cl, c);
}

/* ---- accept ---- */

/* Who connected: a job's process (its requests judged), a process that
 * egressctl confines otherwise (refused), anybody else (relayed). */
static void
sort_peer(struct dk_conn *c, int fd)
{
	struct dockerapi *d = c->d;
	char why[256];
	int err = peer_identify(fd, d->mnt, &c->peer, why, sizeof(why));

	policy_safe_comm(c->peer.comm, c->comm);
	if (!err)
		c->is_job = d->o.job_of(d->o.arg, c->peer.cgroup, &c->job) == 1;
	if (c->is_job)
		c->place = dk_job_parent(d, c->job.cgroup, c->parent, sizeof(c->parent));
	d->njob += c->is_job;
	if (err || c->is_job || c->peer.confined) { /* a request head first */
		c->st = DK_ST_HEAD;
		arm(c, true);
		bufferevent_enable(c->cl, EV_READ);
	}
	/* the answer to a refused process waits for its request: docker
	 * prints it then, and no broken pipe */
	if (err) {
		c->refuse_all = true;
		dk_refuse(&c->pre, 403,
			  "egressctl cannot tell which process connected (%s): refused", why);
		return;
	}
	if (c->is_job && d->njob > DK_MAX_JOBS) {
		c->refuse_all = true;
		dk_refuse(&c->pre, 403,
			  "the confined jobs have %d connections to docker open at once",
			  DK_MAX_JOBS);
		return;
	}
	if (c->is_job)
		return;
	if (c->peer.confined) {
		c->refuse_all = true;
		dk_refuse(&c->pre, 403,
			  "%s[%d] is confined by egressctl, but not as a job of this daemon: "
			  "docker is refused",
			  c->comm, (int)c->peer.pid);
		return;
	}
	c->st = DK_ST_BOTH; /* anybody else's: untouched */
	if (dial_up(c)) {
		bufferevent_enable(c->cl, EV_READ);
		bufferevent_setwatermark(c->cl, EV_WRITE, DK_HIGH / 2, 0);
	}
}

void
dk_conn_accept(struct dockerapi *d, int fd)
{
	struct dk_conn *c;

	if (d->nconns >= DK_MAX_CONNS) {
		if (!d->warned_full)
			log_warnx("docker: %d connections at once: refusing more", DK_MAX_CONNS);
		d->warned_full = true;
		close(fd);
		return;
	}
	d->warned_full = false;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->d = d;
	c->cl = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(d->base, on_timeout, c);
	LIST_INSERT_HEAD(&d->conns, c, entry);
	d->nconns++;
	if (!c->cl || !c->timer) {
		if (!c->cl)
			close(fd);
		dk_conn_free(c);
		return;
	}
	bufferevent_setcb(c->cl, cl_read, cl_write, cl_event, c);
	bufferevent_setwatermark(c->cl, EV_WRITE, DK_HIGH / 2, 0);
	/* what waits unread: a head and a body at most */
	bufferevent_setwatermark(c->cl, EV_READ, 0, DK_HEAD_MAX + DK_BODY_MAX + DK_RESP_HEAD);
	sort_peer(c, fd);
}
