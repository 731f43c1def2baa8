/* The decision log (see audit.h): formatting with JSON string escaping and
 * a line-buffered writer. Strings that come from clients (host, comm,
 * method) are escaped byte by byte: control characters as \u00XX, other
 * non-ASCII bytes as \u00XX too (the log stays ASCII whatever was sent). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "audit.h"

struct audit {
	FILE *f;
	bool owned;
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

struct audit *
audit_open(const char *path, char *errbuf, size_t errlen)
{
	struct audit *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	if (!strcmp(path, "-")) {
		a->f = stdout;
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);

		if (fd == -1 || !(a->f = fdopen(fd, "a"))) {
			snprintf(errbuf, errlen, "cannot open log %s: %s", path, strerror(errno));
			if (fd != -1)
				close(fd);
			free(a);
			return NULL;
		}
		a->owned = true;
	}
	return a;
}

void
audit_write(struct audit *a, const struct audit_rec *r)
{
	char line[2048];
	struct timespec ts;
	int n;

	if (!a)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = audit_format(r, (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, line, sizeof(line));
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	fwrite(line, 1, (size_t)n, a->f);
	fputc('\n', a->f);
	fflush(a->f);
}

void
audit_close(struct audit *a)
{
	if (!a)
		return;
	if (a->owned)
		fclose(a->f);
	else
		fflush(a->f);
	free(a);
}
