// SPDX-License-Identifier: Apache-2.0
/* The decision log (see audit.h): a non-blocking writer with a bounded
 * buffer, of the lines record.c formats; syslog and OTLP go to logsink.c.
 *
 * Two ways a line can fail to reach the file, counted apart: the reader is
 * slow (a pipe stays full until the buffer is, then lines are "dropped"),
 * or writing fails (ENOSPC, EIO, EDQUOT, EFBIG...). A failing write is
 * said once with its errno; lines keep waiting in the buffer (beyond it
 * they are "lost") and a timer retries until a write succeeds, which is
 * said once too. EPIPE is the one error that never heals: the reader is
 * gone. A line cut short by a full disk is completed by the retry, or cut
 * off the file at exit, so the file only ever holds whole lines. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>

#include "audit/audit.h"
#include "audit/logsink.h"
#include "lib/log.h"

#define AUDIT_BUF_MAX	   (4u << 20) /* bytes waiting for a slow reader or a failing disk */
#define AUDIT_RETRY_MS	   500	      /* while writes fail, the next try after this */
#define AUDIT_MAX_WARNINGS 5	      /* write-error episodes said; later ones: the summary */

struct audit {
	int fd; /* -1: no file */
	char *path;
	struct evbuffer *buf;
	struct event *wev;
	struct event *retry; /* armed while writes fail */
	size_t max;	     /* bytes the buffer may hold */
	size_t partial;	     /* bytes of the first buffered line already in the file */
	uint64_t dropped;    /* lines: the reader was too slow */
	uint64_t lost;	     /* lines: writing failed */
	uint64_t lost_mark;  /* lost when the current failure began */
	int err;	     /* errno of the failing writes; 0 while they work */
	int last_err;	     /* the last write error of the run, for the summary */
	unsigned warnings;
	bool broken;	 /* the reader is gone (EPIPE): no more writes */
	int fmt;	 /* enum audit_fmt */
	bool reopenable; /* a file, by its path */
	struct event_base *base;
	struct logsink *ls; /* syslog or OTLP instead of a descriptor */
	audit_sink sink;
	void *sink_arg;
	audit_namer namer;
	void *namer_arg;
};

/* Whole or partial lines waiting in buf. */
static uint64_t
lines_in(struct evbuffer *buf)
{
	struct evbuffer_ptr p;
	uint64_t n = 0;

	if (!evbuffer_get_length(buf))
		return 0;
	p = evbuffer_search(buf, "\n", 1, NULL);
	while (p.pos != -1) {
		n++;
		if (evbuffer_ptr_set(buf, &p, 1, EVBUFFER_PTR_ADD))
			break;
		p = evbuffer_search(buf, "\n", 1, &p);
	}
	return n ? n : 1;
}

static const char *
shown_path(const struct audit *a)
{
	return strcmp(a->path, "-") ? a->path : "stdout";
}

static const char *
errno_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "?";
}

/* One line per write(): a line is shorter than PIPE_BUF, so a pipe takes
 * it whole or not at all, and a stuck reader never gets half a line. A
 * file on a full disk can take part of one: a->partial remembers it. */
static ssize_t
write_line(struct audit *a)
{
	struct evbuffer_ptr nl = evbuffer_search(a->buf, "\n", 1, NULL);
	size_t len = nl.pos < 0 ? evbuffer_get_length(a->buf) : (size_t)nl.pos + 1;
	const unsigned char *p = evbuffer_pullup(a->buf, (ssize_t)len);
	ssize_t n;

	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	n = write(a->fd, p, len);
	if (n > 0) {
		evbuffer_drain(a->buf, (size_t)n);
		a->partial = (size_t)n < len ? a->partial + (size_t)n : 0;
	} else if (n == 0) {
		errno = EIO; /* write(2) of a non-empty buffer: not supposed to happen */
		n = -1;
	}
	return n;
}

static void
write_failed(struct audit *a, int e)
{
	struct timeval tv = {0, AUDIT_RETRY_MS * 1000};

	a->last_err = e;
	if (e == EPIPE) {
		/* the reader is gone and no retry brings it back */
		a->lost += lines_in(a->buf);
		evbuffer_drain(a->buf, evbuffer_get_length(a->buf));
		a->broken = true;
		log_warnx("log %s: the reader is gone (EPIPE): no more lines are written; the "
			  "summary counts them",
			  shown_path(a));
		return;
	}
	if (!a->err) {
		a->err = e;
		a->lost_mark = a->lost;
		if (a->warnings < AUDIT_MAX_WARNINGS)
			log_warnx("log %s: cannot write: %s (%s); lines wait in memory (up to %zu "
				  "KiB, beyond that they are counted as lost) and writing is "
				  "retried",
				  shown_path(a), strerror(e), errno_name(e), a->max >> 10);
		else if (a->warnings == AUDIT_MAX_WARNINGS)
			log_warnx("log %s: cannot write again: %s (%s); more write errors only in "
				  "the summary",
				  shown_path(a), strerror(e), errno_name(e));
		a->warnings++;
	}
	a->err = e;
	evtimer_add(a->retry, &tv);
}

static void
write_resumed(struct audit *a)
{
	uint64_t n = a->lost - a->lost_mark;

	if (a->warnings <= AUDIT_MAX_WARNINGS)
		log_warnx("log %s: writing again after %s; %llu line%s lost meanwhile",
			  shown_path(a), errno_name(a->err), (unsigned long long)n,
			  n == 1 ? "" : "s");
	a->err = 0;
	evtimer_del(a->retry);
}

static void
flush(struct audit *a)
{
	while (evbuffer_get_length(a->buf)) {
		ssize_t n = write_line(a);

		if (n > 0) {
			if (a->err && !a->partial) /* a whole line went out */
				write_resumed(a);
			continue;
		}
		if (errno == EAGAIN || errno == EINTR) {
			event_add(a->wev, NULL);
			return;
		}
		write_failed(a, errno);
		return;
	}
	event_del(a->wev);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flush(arg);
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flush(arg);
}

struct audit *
audit_open(struct event_base *base, const char *path, const struct logsink_opts *lo, char *errbuf,
	   size_t errlen)
{
	struct audit *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	a->fd = -1;
	a->max = AUDIT_BUF_MAX;
	a->base = base;
	if (!path)
		return a;
	if (logsink_is_spec(path)) {
		a->ls = logsink_open(base, path, lo, errbuf, errlen);
		if (!a->ls) {
			free(a);
			return NULL;
		}
		a->path = strdup(path);
		return a;
	}
	if (!strcmp(path, "-") || !strncmp(path, "fd:", 3)) {
		/* a file description of our own: O_NONBLOCK on a shared one
		 * would reach the confined command's stdout too */
		char proc[40], *end;
		long n = 1;

		if (path[0] == 'f') {
			errno = 0;
			n = strtol(path + 3, &end, 10);
			if (errno || end == path + 3 || *end || n < 0 || n > 1 << 20) {
				snprintf(errbuf, errlen, "--log %s: expected fd:N, N a descriptor",
					 path);
				free(a);
				return NULL;
			}
			if (fcntl((int)n, F_GETFL) == -1 ||
			    (fcntl((int)n, F_GETFL) & O_ACCMODE) == O_RDONLY) {
				snprintf(errbuf, errlen,
					 "--log %s: descriptor %ld is not open for "
					 "writing",
					 path, n);
				free(a);
				return NULL;
			}
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", n);
		a->fd = open(proc, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (a->fd == -1) /* a socket: no reopening through /proc */
			a->fd = fcntl((int)n, F_DUPFD_CLOEXEC, 3);
	} else {
		a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		a->reopenable = true;
	}
	if (a->fd == -1) {
		snprintf(errbuf, errlen, "cannot open log %s: %s", path, strerror(errno));
		free(a);
		return NULL;
	}
	fcntl(a->fd, F_SETFL, fcntl(a->fd, F_GETFL) | O_NONBLOCK);
	a->path = strdup(path);
	a->buf = evbuffer_new();
	a->wev = event_new(base, a->fd, EV_WRITE, on_writable, a);
	a->retry = evtimer_new(base, on_retry, a);
	if (!a->path || !a->buf || !a->wev || !a->retry) {
		snprintf(errbuf, errlen, "out of memory");
		audit_close(a);
		return NULL;
	}
	return a;
}

void
audit_set_sink(struct audit *a, audit_sink fn, void *arg)
{
	a->sink = fn;
	a->sink_arg = arg;
}

void
audit_set_namer(struct audit *a, audit_namer fn, void *arg)
{
	a->namer = fn;
	a->namer_arg = arg;
}

void
audit_get_stats(const struct audit *a, struct audit_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!a)
		return;
	st->dropped = a->dropped;
	st->lost = a->lost;
	st->last_err = a->last_err;
	st->failing = a->err != 0 || a->broken;
	st->path = a->path && !a->ls ? shown_path(a) : NULL;
	if (a->ls) {
		struct logsink_stats ls;

		logsink_get_stats(a->ls, &ls);
		st->sink = ls.what;
		st->sink_sent = ls.sent;
		st->sink_dropped = ls.dropped;
		st->sink_lost = ls.lost;
		snprintf(st->sink_err, sizeof(st->sink_err), "%s", ls.last_err);
	}
}

void
audit_set_format(struct audit *a, int fmt)
{
	if (a)
		a->fmt = fmt;
}

void
audit_set_limit(struct audit *a, size_t bytes)
{
	if (a && bytes)
		a->max = bytes;
}

void
audit_write(struct audit *a, const struct audit_rec *r)
{
	char line[2048];
	struct timespec ts;
	int n;

	struct audit_rec named;

	if (!a)
		return;
	if (a->namer && r->cgroup && !r->cgroup_path && !r->container) {
		named = *r;
		a->namer(a->namer_arg, r->cgroup, &named.cgroup_path, &named.container);
		r = &named;
	}
	if (a->sink)
		a->sink(a->sink_arg, r);
	if (a->fd == -1 && !a->ls)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = audit_format_as((enum audit_fmt)a->fmt, r,
			    (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, line,
			    sizeof(line) - 1);
	if (n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	if (a->ls) {
		logsink_write(a->ls, r, line, (size_t)n,
			      (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
		return;
	}
	line[n++] = '\n';
	if (a->broken) {
		a->lost++;
		return;
	}
	if (evbuffer_get_length(a->buf) + (size_t)n > a->max) {
		if (a->err)
			a->lost++; /* waiting for the disk, not for a reader */
		else
			a->dropped++;
		return;
	}
	evbuffer_add(a->buf, line, (size_t)n);
	if (!a->err)
		flush(a); /* while writes fail, the retry timer writes */
}

/* A line cut short in a regular file is cut off it: the file ends with a
 * whole line. (Nothing else appends to a decision log.) */
static void
cut_partial(struct audit *a)
{
	struct stat st;
	off_t end;

	if (!a->partial || fstat(a->fd, &st) || !S_ISREG(st.st_mode))
		return;
	end = lseek(a->fd, 0, SEEK_END);
	if (end >= (off_t)a->partial && ftruncate(a->fd, end - (off_t)a->partial) == 0)
		a->partial = 0;
}

void
audit_finish(struct audit *a)
{
	if (a && a->ls)
		logsink_finish(a->ls);
	if (!a || a->fd == -1 || !a->buf)
		return;
	if (a->retry)
		evtimer_del(a->retry);
	event_del(a->wev);
	if (!evbuffer_get_length(a->buf))
		return;
	/* a last try, bounded to 2 s: a stuck reader cannot hold us */
	for (int i = 0; i < 20 && evbuffer_get_length(a->buf); i++) {
		struct pollfd pfd = {.fd = a->fd, .events = POLLOUT};
		ssize_t n = 1;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		while (evbuffer_get_length(a->buf) && (n = write_line(a)) > 0)
			if (a->err && !a->partial)
				write_resumed(a);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			/* a disk that failed now will not heal in the next 2 s */
			int e = errno;

			if (!a->err && e != EPIPE && a->warnings < AUDIT_MAX_WARNINGS)
				log_warnx("log %s: cannot write: %s (%s)", shown_path(a),
					  strerror(e), errno_name(e));
			a->err = a->last_err = e;
			break;
		}
	}
	if (!evbuffer_get_length(a->buf))
		return;
	if (a->err) {
		cut_partial(a);
		a->lost += lines_in(a->buf);
		evtimer_del(a->retry);
	} else {
		a->dropped += lines_in(a->buf);
	}
	evbuffer_drain(a->buf, evbuffer_get_length(a->buf));
}

void
audit_close(struct audit *a)
{
	if (!a)
		return;
	audit_finish(a);
	if (a->retry)
		event_free(a->retry);
	if (a->wev)
		event_free(a->wev);
	if (a->buf)
		evbuffer_free(a->buf);
	if (a->fd != -1)
		close(a->fd);
	logsink_free(a->ls);
	free(a->path);
	free(a);
}

int
audit_reopen(struct audit *a)
{
	struct event *wev;
	int fd, err;

	if (!a || !a->reopenable || a->fd == -1)
		return 0;
	fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0640);
	if (fd == -1) {
		err = -errno;
		log_warnx("log %s: cannot open it anew: %s; writing on to the old file", a->path,
			  strerror(-err));
		return err;
	}
	wev = event_new(a->base, fd, EV_WRITE, on_writable, a);
	if (!wev) {
		close(fd);
		return -ENOMEM;
	}
	/* the rest of a line the old file has the start of goes there */
	for (int i = 0; a->partial && i < 3; i++)
		if (write_line(a) < 0)
			break;
	if (a->partial)
		cut_partial(a);
	a->partial = 0;
	event_free(a->wev);
	close(a->fd);
	a->fd = fd;
	a->wev = wev;
	if (!a->err)
		flush(a);
	log_warnx("log %s opened anew", a->path);
	return 0;
}
