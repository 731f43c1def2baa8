/* The proxy's core (see proxy.h, conn.h): listeners and accept, attribution
 * of every client through the BPF connection index, the connection limit,
 * reading handshake bytes and writing replies, the one place decisions are
 * taken and logged (conn_decide), and the upstream side: resolve with
 * c-ares, keep only addresses the policy allows, connect to exactly one of
 * them with a timeout. The relay itself is relay.c; protocols are
 * http_proxy.c, socks_proxy.c and tproxy.c.
 *
 * Limits: the connection limit is sized by the descriptor limit (raised to
 * the hard one at start), one process may hold a share of it, and a client
 * over a limit is refused in its protocol (503, SOCKS5 0x01, a reset) by a
 * connection kept only for that (a few at most; beyond, HTTP clients get a
 * 503 written at once, SOCKS5 ones a reset). Out of descriptors, a spare
 * one is given up to accept and refuse each client at once, so that none
 * waits in the backlog. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <event2/event.h>

#include "cli/ask.h"
#include "policy/audit.h"
#include "lib/clock.h"
#include "proxy/conn.h"
#include "dns/responder.h"
#include "lib/duration.h"
#include "kernel/loader.h"
#include "lib/log.h"
#include "proxy/proxy.h"
#include "proxy/quota.h"

struct proxy {
	struct event_base *base;
	struct proxy_opts opts; /* timeouts in force (defaults filled in) */
	struct quota quota;	/* connection limits and counts */
	struct resolver *res;
	struct dns_server *dns;
	int (*fast_add)(void *, const struct sockaddr *, uint64_t);
	void *fast_arg;
	int conns_fd;
	int lfd[PROXY_L_MAX];
	uint16_t port[PROXY_L_MAX];
	struct event *lev[PROXY_L_MAX];
	bool limit_warned;  /* said once that the connection limit was hit */
	bool proc_warned;   /* ... that a process hit its own */
	bool fd_warned;	    /* ... that descriptors ran out */
	bool pipe_warned;   /* ... that a relay pipe could not be made */
	struct event *rest; /* listeners off for a moment: out of descriptors, no spare */
	int spare_fd;	    /* /dev/null, given up to accept-and-refuse without descriptors */
	TAILQ_HEAD(, conn) conns;
	int nrefusing; /* connections kept only to be refused (c->over) */
	uint64_t next_id;
	struct proxy_stats st;
	int pipes[PIPE_POOL][2]; /* empty relay pipes of closed connections */
	int npipes;
};

/* Descriptors the proxy may need beside its connections' own: the DNS
 * responder's TCP clients (dns/responder.c takes at most 256 at once), c-ares sockets
 * (dns/resolver.c watches at most 16), and a margin for the rest (a status
 * request, CMD's pidfd, the --suggest-policy file at exit). */
#define FD_DNS_TCP  256
#define FD_RESOLVER 16
#define FD_MARGIN   16

const struct policy *
conn_policy(const struct conn *c)
{
	return c->px->opts.policy;
}

void
conn_touch(struct conn *c)
{
	c->last_active = now_s();
}

int
conn_idle_timeout(const struct conn *c)
{
	return c->px->opts.idle_timeout_s;
}

int
conn_head_timeout(const struct conn *c)
{
	return c->px->opts.header_timeout_s;
}

int
conn_response_timeout(const struct conn *c)
{
	const struct proxy_opts *o = &c->px->opts;

	return o->response_timeout_s < o->idle_timeout_s ? o->response_timeout_s
							 : o->idle_timeout_s;
}

void
conn_over_words(const struct conn *c, char *buf, size_t len)
{
	quota_words(&c->px->quota, c->over, buf, len);
}

void
conn_timer_ms(struct conn *c, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(&c->timer, &tv);
}

int
conn_sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

void
conn_format_addr(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

void
conn_close(struct conn *c, const char *why)
{
	struct proxy *p = c->px;

	log_debug("conn %llu: close (%s)", (unsigned long long)c->id, why);
	event_del(&c->cev_r);
	event_del(&c->cev_w);
	event_del(&c->uev_r);
	event_del(&c->uev_w);
	event_del(&c->timer);
	resolver_cancel(c->rq);
	asker_cancel(c->ask_req);
	free(c->req);
	http_ex_free(c);
	close(c->cfd);
	if (c->ufd != -1)
		close(c->ufd);
	for (int i = 0; i < 2; i++) {
		struct relay_dir *d = &c->d[i];

		if (d->pipe[0] == -1)
			continue;
		if (!d->inpipe && p->npipes < PIPE_POOL) {
			/* empty: the next connection's (saves 8 system calls) */
			p->pipes[p->npipes][0] = d->pipe[0];
			p->pipes[p->npipes][1] = d->pipe[1];
			p->npipes++;
			continue;
		}
		close(d->pipe[0]);
		close(d->pipe[1]);
	}
	free(c->in);
	free(c->cout);
	free(c->uout);
	TAILQ_REMOVE(&p->conns, c, entry);
	if (c->over)
		p->nrefusing--;
	else
		quota_del(&p->quota, c->who.tgid);
	free(c);
}

void
conn_abort(struct conn *c, const char *why)
{
	struct linger lg = {1, 0};

	setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	if (c->ufd != -1)
		setsockopt(c->ufd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	conn_close(c, why);
}

int
conn_pipe_open(struct conn *c, int dir)
{
	struct proxy *p = c->px;
	struct relay_dir *d = &c->d[dir];

	if (p->npipes) {
		p->npipes--;
		d->pipe[0] = p->pipes[p->npipes][0];
		d->pipe[1] = p->pipes[p->npipes][1];
		return 0;
	}
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC)) {
		if (!p->pipe_warned)
			log_warn("proxy: cannot make a relay pipe (%d connections open): "
				 "connections that need one are reset",
				 p->quota.nconns);
		p->pipe_warned = true;
		return -1;
	}
	fcntl(d->pipe[1], F_SETPIPE_SZ, RELAY_CHUNK);
	return 0;
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	switch (c->state) {
	case CS_HEAD:
		/* stream_judge() treats silence as a server-first protocol */
		if (c->judging) {
			stream_judge(c, true);
			return;
		}
		conn_close(c, "client head timeout");
		return;
	case CS_RESOLVE:
		/* the name did not resolve within the connect timeout */
		resolver_cancel(c->rq);
		c->rq = NULL;
		c->up_err = ETIMEDOUT;
		c->on_upstream(c);
		return;
	case CS_CONNECT:
		c->up_err = ETIMEDOUT;
		event_del(&c->uev_w);
		close(c->ufd);
		c->ufd = -1;
		c->on_upstream(c);
		return;
	case CS_RESPONSE:
		http_response_timeout(c);
		return;
	case CS_RELAY:
		if (now_s() - c->last_active >= (uint64_t)c->px->opts.idle_timeout_s) {
			conn_close(c, "idle");
			return;
		}
		conn_timer(c, c->px->opts.idle_timeout_s);
		return;
	default:
		conn_close(c, "timeout");
		return;
	}
}

void
conn_timer(struct conn *c, int seconds)
{
	struct timeval tv = {seconds, 0};

	evtimer_add(&c->timer, &tv);
}

static void
on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	(void)what;
	if (c->inlen == c->incap) {
		size_t ncap = c->incap ? c->incap * 2 : 4096;
		char *nin;

		if (ncap > CONN_MAX_HEAD + 1)
			ncap = CONN_MAX_HEAD + 1;
		if (c->inlen >= ncap) {
			/* the handler did not consume a full buffer: too long */
			c->on_input(c);
			return;
		}
		nin = realloc(c->in, ncap);
		if (!nin) {
			conn_close(c, "out of memory");
			return;
		}
		c->in = nin;
		c->incap = ncap;
	}
	n = recv(fd, c->in + c->inlen, c->incap - c->inlen, 0);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		conn_close(c, "client read error");
		return;
	}
	if (n == 0) {
		conn_close(c, "client closed during handshake");
		return;
	}
	c->inlen += (size_t)n;
	c->on_input(c);
}

void
conn_read_client(struct conn *c, void (*on_input)(struct conn *c))
{
	c->state = CS_HEAD;
	c->on_input = on_input;
	event_del(&c->cev_r);
	event_assign(&c->cev_r, c->px->base, c->cfd, EV_READ | EV_PERSIST, on_client_read, c);
	event_add(&c->cev_r, NULL);
}

void
conn_drop_input(struct conn *c, size_t n)
{
	if (n >= c->inlen) {
		c->inlen = 0;
		return;
	}
	memmove(c->in, c->in + n, c->inlen - n);
	c->inlen -= n;
}

static void
reply_flush(struct conn *c)
{
	while (c->coutoff < c->coutlen) {
		ssize_t n =
			send(c->cfd, c->cout + c->coutoff, c->coutlen - c->coutoff, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				event_add(&c->cev_w, NULL);
				return;
			}
			conn_close(c, "client write error");
			return;
		}
		c->coutoff += (size_t)n;
	}
	event_del(&c->cev_w);
	free(c->cout);
	c->cout = NULL;
	c->coutlen = c->coutoff = 0;
	if (!c->after_reply) {
		conn_close(c, "replied");
		return;
	}
	c->after_reply(c);
}

static void
on_client_write(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	reply_flush(arg);
}

void
conn_reply(struct conn *c, const char *data, size_t len, conn_step next)
{
	char *buf = malloc(len ? len : 1);

	if (!buf) {
		conn_close(c, "out of memory");
		return;
	}
	memcpy(buf, data, len);
	free(c->cout);
	c->cout = buf;
	c->coutlen = len;
	c->coutoff = 0;
	c->after_reply = next;
	c->state = CS_REPLY;
	event_del(&c->cev_r);
	event_assign(&c->cev_w, c->px->base, c->cfd, EV_WRITE | EV_PERSIST, on_client_write, c);
	reply_flush(c);
}

static bool
parse_literal(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		return true;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		return true;
	}
	return false;
}

static const char *
reason_words(const struct policy_decision *d, char *buf, size_t len)
{
	switch (d->reason) {
	case POLICY_R_ALLOWED:
		snprintf(buf, len, "rule %u \"%s\"", d->rule ? d->rule->index : 0,
			 d->rule ? d->rule->text : "");
		break;
	case POLICY_R_NO_RULE:
		snprintf(buf, len, "no rule allows it");
		break;
	case POLICY_R_DENY_RULE:
		snprintf(buf, len, "denied by rule %u \"%s\"", d->rule ? d->rule->index : 0,
			 d->rule ? d->rule->text : "");
		break;
	case POLICY_R_METHOD:
		snprintf(buf, len, "method not allowed for this host");
		break;
	case POLICY_R_LOCAL:
		snprintf(buf, len, "local or private address");
		break;
	}
	return buf;
}

/* The query for c, with addr (or the address literal c->host is). */
static void
fill_query(const struct conn *c, const struct sockaddr **addr, struct policy_query *q,
	   struct sockaddr_storage *lit)
{
	memset(q, 0, sizeof(*q));
	q->host = c->host[0] ? c->host : NULL;
	q->addr = *addr;
	/* an address literal as the "host" is judged as the address it is */
	if (!*addr && q->host && parse_literal(q->host, c->port, lit)) {
		q->addr = *addr = (const struct sockaddr *)lit;
		q->host = NULL;
	}
	q->port = c->port;
	q->proto = c->proto;
	q->method = c->method[0] ? c->method : NULL;
}

/* The rule that would let q through next time (none past a deny rule). */
static void
suggest_rule(const struct conn *c, const struct policy_query *q, const struct sockaddr *addr,
	     const struct policy_decision *d, char *suggest, size_t len)
{
	suggest[0] = 0;
	if (d->reason == POLICY_R_LOCAL && addr)
		conn_format_addr(addr, suggest, len);
	else if (d->reason != POLICY_R_DENY_RULE && q->host && c->proto == POLICY_P_TCP)
		snprintf(suggest, len, "tcp://%s:%u", q->host, c->port);
	else if (d->reason != POLICY_R_DENY_RULE && q->host)
		snprintf(suggest, len, (c->port == 443 || c->port == 80) ? "%s" : "%s:%u", q->host,
			 c->port);
	else if (d->reason != POLICY_R_DENY_RULE && addr)
		conn_format_addr(addr, suggest, len);
}

/* Decides (unless decided: d is already the decision for c), logs.
 * approved: words for a terminal approval that overrides a "no rule"
 * denial (--ask), or NULL. */
static bool
decide_log_pre(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
	       const char *approved, bool decided)
{
	struct policy_query q;
	struct audit_rec r = {0};
	struct sockaddr_storage lit;
	char words[600], comm[17], target[300], suggest[300];
	int err = 0;

	fill_query(c, &addr, &q, &lit);
	if (!decided) /* else d holds the decision for this very query */
		err = policy_decide(c->px->opts.policy, &q, d);
	if (err) {
		d->action = POLICY_DENY;
		d->reason = POLICY_R_NO_RULE;
		d->rule = NULL;
	}
	memcpy(comm, c->who.comm, 16);
	comm[16] = 0;
	for (char *s = comm; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			*s = '?';
	if (q.host)
		snprintf(target, sizeof(target), "%s:%u", q.host, c->port);
	else if (addr)
		conn_format_addr(addr, target, sizeof(target));
	else
		snprintf(target, sizeof(target), "?:%u", c->port);
	suggest_rule(c, &q, addr, d, suggest, sizeof(suggest));
	if (approved && d->action == POLICY_DENY && d->reason == POLICY_R_NO_RULE) {
		d->action = POLICY_ALLOW;
		d->reason = POLICY_R_ALLOWED;
	}
	if (d->action == POLICY_ALLOW)
		r.decision = "allow";
	else
		r.decision = c->px->opts.audit_mode ? "would-deny" : "deny";
	r.reason = approved && !d->rule ? approved : reason_words(d, words, sizeof(words));
	r.source = c->source;
	r.host = q.host;
	r.port = c->port;
	r.ip = addr;
	r.method = q.method;
	r.pid = c->who.tgid;
	r.comm = comm;
	r.cgroup = c->who.cgroup_id;
	r.rule = d->rule ? d->rule->text : NULL;
	r.dest = target;
	r.suggest = suggest[0] ? suggest : NULL;
	audit_write(c->px->opts.audit, &r);
	if (d->action == POLICY_ALLOW) {
		c->px->st.allowed++;
		c->rule = d->rule;
		return true;
	}
	c->px->st.denied++;
	if (c->px->opts.audit_mode) {
		/* audit: what would have been denied goes through, recorded */
		d->action = POLICY_ALLOW;
		return true;
	}
	return false;
}

static bool
decide_log(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
	   const char *approved)
{
	return decide_log_pre(c, addr, d, approved, false);
}

bool
conn_decide(struct conn *c, const struct sockaddr *addr, struct policy_decision *d)
{
	return decide_log(c, addr, d, NULL);
}

static void
on_answer(void *arg, enum ask_answer a)
{
	struct conn *c = arg;
	struct policy_decision d;
	const struct sockaddr *addr =
		c->ask_has_addr ? (const struct sockaddr *)&c->ask_addr : NULL;
	char err[256];
	bool ok;

	c->ask_req = NULL;
	if (a == ASK_ALWAYS && c->ask_rule[0] &&
	    policy_add(c->px->opts.policy_rw, POLICY_ALLOW, c->ask_rule, NULL, "--ask", err,
		       sizeof(err)) == 0) {
		/* a tcp:// approval opens the kernel fast path for this target */
		if (!strncmp(c->ask_rule, "tcp://", 6) && c->orig.ss_family == AF_INET &&
		    c->px->fast_add)
			c->px->fast_add(c->px->fast_arg, (const struct sockaddr *)&c->orig, 0);
		ok = decide_log(c, addr, &d, "approved on the terminal for this run");
	} else if (a == ASK_ALWAYS || a == ASK_ONCE) {
		/* this connection only; its addresses are still checked for
		 * local ranges, but not for a rule */
		c->approved = true;
		ok = decide_log(c, addr, &d, "approved once on the terminal");
	} else {
		ok = decide_log(c, addr, &d, NULL);
	}
	c->ask_cont(c, ok);
}

int
conn_decide_ask(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
		void (*cont)(struct conn *c, bool allowed))
{
	const struct sockaddr *a = addr;
	struct sockaddr_storage lit;
	struct policy_query q;
	char target[300], comm[17], question[400];

	if (!c->px->opts.asker || c->px->opts.audit_mode)
		return decide_log(c, addr, d, NULL);
	fill_query(c, &a, &q, &lit);
	if (policy_decide(c->px->opts.policy, &q, d))
		return decide_log(c, addr, d, NULL);
	if (d->action == POLICY_ALLOW || d->reason != POLICY_R_NO_RULE)
		return decide_log_pre(c, addr, d, NULL,
				      true); /* only a missing rule is asked about */
	suggest_rule(c, &q, a, d, c->ask_rule, sizeof(c->ask_rule));
	if (q.host)
		snprintf(target, sizeof(target), "%s%s:%u",
			 c->proto == POLICY_P_TCP ? "tcp://" : "", q.host, c->port);
	else
		conn_format_addr(a, target, sizeof(target));
	memcpy(comm, c->who.comm, 16);
	comm[16] = 0;
	for (char *s = comm; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			*s = '?';
	snprintf(question, sizeof(question), "allow %s for %s[%u]", target, comm, c->who.tgid);
	c->ask_has_addr = addr != NULL;
	if (addr)
		memcpy(&c->ask_addr, addr,
		       addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						  : sizeof(struct sockaddr_in6));
	c->ask_cont = cont;
	event_del(&c->cev_r); /* c->in must stay put while the question waits */
	evtimer_del(&c->timer);
	c->ask_req = asker_ask(c->px->opts.asker, question, on_answer, c);
	if (!c->ask_req)
		return decide_log(c, addr, d, NULL);
	return -1;
}

/* ---- upstream ---- */

static void try_next_addr(struct conn *c);

static void
on_upstream_connected(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	socklen_t len = sizeof(int);
	int err = 0;

	(void)what;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		c->up_err = err ? err : errno;
		close(c->ufd);
		c->ufd = -1;
		try_next_addr(c);
		return;
	}
	evtimer_del(&c->timer);
	c->on_upstream(c);
}

static void
try_next_addr(struct conn *c)
{
	const struct sockaddr *sa;
	socklen_t salen;
	int one = 1;

	while (c->ai < c->naddrs) {
		sa = (const struct sockaddr *)&c->addrs[c->ai++];
		salen = sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						 : sizeof(struct sockaddr_in6);
		c->ufd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->ufd == -1) {
			c->up_err = errno;
			continue;
		}
		setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		memcpy(&c->up_addr, sa, salen);
		if (connect(c->ufd, sa, salen) == 0 || errno == EINPROGRESS) {
			c->state = CS_CONNECT;
			event_assign(&c->uev_w, c->px->base, c->ufd, EV_WRITE,
				     on_upstream_connected, c);
			event_add(&c->uev_w, NULL);
			conn_timer(c, c->px->opts.connect_timeout_s);
			return;
		}
		c->up_err = errno;
		close(c->ufd);
		c->ufd = -1;
	}
	if (!c->up_err)
		c->up_err = EHOSTUNREACH;
	c->on_upstream(c);
}

/* Keeps only the resolved addresses the policy allows for this host; the
 * decision for the first refused one is logged when none is left. */
static void
filter_and_connect(struct conn *c)
{
	struct sockaddr_storage keep[RESOLVE_MAX_ADDRS];
	int n = 0, first_denied = -1;

	for (int i = 0; i < c->naddrs; i++) {
		struct policy_query q = {0};
		struct policy_decision d;

		q.host = c->host[0] ? c->host : NULL;
		q.addr = (const struct sockaddr *)&c->addrs[i];
		q.port = c->port;
		q.proto = c->proto;
		q.method = c->method[0] ? c->method : NULL;
		if ((policy_decide(c->px->opts.policy, &q, &d) == 0 &&
		     (d.action == POLICY_ALLOW || (c->approved && d.reason == POLICY_R_NO_RULE))) ||
		    c->px->opts.audit_mode)
			keep[n++] = c->addrs[i];
		else if (first_denied < 0)
			first_denied = i;
	}
	if (!n) {
		struct policy_decision d;

		/* log the refusal with the address that caused it */
		conn_decide(c,
			    (const struct sockaddr *)&c->addrs[first_denied < 0 ? 0 : first_denied],
			    &d);
		c->up_err = EACCES;
		c->on_upstream(c);
		return;
	}
	memcpy(c->addrs, keep, sizeof(keep[0]) * (size_t)n);
	c->naddrs = n;
	c->ai = 0;
	try_next_addr(c);
}

static bool
same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

static void
on_resolved(int status, const struct sockaddr_storage *addrs, int naddrs, void *arg)
{
	struct conn *c = arg;

	c->rq = NULL;
	if (status || naddrs == 0) {
		c->up_err = status == -ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
		c->naddrs = 0;
		c->on_upstream(c);
		return;
	}
	for (int i = 0; i < naddrs; i++) {
		c->addrs[i] = addrs[i];
		if (addrs[i].ss_family == AF_INET)
			((struct sockaddr_in *)&c->addrs[i])->sin_port = htons(c->port);
		else
			((struct sockaddr_in6 *)&c->addrs[i])->sin6_port = htons(c->port);
	}
	c->naddrs = naddrs;
	/* The client's own destination goes first when the name resolves to
	 * it; otherwise it is not a candidate at all (a forged SNI/Host
	 * reaches only what the name itself resolves to). */
	for (int i = 1; i < naddrs; i++) {
		if (same_ip(&c->addrs[i], &c->orig)) {
			struct sockaddr_storage t = c->addrs[0];

			c->addrs[0] = c->addrs[i];
			c->addrs[i] = t;
			break;
		}
	}
	filter_and_connect(c);
}

void
conn_connect_upstream(struct conn *c, void (*done)(struct conn *c))
{
	c->on_upstream = done;
	c->up_err = 0;
	c->ai = 0;
	event_del(&c->cev_r);
	if (!c->host[0] || c->learned) {
		/* no name, or the name the DNS responder answered this very
		 * address for: the original destination is the only candidate */
		c->addrs[0] = c->orig;
		c->naddrs = 1;
		filter_and_connect(c);
		return;
	}
	if (parse_literal(c->host, c->port, &c->addrs[0])) {
		c->naddrs = 1;
		filter_and_connect(c);
		return;
	}
	c->state = CS_RESOLVE;
	{
		struct sockaddr_storage cached[RESOLVE_MAX_ADDRS];
		int n = resolver_cached(c->px->res, c->host, cached);

		if (n > 0) {
			on_resolved(0, cached, n, c);
			return;
		}
	}
	/* the lookup is part of connecting: its own timeout, not what is
	 * left of the head timeout (which closed the client without a word) */
	conn_timer(c, c->px->opts.connect_timeout_s);
	c->rq = resolver_query(c->px->res, c->host, on_resolved, c);
	if (!c->rq) {
		c->up_err = ENOMEM;
		done(c);
	}
}

/* ---- accept ---- */

/* Refuses a client without a struct conn: a reset, or on the HTTP listener
 * a 503 if it fits in the socket buffer at once. What the client has sent is
 * read first; if more follows, the close resets the connection, and the
 * reply is still read from the client's socket before the reset. */
static void
refuse_now(int fd, enum proxy_listener kind, const char *why)
{
	struct linger lg = {1, 0};

	if (kind == PROXY_L_HTTP) {
		char buf[4096], body[200], resp[512];
		int blen, n;

		for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
			;
		blen = snprintf(body, sizeof(body), "egressctl: %s\n", why);
		n = snprintf(resp, sizeof(resp),
			     "HTTP/1.1 503 Service Unavailable\r\n"
			     "x-proxy-error: overloaded\r\n"
			     "Content-Type: text/plain; charset=utf-8\r\n"
			     "Content-Length: %d\r\n"
			     "Connection: close\r\n"
			     "\r\n%s",
			     blen, body);
		if (send(fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n) {
			close(fd);
			return;
		}
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* Listeners off for 100 ms: out of descriptors with none to give up. */
static void
accept_rest(struct proxy *p)
{
	struct timeval rest = {0, 100000};

	for (int i = 0; i < PROXY_L_MAX; i++)
		if (p->lev[i])
			event_del(p->lev[i]);
	evtimer_add(p->rest, &rest);
}

/* accept() said EMFILE or ENFILE: give up the spare descriptor to take one
 * pending client, refuse it at once, take the spare back. When that does
 * not help either (the whole system is out, ENFILE), rest instead of
 * spinning: the clients wait in the backlog then, as nothing else can be
 * done for them. */
static bool
accept_no_fd(struct proxy *p, int lfd, enum proxy_listener kind)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct egr_conn_val who;
	int fd, err;

	if (!p->fd_warned)
		log_warnx("proxy: out of file descriptors with %d connections open: refusing "
			  "new clients until some close (ulimit -Hn)",
			  p->quota.nconns);
	p->fd_warned = true;
	if (p->spare_fd == -1)
		p->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (p->spare_fd == -1) {
		accept_rest(p);
		return false;
	}
	close(p->spare_fd);
	fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	err = errno;
	if (fd != -1) {
		p->st.accepted++;
		p->st.refused_nofd++;
		if (p->conns_fd >= 0) /* its index entry goes too */
			loader_conn_lookup(p->conns_fd, (struct sockaddr *)&peer, IPPROTO_TCP, &who,
					   true);
		refuse_now(fd, kind, "out of file descriptors");
	}
	p->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd == -1 && (err == EMFILE || err == ENFILE))
		accept_rest(p);
	return fd != -1;
}

/* Is a new connection of who over a limit? Says so once for each limit. */
static enum quota_hit
over_limit(struct proxy *p, const struct egr_conn_val *who)
{
	enum quota_hit hit = quota_check(&p->quota, who->tgid);
	char comm[17];

	if (hit == QUOTA_TOTAL && !p->limit_warned) {
		log_warnx("proxy: %d connections open, the limit (--max-conns): refusing new ones",
			  p->quota.max_conns);
		p->limit_warned = true;
	} else if (hit == QUOTA_PROCESS && !p->proc_warned) {
		memcpy(comm, who->comm, 16);
		comm[16] = 0;
		for (char *c = comm; *c; c++)
			if (*c < 0x20 || *c >= 0x7f)
				*c = '?';
		log_warnx("proxy: %s[%u] has %d connections open, the limit of one process "
			  "(--max-conns-per-process): refusing its new ones",
			  comm, who->tgid, quota_of(&p->quota, who->tgid));
		p->proc_warned = true;
	}
	return hit;
}

/* Takes one pending connection from lfd; false when there is none left to
 * take now (or the proxy must rest). */
static bool
accept_one(struct proxy *p, int lfd, enum proxy_listener kind)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct egr_conn_val who;
	enum quota_hit over;
	struct conn *c;
	int fd;

	fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		if (errno == EMFILE || errno == ENFILE)
			return accept_no_fd(p, lfd, kind);
		if (errno == EINTR || errno == ECONNABORTED)
			return true;
		if (errno != EAGAIN)
			log_warn("accept");
		return false;
	}
	p->st.accepted++;
	/* Only sockets of the confined cgroup are in the index: anyone else
	 * (another local user) is refused, the proxy is no open relay. */
	if (p->conns_fd < 0 || loader_conn_lookup(p->conns_fd, (struct sockaddr *)&peer,
						  IPPROTO_TCP, &who, true) != 0) {
		char a[64];

		conn_format_addr((struct sockaddr *)&peer, a, sizeof(a));
		log_info("refused unattributed connection from %s", a);
		p->st.refused_unattributed++;
		close(fd);
		return true;
	}
	/* Over a limit: nothing changes for the connections already open. An
	 * HTTP or SOCKS5 client is answered in its protocol by a connection
	 * kept for that (a few at most), a transparent one gets a reset. */
	over = over_limit(p, &who);
	if (over && (kind == PROXY_L_TPROXY || p->nrefusing >= p->quota.max_refusing)) {
		char why[160];

		quota_words(&p->quota, over, why, sizeof(why));
		refuse_now(fd, kind, why);
		return true;
	}
	c = calloc(1, sizeof(*c));
	if (!c || (!over && quota_add(&p->quota, who.tgid))) {
		free(c);
		close(fd);
		return true;
	}
	c->id = ++p->next_id;
	c->px = p;
	c->kind = kind;
	c->over = over;
	c->cfd = fd;
	c->ufd = -1;
	c->who = who;
	c->d[0].pipe[0] = c->d[0].pipe[1] = -1;
	c->d[1].pipe[0] = c->d[1].pipe[1] = -1;
	c->last_active = now_s();
	event_assign(&c->cev_r, p->base, fd, EV_READ | EV_PERSIST, on_client_read, c);
	event_assign(&c->cev_w, p->base, fd, EV_WRITE | EV_PERSIST, on_client_write, c);
	event_assign(&c->uev_r, p->base, -1, 0, NULL, NULL);
	event_assign(&c->uev_w, p->base, -1, 0, NULL, NULL);
	evtimer_assign(&c->timer, p->base, on_timer, c);
	TAILQ_INSERT_TAIL(&p->conns, c, entry);
	if (over)
		p->nrefusing++;

	conn_timer(c, p->opts.header_timeout_s);
	switch (kind) {
	case PROXY_L_HTTP:
		http_proxy_start(c);
		break;
	case PROXY_L_SOCKS:
		socks_proxy_start(c);
		break;
	default:
		if (who.addr[0] == 0 && who.addr[1] == 0 && who.addr[2] == htonl(0xffff)) {
			struct sockaddr_in *in = (struct sockaddr_in *)&c->orig;

			in->sin_family = AF_INET;
			in->sin_addr.s_addr = who.addr[3];
			in->sin_port = who.port;
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&c->orig;

			in6->sin6_family = AF_INET6;
			memcpy(&in6->sin6_addr, who.addr, 16);
			in6->sin6_port = who.port;
		}
		tproxy_start(c);
		break;
	}
	/* Most clients have sent their first bytes by now (a request, a
	 * greeting): read them at once instead of after an epoll round; the
	 * read event just added then never reaches the kernel (changelist). */
	on_client_read(fd, EV_READ, c);
	return true;
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct proxy *p = arg;
	enum proxy_listener kind = PROXY_L_MAX;

	(void)what;
	for (int i = 0; i < PROXY_L_MAX; i++)
		if (p->lfd[i] == lfd)
			kind = (enum proxy_listener)i;
	/* a burst of clients costs one wakeup, not one each */
	for (int n = 0; n < 32 && accept_one(p, lfd, kind); n++)
		;
}

static void
on_rested(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *p = arg;

	(void)fd;
	(void)what;
	for (int i = 0; i < PROXY_L_MAX; i++)
		if (p->lev[i])
			event_add(p->lev[i], NULL);
}

static int
listen_on(struct proxy *p, enum proxy_listener l, char *errbuf, size_t errlen)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int fd, one = 1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 1024) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len)) {
		snprintf(errbuf, errlen, "cannot open a proxy listener on 127.0.0.1: %s",
			 strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	p->lfd[l] = fd;
	p->port[l] = ntohs(sin.sin_port);
	p->lev[l] = event_new(p->base, fd, EV_READ | EV_PERSIST, on_accept, p);
	if (!p->lev[l] || event_add(p->lev[l], NULL)) {
		snprintf(errbuf, errlen, "cannot watch a proxy listener");
		return -1;
	}
	return 0;
}

struct proxy *
proxy_new(struct event_base *base, const struct proxy_opts *o, char *errbuf, size_t errlen)
{
	struct proxy *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	p->base = base;
	p->opts = *o;
	quota_init(&p->quota, o->max_conns, o->max_conns_per_process);
	if (p->opts.header_timeout_s <= 0)
		p->opts.header_timeout_s = PROXY_DEF_HEAD_TIMEOUT;
	if (p->opts.connect_timeout_s <= 0)
		p->opts.connect_timeout_s = PROXY_DEF_CONNECT_TIMEOUT;
	if (p->opts.response_timeout_s <= 0)
		p->opts.response_timeout_s = PROXY_DEF_RESPONSE_TIMEOUT;
	if (p->opts.idle_timeout_s <= 0)
		p->opts.idle_timeout_s = PROXY_DEF_IDLE_TIMEOUT;
	p->conns_fd = -1;
	TAILQ_INIT(&p->conns);
	for (int i = 0; i < PROXY_L_MAX; i++)
		p->lfd[i] = -1;
	p->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (p->spare_fd == -1) {
		snprintf(errbuf, errlen, "cannot open /dev/null: %s", strerror(errno));
		goto fail;
	}
	p->rest = evtimer_new(base, on_rested, p);
	if (!p->rest) {
		snprintf(errbuf, errlen, "out of memory");
		goto fail;
	}
	p->res = resolver_new(base, o->dns_upstream, errbuf, errlen);
	if (!p->res)
		goto fail;
	if (listen_on(p, PROXY_L_HTTP, errbuf, errlen) ||
	    listen_on(p, PROXY_L_SOCKS, errbuf, errlen))
		goto fail;
	if (o->tproxy && listen_on(p, PROXY_L_TPROXY, errbuf, errlen))
		goto fail;
	if (o->dns) {
		struct dns_opts dopts = {0};

		dopts.policy = o->policy;
		dopts.audit = o->audit;
		dopts.res = p->res;
		dopts.audit_mode = o->audit_mode;
		dopts.asker = o->asker;
		dopts.policy_rw = o->policy_rw;
		p->dns = dns_new(base, &dopts, errbuf, errlen);
		if (!p->dns)
			goto fail;
	}
	return p;
fail:
	proxy_free(p);
	return NULL;
}

/* Descriptors open now, or -errno. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

int
proxy_size_limits(struct proxy *p, char *errbuf, size_t errlen)
{
	long nofile, reserve, was = p->quota.max_conns;
	struct rlimit rl;
	bool lowered;
	char t[4][16];
	int open_now;

	open_now = open_fds();
	if (open_now < 0) {
		snprintf(errbuf, errlen, "cannot count open descriptors (/proc/self/fd): %s",
			 strerror(-open_now));
		return -1;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		snprintf(errbuf, errlen, "cannot read the descriptor limit: %s", strerror(errno));
		return -1;
	}
	nofile = rl.rlim_cur > INT_MAX ? INT_MAX : (long)rl.rlim_cur;
	reserve = FD_RESOLVER + FD_MARGIN + (p->dns ? FD_DNS_TCP : 0);
	if (quota_size(&p->quota, nofile, open_now, reserve, &lowered, errbuf, errlen))
		return -1;
	if (lowered)
		log_info("proxy: at most %d connections, not %ld: the descriptor limit is %ld (%d "
			 "per connection, %d open, %ld kept for DNS and the resolver)",
			 p->quota.max_conns, was, nofile, QUOTA_FDS_PER_CONN, open_now, reserve);
	duration_format_secs(p->opts.header_timeout_s, t[0], sizeof(t[0]));
	duration_format_secs(p->opts.connect_timeout_s, t[1], sizeof(t[1]));
	duration_format_secs(p->opts.response_timeout_s, t[2], sizeof(t[2]));
	duration_format_secs(p->opts.idle_timeout_s, t[3], sizeof(t[3]));
	log_info("proxy: at most %d connections, %d per process (descriptor limit %ld); "
		 "timeouts: client head %s, connect %s, response %s, idle %s",
		 p->quota.max_conns, p->quota.max_per_process, nofile, t[0], t[1], t[2], t[3]);
	return 0;
}

uint16_t
proxy_port(const struct proxy *p, enum proxy_listener l)
{
	return p->port[l];
}

void
proxy_set_index(struct proxy *p, int conns_fd)
{
	p->conns_fd = conns_fd;
	if (p->dns)
		dns_set_index(p->dns, conns_fd);
}

uint16_t
proxy_dns_port(const struct proxy *p)
{
	return p->dns ? dns_port(p->dns) : 0;
}

void
proxy_set_fastpath(struct proxy *p, int (*add)(void *, const struct sockaddr *, uint64_t),
		   int (*del)(void *, const struct sockaddr *), void *arg)
{
	p->fast_add = add;
	p->fast_arg = arg;
	if (p->dns)
		dns_set_fastpath(p->dns, add, del, arg);
}

const char *
conn_learned_name(const struct conn *c)
{
	return dns_learned_name(c->px->dns, (const struct sockaddr *)&c->orig);
}

void
proxy_get_stats(const struct proxy *p, struct proxy_stats *st)
{
	*st = p->st;
	st->refused_limit = p->quota.hit_total;
	st->refused_per_process = p->quota.hit_process;
	st->max_conns = p->quota.max_conns;
	st->max_conns_per_process = p->quota.max_per_process;
}

void
proxy_get_dns_stats(const struct proxy *p, struct dns_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (p->dns)
		dns_get_stats(p->dns, st);
}

void
proxy_free(struct proxy *p)
{
	struct conn *c;

	if (!p)
		return;
	while ((c = TAILQ_FIRST(&p->conns)))
		conn_close(c, "shutdown");
	for (int i = 0; i < PROXY_L_MAX; i++) {
		if (p->lev[i])
			event_free(p->lev[i]);
		if (p->lfd[i] != -1)
			close(p->lfd[i]);
	}
	dns_free(p->dns);
	resolver_free(p->res);
	if (p->rest)
		event_free(p->rest);
	for (int i = 0; i < p->npipes; i++) {
		close(p->pipes[i][0]);
		close(p->pipes[i][1]);
	}
	quota_free(&p->quota);
	if (p->spare_fd != -1)
		close(p->spare_fd);
	free(p);
}
