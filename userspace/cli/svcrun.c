// SPDX-License-Identifier: Apache-2.0
/* The service's run (see svcrun.h): the client's connection, which the
 * daemon hands to run, and run's line to the daemon for `egressctl log`
 * and `status`, taken up again with a daemon started after the one that
 * started this run. Nothing here needs the daemon to be there: the client
 * gets its signals forwarded and its exit status from run itself, and its
 * going away ends CMD. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <event2/event.h>

#include "cli/runstate.h"
#include "cli/svcrun.h"
#include "daemon/usreq.h"
#include "kernel/cgroup.h"
#include "lib/jsonx.h"
#include "lib/log.h"

/* a gone daemon's successor asked after this, doubled each time the tap
 * goes again (a daemon that refuses it: one without adopt), up to 16 s */
#define SVCRUN_RETRY_MS 500

struct svcrun {
	struct run_state *st;
	struct event *ev_conn;	/* the client's messages, and its going */
	struct event *ev_tap;	/* the daemon's end of the tap going */
	struct event *ev_retry; /* the tap taken up again with the next daemon */
	int gone;		/* times the tap went */
	time_t started;
	/* lines while no daemon was there: the last SVCRUN_QUEUE, oldest at
	 * q_at, sent to the next one; q_lost: older ones dropped */
	char *q[SVCRUN_QUEUE];
	size_t q_len[SVCRUN_QUEUE];
	int q_at, q_n;
	unsigned long q_lost;
};

/* The queued lines to the daemon, oldest first, as far as it takes them
 * now (the rest stays queued for the next line or adopt). */
static void
flush_queue(struct svcrun *s)
{
	int tap = s->st->opts->log_tap;

	while (s->q_n && tap >= 0) {
		if (send(tap, s->q[s->q_at], s->q_len[s->q_at], MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    (errno == EAGAIN || errno == ENOBUFS))
			return;
		free(s->q[s->q_at]);
		s->q[s->q_at] = NULL;
		s->q_at = (s->q_at + 1) % SVCRUN_QUEUE;
		s->q_n--;
	}
	if (!s->q_n && s->q_lost && tap >= 0) {
		log_warnx(
			"%lu decision lines of `egressctl log` dropped while the service was down "
			"(the last %d kept)",
			s->q_lost, SVCRUN_QUEUE);
		s->q_lost = 0;
	}
}

void
svcrun_tap(struct svcrun *s, const char *line, size_t len)
{
	int at;
	char *copy;

	flush_queue(s);
	if (s->st->opts->log_tap >= 0 && !s->q_n) {
		(void)!send(s->st->opts->log_tap, line, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		return;
	}
	copy = malloc(len);
	if (!copy) {
		s->q_lost++;
		return;
	}
	memcpy(copy, line, len);
	if (s->q_n == SVCRUN_QUEUE) { /* the oldest goes */
		free(s->q[s->q_at]);
		s->q_at = (s->q_at + 1) % SVCRUN_QUEUE;
		s->q_n--;
		s->q_lost++;
	}
	at = (s->q_at + s->q_n) % SVCRUN_QUEUE;
	s->q[at] = copy;
	s->q_len[at] = len;
	s->q_n++;
}

/* The client's messages: {"signal": N} as if run had been sent N; the
 * client gone (EOF, an error): CMD's cgroup killed, as the daemon would. */
static void
on_conn(evutil_socket_t fd, short what, void *arg)
{
	struct svcrun *s = arg;
	char buf[256], err[128];
	ssize_t n;
	int sig;

	(void)what;
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		if (!usreq_parse_signal(buf, (size_t)n, &sig, err, sizeof(err)))
			run_signal(s->st, (uint32_t)sig, SI_USER);
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		event_del(s->ev_conn);
		if (s->st->pid && cgroup_kill(s->st->cgpath))
			log_warn("cgroup.kill of %s", s->st->cgpath);
	}
}

/* {"adopt": {...}}: who this run is, for a daemon that did not start it. */
static char *
hello(const struct svcrun *s)
{
	const struct run_opts *o = s->st->opts;
	json_t *doc = json_object(), *a = json_object();
	char *line = NULL, cmd[200];
	size_t i;

	/* for status alone: cut, and ASCII (a JSON string is UTF-8) */
	for (i = 0; i < sizeof(cmd) - 1 && s->st->cmdline[i]; i++)
		cmd[i] = (unsigned char)s->st->cmdline[i] < 0x20 ||
					 (unsigned char)s->st->cmdline[i] > 0x7e
				 ? '?'
				 : s->st->cmdline[i];
	cmd[i] = '\0';
	if (doc && a && !jsonx_set_str(a, "user", o->user ? o->user : "") &&
	    !jsonx_set_str(a, "command", cmd) &&
	    !jsonx_set_int(a, "started", (long long)s->started) &&
	    !json_object_set(doc, "adopt", a))
		line = jsonx_line(doc);
	json_decref(a);
	json_decref(doc);
	return line;
}

static void watch_tap(struct svcrun *s);

/* Is the listener at the other end of c root's? A socket someone else
 * bound at the path while no daemon was there would get this run's user,
 * command and decision lines. */
static bool
peer_is_root(int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	return !getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) && cr.uid == 0;
}

/* The daemon gone: the tap is taken up again with the next one, which
 * lists this run as its user's and gets its lines from then on. */
static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct svcrun *s = arg;
	struct run_opts *o = s->st->opts;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char *line = hello(s);
	int c;

	(void)fd;
	(void)what;
	c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", o->service_socket);
	if (c >= 0 && line && !connect(c, (struct sockaddr *)&sun, sizeof(sun)) &&
	    peer_is_root(c) && send(c, line, strlen(line), MSG_NOSIGNAL) == (ssize_t)strlen(line)) {
		o->log_tap = c;
		event_del(s->ev_retry);
		watch_tap(s);
		flush_queue(s);
	} else if (c >= 0) {
		close(c);
	}
	free(line);
}

/* The daemon never writes on the tap: readable is its end gone. */
static void
on_tap(evutil_socket_t fd, short what, void *arg)
{
	struct svcrun *s = arg;
	long ms = (long)SVCRUN_RETRY_MS << (s->gone < 5 ? s->gone : 5);
	struct timeval every = {ms / 1000, (ms % 1000) * 1000};
	char buf[64];

	(void)what;
	if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	event_free(s->ev_tap);
	s->ev_tap = NULL;
	close(fd);
	s->st->opts->log_tap = -1; /* lines meanwhile are queued */
	s->gone++;
	if (s->st->opts->service_socket && s->ev_retry)
		event_add(s->ev_retry, &every);
}

static void
watch_tap(struct svcrun *s)
{
	s->ev_tap = event_new(s->st->base, s->st->opts->log_tap, EV_READ | EV_PERSIST, on_tap, s);
	if (!s->ev_tap || event_add(s->ev_tap, NULL))
		log_warnx("the service's log line: cannot watch it");
}

struct svcrun *
svcrun_open(struct run_state *st)
{
	struct run_opts *o = st->opts;
	struct svcrun *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->st = st;
	s->started = time(NULL);
	if (o->conn_fd) {
		s->ev_conn = event_new(st->base, o->conn_fd, EV_READ | EV_PERSIST, on_conn, s);
		if (!s->ev_conn || event_add(s->ev_conn, NULL))
			goto fail;
	}
	if (o->log_tap > 0) {
		s->ev_retry = event_new(st->base, -1, EV_PERSIST, on_retry, s);
		if (!s->ev_retry)
			goto fail;
		watch_tap(s);
	}
	return s;
fail:
	svcrun_free(s);
	return NULL;
}

void
svcrun_quiet(struct svcrun *s)
{
	if (!s)
		return;
	if (s->ev_conn)
		event_del(s->ev_conn);
	if (s->ev_tap)
		event_del(s->ev_tap);
	if (s->ev_retry)
		event_del(s->ev_retry);
}

void
svcrun_free(struct svcrun *s)
{
	if (!s)
		return;
	if (s->ev_conn)
		event_free(s->ev_conn);
	if (s->ev_tap)
		event_free(s->ev_tap);
	if (s->ev_retry)
		event_free(s->ev_retry);
	for (int i = 0; i < s->q_n; i++)
		free(s->q[(s->q_at + i) % SVCRUN_QUEUE]);
	free(s);
}

struct svcrun_watch {
	pthread_t thread;
	int conn, stop; /* the client's connection; an eventfd */
};

static void *
watch_main(void *arg)
{
	struct svcrun_watch *w = arg;
	struct pollfd p[2] = {{.fd = w->conn, .events = POLLRDHUP},
			      {.fd = w->stop, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			/* nothing of the run's is in the kernel yet: no cgroup,
			 * no pins; its programs and sockets go with it */
			log_warnx("the client went away before CMD started: stopped");
			_exit(EGR_EXIT_ERROR);
		}
	}
}

struct svcrun_watch *
svcrun_watch_setup(int conn_fd)
{
	struct svcrun_watch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->conn = conn_fd;
	w->stop = eventfd(0, EFD_CLOEXEC);
	if (w->stop < 0) {
		free(w);
		return NULL;
	}
	err = pthread_create(&w->thread, NULL, watch_main, w);
	if (err) {
		close(w->stop);
		free(w);
		errno = err;
		return NULL;
	}
	return w;
}

void
svcrun_watch_done(struct svcrun_watch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	(void)!write(w->stop, &one, sizeof(one));
	pthread_join(w->thread, NULL);
	close(w->stop);
	free(w);
}

void
svcrun_exit(const struct run_opts *o, int status)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "{\"exit\":%d}", status);

	if (o->conn_fd)
		(void)!send(o->conn_fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}
