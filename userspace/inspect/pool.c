// SPDX-License-Identifier: Apache-2.0
/* Upstream TLS connections kept between requests (core.h, "pool.c"): a
 * response read whole from a server that keeps its connection leaves the
 * connection here, idle, for the next request to the same name and port,
 * of this session or another of the inspector's. Each request is judged
 * first as before; a kept connection is taken only for a request its
 * peer address is allowed for now (conn_reuse_upstream()). An idle one
 * the server writes to, closes, or that idles IX_POOL_IDLE_S goes. The
 * pool is bounded (IX_POOL_PER_HOST, IX_POOL_MAX: the proxy keeps that
 * many descriptors aside for it, target.c: an inspector made after the
 * proxy, by a reload, keeps none), the oldest making room. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "inspect/core.h"

struct ix_pooled {
	TAILQ_ENTRY(ix_pooled) entry;
	struct inspector *in;
	struct bufferevent *ub; /* the TLS filter; the socket's bufferevent goes with it */
	int fd;
	struct sockaddr_storage peer;
	uint16_t port;
	char host[256];
};

static void
drop(struct ix_pooled *p)
{
	TAILQ_REMOVE(&p->in->pool, p, entry);
	p->in->npool--;
	bufferevent_free(p->ub);
	close(p->fd);
	free(p);
}

/* Idle, it should hear nothing: whatever comes (bytes, the close, an
 * error, its idle time) ends it. */
static void
on_idle_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	drop(arg);
}

static void
on_idle_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	drop(arg);
}

bool
ix_pool_put(struct isess *s)
{
	struct inspector *in = s->ins;
	struct conn *c = s->c;
	struct timeval idle = {IX_POOL_IDLE_S, 0};
	struct ix_pooled *p;
	int same = 0;

	if (!s->ub || c->ufd < 0 || c->via_upstream || s->upstream_eof || s->resp.close ||
	    s->resp.until_close || evbuffer_get_length(bufferevent_get_input(s->ub)) ||
	    evbuffer_get_length(bufferevent_get_output(s->ub)))
		return false;
	if (!in->pool_max)
		return false;
	TAILQ_FOREACH(p, &in->pool, entry)
	if (p->port == c->port && !strcmp(p->host, c->host) && ++same >= IX_POOL_PER_HOST)
		return false;
	if (in->npool >= in->pool_max)
		drop(TAILQ_FIRST(&in->pool)); /* the oldest */
	p = calloc(1, sizeof(*p));
	if (!p)
		return false;
	p->in = in;
	p->ub = s->ub;
	p->fd = c->ufd;
	p->peer = c->up_addr;
	p->port = c->port;
	snprintf(p->host, sizeof(p->host), "%s", c->host);
	bufferevent_setcb(p->ub, on_idle_read, NULL, on_idle_event, p);
	bufferevent_set_timeouts(p->ub, &idle, NULL);
	bufferevent_enable(p->ub, EV_READ);
	TAILQ_INSERT_TAIL(&in->pool, p, entry);
	in->npool++;
	s->ub = s->uu = NULL;
	c->ufd = -1;
	return true;
}

bool
ix_pool_take(struct isess *s)
{
	struct inspector *in = s->ins;
	struct conn *c = s->c;
	struct ix_pooled *p;

	/* the newest first: the likeliest to be open still at the server */
	TAILQ_FOREACH_REVERSE(p, &in->pool, ix_pool_head, entry)
	{
		if (p->port != c->port || strcmp(p->host, c->host) ||
		    evbuffer_get_length(bufferevent_get_input(p->ub)) ||
		    !conn_reuse_upstream(c, p->fd, &p->peer))
			continue;
		TAILQ_REMOVE(&in->pool, p, entry);
		in->npool--;
		s->ub = p->ub;
		s->uu = bufferevent_get_underlying(p->ub);
		free(p);
		bufferevent_set_timeouts(s->ub, NULL, NULL);
		bufferevent_setcb(s->ub, ix_upstream_read, ix_upstream_write, ix_upstream_event, s);
		in->st.reused++;
		s->reused = true;
		return true;
	}
	return false;
}

void
ix_pool_free(struct inspector *in)
{
	while (!TAILQ_EMPTY(&in->pool))
		drop(TAILQ_FIRST(&in->pool));
}
