/* The decision log (see audit.h): formatting with JSON string escaping and
 * a non-blocking writer with a bounded buffer. Strings that come from
 * clients (host, comm, method) are escaped byte by byte: control characters
 * as \u00XX, other non-ASCII bytes as \u00XX too (the log stays ASCII
 * whatever was sent). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>

#include "audit.h"

#define AUDIT_BUF_MAX (4u << 20) /* bytes waiting for a slow reader */

struct audit {
	int fd; /* -1: no file */
	struct evbuffer *buf;
	struct event *wev;
	uint64_t dropped;
	bool broken; /* the reader is gone: no more writes */
	audit_sink sink;
	void *sink_arg;
};

struct out {
	char *buf;
	size_t len, pos;
};

static void
put(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (o->pos + 1 < o->len)
			o->buf[o->pos] = s[i];
		o->pos++;
	}
	if (o->len)
		o->buf[o->pos < o->len ? o->pos : o->len - 1] = 0;
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void
put_str(struct out *o, const char *key, const char *s, size_t max)
{
	char esc[8];

	puts_(o, ",\"");
	puts_(o, key);
	puts_(o, "\":\"");
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(o, esc, 2);
		} else if (c < 0x20 || c >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			puts_(o, esc);
		} else {
			put(o, (const char *)&c, 1);
		}
	}
	puts_(o, "\"");
}

static void
put_num(struct out *o, const char *key, unsigned long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", v);
	puts_(o, ",\"");
	puts_(o, key);
	puts_(o, "\":");
	puts_(o, num);
}

int
audit_format(const struct audit_rec *r, uint64_t time_ms, char *buf, size_t len)
{
	struct out o = {buf, len, 0};
	char ip[INET6_ADDRSTRLEN] = "";
	char ts[64];
	time_t secs = (time_t)(time_ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%03uZ", (unsigned)(time_ms % 1000));
	puts_(&o, "{\"time\":\"");
	puts_(&o, ts);
	puts_(&o, "\"");
	put_str(&o, "decision", r->decision, 16);
	put_str(&o, "reason", r->reason ? r->reason : "", 256);
	put_str(&o, "source", r->source, 16);
	if (r->host && r->host[0])
		put_str(&o, "host", r->host, 255);
	if (r->port)
		put_num(&o, "port", r->port);
	if (r->ip) {
		if (r->ip->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)r->ip)->sin_addr, ip,
				  sizeof(ip));
		else if (r->ip->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)r->ip)->sin6_addr, ip,
				  sizeof(ip));
		if (ip[0])
			put_str(&o, "ip", ip, sizeof(ip));
	}
	if (r->method)
		put_str(&o, "method", r->method, 24);
	if (r->pid)
		put_num(&o, "pid", r->pid);
	if (r->comm)
		put_str(&o, "comm", r->comm, 16);
	if (r->cgroup)
		put_num(&o, "cgroup", r->cgroup);
	if (r->rule)
		put_str(&o, "rule", r->rule, 512);
	puts_(&o, "}");
	return (int)o.pos;
}

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

/* One line per write(): a line is shorter than PIPE_BUF, so a pipe takes
 * it whole or not at all, and a stuck reader never gets half a line. */
static ssize_t
write_line(struct audit *a)
{
	struct evbuffer_ptr nl = evbuffer_search(a->buf, "\n", 1, NULL);
	size_t len = nl.pos < 0 ? evbuffer_get_length(a->buf) : (size_t)nl.pos + 1;
	const unsigned char *p = evbuffer_pullup(a->buf, (ssize_t)len);
	ssize_t n;

	if (!p)
		return -1;
	n = write(a->fd, p, len);
	if (n > 0)
		evbuffer_drain(a->buf, (size_t)n);
	return n;
}

static void
flush(struct audit *a)
{
	while (evbuffer_get_length(a->buf)) {
		ssize_t n = write_line(a);

		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
				event_add(a->wev, NULL);
				return;
			}
			/* the reader went away: stop logging, count the rest */
			a->dropped += lines_in(a->buf);
			evbuffer_drain(a->buf, evbuffer_get_length(a->buf));
			a->broken = true;
			break;
		}
	}
	event_del(a->wev);
}

static void
on_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flush(arg);
}

struct audit *
audit_open(struct event_base *base, const char *path, char *errbuf, size_t errlen)
{
	struct audit *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	a->fd = -1;
	if (!path)
		return a;
	if (!strcmp(path, "-")) {
		/* a file description of our own: O_NONBLOCK on a shared one
		 * would reach the confined command's stdout too */
		a->fd = open("/proc/self/fd/1", O_WRONLY | O_APPEND | O_CLOEXEC);
		if (a->fd == -1)
			a->fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	} else {
		a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	}
	if (a->fd == -1) {
		snprintf(errbuf, errlen, "cannot open log %s: %s", path, strerror(errno));
		free(a);
		return NULL;
	}
	fcntl(a->fd, F_SETFL, fcntl(a->fd, F_GETFL) | O_NONBLOCK);
	a->buf = evbuffer_new();
	a->wev = event_new(base, a->fd, EV_WRITE, on_writable, a);
	if (!a->buf || !a->wev) {
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

uint64_t
audit_dropped(const struct audit *a)
{
	return a ? a->dropped : 0;
}

void
audit_write(struct audit *a, const struct audit_rec *r)
{
	char line[2048];
	struct timespec ts;
	int n;

	if (!a)
		return;
	if (a->sink)
		a->sink(a->sink_arg, r);
	if (a->fd == -1)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = audit_format(r, (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, line,
			 sizeof(line) - 1);
	if (n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (a->broken || evbuffer_get_length(a->buf) + (size_t)n > AUDIT_BUF_MAX) {
		a->dropped++;
		return;
	}
	evbuffer_add(a->buf, line, (size_t)n);
	flush(a);
}

void
audit_finish(struct audit *a)
{
	if (!a || a->fd == -1 || !a->buf || !evbuffer_get_length(a->buf))
		return;
	/* a last try, bounded to 2 s: a stuck reader cannot hold us */
	for (int i = 0; i < 20 && evbuffer_get_length(a->buf); i++) {
		struct pollfd pfd = {.fd = a->fd, .events = POLLOUT};

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		while (evbuffer_get_length(a->buf) && write_line(a) > 0)
			;
		if (evbuffer_get_length(a->buf) && errno != EAGAIN && errno != EINTR)
			break;
	}
	a->dropped += lines_in(a->buf);
	evbuffer_drain(a->buf, evbuffer_get_length(a->buf));
	event_del(a->wev);
}

void
audit_close(struct audit *a)
{
	if (!a)
		return;
	audit_finish(a);
	if (a->wev)
		event_free(a->wev);
	if (a->buf)
		evbuffer_free(a->buf);
	if (a->fd != -1)
		close(a->fd);
	free(a);
}
