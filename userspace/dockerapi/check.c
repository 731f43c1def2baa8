// SPDX-License-Identifier: Apache-2.0
/* Whose is the container a job's request names (see conn.h)? dockerd is
 * asked, GET /containers/{id}/json on a connection of its own, as
 * HTTP/1.0 so that the body ends where dockerd closes; the container is
 * the job's when it was made under the job's cgroup (its CgroupParent is
 * the job's, as only egressctl sets it for a job), and docker cp goes
 * into it only when it has no read-write bind of a host path. The request
 * then names it by its full id, which no rename changes. A build's
 * --network NAME is looked up the same way (GET /networks/{name}): its
 * driver must be bridge. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "dockerapi/conn.h"
#include "parse/http_resp.h"

void
dk_check_cancel(struct dk_conn *c)
{
	if (c->sub) {
		bufferevent_free(c->sub);
		c->sub = NULL;
	}
}

/* The container cannot be told the job's: refused (in audit mode only
 * said, and the request goes on with the name as it was). */
static void
fail(struct dk_conn *c, int status, const char *why)
{
	struct dk_verdict v;

	dk_check_cancel(c);
	if (c->route.network[0])
		dk_refuse(&v, status, "docker build --network %.128s: %s", c->route.network, why);
	else
		dk_refuse(&v, status, "container %.128s: %s", c->route.id, why);
	if (!dk_conn_refuse(c, &v))
		dk_conn_checked(c);
}

/* dockerd's whole answer is in the buffer: judged. */
static void
judge(struct dk_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->sub);
	size_t n = evbuffer_get_length(in), used;
	char *buf = (char *)evbuffer_pullup(in, -1), err[160], status[64];
	struct dk_ctx ctx = {.parent = c->parent, .host_path = dk_host_path, .arg = c->d};
	struct dk_verdict v;
	struct http_response r;
	struct dj *doc;

	if (!n || http_parse_response(buf, n, n, false, &r, &used) != PARSE_DONE) {
		fail(c, 502, "dockerd's answer about it cannot be read");
		return;
	}
	if (r.status != 200) {
		snprintf(status, sizeof(status), "no such %s (dockerd: %d)",
			 c->route.network[0] ? "network" : "container", r.status);
		fail(c, r.status == 404 ? 404 : 502, status);
		return;
	}
	doc = dj_parse(buf + used, n - used, err, sizeof(err));
	if (!doc) {
		fail(c, 502, err);
		return;
	}
	if (c->route.network[0] ? dk_build_network(doc, &c->route, &v)
				: dk_owned(doc, &ctx, &c->route, c->id, sizeof(c->id), &v)) {
		dj_free(doc);
		dk_check_cancel(c);
		if (!dk_conn_refuse(c, &v))
			dk_conn_checked(c);
		return;
	}
	dj_free(doc);
	dk_check_cancel(c);
	dk_conn_checked(c);
}

static void
sub_read(struct bufferevent *bev, void *arg)
{
	struct dk_conn *c = arg;

	if (evbuffer_get_length(bufferevent_get_input(bev)) > DK_INSPECT_MAX)
		fail(c, 502, "dockerd's answer about it is over 4 MiB");
}

static void
sub_event(struct bufferevent *bev, short what, void *arg)
{
	struct dk_conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	if (what & BEV_EVENT_EOF) {
		judge(c);
		return;
	}
	fail(c, 502, "dockerd does not answer about it");
}

void
dk_check_start(struct dk_conn *c)
{
	static const char hex[] = "0123456789ABCDEF";
	char enc[3 * DK_ID_MAX + 1];
	size_t e = 0;
	int fd;

	c->st = DK_ST_CHECK;
	for (const unsigned char *s =
		     (const unsigned char *)(c->route.network[0] ? c->route.network : c->route.id);
	     *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.') {
			enc[e++] = (char)*s;
		} else {
			enc[e++] = '%';
			enc[e++] = hex[*s >> 4];
			enc[e++] = hex[*s & 15];
		}
	}
	enc[e] = 0;
	fd = dk_dial(c->d);
	if (fd < 0 || !(c->sub = bufferevent_socket_new(c->d->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
		if (fd >= 0)
			close(fd);
		fail(c, 502, "dockerd does not answer");
		return;
	}
	bufferevent_setcb(c->sub, sub_read, NULL, sub_event, c);
	bufferevent_setwatermark(c->sub, EV_READ, 0, DK_INSPECT_MAX + 1);
	bufferevent_enable(c->sub, EV_READ | EV_WRITE);
	if (c->route.network[0])
		evbuffer_add_printf(bufferevent_get_output(c->sub),
				    "GET /networks/%s HTTP/1.0\r\nHost: docker\r\n\r\n", enc);
	else
		evbuffer_add_printf(bufferevent_get_output(c->sub),
				    "GET /containers/%s/json HTTP/1.0\r\nHost: docker\r\n\r\n",
				    enc);
}
