// SPDX-License-Identifier: Apache-2.0
/* One connection of the proxy, from accept to close (see conn.h): reading
 * the client's head and writing replies, the timer of each state, the one
 * place decisions are taken and logged (conn_decide(), --ask included),
 * and the upstream side: resolve with c-ares, keep only addresses the
 * policy allows, connect to exactly one of them with a timeout. The
 * protocol speaking on the connection is reached only through c->ops
 * (proto.h); the relay itself is relay.c. Past 800 lines as one idea: a
 * connection's states and their timers read best beside each other. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <event2/event.h>

#include "kernel/kpath.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "policy/secret.h"
#include "audit/audit.h"
#include "proxy/conn.h"
#include "proxy/http_hook.h"
#include "proxy/core.h"
#include "proxy/proto.h"
#include "proxy/upstream.h"

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
conn_connect_timeout(const struct conn *c)
{
	return c->px->opts.connect_timeout_s;
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
	if (c->ask_req)
		c->px->opts.ask.cancel(c->ask_req);
	if (c->ops->free)
		c->ops->free(c);
	close(c->cfd);
	if (c->ufd != -1)
		close(c->ufd);
	relay_pipes_drop(c);
	free(c->in);
	free(c->cout);
	free(c->uout);
	free(c->up_reply);
	free(c->path);
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

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	switch (c->state) {
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
	case CS_RELAY:
		if (now_s() - c->last_active >= (uint64_t)c->px->opts.idle_timeout_s) {
			conn_close(c, "idle");
			return;
		}
		conn_timer(c, c->px->opts.idle_timeout_s);
		return;
	default: /* the protocol's states: CS_HEAD, CS_REPLY, CS_RESPONSE */
		if (c->ops->timeout)
			c->ops->timeout(c);
		else
			conn_timed_out(c);
		return;
	}
}

void
conn_timed_out(struct conn *c)
{
	conn_close(c, c->state == CS_HEAD ? "client head timeout" : "timeout");
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
		if (!c->inlen && c->ops->eof)
			c->ops->eof(c);
		else
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

struct conn *
conn_new(struct proxy *p, int fd, const struct egr_conn_val *who, enum quota_hit over,
	 const struct proto_ops *ops)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = ++p->next_id;
	c->px = p;
	c->ops = ops;
	c->over = over;
	c->cfd = fd;
	c->ufd = -1;
	c->who = *who;
	for (int i = 0; i < 2; i++) {
		c->d[i].pipe[0] = c->d[i].pipe[1] = -1;
		c->d[i].owner = c;
	}
	c->last_active = now_s();
	event_assign(&c->cev_r, p->base, fd, EV_READ | EV_PERSIST, on_client_read, c);
	event_assign(&c->cev_w, p->base, fd, EV_WRITE | EV_PERSIST, on_client_write, c);
	event_assign(&c->uev_r, p->base, -1, 0, NULL, NULL);
	event_assign(&c->uev_w, p->base, -1, 0, NULL, NULL);
	evtimer_assign(&c->timer, p->base, on_timer, c);
	TAILQ_INSERT_TAIL(&p->conns, c, entry);
	if (over)
		p->nrefusing++;
	return c;
}

void
conn_start(struct conn *c)
{
	conn_timer(c, c->px->opts.header_timeout_s);
	if (c->ops->start(c))
		return; /* closed */
	/* Most clients have sent their first bytes by now (a request, a
	 * greeting): read them at once instead of after an epoll round; the
	 * read event just added then never reaches the kernel (changelist). */
	if (c->state == CS_HEAD && c->on_input)
		on_client_read(c->cfd, EV_READ, c);
}

void
conn_set_proto(struct conn *c, const struct proto_ops *ops, void *pstate)
{
	if (c->ops->free)
		c->ops->free(c);
	c->ops = ops;
	c->pstate = pstate;
}

/* ---- decisions ---- */

static int decide_query(const struct conn *c, const struct policy_query *q,
			struct policy_decision *d);

void
conn_query(const struct conn *c, const struct sockaddr *addr, struct policy_query *q,
	   struct sockaddr_storage *lit)
{
	memset(q, 0, sizeof(*q));
	q->host = c->host[0] ? c->host : NULL;
	q->addr = addr;
	/* an address literal as the "host" is taken as the address it is */
	if (!addr && q->host && parse_literal(q->host, c->port, lit)) {
		q->addr = (const struct sockaddr *)lit;
		q->host = NULL;
	}
	q->port = c->port;
	q->proto = c->proto;
	q->method = c->method[0] ? c->method : NULL;
	q->path = c->path;
}

/* The rule that would let q through next time (none past a deny rule). */
static void
suggest_rule(const struct conn *c, const struct policy_query *q, const struct policy_decision *d,
	     char *suggest, size_t len)
{
	suggest[0] = 0;
	if (d->reason == POLICY_R_V4_IN_V6 || d->reason == POLICY_R_NO_IPV6)
		return; /* no rule can allow it (--ipv6 can, and the words say so) */
	if (d->reason == POLICY_R_SECRET)
		return; /* an exfiltration attempt: no rule should let it through */
	if (d->reason == POLICY_R_HOOK)
		return; /* a rule allows it already; the request is what is wrong */
	if (d->reason == POLICY_R_LOCAL && q->addr)
		sockaddr_format(q->addr, suggest, len);
	else if (d->reason != POLICY_R_DENY_RULE && q->host && c->proto == POLICY_P_TCP)
		snprintf(suggest, len, "tcp://%s:%u", q->host, c->port);
	else if (d->reason != POLICY_R_DENY_RULE && q->host)
		snprintf(suggest, len, (c->port == 443 || c->port == 80) ? "%s" : "%s:%u", q->host,
			 c->port);
	else if (d->reason != POLICY_R_DENY_RULE && q->addr)
		sockaddr_format(q->addr, suggest, len);
}

static void secret_leak(const struct conn *c, const struct policy_query *q,
			struct policy_decision *d);

/* The deciding rule's header hooks cannot be applied to the request
 * (http_hook_judge()): d becomes the denial. */
static void
hook_refusal(const struct conn *c, struct policy_decision *d)
{
	const struct policy_hooks *h = d->rule ? d->rule->hooks : NULL;
	enum policy_hook_fail f;
	unsigned int k = 0;

	if (d->action != POLICY_ALLOW || !h || !c->hreq)
		return;
	f = http_hook_judge(h, c->px->opts.secrets, c->host, c->inspected, c->hreq, &k);
	if (f == POLICY_HOOK_OK)
		return;
	d->action = POLICY_DENY;
	d->reason = POLICY_R_HOOK;
	d->hook_fail = f;
	d->header = h->set[k].name;
	d->secret = h->set[k].secret;
	d->inspect = false;
}

/* The policy's decision on q; a query it cannot decide is denied (no rule).
 * Returns what policy_decide() did. */
static int
decide_query(const struct conn *c, const struct policy_query *q, struct policy_decision *d)
{
	int err = policy_decide(c->px->opts.policy, q, d);

	if (err) {
		d->action = POLICY_DENY;
		d->reason = POLICY_R_NO_RULE;
		d->rule = NULL;
	}
	secret_leak(c, q, d);
	hook_refusal(c, d);
	return err;
}

struct secrets *
conn_secrets(const struct conn *c)
{
	return c->px->opts.secrets;
}

void
conn_scan_secrets(struct conn *c, const char *buf, size_t len)
{
	int i = secrets_find(c->px->opts.secrets, c->host[0] ? c->host : NULL, buf, len);

	c->leak = i + 1;
}

/* A placeholder where its secret may not go: in the name (a CONNECT or
 * SOCKS target, an SNI, a Host: never a place for one), in the path, or
 * in the head conn_scan_secrets() read. d becomes the denial. */
static void
secret_leak(const struct conn *c, const struct policy_query *q, struct policy_decision *d)
{
	struct secrets *s = c->px->opts.secrets;
	int i = -1;

	if (!secrets_count(s))
		return;
	if (q->host)
		i = secrets_find(s, NULL, q->host, strlen(q->host));
	if (i < 0 && q->path)
		i = secrets_find(s, q->host, q->path, strlen(q->path));
	if (i < 0)
		i = c->leak - 1;
	if (i < 0)
		return;
	*d = (struct policy_decision){.action = POLICY_DENY,
				      .reason = POLICY_R_SECRET,
				      .secret = secrets_name(s, (unsigned int)i)};
}

/* Logs d, the decision on q, and counts it; returns whether c may go on.
 * approved: words for a terminal approval that overrides a "no rule"
 * denial (--ask), or NULL. */
static bool
log_decision(struct conn *c, const struct policy_query *q, struct policy_decision *d,
	     const char *approved)
{
	struct audit_rec r = {0};
	char words[600], comm[17], target[300], suggest[300];

	policy_safe_comm(c->who.comm, comm);
	if (q->host)
		snprintf(target, sizeof(target), "%s:%u", q->host, c->port);
	else if (q->addr)
		sockaddr_format(q->addr, target, sizeof(target));
	else
		snprintf(target, sizeof(target), "?:%u", c->port);
	suggest_rule(c, q, d, suggest, sizeof(suggest));
	if (approved && d->action == POLICY_DENY && d->reason == POLICY_R_NO_RULE) {
		d->action = POLICY_ALLOW;
		d->reason = POLICY_R_ALLOWED;
	}
	if (d->action == POLICY_ALLOW)
		r.decision = "allow";
	else
		r.decision = c->px->opts.audit_mode ? "would-deny" : "deny";
	r.reason = approved && !d->rule ? approved
					: policy_reason_words(d, NULL, words, sizeof(words));
	if (c->closed_early) {
		char *w = r.reason == words ? words : NULL;

		if (w) /* the decision as the connection would have had it, and why nothing was */
			snprintf(w + strlen(w), sizeof(words) - strlen(w),
				 " (the client closed before any data)");
		c->px->st.closed_early++;
	}
	r.source = conn_source_word(c->source);
	r.host = q->host;
	r.port = c->port;
	r.ip = q->addr;
	r.method = q->method;
	r.path = q->path;
	/* a limited policy inspects what --ask approves too */
	c->inspect = d->action == POLICY_ALLOW && c->proto == POLICY_P_TLS &&
		     (d->inspect || (approved && policy_limited(c->px->opts.policy)));
	r.inspected = c->inspect || c->inspected;
	r.pid = c->who.tgid;
	r.comm = comm;
	r.cgroup = c->who.cgroup_id;
	r.rule = d->rule ? d->rule->text : NULL;
	r.comment = d->rule ? d->rule->comment : NULL;
	r.dest = target;
	r.suggest = suggest[0] ? suggest : NULL;
	r.secret = d->reason == POLICY_R_SECRET ? d->secret : NULL;
	audit_write(c->px->opts.audit, &r);
	if (d->action == POLICY_ALLOW) {
		c->px->st.allowed++;
		c->rule = d->rule;
		c->allowed = true;
		return true;
	}
	c->px->st.denied++;
	if (c->px->opts.audit_mode) {
		/* audit: what would have been denied goes through, recorded;
		 * with the hooks of the rule that allowed it when only they
		 * refused (http_hook_head() leaves out what they cannot set) */
		d->action = POLICY_ALLOW;
		c->rule = d->reason == POLICY_R_HOOK ? d->rule : NULL;
		return true;
	}
	return false;
}

static void
on_answer(void *arg, enum ask_answer a)
{
	struct conn *c = arg;
	struct policy_decision d;
	struct policy_query q;
	struct sockaddr_storage lit;
	const char *approved = NULL;
	char err[256];

	c->ask_req = NULL;
	if (a == ASK_ALWAYS && c->ask_rule[0] &&
	    policy_add(c->px->opts.policy_rw, POLICY_ALLOW, c->ask_rule, NULL, "--ask", err,
		       sizeof(err)) == 0) {
		/* a tcp:// approval opens the kernel fast path for this target
		 * (one through the upstream proxy has no direct route) */
		if (!strncmp(c->ask_rule, "tcp://", 6) && c->orig.ss_family == AF_INET &&
		    c->px->kp &&
		    kpath_allows(c->px->opts.policy, &c->orig, c->host[0] ? c->host : NULL,
				 POLICY_P_TCP, NULL))
			c->px->kp->fast_add(c->px->kp->arg, (const struct sockaddr *)&c->orig,
					    conn_learned_name(c), 0);
		approved = "approved on the terminal for this run";
	} else if (a == ASK_ALWAYS || a == ASK_ONCE) {
		/* this connection only; its addresses are still checked for
		 * local ranges, but not for a rule */
		c->approved = true;
		approved = "approved once on the terminal";
	}
	conn_query(c, c->ask_has_addr ? (const struct sockaddr *)&c->ask_addr : NULL, &q, &lit);
	decide_query(c, &q, &d);
	c->ask_cont(c, log_decision(c, &q, &d, approved));
}

/* --ask: puts q (denied for lack of a rule) to the terminal; cont(c,
 * allowed) follows the answer. addr: what conn_decide() was given. 0, or
 * -1 when the question cannot be asked. */
static int
ask(struct conn *c, const struct policy_query *q, const struct policy_decision *d,
    const struct sockaddr *addr, void (*cont)(struct conn *c, bool allowed))
{
	char target[300], comm[17], question[400];

	suggest_rule(c, q, d, c->ask_rule, sizeof(c->ask_rule));
	if (q->host)
		snprintf(target, sizeof(target), "%s%s:%u",
			 c->proto == POLICY_P_TCP ? "tcp://" : "", q->host, c->port);
	else
		sockaddr_format(q->addr, target, sizeof(target));
	policy_safe_comm(c->who.comm, comm);
	snprintf(question, sizeof(question), "allow %s for %s[%u]", target, comm, c->who.tgid);
	c->ask_has_addr = addr != NULL;
	if (addr)
		memcpy(&c->ask_addr, addr,
		       addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						  : sizeof(struct sockaddr_in6));
	c->ask_cont = cont;
	event_del(&c->cev_r); /* c->in must stay put while the question waits */
	evtimer_del(&c->timer);
	c->ask_req = c->px->opts.ask.ask(c->px->opts.ask.arg, question, on_answer, c);
	return c->ask_req ? 0 : -1;
}

int
conn_decide(struct conn *c, const struct sockaddr *addr, struct policy_decision *d,
	    void (*cont)(struct conn *c, bool allowed))
{
	struct sockaddr_storage lit;
	struct policy_query q;
	int err;

	conn_query(c, addr, &q, &lit);
	err = decide_query(c, &q, d);
	if (d->reason == POLICY_R_SECRET) {
		struct secrets *s = c->px->opts.secrets;

		for (unsigned int i = 0; i < secrets_count(s); i++)
			if (!strcmp(secrets_name(s, i), d->secret))
				secrets_note(s, i, true);
	}
	/* only a missing rule is asked about */
	if (cont && c->px->opts.ask.ask && !c->px->opts.audit_mode && !err &&
	    d->action == POLICY_DENY && d->reason == POLICY_R_NO_RULE &&
	    ask(c, &q, d, addr, cont) == 0)
		return -1;
	return log_decision(c, &q, d, NULL);
}

/* ---- HTTPS inspection ---- */

void
conn_inspect(struct conn *c)
{
	const struct proxy_opts *o = &c->px->opts;

	if (!o->inspect.start) {
		log_warnx("conn %llu: %s:%u is to be inspected, and nothing inspects here: reset",
			  (unsigned long long)c->id, c->host, c->port);
		conn_abort(c, "no inspector");
		return;
	}
	o->inspect.start(o->inspect.arg, c);
}

int
conn_set_path(struct conn *c, const char *path, size_t len)
{
	char *p = NULL;

	if (path) {
		p = strndup(path, len);
		if (!p)
			return -ENOMEM;
	}
	free(c->path);
	c->path = p;
	return 0;
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

void
conn_connect_addrs(struct conn *c, void (*done)(struct conn *c))
{
	c->on_upstream = done;
	c->ai = 0;
	try_next_addr(c);
}

const char *
conn_upstream_proxy(const struct conn *c)
{
	return c->px->opts.upstream.host[0] ? c->px->opts.upstream.text : NULL;
}

/* May c's request go to address sa (its name's, resolved)? */
static bool
addr_allowed(struct conn *c, const struct sockaddr_storage *sa)
{
	struct sockaddr_storage lit;
	struct policy_query q;
	struct policy_decision d;

	conn_query(c, (const struct sockaddr *)sa, &q, &lit);
	return (policy_decide(c->px->opts.policy, &q, &d) == 0 &&
		(d.action == POLICY_ALLOW || (c->approved && d.reason == POLICY_R_NO_RULE))) ||
	       c->px->opts.audit_mode;
}

/* Keeps only the resolved addresses the policy allows for this host; the
 * decision for the first refused one is logged when none is left. */
static void
filter_and_connect(struct conn *c)
{
	struct sockaddr_storage keep[RESOLVE_MAX_ADDRS];
	int n = 0, first_denied = -1;

	for (int i = 0; i < c->naddrs; i++) {
		if (addr_allowed(c, &c->addrs[i]))
			keep[n++] = c->addrs[i];
		else if (first_denied < 0)
			first_denied = i;
	}
	if (!n) {
		struct policy_decision d;

		/* log the refusal with the address that caused it */
		conn_decide(c,
			    (const struct sockaddr *)&c->addrs[first_denied < 0 ? 0 : first_denied],
			    &d, NULL);
		c->up_err = EACCES;
		c->on_upstream(c);
		return;
	}
	memcpy(c->addrs, keep, sizeof(keep[0]) * (size_t)n);
	c->naddrs = n;
	c->ai = 0;
	try_next_addr(c);
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
		if (sockaddr_same_ip(&c->addrs[i], &c->orig)) {
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
	c->via_upstream = false; /* a kept-alive connection's next request decides anew */
	c->up_status = 0;
	event_del(&c->cev_r);
	if (upstream_wanted(c)) {
		upstream_connect(c, done);
		return;
	}
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
		int n = resolver_cached(c->px->opts.res, c->host, cached);

		if (n > 0) {
			on_resolved(0, cached, n, c);
			return;
		}
	}
	/* the lookup is part of connecting: its own timeout, not what is
	 * left of the head timeout (which closed the client without a word) */
	conn_timer(c, c->px->opts.connect_timeout_s);
	c->rq = resolver_query(c->px->opts.res, c->host, on_resolved, c);
	if (!c->rq) {
		c->up_err = ENOMEM;
		done(c);
	}
}

bool
conn_reuse_upstream(struct conn *c, int fd, const struct sockaddr_storage *peer)
{
	struct sockaddr_storage lit;

	if (upstream_wanted(c) || sockaddr_port(peer) != c->port)
		return false; /* the upstream proxy's route; another port */
	/* the candidates conn_connect_upstream would have: the client's
	 * destination alone, the literal, or (any of) the name's addresses */
	if ((!c->host[0] || c->learned) && !sockaddr_same_ip(peer, &c->orig))
		return false;
	if (c->host[0] && !c->learned && parse_literal(c->host, c->port, &lit) &&
	    !sockaddr_same_ip(peer, &lit))
		return false;
	if (!addr_allowed(c, peer))
		return false;
	event_del(&c->cev_r);
	c->up_err = 0;
	c->via_upstream = false;
	c->up_status = 0;
	c->addrs[0] = *peer;
	c->naddrs = 1;
	c->ai = 1;
	c->up_addr = *peer;
	c->ufd = fd;
	return true;
}

const char *
conn_learned_name(const struct conn *c)
{
	const struct proxy_opts *o = &c->px->opts;

	return o->learned_name ? o->learned_name(o->learned_arg, (const struct sockaddr *)&c->orig)
			       : NULL;
}

bool
conn_rejudge(struct conn *c)
{
	const struct sockaddr *addr = NULL;
	struct sockaddr_storage lit;
	struct policy_decision d;
	struct policy_query q;
	struct audit_rec r = {0};
	char words[400], reason[460], comm[17];

	c->rule = NULL; /* the old policy's: it is freed */
	if (!c->allowed)
		return true;
	if (c->ufd >= 0 && c->via_upstream) /* up_addr is the upstream proxy's */
		addr = upstream_judged_addr(c);
	else if (c->ufd >= 0 && c->up_addr.ss_family)
		addr = (const struct sockaddr *)&c->up_addr;
	conn_query(c, addr, &q, &lit);
	decide_query(c, &q, &d);
	/* TLS relayed as it is that the new policy would inspect is ended:
	 * its requests must be judged */
	if (d.action == POLICY_ALLOW && !(d.inspect && !c->inspected)) {
		c->rule = d.rule;
		return true;
	}
	if (c->px->opts.audit_mode)
		return true;
	if (d.action == POLICY_ALLOW)
		snprintf(words, sizeof(words), "to be inspected now");
	else
		policy_reason_words(&d, NULL, words, sizeof(words));
	snprintf(reason, sizeof(reason), "%s; the policy changed", words);
	policy_safe_comm(c->who.comm, comm);
	r.decision = "deny";
	r.reason = reason;
	r.source = conn_source_word(c->source);
	r.host = q.host;
	r.port = c->port;
	r.ip = q.addr;
	r.method = q.method;
	r.pid = c->who.tgid;
	r.comm = comm;
	r.cgroup = c->who.cgroup_id;
	r.rule = d.rule ? d.rule->text : NULL;
	r.comment = d.rule ? d.rule->comment : NULL;
	r.dest = q.host ? q.host : "?";
	r.secret = d.reason == POLICY_R_SECRET ? d.secret : NULL;
	audit_write(c->px->opts.audit, &r);
	c->px->st.denied++;
	conn_abort(c, "denied by the new policy");
	return false;
}
