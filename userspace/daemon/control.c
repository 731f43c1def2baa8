// SPDX-License-Identifier: Apache-2.0
/* The control socket (see control.h): accept, who the peer is and whether
 * it may command the daemon (kernel/peer.c), bufferevents for the lines
 * both ways, a bound on what waits for a slow reader, the socket's entry
 * in egressctl's registry (sandbox/unixsvc.c: `run` masks it from CMD); and
 * the blocking client. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "daemon/control.h"
#include "kernel/cgroup.h"
#include "kernel/peer.h"
#include "sandbox/unixsvc.h"
#include "lib/jsonx.h"
#include "lib/log.h"
#include "policy/policy.h"

#define CONTROL_MAX_CLIENTS 64
#define CONTROL_MAX_LINE    (64 * 1024)
#define CONTROL_MAX_QUEUE   (4u << 20) /* bytes waiting for one client */
#define CONTROL_MAX_DEPTH   1000       /* a request's nesting levels */

struct control_client {
	LIST_ENTRY(control_client) entry;
	struct control *c;
	struct bufferevent *bev;
	bool ending; /* close once the output is written */
	bool asked;  /* one request per connection */
	void *udata;
	struct peer peer; /* who connected (kernel/peer.h) */
};

struct control {
	struct event_base *base;
	int fd;
	struct event *ev;
	char path[108];
	char mnt[PATH_MAX]; /* the cgroup2 mount: the peers' cgroups */
	bool registered;    /* in egressctl's registry of control sockets */
	control_handler fn;
	control_gone gone;
	void *arg;
	LIST_HEAD(, control_client) clients;
	int nclients;
};

static void
client_free(struct control_client *cl)
{
	struct control *c = cl->c;

	if (c->gone)
		c->gone(c->arg, cl);
	LIST_REMOVE(cl, entry);
	c->nclients--;
	bufferevent_free(cl->bev);
	free(cl);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct control_client *cl = arg;

	if (cl->ending && !evbuffer_get_length(bufferevent_get_output(bev)))
		client_free(cl);
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct control_client *cl = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char why[256];
	json_t *req;
	size_t n, end;
	char *line;

	if (cl->asked) { /* anything after the request is ignored */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
	if (!line) {
		if (evbuffer_get_length(in) > CONTROL_MAX_LINE) {
			control_send(cl, "{\"ok\":false,\"error\":\"request too long\"}");
			control_end(cl);
		}
		return;
	}
	cl->asked = true;
	/* what follows the object on the line is ignored */
	req = jsonx_parse(line, n, CONTROL_MAX_DEPTH, &end, why, sizeof(why));
	free(line);
	if (!json_is_object(req)) {
		control_send(cl, "{\"ok\":false,\"error\":\"not a JSON object\"}");
		control_end(cl);
	} else {
		cl->c->fn(cl->c->arg, cl, req);
	}
	json_decref(req);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		client_free(arg);
}

/* "comm[pid] (uid U, cgroup /x)", the comm escaped */
static void
peer_words(const struct peer *p, char *buf, size_t len)
{
	char comm[17];

	policy_safe_comm(p->comm, comm);
	snprintf(buf, len, "%s[%d] (uid %u, cgroup %s)", comm[0] ? comm : "?", (int)p->pid,
		 (unsigned)p->uid, p->cgroup[0] ? p->cgroup : "?");
}

/* One JSON line saying why, and the connection closed. What the peer sent
 * is read off before the close, which would otherwise reset the line away
 * (a unix socket closed with unread data: ECONNRESET at the peer). */
static void
refuse(int fd, const struct peer *p, const char *why)
{
	char who[CONTROL_WHO_MAX], words[2 * PEER_CGROUP_MAX + 512], buf[4096];
	json_t *o = json_object();
	char *line = NULL;

	peer_words(p, who, sizeof(who));
	snprintf(words, sizeof(words), "refused %s: %s", who, why);
	log_warnx("control socket: %s", words);
	if (!jsonx_set_bool(o, "ok", false) && !jsonx_set_str(o, "error", words))
		line = jsonx_line(o);
	if (line && send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
		send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(line);
	json_decref(o);
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct control *c = arg;
	struct control_client *cl;
	struct peer peer;
	char why[PEER_CGROUP_MAX + 256];
	int fd;

	(void)what;
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (c->nclients >= CONTROL_MAX_CLIENTS) {
		close(fd);
		return;
	}
	/* Only an administrator outside confinement: a root in a `run` (uid 0,
	 * no capabilities) or in a target (any uid, any capabilities) would
	 * otherwise allow itself out. */
	if (peer_identify(fd, c->mnt, &peer, why, sizeof(why)) ||
	    peer_refusal(&peer, why, sizeof(why))) {
		refuse(fd, &peer, why);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl || !(cl->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
		free(cl);
		close(fd);
		return;
	}
	cl->c = c;
	cl->peer = peer;
	LIST_INSERT_HEAD(&c->clients, cl, entry);
	c->nclients++;
	bufferevent_setcb(cl->bev, on_read, on_write, on_event, cl);
	bufferevent_enable(cl->bev, EV_READ | EV_WRITE);
}

/* Is a daemon alive at path? */
static bool
answers(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	alive = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(fd);
	return alive;
}

/* mkdir -p of path's directory, 0700 (the sockets in it are root's). */
static int
make_dir(const char *path)
{
	char dir[108];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

struct control *
control_open(struct event_base *base, const char *path, control_handler fn, control_gone gone,
	     void *arg, char *errbuf, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct control *c;
	int err;

	if (strlen(path) >= sizeof(sun.sun_path) || path[0] != '/') {
		snprintf(errbuf, errlen,
			 "control socket %s: not an absolute path of at most %zu bytes", path,
			 sizeof(sun.sun_path) - 1);
		return NULL;
	}
	if (answers(path)) {
		snprintf(errbuf, errlen, "another egressctl daemon answers on %s", path);
		errno = EADDRINUSE;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->base = base;
	c->fn = fn;
	c->gone = gone;
	c->arg = arg;
	LIST_INIT(&c->clients);
	snprintf(c->path, sizeof(c->path), "%s", path);
	strcpy(sun.sun_path, path);
	err = cgroup_find_mount(c->mnt, sizeof(c->mnt));
	if (err) {
		snprintf(errbuf, errlen,
			 "control socket %s: no cgroup2 mount to judge peers by: %s", path,
			 strerror(-err));
		goto fail;
	}
	err = make_dir(path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (err || c->fd < 0) {
		snprintf(errbuf, errlen, "control socket %s: %s", path,
			 strerror(err ? -err : errno));
		goto fail;
	}
	unlink(path); /* stale: nobody answered on it */
	if (bind(c->fd, (struct sockaddr *)&sun, sizeof(sun)) || chmod(path, 0600) ||
	    listen(c->fd, 16)) {
		snprintf(errbuf, errlen, "control socket %s: %s", path, strerror(errno));
		goto fail;
	}
	/* listed for `run`, which masks it from CMD (wherever it is) */
	if (unixsvc_control_register(UNIXSVC_EGR_DIR, path, errbuf, errlen))
		goto fail;
	c->registered = true;
	c->ev = event_new(base, c->fd, EV_READ | EV_PERSIST, on_accept, c);
	if (!c->ev || event_add(c->ev, NULL)) {
		snprintf(errbuf, errlen, "control socket %s: cannot watch it", path);
		goto fail;
	}
	return c;
fail:
	control_free(c);
	return NULL;
}

void
control_free(struct control *c)
{
	struct control_client *cl;

	if (!c)
		return;
	while ((cl = LIST_FIRST(&c->clients)))
		client_free(cl);
	if (c->ev)
		event_free(c->ev);
	if (c->registered)
		unixsvc_control_unregister(UNIXSVC_EGR_DIR);
	if (c->fd >= 0) {
		close(c->fd);
		unlink(c->path);
	}
	free(c);
}

bool
control_send(struct control_client *cl, const char *line)
{
	struct evbuffer *out = bufferevent_get_output(cl->bev);

	if (evbuffer_get_length(out) > CONTROL_MAX_QUEUE)
		return false;
	evbuffer_add(out, line, strlen(line));
	evbuffer_add(out, "\n", 1);
	return true;
}

void
control_end(struct control_client *cl)
{
	cl->ending = true;
	bufferevent_disable(cl->bev, EV_READ);
	if (!evbuffer_get_length(bufferevent_get_output(cl->bev)))
		client_free(cl);
}

void
control_who(const struct control_client *cl, char *buf, size_t len)
{
	peer_words(&cl->peer, buf, len);
}

void
control_set_udata(struct control_client *cl, void *udata)
{
	cl->udata = udata;
}

void *
control_udata(const struct control_client *cl)
{
	return cl->udata;
}

/* ---- the client ---- */

int
control_request(const char *path, const char *req, int (*on_line)(void *arg, const char *line),
		void *arg, int timeout_ms)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	size_t len = 0, cap = 1 << 16, lines = 0;
	char *buf;
	int fd, err = 0;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		close(fd);
		return err;
	}
	/* a daemon that refuses us says why and closes, maybe before our
	 * request is in: its line is still there to read */
	if ((send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL) < 0) &&
	    errno != EPIPE && errno != ECONNRESET) {
		err = -errno;
		close(fd);
		return err;
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		char *nl;
		ssize_t n;

		if (poll(&pfd, 1, timeout_ms) == 0) {
			err = -ETIMEDOUT;
			break;
		}
		if (len + 1 >= cap) {
			char *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* after a reply, a reset is its end too (see refuse()) */
			err = n < 0 && !(errno == ECONNRESET && lines) ? -errno : 0;
			break;
		}
		len += (size_t)n;
		buf[len] = 0;
		timeout_ms = -1; /* the first reply came: the rest streams */
		while ((nl = memchr(buf, '\n', len))) {
			*nl = 0;
			lines++;
			if (on_line(arg, buf)) {
				free(buf);
				close(fd);
				return 0;
			}
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
		}
	}
	free(buf);
	close(fd);
	return err;
}
