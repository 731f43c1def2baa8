// SPDX-License-Identifier: Apache-2.0
/* The syslog and OTLP/HTTP sinks of the decision log (see logsink.h). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "lib/jsonx.h"
#include "lib/log.h"
#include "audit/logsink.h"
#include "audit/otlp_conn.h"
#include "audit/record.h"
#include "lib/clock.h"

#define SYSLOG_FACILITY 3 /* daemon */

enum sink_kind {
	SINK_SYSLOG,
	SINK_OTLP
};

struct logsink {
	enum sink_kind kind;
	struct event_base *base;
	char what[300];
	uint64_t sent, dropped, lost;
	char last_err[96];
	/* syslog */
	int fd;
	struct sockaddr_un sun;
	time_t retry_at; /* after a failure: reconnect no sooner */
	/* otlp */
	char host[256], hosthdr[300], path[512];
	char ip[INET6_ADDRSTRLEN];
	uint16_t port;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char *resource; /* {"resource": ..., "scopeLogs": [{"scope": ..., "logRecords": [ */
	char *queue[LOGSINK_QUEUE]; /* logRecord objects as JSON text, oldest first */
	unsigned int qhead, qlen;
	unsigned int inflight; /* records of the request under way, at the head */
	struct evhttp_connection *conn;
	struct evhttp_request *req;
	struct event *timer;
	bool tls;	     /* https:// */
	struct otlp_conn oc; /* TLS and the headers (otlp_conn.c) */
};

bool
logsink_is_spec(const char *spec)
{
	return spec && (!strcmp(spec, "syslog") || !strncmp(spec, "syslog:", 7) ||
			!strncmp(spec, "otlp:", 5));
}

static void
set_err(struct logsink *s, const char *why)
{
	snprintf(s->last_err, sizeof(s->last_err), "%s", why);
}

/* ---- syslog ---- */

static int
syslog_connect(struct logsink *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -errno;
	if (connect(s->fd, (struct sockaddr *)&s->sun, sizeof(s->sun))) {
		int err = -errno;

		close(s->fd);
		s->fd = -1;
		return err;
	}
	return 0;
}

static int
severity(const struct audit_rec *r)
{
	if (r->event)
		return 5; /* notice */
	if (!strcmp(r->decision, "deny"))
		return 4; /* warning */
	if (!strcmp(r->decision, "would-deny"))
		return 5;
	if (!strcmp(r->decision, "redirect"))
		return 7; /* debug */
	return 6;	  /* info */
}

/* <PRI>egressctl[PID]: MSG, the framing of the local socket that journald
 * and rsyslog's imuxsock both parse into identifier, pid and message (RFC
 * 5424 on it reached journald as one unparsed message); the receiver
 * stamps the time, and the JSON line has its own. */
static void
syslog_write(struct logsink *s, const struct audit_rec *r, const char *line, size_t len)
{
	char msg[2600];
	int n;

	if (s->fd < 0) {
		if (time(NULL) < s->retry_at || syslog_connect(s)) {
			s->retry_at = time(NULL) + 1;
			s->lost++;
			return;
		}
	}
	n = snprintf(msg, sizeof(msg), "<%d>egressctl[%d]: %.*s", SYSLOG_FACILITY * 8 + severity(r),
		     (int)getpid(), (int)len, line);
	if (n >= (int)sizeof(msg))
		n = (int)sizeof(msg) - 1;
	if (send(s->fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n) {
		s->sent++;
	} else if (errno == EAGAIN || errno == ENOBUFS) {
		s->dropped++; /* the reader is slow: never waited for */
	} else {
		set_err(s, strerror(errno));
		s->lost++;
		close(s->fd);
		s->fd = -1;
		s->retry_at = time(NULL) + 1;
	}
}

/* ---- OTLP/HTTP, JSON encoding ---- */

static void otlp_flush(struct logsink *s);

static void
add_attr(json_t *arr, const char *key, const char *val)
{
	json_t *a, *v;

	if (!val || !val[0])
		return;
	a = json_object();
	jsonx_set_str(a, "key", key);
	v = jsonx_add_object(a, "value");
	jsonx_set_str(v, "stringValue", val);
	json_array_append_new(arr, a);
}

static void
add_int_attr(json_t *arr, const char *key, unsigned long long val)
{
	char num[24];
	json_t *a, *v;

	a = json_object();
	jsonx_set_str(a, "key", key);
	v = jsonx_add_object(a, "value");
	snprintf(num, sizeof(num), "%llu", val); /* int64 is a string in OTLP/JSON */
	jsonx_set_str(v, "intValue", num);
	json_array_append_new(arr, a);
}

/* The OpenTelemetry semantic conventions' name of a CI identity key
 * (record.c's ci_add), NULL where they have none (egressctl.ci.KEY then). */
static const char *
ci_semconv(const char *key)
{
	static const struct {
		const char *key, *name;
	} map[] = {
		{"run_id", "cicd.pipeline.run.id"},	 /* GitHub: the workflow run */
		{"pipeline_id", "cicd.pipeline.run.id"}, /* GitLab */
		{"build_id", "cicd.pipeline.run.id"},	 /* Buildkite */
		{"workflow", "cicd.pipeline.name"},	 /* GitHub */
		{"pipeline", "cicd.pipeline.name"},	 /* Buildkite */
		{"job", "cicd.pipeline.task.name"},	 /* GitHub, GitLab */
		{"step", "cicd.pipeline.task.name"},	 /* Buildkite */
		{"job_id", "cicd.pipeline.task.run.id"}, /* GitLab, Buildkite */
		{"repository", "vcs.repository.name"},	 /* GitHub */
		{"project", "vcs.repository.name"},	 /* GitLab */
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].key, key))
			return map[i].name;
	return NULL;
}

/* The request's head: the resource (service, host, run, CI job) and the
 * scope; the records follow, then "]}]}]}". */
static char *
otlp_resource(const struct logsink_opts *o)
{
	const struct audit_identity *id = audit_identity();
	json_t *res = json_object(), *attrs, *scope;
	char *text, *out;
	size_t n;

	attrs = jsonx_add_array(res, "attributes");
	add_attr(attrs, "service.name", "egressctl");
	add_attr(attrs, "host.name", id->hostname);
	add_attr(attrs, "egressctl.run_id", id->run_id);
	add_attr(attrs, "egressctl.ci.system", id->ci_system);
	for (int i = 0; i < id->nci; i++) {
		char key[64];
		const char *sc = ci_semconv(id->ci[i].key);

		if (!sc)
			snprintf(key, sizeof(key), "egressctl.ci.%s", id->ci[i].key);
		add_attr(attrs, sc ? sc : key, id->ci[i].value);
	}
	for (int i = 0; o && i < o->nresource; i++)
		if (o->resource[2 * i] && o->resource[2 * i + 1])
			add_attr(attrs, o->resource[2 * i], o->resource[2 * i + 1]);
	text = jsonx_line(res);
	json_decref(res);
	scope = json_object();
	jsonx_set_str(scope, "name", "egressctl");
	{
		char *st = jsonx_line(scope);

		json_decref(scope);
		if (!text || !st) {
			free(text);
			free(st);
			return NULL;
		}
		n = strlen(text) + strlen(st) + 96;
		out = malloc(n);
		if (out)
			snprintf(out, n,
				 "{\"resourceLogs\":[{\"resource\":%s,\"scopeLogs\":[{\"scope\":%s,"
				 "\"logRecords\":[",
				 text, st);
		free(text);
		free(st);
	}
	return out;
}

static const char *
severity_text(int sev)
{
	return sev <= 4 ? "WARN" : sev == 5 ? "INFO" : sev == 6 ? "INFO" : "DEBUG";
}

/* OTLP's SeverityNumber for syslog's severity: WARN 13, INFO2 10, INFO 9, DEBUG 5 */
static int
severity_number(int sev)
{
	return sev <= 4 ? 13 : sev == 5 ? 10 : sev == 6 ? 9 : 5;
}

/* A record's attributes, named as the OpenTelemetry semantic conventions
 * name them where they have a name (server.*, network.*, process.*,
 * container.id), egressctl.* for the rest. */
static void
add_record_attrs(json_t *attrs, const struct audit_rec *r)
{
	bool dns = r->source && !strcmp(r->source, "dns");

	add_attr(attrs, "event.name",
		 r->event ? "egressctl.daemon_event" : "egressctl.policy_decision");
	add_attr(attrs, r->event ? "egressctl.event" : "egressctl.decision",
		 r->event ? r->event : r->decision);
	add_attr(attrs, "egressctl.reason", r->reason);
	add_attr(attrs, "egressctl.rule", r->rule);
	add_attr(attrs, "egressctl.source", r->source);
	add_attr(attrs, "server.address", r->host);
	if (r->port)
		add_int_attr(attrs, "server.port", r->port);
	/* DNS comes over UDP or TCP, which the record does not say */
	add_attr(attrs, "network.transport", r->proto ? r->proto : r->event || dns ? NULL : "tcp");
	add_attr(attrs, "network.protocol.name",
		 dns					   ? "dns"
		 : r->source && !strcmp(r->source, "http") ? "http"
							   : NULL);
	if (r->pid)
		add_int_attr(attrs, "process.pid", r->pid);
	add_attr(attrs, "process.executable.name", r->comm);
	add_attr(attrs, "container.id", r->container);
	if (r->cgroup)
		add_int_attr(attrs, "egressctl.cgroup", r->cgroup);
}

static char *
otlp_record(const struct audit_rec *r, const char *line, size_t len, uint64_t time_ms)
{
	json_t *o = json_object(), *body, *attrs;
	char ns[32], *text, *copy = strndup(line, len);
	int sev = severity(r);

	if (!o || !copy) {
		json_decref(o);
		free(copy);
		return NULL;
	}
	snprintf(ns, sizeof(ns), "%llu000000", (unsigned long long)time_ms);
	jsonx_set_str(o, "timeUnixNano", ns);
	jsonx_set_str(o, "observedTimeUnixNano", ns);
	jsonx_set_int(o, "severityNumber", severity_number(sev));
	jsonx_set_str(o, "severityText", severity_text(sev));
	body = jsonx_add_object(o, "body");
	jsonx_set_str(body, "stringValue", copy);
	free(copy);
	jsonx_set_str(o, "eventName",
		      r->event ? "egressctl.daemon_event" : "egressctl.policy_decision");
	attrs = jsonx_add_array(o, "attributes");
	add_record_attrs(attrs, r);
	text = jsonx_line(o);
	json_decref(o);
	return text;
}

static void
queue_drop_head(struct logsink *s, unsigned int n)
{
	for (unsigned int i = 0; i < n && s->qlen; i++) {
		free(s->queue[s->qhead]);
		s->queue[s->qhead] = NULL;
		s->qhead = (s->qhead + 1) % LOGSINK_QUEUE;
		s->qlen--;
	}
}

/* The body of a request for the first n records. */
static struct evbuffer *
otlp_body(struct logsink *s, unsigned int n)
{
	struct evbuffer *b = evbuffer_new();

	if (!b)
		return NULL;
	evbuffer_add(b, s->resource, strlen(s->resource));
	for (unsigned int i = 0; i < n; i++) {
		const char *rec = s->queue[(s->qhead + i) % LOGSINK_QUEUE];

		if (i)
			evbuffer_add(b, ",", 1);
		evbuffer_add(b, rec, strlen(rec));
	}
	evbuffer_add(b, "]}]}]}", 6);
	return b;
}

static void
on_response(struct evhttp_request *req, void *arg)
{
	struct logsink *s = arg;
	int code = req ? evhttp_request_get_response_code(req) : 0;
	char why[96];
	const char *tls;

	if (!s->req)
		return; /* cancelled */
	s->req = NULL;
	tls = otlp_conn_error(&s->oc, why, sizeof(why)); /* asked while its connection lives */
	if (code >= 200 && code < 300) {
		s->sent += s->inflight;
	} else {
		if (code)
			snprintf(why, sizeof(why), "HTTP %d", code);
		else if (!tls)
			snprintf(why, sizeof(why), "no answer");
		set_err(s, why);
		s->lost += s->inflight;
	}
	queue_drop_head(s, s->inflight);
	s->inflight = 0;
	if (s->qlen >= LOGSINK_BATCH)
		otlp_flush(s);
	else if (s->qlen) {
		struct timeval sec = {1, 0};

		evtimer_add(s->timer, &sec);
	}
}

static void
otlp_flush(struct logsink *s)
{
	unsigned int n = s->qlen < LOGSINK_BATCH ? s->qlen : LOGSINK_BATCH;
	struct evbuffer *b;

	if (s->req || !n)
		return;
	if (!s->conn) {
		s->conn = otlp_conn_connect(&s->oc, s->base, s->ip, s->port);
		if (!s->conn) {
			set_err(s, "cannot make an HTTP connection");
			s->lost += n;
			queue_drop_head(s, n);
			return;
		}
		evhttp_connection_set_timeout(s->conn, LOGSINK_TIMEOUT_S);
	}
	s->req = evhttp_request_new(on_response, s);
	b = otlp_body(s, n);
	if (!s->req || !b) { /* out of memory: tried again in a second */
		struct timeval sec = {1, 0};

		if (s->req)
			evhttp_request_free(s->req);
		s->req = NULL;
		if (b)
			evbuffer_free(b);
		evtimer_add(s->timer, &sec);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(s->req), "Host", s->hosthdr);
	evhttp_add_header(evhttp_request_get_output_headers(s->req), "Content-Type",
			  "application/json");
	otlp_conn_add_headers(&s->oc, evhttp_request_get_output_headers(s->req));
	evbuffer_add_buffer(evhttp_request_get_output_buffer(s->req), b);
	evbuffer_free(b);
	s->inflight = n;
	if (evhttp_make_request(s->conn, s->req, EVHTTP_REQ_POST, s->path)) {
		/* libevent freed the request */
		s->req = NULL;
		set_err(s, "cannot send the request");
		s->lost += n;
		queue_drop_head(s, n);
		s->inflight = 0;
	}
	if (s->tls) { /* a TLS connection is not opened again: one per request */
		evhttp_connection_free_on_completion(s->conn);
		s->conn = NULL;
	}
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	otlp_flush(arg);
}

static void
otlp_write(struct logsink *s, const struct audit_rec *r, const char *line, size_t len,
	   uint64_t time_ms)
{
	char *rec;

	if (s->qlen == LOGSINK_QUEUE) {
		s->dropped++; /* the collector is slow: never waited for */
		return;
	}
	rec = otlp_record(r, line, len, time_ms);
	if (!rec) {
		s->dropped++;
		return;
	}
	s->queue[(s->qhead + s->qlen) % LOGSINK_QUEUE] = rec;
	s->qlen++;
	if (s->qlen - s->inflight >= LOGSINK_BATCH) {
		otlp_flush(s);
	} else if (!evtimer_pending(s->timer, NULL)) {
		struct timeval sec = {1, 0};

		evtimer_add(s->timer, &sec);
	}
}

/* http[s]://HOST[:PORT][/PATH] */
static int
otlp_parse_url(struct logsink *s, const char *url, char *errbuf, size_t errlen)
{
	const char *h, *end, *p;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	char port[8] = "4318";
	int err;

	s->tls = !strncmp(url, "https://", 8);
	if (!s->tls && strncmp(url, "http://", 7))
		goto bad;
	h = url + (s->tls ? 8 : 7);
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			goto bad;
		snprintf(s->host, sizeof(s->host), "%.*s", (int)(end - h - 1), h + 1);
		p = end + 1;
	} else {
		end = h + strcspn(h, ":/");
		snprintf(s->host, sizeof(s->host), "%.*s", (int)(end - h), h);
		p = end;
	}
	if (!s->host[0])
		goto bad;
	if (*p == ':') {
		size_t n = strspn(p + 1, "0123456789");

		if (!n || n > 5 || atoi(p + 1) < 1 || atoi(p + 1) > 65535)
			goto bad;
		snprintf(port, sizeof(port), "%.*s", (int)n, p + 1);
		p += n + 1;
	}
	if (*p && *p != '/')
		goto bad;
	snprintf(s->path, sizeof(s->path), "%s", *p ? p : "/v1/logs");
	s->port = (uint16_t)atoi(port);
	snprintf(s->hosthdr, sizeof(s->hosthdr), "%.*s", (int)(p - h), h);
	/* resolved once, at start-up: the loop never waits for a resolver */
	err = getaddrinfo(s->host, port, &hints, &ai);
	if (err || !ai) {
		snprintf(errbuf, errlen, "--log otlp:%s: cannot resolve %s: %s", url, s->host,
			 gai_strerror(err));
		return -EINVAL;
	}
	memcpy(&s->addr, ai->ai_addr, ai->ai_addrlen);
	s->addrlen = ai->ai_addrlen;
	if (ai->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, s->ip,
			  sizeof(s->ip));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, s->ip,
			  sizeof(s->ip));
	freeaddrinfo(ai);
	return 0;
bad:
	snprintf(errbuf, errlen, "--log otlp:%s: expected http[s]://HOST[:PORT][/PATH]", url);
	return -EINVAL;
}

/* The time a blocking POST may still take, in ms (a deadline). */
struct post_clock {
	struct timespec t0;
	int ms;
};

static int
post_left(void *arg)
{
	struct post_clock *pc = arg;
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return pc->ms -
	       (int)((t1.tv_sec - pc->t0.tv_sec) * 1000 + (t1.tv_nsec - pc->t0.tv_nsec) / 1000000);
}

/* req (len bytes) on connected non-blocking fd in the clear, the answer's
 * first bytes into resp. Returns the bytes read, or -EIO. */
static int
exchange_plain(int fd, const unsigned char *req, size_t len, char *resp, size_t resplen,
	       struct post_clock *pc)
{
	struct pollfd pfd;
	size_t off = 0;
	ssize_t k;

	while (off < len) {
		pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
		if (poll(&pfd, 1, post_left(pc)) <= 0)
			return -EIO;
		k = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (k <= 0 && errno != EAGAIN)
			return -EIO;
		if (k > 0)
			off += (size_t)k;
	}
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, post_left(pc)) <= 0 || (k = recv(fd, resp, resplen - 1, 0)) <= 0)
		return -EIO;
	resp[k] = 0;
	return (int)k;
}

/* One blocking POST of the first n records, within the time left (ms). */
static int
otlp_post_blocking(struct logsink *s, unsigned int n, int ms)
{
	struct evbuffer *b = otlp_body(s, n);
	struct post_clock pc = {.ms = ms};
	char head[8192], resp[64];
	struct pollfd pfd;
	size_t blen;
	int fd, hl, k = -EIO, code = 0;

	if (!b)
		return -ENOMEM;
	blen = evbuffer_get_length(b);
	hl = snprintf(head, sizeof(head),
		      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
		      "Content-Length: %zu\r\nConnection: close\r\n",
		      s->path, s->hosthdr, blen);
	if (hl > 0 && (size_t)hl < sizeof(head))
		hl += (int)otlp_conn_header_text(&s->oc, head + hl, sizeof(head) - (size_t)hl);
	if (hl <= 0 || (size_t)hl + 3 > sizeof(head)) {
		evbuffer_free(b);
		return -E2BIG;
	}
	memcpy(head + hl, "\r\n", 3);
	hl += 2;
	evbuffer_prepend(b, head, (size_t)hl);
	blen += (size_t)hl;
	fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		evbuffer_free(b);
		return -errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &pc.t0);
	if (connect(fd, (struct sockaddr *)&s->addr, s->addrlen) == 0 || errno == EINPROGRESS) {
		const unsigned char *p = evbuffer_pullup(b, -1);

		pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
		if (poll(&pfd, 1, post_left(&pc)) > 0)
			k = s->tls ? otlp_conn_exchange_tls(&s->oc, fd, p, blen, resp, sizeof(resp),
							    post_left, &pc)
				   : exchange_plain(fd, p, blen, resp, sizeof(resp), &pc);
	}
	if (k > 12 && !strncmp(resp, "HTTP/1.", 7))
		code = atoi(resp + 9);
	close(fd);
	evbuffer_free(b);
	if (code >= 200 && code < 300)
		return 0;
	if (code) {
		snprintf(s->last_err, sizeof(s->last_err), "HTTP %d", code);
	} else {
		char why[96];

		set_err(s, otlp_conn_error(&s->oc, why, sizeof(why)) ? why : "no answer");
	}
	return -EIO;
}

struct logsink *
logsink_open(struct event_base *base, const char *spec, const struct logsink_opts *o, char *errbuf,
	     size_t errlen)
{
	struct logsink *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	s->base = base;
	s->fd = -1;
	if (!strncmp(spec, "syslog", 6)) {
		const char *path = spec[6] == ':' ? spec + 7 : LOGSINK_SYSLOG_PATH;
		int err;

		s->kind = SINK_SYSLOG;
		if (path[0] != '/' || strlen(path) >= sizeof(s->sun.sun_path)) {
			snprintf(errbuf, errlen, "--log %s: expected syslog or syslog:/PATH", spec);
			free(s);
			return NULL;
		}
		s->sun.sun_family = AF_UNIX;
		snprintf(s->sun.sun_path, sizeof(s->sun.sun_path), "%s", path);
		snprintf(s->what, sizeof(s->what), "syslog %s", path);
		err = syslog_connect(s);
		if (err) {
			snprintf(errbuf, errlen, "--log %s: cannot reach the syslog socket %s: %s",
				 spec, path, strerror(-err));
			free(s);
			return NULL;
		}
		return s;
	}
	s->kind = SINK_OTLP;
	if (otlp_parse_url(s, spec + 5, errbuf, errlen)) {
		free(s);
		return NULL;
	}
	if (otlp_conn_init(&s->oc, s->tls, s->host, o, errbuf, errlen)) {
		otlp_conn_free(&s->oc);
		free(s);
		return NULL;
	}
	snprintf(s->what, sizeof(s->what), "otlp %s", spec + 5);
	s->resource = otlp_resource(o);
	s->timer = evtimer_new(base, on_timer, s);
	if (!s->resource || !s->timer) {
		snprintf(errbuf, errlen, "out of memory");
		logsink_free(s);
		return NULL;
	}
	return s;
}

void
logsink_write(struct logsink *s, const struct audit_rec *r, const char *line, size_t len,
	      uint64_t time_ms)
{
	if (!s)
		return;
	if (s->kind == SINK_SYSLOG)
		syslog_write(s, r, line, len);
	else
		otlp_write(s, r, line, len, time_ms);
}

void
logsink_get_stats(const struct logsink *s, struct logsink_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	st->what = s->what;
	st->sent = s->sent;
	st->dropped = s->dropped;
	st->lost = s->lost;
	snprintf(st->last_err, sizeof(st->last_err), "%s", s->last_err);
}

void
logsink_finish(struct logsink *s)
{
	struct timespec t0, t1;

	if (!s || s->kind != SINK_OTLP)
		return;
	if (s->timer)
		evtimer_del(s->timer);
	if (s->req) { /* its answer will never be read now: sent again below */
		struct evhttp_request *req = s->req;

		s->req = NULL;
		s->oc.bev = NULL; /* its connection goes with it */
		evhttp_cancel_request(req);
		s->inflight = 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (s->qlen) {
		unsigned int n = s->qlen < LOGSINK_BATCH ? s->qlen : LOGSINK_BATCH;
		int left;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = 2000 -
		       (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || otlp_post_blocking(s, n, left)) {
			s->lost += s->qlen;
			queue_drop_head(s, s->qlen);
			break;
		}
		s->sent += n;
		queue_drop_head(s, n);
	}
}

void
logsink_free(struct logsink *s)
{
	if (!s)
		return;
	if (s->req) {
		struct evhttp_request *req = s->req;

		s->req = NULL;
		s->oc.bev = NULL;
		evhttp_cancel_request(req);
	}
	if (s->conn)
		evhttp_connection_free(s->conn);
	if (s->timer)
		event_free(s->timer);
	queue_drop_head(s, s->qlen);
	free(s->resource);
	otlp_conn_free(&s->oc);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}
