// SPDX-License-Identifier: Apache-2.0
/* benchtool: the small clients and servers of the egressctl benchmark
 * (tools/bench/run.sh). One binary, one subcommand per job; every loop is
 * bounded in count and time, every result is one JSON line on stdout.
 *
 *   benchtool rate MODE HOST:PORT [-p PROXY] [-c CONC] [-d SECONDS] [-n MAX] [-u PATH]
 *                  [--connect-to ADDR:PORT] [-o FILE]
 *       fresh connections, each fetching PATH (HTTP/1.1, Connection: close);
 *       MODE direct|transparent|fast (connect to what HOST resolves to),
 *       http (absolute URI via the HTTP proxy), connect (CONNECT tunnel),
 *       socks5 (SOCKS5, the name sent to the proxy). PROXY is host:port or
 *       "env" (HTTP_PROXY for http/connect, ALL_PROXY for socks5).
 *       --connect-to (MODE direct only): connect to ADDR:PORT instead of what
 *       HOST resolves to, still sending "Host: HOST" (a TCP forwarder such as
 *       haproxy in front of HOST).
 *       -o FILE: every request as a line "START_NS LATENCY_NS OK" (start in
 *       CLOCK_REALTIME, to be matched with events elsewhere, e.g. a reload).
 *       -> {"ok":N,"err":N,"rps":R,"p50_us":..,"p99_us":..}
 *   benchtool hold HOST:PORT -p PROXY -n N [-T SECONDS] [--go FILE] [--stop FILE]
 *       opens N CONNECT tunnels through PROXY and keeps them open: prints
 *       READY, waits for FILE --go, opens, prints {"open":N,...}, holds them
 *       until --stop FILE exists or SECONDS pass.
 *   benchtool holdsrv ADDR:PORT [-T SECONDS]   accept and keep connections
 *   benchtool acceptsrv ADDR:PORT [-T SECONDS] accept and close at once
 *   benchtool connlat HOST:PORT [-n N]
 *       N sequential connect() calls (each closed with an RST, so no
 *       TIME_WAIT piles up); -> {"p50_ns":..,"mean_ns":..}
 *   benchtool dns SERVER[:PORT] -m cached|uncached [-l N] [-q SECONDS] [-w WINDOW]
 *       -l: N sequential queries (latency); -q: SECONDS with WINDOW queries
 *       in flight (throughput). cached: 64 names under q.bench.test, asked
 *       once before timing; uncached: a fresh name per query.
 *
 * Build: gcc -O2 -pthread tools/bench/benchtool.c -o benchtool
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IO_TIMEOUT_MS 5000

static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "benchtool: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the q-quantile of sorted v[0..n) (nearest rank) */
static uint64_t
quant(const uint64_t *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(q * (double)n);
	if (i >= n)
		i = n - 1;
	return v[i];
}

static bool
file_exists(const char *p)
{
	struct stat st;

	return p && stat(p, &st) == 0;
}

/* "host:port" -> host (static buffer), port */
static void
split_hp(const char *s, char *host, size_t hl, uint16_t *port)
{
	const char *c = strrchr(s, ':');
	size_t n;

	if (!c || c == s)
		die("expected HOST:PORT, got %s", s);
	n = (size_t)(c - s);
	if (n >= hl)
		die("host too long: %s", s);
	memcpy(host, s, n);
	host[n] = '\0';
	*port = (uint16_t)atoi(c + 1);
	if (!*port)
		die("bad port in %s", s);
}

/* Resolves host (getaddrinfo: /etc/resolv.conf, so through the confinement's
 * DNS redirect when confined) to an IPv4 sockaddr. */
static void
resolve4(const char *host, uint16_t port, struct sockaddr_in *out)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	int err;

	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons(port);
	if (inet_pton(AF_INET, host, &out->sin_addr) == 1)
		return;
	err = getaddrinfo(host, NULL, &hints, &ai);
	if (err)
		die("resolve %s: %s", host, gai_strerror(err));
	out->sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
	freeaddrinfo(ai);
}

/* "env" -> the proxy named by HTTP_PROXY / ALL_PROXY ("scheme://host:port") */
static void
proxy_from(const char *spec, const char *var, struct sockaddr_in *out)
{
	char host[256];
	uint16_t port;
	const char *s = spec;

	if (!strcmp(spec, "env")) {
		s = getenv(var);
		if (!s)
			die("%s is not set", var);
		if (strstr(s, "://"))
			s = strstr(s, "://") + 3;
	}
	split_hp(s, host, sizeof(host), &port);
	{
		char *slash = strchr(host, '/');

		if (slash)
			*slash = '\0';
	}
	resolve4(host, port, out);
}

static int
set_timeouts(int fd)
{
	struct timeval tv = {.tv_sec = IO_TIMEOUT_MS / 1000};

	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads an HTTP response head (up to CRLFCRLF, byte by byte is too slow:
 * reads chunks and returns what follows the head in *extra). Returns the
 * status code or -1. */
static int
read_head(int fd, char *buf, size_t cap, size_t *got)
{
	size_t len = 0;

	for (;;) {
		ssize_t n;
		char *e;

		if (len + 1 >= cap)
			return -1;
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		e = strstr(buf, "\r\n\r\n");
		if (e) {
			int code;

			*got = len;
			if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
				return -1;
			return code;
		}
	}
}

/* --------------------------------------------------------------- rate */

enum mode {
	M_DIRECT,
	M_TRANSPARENT,
	M_FAST,
	M_HTTP,
	M_CONNECT,
	M_SOCKS5
};

struct rate_cfg {
	enum mode mode;
	char host[256];
	uint16_t port;
	const char *path;
	struct sockaddr_in target; /* direct/transparent/fast */
	struct sockaddr_in proxy;  /* http/connect/socks5 */
	uint64_t deadline;
	long max_per_thread;
};

struct rate_thr {
	pthread_t t;
	struct rate_cfg *cfg;
	uint64_t *lat;
	size_t nlat, cap;
	/* with -o: every request's start (CLOCK_REALTIME ns), latency (ns), result */
	uint64_t (*rec)[2];
	char *rec_ok;
	size_t nrec;
	long ok, err;
	char first_err[128];
};

static void
rate_fail(struct rate_thr *t, const char *what)
{
	t->err++;
	if (!t->first_err[0])
		snprintf(t->first_err, sizeof(t->first_err), "%s: %s", what,
			 errno ? strerror(errno) : "protocol");
}

/* One fresh connection fetching the object; 0 on a complete 200 response. */
static int
one_request(struct rate_thr *t)
{
	struct rate_cfg *c = t->cfg;
	char req[512], buf[16384];
	size_t got = 0;
	int fd, code, n;
	const struct sockaddr_in *to = c->mode <= M_FAST ? &c->target : &c->proxy;

	errno = 0;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rate_fail(t, "socket"), -1;
	set_timeouts(fd);
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to))) {
		rate_fail(t, "connect");
		goto bad;
	}
	if (c->mode == M_CONNECT) {
		n = snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
			     c->host, c->port, c->host, c->port);
		if (write_all(fd, req, (size_t)n)) {
			rate_fail(t, "CONNECT send");
			goto bad;
		}
		code = read_head(fd, buf, sizeof(buf), &got);
		if (code != 200) {
			errno = 0;
			rate_fail(t, "CONNECT reply");
			goto bad;
		}
	} else if (c->mode == M_SOCKS5) {
		uint8_t m[300], r[262];
		size_t hl = strlen(c->host);

		if (write_all(fd, "\x05\x01\x00", 3) || read_full(fd, r, 2) || r[0] != 5 ||
		    r[1] != 0) {
			rate_fail(t, "SOCKS5 method");
			goto bad;
		}
		m[0] = 5;
		m[1] = 1;
		m[2] = 0;
		m[3] = 3;
		m[4] = (uint8_t)hl;
		memcpy(m + 5, c->host, hl);
		m[5 + hl] = (uint8_t)(c->port >> 8);
		m[6 + hl] = (uint8_t)c->port;
		if (write_all(fd, m, 7 + hl) || read_full(fd, r, 4) || r[1] != 0) {
			rate_fail(t, "SOCKS5 connect");
			goto bad;
		}
		n = r[3] == 1 ? 4 + 2 : r[3] == 4 ? 16 + 2 : -1;
		if (r[3] == 3) {
			if (read_full(fd, r, 1))
				goto bad;
			n = r[0] + 2;
		}
		if (n < 0 || read_full(fd, r, (size_t)n)) {
			rate_fail(t, "SOCKS5 reply");
			goto bad;
		}
	}
	if (c->mode == M_HTTP)
		n = snprintf(req, sizeof(req),
			     "GET http://%s:%u%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
			     "User-Agent: egressctl-bench\r\n\r\n",
			     c->host, c->port, c->path, c->host);
	else
		n = snprintf(req, sizeof(req),
			     "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
			     "User-Agent: egressctl-bench\r\n\r\n",
			     c->path, c->host);
	if (write_all(fd, req, (size_t)n)) {
		rate_fail(t, "request send");
		goto bad;
	}
	code = read_head(fd, buf, sizeof(buf), &got);
	if (code != 200) {
		errno = 0;
		rate_fail(t, code < 0 ? "response head" : "response status");
		goto bad;
	}
	for (;;) { /* Connection: close: the body ends at EOF */
		ssize_t r = recv(fd, buf, sizeof(buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rate_fail(t, "response body");
			goto bad;
		}
		if (r == 0)
			break;
	}
	close(fd);
	return 0;
bad:
	close(fd);
	return -1;
}

static void *
rate_run(void *arg)
{
	struct rate_thr *t = arg;

	while (now_ns() < t->cfg->deadline && t->ok + t->err < t->cfg->max_per_thread) {
		uint64_t t0 = now_ns(), wall = t->rec ? real_ns() : 0;
		int rc = one_request(t);

		if (t->rec && t->nrec < t->cap) {
			t->rec[t->nrec][0] = wall;
			t->rec[t->nrec][1] = now_ns() - t0;
			t->rec_ok[t->nrec++] = rc == 0;
		}
		if (rc == 0) {
			t->ok++;
			if (t->nlat < t->cap)
				t->lat[t->nlat++] = now_ns() - t0;
		} else {
			usleep(1000); /* a failing path must not spin */
		}
	}
	return NULL;
}

static int
cmd_rate(int argc, char **argv)
{
	struct rate_cfg cfg = {.path = "/small", .max_per_thread = 1000000};
	const char *proxy = NULL, *connect_to = NULL, *ms, *recfile = NULL;
	int conc = 1, opt;
	double secs = 2;
	long maxreq = 2000000;
	static const struct option lo[] = {
		{"connect-to", required_argument, NULL, 't'},
		{0},
	};

	if (argc < 3)
		die("rate MODE HOST:PORT [-p PROXY] [-c CONC] [-d SECONDS] [-n MAX] [-u PATH] "
		    "[--connect-to ADDR:PORT] [-o FILE]");
	ms = argv[1];
	if (!strcmp(ms, "direct"))
		cfg.mode = M_DIRECT;
	else if (!strcmp(ms, "transparent"))
		cfg.mode = M_TRANSPARENT;
	else if (!strcmp(ms, "fast"))
		cfg.mode = M_FAST;
	else if (!strcmp(ms, "http"))
		cfg.mode = M_HTTP;
	else if (!strcmp(ms, "connect"))
		cfg.mode = M_CONNECT;
	else if (!strcmp(ms, "socks5"))
		cfg.mode = M_SOCKS5;
	else
		die("unknown mode %s", ms);
	split_hp(argv[2], cfg.host, sizeof(cfg.host), &cfg.port);
	optind = 3;
	while ((opt = getopt_long(argc, argv, "p:c:d:n:u:o:", lo, NULL)) != -1) {
		switch (opt) {
		case 'o':
			recfile = optarg;
			break;
		case 'p':
			proxy = optarg;
			break;
		case 't':
			connect_to = optarg;
			break;
		case 'c':
			conc = atoi(optarg);
			break;
		case 'd':
			secs = atof(optarg);
			break;
		case 'n':
			maxreq = atol(optarg);
			break;
		case 'u':
			cfg.path = optarg;
			break;
		default:
			die("bad option");
		}
	}
	if (conc < 1 || conc > 1024 || secs <= 0 || secs > 120)
		die("bad -c or -d");
	if (connect_to && cfg.mode != M_DIRECT)
		die("--connect-to is for MODE direct");
	if (connect_to) {
		char ch[256];
		uint16_t cp;

		split_hp(connect_to, ch, sizeof(ch), &cp);
		resolve4(ch, cp, &cfg.target);
	} else if (cfg.mode <= M_FAST) {
		resolve4(cfg.host, cfg.port, &cfg.target);
	} else {
		proxy_from(proxy ? proxy : "env", cfg.mode == M_SOCKS5 ? "ALL_PROXY" : "HTTP_PROXY",
			   &cfg.proxy);
	}
	cfg.max_per_thread = maxreq / conc + 1;

	struct rate_thr *th = calloc((size_t)conc, sizeof(*th));
	uint64_t t0, t1, *all;
	size_t nall = 0, cap = (size_t)(secs * 200000 / conc) + 1024;
	long ok = 0, err = 0;
	const char *first = "";

	if (!th)
		die("oom");
	/* warm-up request (DNS answers, fast path entries, the proxy's first accept) */
	{
		struct rate_thr w = {.cfg = &cfg};

		cfg.deadline = UINT64_MAX;
		one_request(&w);
	}
	t0 = now_ns();
	cfg.deadline = t0 + (uint64_t)(secs * 1e9);
	for (int i = 0; i < conc; i++) {
		th[i].cfg = &cfg;
		th[i].cap = cap;
		th[i].lat = malloc(cap * sizeof(uint64_t));
		if (recfile) {
			th[i].rec = malloc(cap * sizeof(*th[i].rec));
			th[i].rec_ok = malloc(cap);
			if (!th[i].rec || !th[i].rec_ok)
				die("oom");
		}
		if (!th[i].lat || pthread_create(&th[i].t, NULL, rate_run, &th[i]))
			die("cannot start thread %d", i);
	}
	for (int i = 0; i < conc; i++) {
		pthread_join(th[i].t, NULL);
		ok += th[i].ok;
		err += th[i].err;
		nall += th[i].nlat;
		if (!first[0] && th[i].first_err[0])
			first = th[i].first_err;
	}
	t1 = now_ns();
	all = malloc((nall + 1) * sizeof(uint64_t));
	if (!all)
		die("oom");
	nall = 0;
	for (int i = 0; i < conc; i++) {
		memcpy(all + nall, th[i].lat, th[i].nlat * sizeof(uint64_t));
		nall += th[i].nlat;
	}
	qsort(all, nall, sizeof(uint64_t), cmp_u64);
	if (recfile) {
		FILE *f = fopen(recfile, "w");

		if (!f)
			die("%s: %s", recfile, strerror(errno));
		for (int i = 0; i < conc; i++)
			for (size_t k = 0; k < th[i].nrec; k++)
				fprintf(f, "%llu %llu %d\n", (unsigned long long)th[i].rec[k][0],
					(unsigned long long)th[i].rec[k][1], th[i].rec_ok[k]);
		fclose(f);
	}
	printf("{\"mode\":\"%s\",\"conc\":%d,\"ok\":%ld,\"err\":%ld,\"secs\":%.3f,\"rps\":%.1f,"
	       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"first_err\":\"%s\"}\n",
	       ms, conc, ok, err, (double)(t1 - t0) / 1e9, (double)ok / ((double)(t1 - t0) / 1e9),
	       (double)quant(all, nall, 0.5) / 1e3, (double)quant(all, nall, 0.9) / 1e3,
	       (double)quant(all, nall, 0.99) / 1e3, first);
	return ok > 0 ? 0 : 1;
}

/* --------------------------------------------------------------- hold */

enum hstate {
	H_CONNECTING,
	H_SENT,
	H_OPEN,
	H_DEAD
};

struct hconn {
	int fd;
	enum hstate st;
	size_t got;
	char buf[64];
};

static int
cmd_hold(int argc, char **argv)
{
	char host[256];
	uint16_t port;
	struct sockaddr_in px;
	const char *proxy = "env", *go = NULL, *stop = NULL;
	long n = 1000, inflight_max = 256;
	double hold_s = 60;
	int opt, ep;
	static const struct option lo[] = {
		{"go", required_argument, NULL, 'g'},
		{"stop", required_argument, NULL, 's'},
		{0},
	};

	if (argc < 2)
		die("hold HOST:PORT -p PROXY -n N [-T SECONDS] [--go FILE] [--stop FILE]");
	split_hp(argv[1], host, sizeof(host), &port);
	optind = 2;
	while ((opt = getopt_long(argc, argv, "p:n:T:", lo, NULL)) != -1) {
		switch (opt) {
		case 'p':
			proxy = optarg;
			break;
		case 'n':
			n = atol(optarg);
			break;
		case 'T':
			hold_s = atof(optarg);
			break;
		case 'g':
			go = optarg;
			break;
		case 's':
			stop = optarg;
			break;
		default:
			die("bad option");
		}
	}
	if (n < 1 || n > 100000)
		die("bad -n");
	proxy_from(proxy, "HTTP_PROXY", &px);

	struct hconn *hc = calloc((size_t)n, sizeof(*hc));
	char req[600];
	int rl = snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", host,
			  port, host, port);
	long started = 0, open = 0, dead = 0, inflight = 0;
	uint64_t end = now_ns() + (uint64_t)(hold_s * 1e9), t_open0, t_open1 = 0, open_deadline;
	struct epoll_event evs[256];

	if (!hc)
		die("oom");
	printf("READY\n");
	fflush(stdout);
	while (go && !file_exists(go)) {
		if (now_ns() > end)
			die("no go file within %.0fs", hold_s);
		usleep(20000);
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	t_open0 = now_ns();
	/* opening is bounded: 30 s, or 1.5 s without progress */
	open_deadline = t_open0 + 30ull * 1000000000ull;
	uint64_t last_progress = t_open0;

	while (open + dead < n) {
		while (started < n && inflight < inflight_max) {
			struct hconn *h = &hc[started];
			struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = (uint64_t)started};

			h->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (h->fd < 0) {
				fprintf(stderr, "benchtool hold: socket #%ld: %s\n", started,
					strerror(errno));
				h->st = H_DEAD;
				dead++;
				started++;
				continue;
			}
			if (connect(h->fd, (struct sockaddr *)&px, sizeof(px)) &&
			    errno != EINPROGRESS) {
				close(h->fd);
				h->st = H_DEAD;
				dead++;
				started++;
				continue;
			}
			h->st = H_CONNECTING;
			epoll_ctl(ep, EPOLL_CTL_ADD, h->fd, &ev);
			started++;
			inflight++;
		}
		int k = epoll_wait(ep, evs, 256, 200);
		uint64_t t = now_ns();

		if (k > 0)
			last_progress = t;
		for (int i = 0; i < k; i++) {
			struct hconn *h = &hc[evs[i].data.u64];
			struct epoll_event ev = {.events = EPOLLIN, .data.u64 = evs[i].data.u64};
			ssize_t r;

			if (h->st == H_CONNECTING) {
				int e = 0;
				socklen_t el = sizeof(e);

				getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &e, &el);
				if (e || send(h->fd, req, (size_t)rl, MSG_NOSIGNAL) != rl)
					goto hdead;
				h->st = H_SENT;
				epoll_ctl(ep, EPOLL_CTL_MOD, h->fd, &ev);
				continue;
			}
			if (h->st != H_SENT)
				continue;
			r = recv(h->fd, h->buf + h->got, sizeof(h->buf) - 1 - h->got, 0);
			if (r <= 0)
				goto hdead;
			h->got += (size_t)r;
			h->buf[h->got] = '\0';
			if (h->got >= 12) {
				if (strncmp(h->buf + 9, "200", 3))
					goto hdead;
				h->st = H_OPEN; /* the rest of the head is never looked at */
				epoll_ctl(ep, EPOLL_CTL_DEL, h->fd, NULL);
				open++;
				inflight--;
				continue;
			}
			continue;
		hdead:
			epoll_ctl(ep, EPOLL_CTL_DEL, h->fd, NULL);
			close(h->fd);
			h->st = H_DEAD;
			dead++;
			inflight--;
		}
		if (t > open_deadline || t - last_progress > 1500000000ull)
			break;
	}
	t_open1 = now_ns();
	printf("{\"requested\":%ld,\"open\":%ld,\"failed\":%ld,\"pending\":%ld,\"open_s\":%.3f}\n",
	       n, open, dead, n - open - dead, (double)(t_open1 - t_open0) / 1e9);
	fflush(stdout);
	while (now_ns() < end && !(stop && file_exists(stop)))
		usleep(50000);
	return 0;
}

/* ------------------------------------------------------------ servers */

static int
listen_on(const char *spec)
{
	char host[256];
	uint16_t port;
	struct sockaddr_in sin;
	int fd, one = 1;

	split_hp(spec, host, sizeof(host), &port);
	resolve4(host, port, &sin);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 4096))
		die("listen %s: %s", spec, strerror(errno));
	return fd;
}

/* holdsrv: accepts, keeps, reads and drops; acceptsrv: accepts, closes. */
static int
cmd_server(int argc, char **argv, bool keep)
{
	double secs = 600;
	int opt, lfd, ep;
	long accepted = 0;
	uint64_t end;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = -1}, evs[256];

	if (argc < 2)
		die("%s ADDR:PORT [-T SECONDS]", argv[0]);
	optind = 2;
	while ((opt = getopt(argc, argv, "T:")) != -1) {
		if (opt == 'T')
			secs = atof(optarg);
		else
			die("bad option");
	}
	lfd = listen_on(argv[1]);
	ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	printf("READY\n");
	fflush(stdout);
	end = now_ns() + (uint64_t)(secs * 1e9);
	while (now_ns() < end) {
		int k = epoll_wait(ep, evs, 256, 200);

		for (int i = 0; i < k; i++) {
			if (evs[i].data.fd == -1) {
				for (;;) {
					int fd = accept4(lfd, NULL, NULL,
							 SOCK_NONBLOCK | SOCK_CLOEXEC);
					struct epoll_event cev = {.events = EPOLLIN};

					if (fd < 0)
						break;
					accepted++;
					if (!keep) {
						close(fd);
						continue;
					}
					cev.data.fd = fd;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
				}
			} else {
				char buf[4096];
				ssize_t r = recv(evs[i].data.fd, buf, sizeof(buf), 0);

				if (r == 0 || (r < 0 && errno != EAGAIN)) {
					epoll_ctl(ep, EPOLL_CTL_DEL, evs[i].data.fd, NULL);
					close(evs[i].data.fd);
				}
			}
		}
	}
	fprintf(stderr, "benchtool %s: accepted %ld\n", argv[0], accepted);
	return 0;
}

/* ------------------------------------------------------------ connlat */

static int
cmd_connlat(int argc, char **argv)
{
	char host[256];
	uint16_t port;
	struct sockaddr_in sin;
	long n = 10000, fails = 0;
	int opt;
	uint64_t *v, sum = 0;
	size_t nv = 0;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	char first[128] = "";

	if (argc < 2)
		die("connlat HOST:PORT [-n N]");
	split_hp(argv[1], host, sizeof(host), &port);
	optind = 2;
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n')
			n = atol(optarg);
		else
			die("bad option");
	}
	if (n < 1 || n > 1000000)
		die("bad -n");
	resolve4(host, port, &sin);
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		die("oom");
	for (long i = 0; i < n + 100; i++) { /* the first 100: warm-up, not counted */
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		uint64_t t0, t1;
		int r;

		if (fd < 0)
			die("socket: %s", strerror(errno));
		t0 = now_ns();
		r = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		t1 = now_ns();
		if (r) {
			if (!first[0])
				snprintf(first, sizeof(first), "%s", strerror(errno));
			fails++;
			if (fails > n / 10 + 10)
				die("connect %s: %s (too many failures)", argv[1], first);
		} else if (i >= 100) {
			v[nv++] = t1 - t0;
			sum += t1 - t0;
		}
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
	}
	qsort(v, nv, sizeof(*v), cmp_u64);
	printf("{\"n\":%zu,\"fail\":%ld,\"p50_ns\":%lu,\"p99_ns\":%lu,\"mean_ns\":%.0f,"
	       "\"first_err\":\"%s\"}\n",
	       nv, fails, (unsigned long)quant(v, nv, 0.5), (unsigned long)quant(v, nv, 0.99),
	       nv ? (double)sum / (double)nv : 0.0, first);
	return nv ? 0 : 1;
}

/* ---------------------------------------------------------------- dns */

#define DNS_CACHED_NAMES 64

static size_t
dns_query(uint8_t *out, uint16_t id, const char *name)
{
	size_t n = 12;
	const char *p = name;

	memset(out, 0, 12);
	out[0] = (uint8_t)(id >> 8);
	out[1] = (uint8_t)id;
	out[2] = 0x01; /* RD */
	out[5] = 1;    /* QDCOUNT */
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		out[n++] = (uint8_t)l;
		memcpy(out + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	out[n++] = 0;
	out[n++] = 0;
	out[n++] = 1; /* A */
	out[n++] = 0;
	out[n++] = 1; /* IN */
	return n;
}

struct dnsb {
	int fd;
	bool cached;
	unsigned long seq; /* names of uncached queries */
	uint32_t tag;
};

static void
dns_name(struct dnsb *b, char *name, size_t len)
{
	if (b->cached)
		snprintf(name, len, "c%lu.q.bench.test", b->seq++ % DNS_CACHED_NAMES);
	else
		snprintf(name, len, "u%x-%lu.q.bench.test", b->tag, b->seq++);
}

/* answer ok: NOERROR with at least one answer */
static int
dns_answer_ok(const uint8_t *r, ssize_t n)
{
	return n >= 12 && (r[2] & 0x80) && (r[3] & 0x0f) == 0 && (r[6] || r[7]);
}

/* one query, waiting up to 2 s; returns rtt ns or 0 */
static uint64_t
dns_one(struct dnsb *b, uint16_t id)
{
	uint8_t q[300], r[1500];
	char name[256];
	size_t ql;
	uint64_t t0;

	dns_name(b, name, sizeof(name));
	ql = dns_query(q, id, name);
	t0 = now_ns();
	if (send(b->fd, q, ql, 0) != (ssize_t)ql)
		return 0;
	for (;;) {
		struct pollfd pfd = {.fd = b->fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 2000) <= 0)
			return 0;
		n = recv(b->fd, r, sizeof(r), 0);
		if (n >= 12 && (r[0] << 8 | r[1]) == id)
			return dns_answer_ok(r, n) ? now_ns() - t0 : 0;
	}
}

static int
cmd_dns(int argc, char **argv)
{
	char host[256] = "";
	uint16_t port = 53;
	struct sockaddr_in sin;
	struct dnsb b = {0};
	const char *mode = "cached";
	long nlat = 0, window = 32, lost = 0;
	double qsecs = 0;
	int opt;

	if (argc < 2)
		die("dns SERVER[:PORT] -m cached|uncached [-l N] [-q SECONDS] [-w WINDOW]");
	if (strchr(argv[1], ':'))
		split_hp(argv[1], host, sizeof(host), &port);
	else
		snprintf(host, sizeof(host), "%s", argv[1]);
	optind = 2;
	while ((opt = getopt(argc, argv, "m:l:q:w:")) != -1) {
		switch (opt) {
		case 'm':
			mode = optarg;
			break;
		case 'l':
			nlat = atol(optarg);
			break;
		case 'q':
			qsecs = atof(optarg);
			break;
		case 'w':
			window = atol(optarg);
			break;
		default:
			die("bad option");
		}
	}
	if (nlat < 0 || nlat > 1000000 || qsecs < 0 || qsecs > 60 || window < 1 || window > 4096)
		die("bad -l, -q or -w");
	b.cached = !strcmp(mode, "cached");
	b.tag = (uint32_t)getpid() ^ (uint32_t)now_ns();
	resolve4(host, port, &sin);
	b.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (b.fd < 0 || connect(b.fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("dns socket: %s", strerror(errno));
	if (b.cached) /* fill the cache (theirs or ours) first */
		for (int i = 0; i < DNS_CACHED_NAMES; i++)
			if (!dns_one(&b, (uint16_t)(i + 1)))
				die("no answer for c%d.q.bench.test from %s", i, argv[1]);

	printf("{\"mode\":\"%s\"", mode);
	if (nlat) {
		uint64_t *v = malloc((size_t)nlat * sizeof(*v));
		size_t nv = 0;
		uint16_t id = 1000;

		if (!v)
			die("oom");
		for (long i = 0; i < nlat; i++) {
			uint64_t t = dns_one(&b, id++);

			if (t)
				v[nv++] = t;
			else
				lost++;
		}
		qsort(v, nv, sizeof(*v), cmp_u64);
		printf(",\"lat_n\":%zu,\"lat_lost\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f", nv, lost,
		       (double)quant(v, nv, 0.5) / 1e3, (double)quant(v, nv, 0.99) / 1e3);
		free(v);
	}
	if (qsecs > 0) {
		/* window queries in flight; ids index the send times; a query
		 * unanswered for 1 s is counted lost and replaced */
		static uint64_t sent[65536];
		uint8_t q[300], r[1500];
		char name[256];
		uint16_t id = 1;
		long inflight = 0, ok = 0, bad = 0;
		uint64_t t0 = now_ns(), end = t0 + (uint64_t)(qsecs * 1e9), t, last_scan = t0;

		memset(sent, 0, sizeof(sent));
		lost = 0;
		while ((t = now_ns()) < end) {
			while (inflight < window) {
				size_t ql;

				while (sent[id] || id == 0)
					id++;
				dns_name(&b, name, sizeof(name));
				ql = dns_query(q, id, name);
				if (send(b.fd, q, ql, 0) != (ssize_t)ql)
					break;
				sent[id++] = now_ns();
				inflight++;
			}
			struct pollfd pfd = {.fd = b.fd, .events = POLLIN};

			if (poll(&pfd, 1, 50) > 0) {
				for (;;) {
					ssize_t n = recv(b.fd, r, sizeof(r), MSG_DONTWAIT);
					uint16_t rid;

					if (n < 0)
						break;
					if (n < 12)
						continue;
					rid = (uint16_t)(r[0] << 8 | r[1]);
					if (!sent[rid])
						continue;
					sent[rid] = 0;
					inflight--;
					if (dns_answer_ok(r, n))
						ok++;
					else
						bad++;
				}
			}
			t = now_ns();
			if (t - last_scan > 250000000ull) {
				for (int i = 1; i < 65536; i++)
					if (sent[i] && t - sent[i] > 1000000000ull) {
						sent[i] = 0;
						inflight--;
						lost++;
					}
				last_scan = t;
			}
		}
		t = now_ns();
		printf(",\"qps\":%.1f,\"q_ok\":%ld,\"q_bad\":%ld,\"q_lost\":%ld,\"window\":%ld",
		       (double)ok / ((double)(t - t0) / 1e9), ok, bad, lost, window);
	}
	printf("}\n");
	return 0;
}

int
main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		die("usage: benchtool rate|hold|holdsrv|acceptsrv|connlat|dns ...");
	if (!strcmp(argv[1], "rate"))
		return cmd_rate(argc - 1, argv + 1);
	if (!strcmp(argv[1], "hold"))
		return cmd_hold(argc - 1, argv + 1);
	if (!strcmp(argv[1], "holdsrv"))
		return cmd_server(argc - 1, argv + 1, true);
	if (!strcmp(argv[1], "acceptsrv"))
		return cmd_server(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "connlat"))
		return cmd_connlat(argc - 1, argv + 1);
	if (!strcmp(argv[1], "dns"))
		return cmd_dns(argc - 1, argv + 1);
	die("unknown subcommand %s", argv[1]);
	return 2;
}
