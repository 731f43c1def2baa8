// SPDX-License-Identifier: Apache-2.0
/* Every decision of a target (see core.h): its audit log's sink (the
 * summary, the rate-limited denial lines on stderr, the daemon's `log`),
 * the programs' events turned into records, and the ends of the revoke
 * pass after a policy change. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "audit/audit.h"
#include "kernel/events.h"
#include "kernel/existing.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "confine/core.h"
#include "confine/revoke.h"
#include "confine/summary.h"

/* Denial lines on stderr, at most TARGET_DENIAL_BURST at once and
 * DENIAL_RATE a second after that; the rest are counted and said once (the
 * summary has them all). */
#define DENIAL_RATE 10

/* Names in a denial line come from CMD: none of their control bytes (C0,
 * DEL, and C1 raw or UTF-8 encoded) may reach the terminal through
 * egressctl's own lines. Printable ASCII and our arrow stay. */
static void
sanitize_line(char *line)
{
	static const char arrow[] = "\u2192";
	unsigned char *c = (unsigned char *)line;

	while (*c) {
		if (!strncmp((char *)c, arrow, sizeof(arrow) - 1)) {
			c += sizeof(arrow) - 1;
			continue;
		}
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
		c++;
	}
}

void
target_say_suppressed(struct target *t)
{
	if (!t->suppressed)
		return;
	fprintf(stderr, "egressctl: %s%lu more denials not shown (the summary has them)\n",
		t->env->label, t->suppressed);
	t->suppressed = 0;
}

static void
denial_line(struct target *t, char *line)
{
	struct timespec ts;
	double now;

	if (!t->env->denial_lines)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	t->tokens += (now - t->last_refill) * DENIAL_RATE;
	if (t->tokens > TARGET_DENIAL_BURST)
		t->tokens = TARGET_DENIAL_BURST;
	t->last_refill = now;
	if (t->tokens < 1) {
		t->suppressed++;
		return;
	}
	t->tokens -= 1;
	target_say_suppressed(t);
	sanitize_line(line);
	fprintf(stderr, "egressctl: %s%s\n", t->env->label, line);
}

/* Every decision of the proxy and the DNS responder, and the kernel's. */
void
target_on_decision(void *arg, const struct audit_rec *r)
{
	struct target *t = arg;
	char line[800];

	if (t->env->on_record)
		t->env->on_record(t->env->record_arg, r);
	if (r->event)
		return; /* the daemon's own: not a decision */
	if (!strcmp(r->decision, "redirect"))
		return; /* not a decision: the proxy decides next */
	summary_add(t->summary, r);
	if (!strcmp(r->decision, "allow") || !strcmp(r->source, "bpf") ||
	    !strcmp(r->source, "kernel"))
		return; /* kernel lines are printed by target_on_event */
	snprintf(line, sizeof(line), "%s %s[%u] \u2192 %s (%s, %s)",
		 strcmp(r->decision, "deny") ? "would deny" : "denied", r->comm ? r->comm : "?",
		 r->pid,
		 r->dest   ? r->dest
		 : r->host ? r->host
			   : "?",
		 r->reason, r->source);
	denial_line(t, line);
}

/* e's destination as a socket address; false for unix and socket-creation
 * events, which have none. */
static bool
event_addr(const struct egr_event *e, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (e->family == AF_UNIX || e->hook == EGR_H_SOCK_CREATE)
		return false;
	sockaddr_from_key(e->addr, e->port, ss);
	return true;
}

void
target_on_event(const struct egr_event *e, void *arg)
{
	struct target *t = arg;
	struct sockaddr_storage ss;
	struct audit_rec r = {0};
	char line[512], dest[160], comm[17], suggest[160] = "", why[320], name[65];

	if (e->family == AF_UNIX && e->reason == EGR_R_UNIX_SERVICE) {
		char uid[17], path[UNIXSVC_PATH_MAX + 16];

		memcpy(uid, e->addr, 16);
		uid[16] = 0;
		unixsvc_name(&t->unix_svc, (int)e->port, uid, path, sizeof(path));
		snprintf(dest, sizeof(dest), "unix:%s", path);
	} else {
		events_dest(e, dest, sizeof(dest));
	}
	policy_safe_comm(e->comm, comm);
	if (event_addr(e, &ss)) {
		r.ip = (struct sockaddr *)&ss;
		r.port = ntohs(e->port);
	}
	/* a loopback port opens with an address rule; nothing else here can */
	if (e->reason == EGR_R_LOOPBACK && ss.ss_family == AF_INET)
		snprintf(suggest, sizeof(suggest), "%s", dest);
	r.decision = events_decision(e);
	r.reason = events_reason(e->reason);
	if (e->family == AF_UNIX && e->reason == EGR_R_UNIX_SERVICE) {
		/* the record names the socket and the way to allow it */
		snprintf(why, sizeof(why), "%s (--allow-unix %s allows it)", r.reason, dest + 5);
		r.reason = why;
		r.host = dest;
	}
	r.source = "bpf";
	if (events_is_kv(e)) { /* the kernel-verified path's judgment */
		r.source = "kernel";
		policy_safe_str(e->name, sizeof(e->name), name, sizeof(name));
		if (name[0]) { /* the summary's row: the name, as the proxy's are */
			r.host = name;
			snprintf(dest, sizeof(dest), "%s:%u", name, (unsigned)ntohs(e->port));
		}
	}
	r.pid = e->tgid;
	r.comm = comm;
	r.cgroup = e->cgroup_id;
	r.dest = dest;
	r.suggest = suggest[0] ? suggest : NULL;
	audit_write(t->audit, &r);
	if (e->verdict == EGR_V_REDIRECT || e->verdict == EGR_V_ALLOW)
		return;
	events_format_dest(e, dest, line, sizeof(line));
	denial_line(t, line);
}

/* One connection the revoke pass ended (or could not): a decision line
 * (source bpf: the kernel carried it), and a line on stderr. */
static void
on_revoked(void *arg, const struct existing_conn *c, const char *host,
	   const struct policy_decision *d)
{
	struct target *t = arg;
	struct sockaddr_storage ss = {0};
	struct audit_rec r = {0};
	char words[400], reason[1024], peer[64], local[64], dest[320];

	policy_reason_words(d, NULL, words, sizeof(words));
	existing_addr(c->raddr, c->rport, peer, sizeof(peer));
	existing_addr(c->laddr, c->lport, local, sizeof(local));
	sockaddr_from_key(c->raddr, 0, &ss);
	if (host)
		snprintf(dest, sizeof(dest), "%s:%u (%s)", host, c->rport, peer);
	else
		snprintf(dest, sizeof(dest), "%s", peer);
	r.host = host;
	r.port = c->rport;
	r.ip = (const struct sockaddr *)&ss;
	r.pid = (uint32_t)c->pid;
	r.comm = c->comm[0] ? c->comm : NULL;
	r.cgroup = c->cgroup_id;
	r.rule = d->rule ? d->rule->text : NULL;
	r.comment = d->rule ? d->rule->comment : NULL;
	r.dest = dest;
	r.proto = c->protocol == IPPROTO_UDP ? "udp" : "tcp";
	if (c->action == EGR_PRE_FAILED) {
		snprintf(reason, sizeof(reason),
			 "a direct connection of %s[%d] %s \u2192 %s that the new policy denies "
			 "(%s) "
			 "could not be ended: %s",
			 c->comm[0] ? c->comm : "?", (int)c->pid, local, dest, words,
			 strerror(-c->err));
		r.event = "revoke-failed";
		r.reason = reason;
		log_warnx("%s%s", t->env->label, reason);
		target_log_event(t, &r);
		return;
	}
	snprintf(reason, sizeof(reason), "%s; the policy changed", words);
	r.decision = "deny";
	r.reason = reason;
	r.source = "bpf";
	audit_write(t->audit, &r);
	log_warnx("%sended %s[%d] %s %s \u2192 %s %s, direct: %s", t->env->label,
		  c->comm[0] ? c->comm : "?", (int)c->pid, r.proto, local, dest,
		  existing_state_word(c->protocol, c->state), reason);
}

void
target_revoke_direct(struct target *t, struct target_revoked *rv)
{
	struct revoke_stats st;
	char why[512];

	if (!t->rk)
		return;
	if (revoker_run(t->rk, t->policy, on_revoked, t, &st, why, sizeof(why))) {
		struct audit_rec r = {.event = "revoke-failed", .reason = why};

		log_warnx("%scannot end the direct connections the new policy denies: %s",
			  t->env->label, why);
		target_log_event(t, &r);
		return;
	}
	rv->conns += st.revoked;
	if (!st.passes) {
		log_info("%srevoke pass: not needed (no destination known to have gone direct is "
			 "denied now, and no rule denies by address); %zu destinations remembered",
			 t->env->label, st.dests);
		return;
	}
	log_info("%srevoke pass: %u direct connections, %u ended, %u not ended; %u pass%s in %.2f "
		 "ms; %zu destinations remembered",
		 t->env->label, st.direct, st.revoked, st.failed, st.passes,
		 st.passes == 1 ? "" : "es", (double)st.ns / 1e6, st.dests);
}

void
target_log_event(struct target *t, const struct audit_rec *r)
{
	struct audit_rec e = *r;

	e.source = "daemon";
	if (!e.cgroup)
		e.cgroup = t->cgid;
	audit_write(t->audit, &e);
}
