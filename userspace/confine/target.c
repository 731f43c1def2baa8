// SPDX-License-Identifier: Apache-2.0
/* One confined cgroup (see target.h): the policy, the decision log, the
 * resolver shared by the proxy and the DNS responder, the listeners of
 * both, the programs attached to the cgroup with their ring buffer, and the
 * status socket; how they are made, attached (or taken over), finished and
 * freed. Its kernel paths are kpath.c's, its records records.c's. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <event2/event.h>

#include "audit/audit.h"
#include "audit/logsink.h"
#include "dns/resolver.h"
#include "dns/responder.h"
#include "inspect/inspect.h"
#include "confine/secrets.h"
#include "policy/secret.h"
#include "kernel/existing.h"
#include "kernel/loader.h"
#include "lib/log.h"
#include "proxy/proxy.h"
#include "confine/core.h"
#include "confine/revoke.h"
#include "confine/status.h"
#include "confine/suggest.h"
#include "confine/summary.h"

#define DRAIN_US 100000 /* how late a kernel-verified allow's decision line may be */

static void
on_ring(evutil_socket_t fd, short what, void *arg)
{
	struct target *t = arg;

	(void)fd;
	(void)what;
	loader_events_consume(t->ld);
}

void
target_status(const struct target *t, struct status_info *si)
{
	struct proxy_stats ps = {0};
	struct dns_stats ds = {0};

	memset(si, 0, sizeof(*si));
	if (t->px) {
		proxy_get_stats(t->px, &ps);
		si->http_port = proxy_port(t->px, PROXY_L_HTTP);
		si->socks_port = proxy_port(t->px, PROXY_L_SOCKS);
		si->tproxy_port = proxy_port(t->px, PROXY_L_TPROXY);
	}
	if (t->dns) {
		dns_get_stats(t->dns, &ds);
		si->dns_port = dns_port(t->dns);
	}
	si->pid = getpid();
	si->cgroup_id = t->cgid;
	si->cgroup = t->cgpath;
	si->command = t->env->command;
	si->policy_file = t->env->policy_name ? t->env->policy_name : t->o->policy_file;
	si->rules = policy_count(t->policy);
	si->audit = t->o->audit;
	si->ipv6 = t->o->ipv6;
	si->proxy_accepted = ps.accepted;
	si->proxy_allowed = ps.allowed;
	si->proxy_denied = ps.denied;
	si->proxy_unattributed = ps.refused_unattributed;
	si->dns_queries = ds.queries;
	si->dns_refused = ds.refused;
	si->dns_cached = ds.cached;
	si->dns_upstream = ds.upstream;
	si->dns_servfail = ds.servfail;
	si->dns_fast = ds.fast_path;
}

void
target_counters(const struct target *t, struct target_counters *c)
{
	memset(c, 0, sizeof(*c));
	if (t->px)
		proxy_get_stats(t->px, &c->proxy);
	if (t->dns)
		dns_get_stats(t->dns, &c->dns);
	if (t->ld) {
		loader_counters(t->ld, c->kernel);
		c->fast_entries = loader_fast_count(t->ld);
	}
}

/* One status request: the document, then close. */
static void
on_status(evutil_socket_t lfd, short what, void *arg)
{
	struct target *t = arg;
	struct status_info si;
	char *doc;
	int fd;

	(void)what;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	target_status(t, &si);
	doc = status_render(&si);
	if (doc && send(fd, doc, strlen(doc), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("status: %s", strerror(errno));
	free(doc);
	close(fd);
}

char *
target_ca_pem(const struct target *t, size_t *len)
{
	return t->ins ? inspector_ca_pem(t->ins, len) : NULL;
}

const struct secrets *
target_secrets(const struct target *t)
{
	return t->secrets;
}

/* The service's run (root, for a user) reads no file, runs no command and
 * has no environment of the user's: each value is one its client read as
 * the user, --secret NAME=fd:N, or a policy file's secret whose source the
 * client read and sent as --client-secret NAME=fd:N (cli/client.c). */
static int
target_client_secrets(struct target *t, char *errbuf, size_t errlen)
{
	const struct target_env *e = t->env;
	unsigned int n = policy_secret_count(t->policy);
	bool given[SECRET_MAX] = {false};

	for (int c = 0; c < e->nclient_secrets; c++) {
		const char *v = e->client_secrets[c], *eq = strchr(v, '=');
		const struct policy_secret *ps = NULL;
		char err[200];
		unsigned int i;

		for (i = 0; eq && i < n; i++) {
			ps = policy_secret_at(t->policy, i);
			if (strlen(ps->name) == (size_t)(eq - v) &&
			    !strncmp(ps->name, v, (size_t)(eq - v)))
				break;
		}
		if (!eq || i == n || strncmp(eq + 1, "fd:", 3)) {
			snprintf(errbuf, errlen,
				 "--client-secret %.64s: expected NAME=fd:N, NAME a secret of the "
				 "policy file",
				 v);
			return -EINVAL;
		}
		if (!ps->source || !strcmp(ps->source, "--secret") || given[i]) {
			snprintf(errbuf, errlen,
				 "--client-secret %s: not a policy file's, or given twice",
				 ps->name);
			return -EINVAL;
		}
		if (policy_secret_set_from(t->policy, ps->name, eq + 1, err, sizeof(err))) {
			snprintf(errbuf, errlen, "--client-secret %s: %s", ps->name, err);
			return -EINVAL;
		}
		given[i] = true;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct policy_secret *ps = policy_secret_at(t->policy, i);
		bool option = ps->source && !strcmp(ps->source, "--secret");

		if (option ? ps->kind != SECRET_FD : !given[i]) {
			snprintf(errbuf, errlen,
				 "secret %s (%s): through the service, its value comes from the "
				 "client, which reads it as you",
				 ps->name, ps->source ? ps->source : "policy");
			return -EINVAL;
		}
	}
	return 0;
}

/* The secrets' store and their values, read now (confine/secrets.c). */
static int
target_open_secrets(struct target *t, char *errbuf, size_t errlen)
{
	if (!t->env->hands_secrets) {
		snprintf(errbuf, errlen,
			 "the policy has secrets, and this target cannot hand their "
			 "placeholders to what it confines (the daemon, the service's run): use "
			 "egressctl run --secret, as root (docs/inspection.md)");
		return -EINVAL;
	}
	if (t->env->secrets_from_client && target_client_secrets(t, errbuf, errlen))
		return -EINVAL;
	t->secrets = secrets_new(t->policy);
	if (!t->secrets) {
		snprintf(errbuf, errlen, "secrets: %s", strerror(errno));
		return -errno;
	}
	if (target_secrets_load(t->secrets, errbuf, errlen))
		return -EINVAL;
	return t->o->secret_placeholders
		       ? target_secrets_write(t->secrets, t->o->secret_placeholders, errbuf, errlen)
		       : 0;
}

struct target *
target_new(struct event_base *base, const struct target_opts *o, const struct target_env *env,
	   struct policy *policy, char *errbuf, size_t errlen)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	t->o = o;
	t->env = env;
	t->base = base;
	t->status_fd = -1;
	t->tokens = TARGET_DENIAL_BURST;
	if (target_opts_check(o, errbuf, errlen) || target_upstream_read(t, errbuf, errlen)) {
		policy_free(policy);
		goto fail;
	}
	t->policy =
		policy ? policy
		       : target_build_policy(o->policy_file, o->rules, o->nrules, errbuf, errlen);
	if (!t->policy)
		goto fail;
	/* the proxy says what the kernel does; routes by the upstream proxy;
	 * --limited */
	if (target_policy_options(t->policy, o, errbuf, errlen))
		goto fail;
	if (policy_secret_count(t->policy) && target_open_secrets(t, errbuf, errlen))
		goto fail;
	/* the CA exists before CMD starts: it is told to trust it */
	if ((policy_inspects(t->policy) || o->ca) && target_open_inspector(t, errbuf, errlen))
		goto fail;
	if (t->ins && !o->ca && !env->hands_ca)
		log_warnx("%sHTTPS inspection with a CA made now: nothing confined trusts it (give "
			  "--ca CERT,KEY)",
			  env->label);
	t->summary = summary_new();
	if (!t->summary) {
		snprintf(errbuf, errlen, "out of memory");
		goto fail;
	}
	summary_set_secrets(t->summary, t->secrets);
	{
		struct logsink_opts lo = {
			.headers = o->log_headers,
			.nheaders = o->nlog_headers,
			.ca_file = target_file_path(o->log_ca, t->log_ca, sizeof(t->log_ca)),
			.resource = env->resource,
			.nresource = env->nresource};

		if ((o->nlog_headers || o->log_ca) &&
		    (!o->log_file || strncmp(o->log_file, "otlp:", 5))) {
			snprintf(errbuf, errlen,
				 "--log-header and --log-ca go with --log otlp:URL");
			goto fail;
		}
		t->audit = audit_open(base, o->log_file, &lo, errbuf, errlen);
	}
	if (!t->audit)
		goto fail;
	audit_set_sink(t->audit, target_on_decision, t);
	if (env->name_cgroup)
		audit_set_namer(t->audit, env->name_cgroup, env->name_arg);
	audit_set_limit(t->audit, o->log_buffer);
	audit_set_format(t->audit, o->log_format);
	if (unixsvc_build(&t->unix_svc, o->unix_root, o->allow_unix, o->nallow_unix, o->deny_unix,
			  o->ndeny_unix, errbuf, errlen))
		goto fail;
	return t;
fail:
	target_free(t);
	return NULL;
}

/* The proxy, the DNS responder and their resolver, in the order they
 * were made; NULL-safe. The proxy first: closing its connections logs
 * their last decisions. */
static void
close_listeners(struct target *t)
{
	proxy_free(t->px);
	t->px = NULL;
	dns_free(t->dns);
	t->dns = NULL;
	resolver_free(t->res);
	t->res = NULL;
}

/* The name the responder answered an address for, for the proxy. */
static const char *
learned_name(void *arg, const struct sockaddr *sa)
{
	const struct target *t = arg;

	return dns_learned_name(t->dns, sa);
}

static int
open_proxy(struct target *t, const struct loader_opts *pinned, char *errbuf, size_t errlen)
{
	const struct target_opts *o = t->o;
	struct proxy_opts po = {0};

	if (pinned) {
		po.ports[PROXY_L_HTTP] = pinned->proxy_ports[0];
		po.ports[PROXY_L_SOCKS] = pinned->proxy_ports[1];
		po.ports[PROXY_L_TPROXY] = o->tproxy_port ? 0 : pinned->tproxy_port;
	}
	po.policy = t->policy;
	po.audit = t->audit;
	po.res = t->res;
	po.tproxy = !o->tproxy_port;
	po.audit_mode = o->audit;
	po.max_conns = o->max_conns;
	po.max_conns_per_process = o->max_conns_per_process;
	po.header_timeout_s = o->head_timeout;
	po.connect_timeout_s = o->connect_timeout;
	po.response_timeout_s = o->response_timeout;
	po.idle_timeout_s = o->idle_timeout;
	po.ask = t->env->ask;
	po.policy_rw = t->policy;
	po.learned_name = o->dns_port ? NULL : learned_name;
	po.learned_arg = t;
	po.fd_reserve = (o->dns_port ? 0 : DNS_TCP_MAX_CLIENTS) + (t->ins ? IX_POOL_MAX : 0);
	po.test_pipes_max = o->pipes_max;
	po.ns_ip4 = o->containers_ip4;
	po.ipv6 = o->ipv6;
	po.upstream = t->upstream;
	memcpy(po.upstream_auth, t->upstream_auth, sizeof(po.upstream_auth));
	po.secrets = t->secrets;
	po.inspect.start = target_inspect_hook;
	po.inspect.arg = t;
	t->px = proxy_new(t->base, &po, errbuf, errlen);
	explicit_bzero(po.upstream_auth, sizeof(po.upstream_auth));
	return t->px ? 0 : -1;
}

/* dns_opts.local_name: the command's, read at each query (the daemon's
 * docker may come after the responder). */
static int
env_local_name(void *arg, uint64_t netns, const char *name, int af, uint8_t (*addr)[16], int max)
{
	const struct target *t = arg;

	return t->env->local_name
		       ? t->env->local_name(t->env->local_arg, netns, name, af, addr, max)
		       : -1;
}

static int
open_dns(struct target *t, const struct loader_opts *pinned, char *errbuf, size_t errlen)
{
	const struct target_opts *o = t->o;
	struct dns_opts dopts = {0};

	dopts.policy = t->policy;
	dopts.audit = t->audit;
	dopts.res = t->res;
	dopts.audit_mode = o->audit;
	dopts.ask = t->env->ask;
	dopts.policy_rw = t->policy;
	dopts.secrets = t->secrets;
	dopts.head_timeout_s = o->head_timeout > 0 ? o->head_timeout : PROXY_DEF_HEAD_TIMEOUT;
	dopts.port = pinned ? pinned->dns_port : 0;
	dopts.ns_ip4 = o->containers_ip4;
	dopts.ipv6 = o->ipv6;
	dopts.local_name = env_local_name;
	dopts.local_arg = t;
	t->dns = dns_new(t->base, &dopts, errbuf, errlen);
	return t->dns ? 0 : -1;
}

/* The resolver, the proxy's listeners and the responder's (unless
 * --dns-port): on the ports pinned programs redirect to (pinned), or on
 * free ones. */
static int
open_listeners(struct target *t, const struct loader_opts *pinned, char *errbuf, size_t errlen)
{
	t->res = resolver_new(t->base, t->o->dns_upstream, errbuf, errlen);
	if (!t->res || open_proxy(t, pinned, errbuf, errlen) ||
	    (!t->o->dns_port && open_dns(t, pinned, errbuf, errlen))) {
		close_listeners(t);
		return -EADDRINUSE;
	}
	snprintf(t->http_url, sizeof(t->http_url), "http://127.0.0.1:%u",
		 proxy_port(t->px, PROXY_L_HTTP));
	snprintf(t->socks_url, sizeof(t->socks_url), "socks5h://127.0.0.1:%u",
		 proxy_port(t->px, PROXY_L_SOCKS));
	return 0;
}

/* The status socket; a run without one still runs (said once). */
static void
open_status(struct target *t)
{
	t->status_fd = status_listen(t->cgid, t->status_path, sizeof(t->status_path));
	if (t->status_fd < 0) {
		log_warnx("%sno status socket: %s", t->env->label, strerror(-t->status_fd));
		return;
	}
	t->ev_status = event_new(t->base, t->status_fd, EV_READ | EV_PERSIST, on_status, t);
	if (!t->ev_status || event_add(t->ev_status, NULL))
		log_warnx("%sno status socket: cannot watch it", t->env->label);
}

static void
loader_options(const struct target *t, uint64_t cgid, struct loader_opts *lo)
{
	const struct target_opts *o = t->o;

	memset(lo, 0, sizeof(*lo));
	if (t->px) {
		lo->tproxy_port =
			o->tproxy_port ? o->tproxy_port : proxy_port(t->px, PROXY_L_TPROXY);
		lo->dns_port = o->dns_port ? o->dns_port : t->dns ? dns_port(t->dns) : 0;
		lo->proxy_ports[0] = proxy_port(t->px, PROXY_L_HTTP);
		lo->proxy_ports[1] = proxy_port(t->px, PROXY_L_SOCKS);
	}
	lo->proxy_ports[2] = o->proxy_ports[0];
	lo->proxy_ports[3] = o->proxy_ports[1];
	lo->unix_hooks = !o->allow_abstract_unix;
	lo->emit_redirects = t->env->emit_redirects;
	lo->audit_mode = o->audit;
	lo->local_udp_any = o->local_udp_any;
	lo->fast_nets = o->ndirect_nets > 0;
	lo->peers = o->peers;
	lo->sandbox_cgid = cgid;
	lo->unix_svc = &t->unix_svc;
	lo->ns_ip4 = o->containers_ip4;
	lo->ipv6 = o->ipv6;
	memcpy(lo->skip_progs, o->skip_progs, sizeof(lo->skip_progs));
	lo->socks_max = o->socks_max;
	lo->map_entries = (uint32_t)o->map_entries;
	lo->on_event = target_on_event;
	lo->arg = (void *)t;
}

/* Takes over the programs pinned for cgid, and opens the listeners on
 * the ports they redirect to. -errno with errbuf set when they cannot be
 * taken over as they are (then attach afresh: no gap either). */
static int
adopt(struct target *t, uint64_t cgid, char *errbuf, size_t errlen)
{
	const struct target_opts *o = t->o;
	struct loader_opts want, pinned;
	struct loader *ld;
	int err;

	loader_options(t, cgid, &want);
	ld = loader_adopt(&want, cgid, &pinned, errbuf, errlen);
	if (!ld)
		return -errno;
	if ((o->tproxy_port && pinned.tproxy_port != o->tproxy_port) ||
	    (o->dns_port && pinned.dns_port != o->dns_port) ||
	    pinned.proxy_ports[2] != o->proxy_ports[0] ||
	    pinned.proxy_ports[3] != o->proxy_ports[1]) {
		snprintf(errbuf, errlen, "the pinned programs redirect to other ports");
		err = -ESTALE;
		goto fail;
	}
	err = open_listeners(t, &pinned, errbuf, errlen);
	if (err)
		goto fail;
	t->ld = ld;
	return 0;
fail:
	loader_free(ld); /* the pins stay: they go on enforcing */
	return err;
}

/* Whether the target ends the direct connections a policy change denies
 * (audit mode denies nothing). */
static bool
revoking(const struct target *t)
{
	return t->env->revoke_direct && !t->o->audit;
}

/* The iterators of the pre-existing and the revoke passes, sharing the
 * programs' socket maps (50-70 ms: before the attach, or at a take-over). */
static struct existing *
open_iterators(struct target *t, const char *cgpath, uint64_t cgid, char *errbuf, size_t errlen)
{
	struct existing_opts eo = {
		.socks_fd = loader_socks_fd(t->ld),
		.sk_fd = loader_sk_fd(t->ld),
		.cgid = cgid,
		.cg_path = cgpath,
		.kill = t->env->kill_existing,
		.revoke = revoking(t),
	};

	struct existing *ex = t->ahead;

	t->ahead = NULL;
	if (ex && existing_matches(ex, &eo)) {
		log_info("%sthe revoke pass's iterators: loaded while the policy was built",
			 t->env->label);
		return ex;
	}
	if (ex)
		log_info("%sthe iterators loaded ahead are not for these maps: loading them again",
			 t->env->label);
	existing_free(ex);
	return existing_open(&eo, errbuf, errlen);
}

struct existing *
target_iterators_ahead(uint64_t cgid, const char *cgpath, bool kill, bool revoke, char *errbuf,
		       size_t errlen)
{
	struct existing_opts eo = {
		.socks_fd = loader_pinned_map(cgid, "socks"),
		.sk_fd = loader_pinned_map(cgid, "sk"),
		.cgid = cgid,
		.cg_path = cgpath,
		.kill = kill,
		.revoke = revoke,
	};
	struct existing *ex = NULL;
	int err = eo.socks_fd < 0 ? eo.socks_fd : eo.sk_fd < 0 ? eo.sk_fd : 0;

	if (err)
		snprintf(errbuf, errlen, "no maps pinned for cgroup %llu: %s",
			 (unsigned long long)cgid, strerror(-err));
	else
		ex = existing_open(&eo, errbuf, errlen); /* the maps' fds are dup()ed */
	err = ex ? 0 : err ? err : -errno;
	if (eo.socks_fd >= 0)
		close(eo.socks_fd);
	if (eo.sk_fd >= 0)
		close(eo.sk_fd);
	errno = -err;
	return ex;
}

void
target_take_iterators(struct target *t, struct existing *ex)
{
	existing_free(t->ahead);
	t->ahead = ex;
}

/* The connections the cgroup had before the attach: listed and left open,
 * or ended (env->kill_existing), for env->on_existing. */
static void
existing_pass(struct target *t, struct existing *ex)
{
	struct existing_conn *v = NULL;
	struct existing_stats st = {0};
	char why[512];
	size_t n = 0;

	if (existing_run(ex, &v, &n, &st, why, sizeof(why)))
		t->env->on_existing(t->env->record_arg, NULL, 0, &st, why);
	else
		t->env->on_existing(t->env->record_arg, v, n, &st, NULL);
	free(v);
}

/* A load of the programs (target.h): what the worker reads, copied, and
 * what it made. */
struct target_load {
	struct loader_opts lo;
	char cgpath[PATH_MAX];
	uint64_t cgid;
	bool iterators, kill, revoke;
	struct loader *ld;
	struct existing *ex;
	int err;
	char errbuf[512];
};

/* The listeners on free ports, and what loading the programs for them
 * needs, into a new *jp. */
static int
load_prepare(struct target *t, const char *cgpath, uint64_t cgid, struct target_load **jp,
	     char *errbuf, size_t errlen)
{
	struct target_load *j = calloc(1, sizeof(*j));
	int err;

	if (!j) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	err = open_listeners(t, NULL, errbuf, errlen);
	if (err) {
		free(j);
		return err;
	}
	loader_options(t, cgid, &j->lo);
	snprintf(j->cgpath, sizeof(j->cgpath), "%s", cgpath);
	j->cgid = cgid;
	/* loaded now: after the attach they only have to run */
	j->iterators = t->env->existing_pass || revoking(t);
	j->kill = t->env->kill_existing;
	j->revoke = revoking(t);
	*jp = j;
	return 0;
}

void
target_load_run(struct target_load *j)
{
	struct existing_opts eo = {
		.cgid = j->cgid, .cg_path = j->cgpath, .kill = j->kill, .revoke = j->revoke};

	j->ld = loader_open(&j->lo, j->errbuf, sizeof(j->errbuf));
	if (!j->ld) {
		j->err = errno ? -errno : -EINVAL;
		return;
	}
	if (!j->iterators)
		return;
	/* the iterators of the pre-existing and the revoke passes, sharing
	 * the programs' socket maps (50-70 ms) */
	eo.socks_fd = loader_socks_fd(j->ld);
	eo.sk_fd = loader_sk_fd(j->ld);
	j->ex = existing_open(&eo, j->errbuf, sizeof(j->errbuf));
	if (!j->ex) {
		j->err = errno ? -errno : -ENOTSUP;
		loader_free(j->ld);
		j->ld = NULL;
	}
}

void
target_load_free(struct target_load *j)
{
	if (!j)
		return;
	existing_free(j->ex);
	loader_free(j->ld);
	free(j);
}

/* The programs j loaded attached (links first, then any stale pins
 * replaced: no gap); the iterators kept for the revoke pass. */
static int
attach_loaded(struct target *t, struct target_load *j, int cg_fd, uint64_t cgid, char *errbuf,
	      size_t errlen)
{
	struct existing *ex = j->ex;
	int err;

	if (j->err) {
		snprintf(errbuf, errlen, "%s", j->errbuf);
		return j->err;
	}
	t->ld = j->ld;
	j->ld = NULL;
	j->ex = NULL;
	err = loader_attach(t->ld, cg_fd, cgid, errbuf, errlen);
	if (err)
		goto fail;
	if (ex && t->env->existing_pass)
		existing_pass(t, ex);
	if (ex && revoking(t)) { /* kept: a reload must not pay the load */
		t->rk = revoker_new(ex);
		if (!t->rk) {
			snprintf(errbuf, errlen, "out of memory");
			loader_detach(t->ld);
			err = -ENOMEM;
			ex = NULL;
			goto fail;
		}
	} else {
		existing_free(ex);
	}
	return 0;
fail:
	existing_free(ex);
	loader_free(t->ld);
	t->ld = NULL;
	return err;
}

static int attach_rest(struct target *t, const char *cgpath, uint64_t cgid, char *errbuf,
		       size_t errlen);

int
target_attach_begin(struct target *t, const char *cgpath, uint64_t cgid, bool take_over,
		    struct target_load **jp, char *errbuf, size_t errlen)
{
	char why[512];
	int err;

	*jp = NULL;
	t->adopted = false;
	if (take_over) {
		err = adopt(t, cgid, why, sizeof(why));
		if (!err)
			t->adopted = true;
		else if (err != -ENOENT)
			log_warnx("%scannot take over the programs pinned on %s (%s): attaching "
				  "afresh",
				  t->env->label, cgpath, why);
	}
	if (!t->adopted) {
		existing_free(t->ahead); /* loaded for the pinned programs: not these */
		t->ahead = NULL;
		err = load_prepare(t, cgpath, cgid, jp, errbuf, errlen);
		return err ? err : 1;
	}
	if (revoking(t)) {
		struct existing *ex = open_iterators(t, cgpath, cgid, errbuf, errlen);

		t->rk = ex ? revoker_new(ex) : NULL;
		if (!t->rk) {
			if (ex)
				snprintf(errbuf, errlen, "out of memory");
			err = ex ? -ENOMEM : errno ? -errno : -ENOTSUP;
			loader_free(t->ld); /* taken-over pins go on enforcing */
			t->ld = NULL;
			close_listeners(t);
			return err;
		}
	}
	return attach_rest(t, cgpath, cgid, errbuf, errlen);
}

int
target_attach_loaded(struct target *t, struct target_load *j, const char *cgpath, int cg_fd,
		     uint64_t cgid, char *errbuf, size_t errlen)
{
	int err = attach_loaded(t, j, cg_fd, cgid, errbuf, errlen);

	if (err) {
		close_listeners(t);
		return err;
	}
	return attach_rest(t, cgpath, cgid, errbuf, errlen);
}

int
target_attach(struct target *t, const char *cgpath, int cg_fd, uint64_t cgid, bool take_over,
	      char *errbuf, size_t errlen)
{
	struct target_load *j;
	int err = target_attach_begin(t, cgpath, cgid, take_over, &j, errbuf, errlen);

	if (err <= 0)
		return err;
	target_load_run(j);
	err = target_attach_loaded(t, j, cgpath, cg_fd, cgid, errbuf, errlen);
	target_load_free(j);
	return err;
}

/* An attach's end, the programs in (attached, or taken over): the proxy
 * and the responder given the kernel's index, the fast path, limits, the
 * event ring, the status socket. On failure what was attached goes. */
static int
attach_rest(struct target *t, const char *cgpath, uint64_t cgid, char *errbuf, size_t errlen)
{
	int err;

	t->cgid = cgid;
	t->cgpath = cgpath;
	proxy_set_index(t->px, loader_conns_fd(t->ld));
	if (t->dns)
		dns_set_index(t->dns, loader_conns_fd(t->ld));
	target_kpath_open(t);
	if (t->adopted) {
		err = target_kpath_restore(t, errbuf, errlen);
		if (err)
			goto out_detach;
	}
	err = target_kpath_sync_rules(t, errbuf, errlen);
	if (err)
		goto out_detach;
	/* what is left to open: the command's own descriptors, the status socket */
	if (proxy_size_limits(t->px, errbuf, errlen)) {
		err = -EMFILE;
		goto out_detach;
	}
	t->ev_ring = event_new(t->base, loader_events_fd(t->ld), EV_READ | EV_PERSIST, on_ring, t);
	/* the kernel submits its kernel-verified allows without a wakeup
	 * (one per connection would cost each handshake a context switch):
	 * they are taken with the next event, or by this timer */
	t->ev_drain = event_new(t->base, -1, EV_PERSIST, on_ring, t);
	if (!t->ev_ring || event_add(t->ev_ring, NULL) || !t->ev_drain ||
	    event_add(t->ev_drain, &(struct timeval){.tv_usec = DRAIN_US})) {
		snprintf(errbuf, errlen, "cannot watch the event ring buffer");
		err = -ENOMEM;
		goto out_detach;
	}
	err = target_watch_hostaddrs(t, errbuf, errlen);
	if (err)
		goto out_detach;
	open_status(t);
	return 0;

out_detach:
	revoker_free(t->rk);
	t->rk = NULL;
	if (!t->adopted) /* what we attached; taken-over pins go on enforcing */
		loader_detach(t->ld);
	if (t->ev_ring)
		event_free(t->ev_ring);
	t->ev_ring = NULL;
	if (t->ev_drain)
		event_free(t->ev_drain);
	t->ev_drain = NULL;
	target_unwatch_hostaddrs(t);
	loader_free(t->ld);
	t->ld = NULL;
	close_listeners(t);
	return err;
}

const struct policy *
target_policy(const struct target *t)
{
	return t->policy;
}

bool
target_adopted(const struct target *t)
{
	return t->adopted;
}

void
target_restored(const struct target *t, int *names, int *fast, int *kv)
{
	*names = t->restored_names;
	*fast = t->restored_fast;
	*kv = t->restored_kv;
}

const char *
target_http_url(const struct target *t)
{
	return t->http_url;
}

void
target_no_proxy(const struct target *t, char *buf, size_t len)
{
	snprintf(buf, len, "localhost,127.0.0.1,::1");
	if (!t->o->no_kverify && !t->o->audit)
		policy_noproxy_names(t->policy, buf, len, TARGET_NOPROXY_MAX);
}

const char *
target_socks_url(const struct target *t)
{
	return t->socks_url;
}

const struct unixsvc *
target_unix_svc(const struct target *t)
{
	return &t->unix_svc;
}

const char *
target_pin_dir(const struct target *t)
{
	return t->ld ? loader_pin_dir(t->ld) : "";
}

struct summary *
target_summary(const struct target *t)
{
	return t->summary;
}

static void
close_status(struct target *t)
{
	if (t->ev_status)
		event_free(t->ev_status);
	t->ev_status = NULL;
	if (t->status_fd >= 0) {
		close(t->status_fd);
		unlink(t->status_path);
	}
	t->status_fd = -1;
}

void
target_finish(struct target *t)
{
	struct proxy_stats ps;
	struct summary_refusals sr = {0};

	if (t->finished)
		return;
	t->finished = true;
	close_status(t);
	if (t->ld)
		loader_events_consume(t->ld); /* what the last moments produced */
	if (t->px) {
		proxy_get_stats(t->px, &ps);
		sr.limit = ps.refused_limit;
		sr.per_process = ps.refused_per_process;
		sr.nofd = ps.refused_nofd;
		sr.closed_early = ps.closed_early;
		sr.max_conns = ps.max_conns;
		sr.max_conns_per_process = ps.max_conns_per_process;
		summary_set_refusals(t->summary, &sr);
	}
	close_listeners(t);	/* closes connections: their last decisions are in */
	audit_finish(t->audit); /* so that the summary can say what was dropped */
}

void
target_print_summary(struct target *t, bool audit_mode)
{
	struct audit_stats ls;

	target_say_suppressed(t);
	audit_get_stats(t->audit, &ls);
	summary_print(t->summary, stderr, audit_mode, &ls); /* with the secrets' lines */
}

void
target_write_suggestion(const struct target *t)
{
	const char *file = t->o->suggest_policy;
	char errbuf[1024], fdlink[32], name[PATH_MAX];
	ssize_t n = -1;

	if (!file)
		return;
	if (!strncmp(file, "fd:", 3)) { /* the name the client opened, to say */
		snprintf(fdlink, sizeof(fdlink), "/proc/self/fd/%s", file + 3);
		n = readlink(fdlink, name, sizeof(name) - 1);
	}
	if (n > 0)
		name[n] = 0;
	if (summary_write_policy(t->summary, file, errbuf, sizeof(errbuf)))
		log_warnx("--suggest-policy%s%s: %s", n > 0 ? " " : "", n > 0 ? name : "", errbuf);
	else
		log_warnx("suggested policy written to %s", n > 0 ? name : file);
}

void
target_reopen_log(struct target *t)
{
	audit_reopen(t->audit);
}

void
target_write_summary_file(struct target *t)
{
	struct audit_stats ls;
	int err;

	if (!t->o->summary_file)
		return;
	audit_get_stats(t->audit, &ls);
	err = summary_append_file(t->summary, t->o->summary_file,
				  (enum summary_format)t->o->summary_format, t->o->audit, &ls);
	if (err)
		log_warnx("%s--summary %s: %s", t->env->label, t->o->summary_file, strerror(-err));
}

void
target_detach(struct target *t)
{
	if (t->ld)
		loader_detach(t->ld);
}

void
target_free(struct target *t)
{
	if (!t)
		return;
	close_status(t);
	if (t->ev_ring)
		event_free(t->ev_ring);
	if (t->ev_drain)
		event_free(t->ev_drain);
	target_unwatch_hostaddrs(t);
	revoker_free(t->rk);
	existing_free(t->ahead);
	loader_free(t->ld);
	close_listeners(t);
	inspector_free(t->ins);	  /* after the connections that use it */
	secrets_free(t->secrets); /* after the proxy and the responder: values wiped */
	summary_free(t->summary);
	audit_close(t->audit);
	policy_free(t->policy);
	explicit_bzero(t->upstream_auth, sizeof(t->upstream_auth));
	free(t);
}

/* The policy in force for the responder and the proxy from now on: what
 * it no longer allows is revoked (counted in rv). The responder first: a
 * name it forgets no longer names a connection judged next. */
static void
listeners_set_policy(struct target *t, struct target_revoked *rv)
{
	struct dns_revoked dr;

	if (t->dns) {
		dns_set_policy(t->dns, t->policy, t->policy, &dr);
		rv->fast += dr.fast;
		rv->names += dr.names;
	}
	if (t->px)
		rv->conns += proxy_set_policy(t->px, t->policy, t->policy);
}

int
target_swap_policy(struct target *t, const struct target_opts *o, struct policy *p,
		   struct target_revoked *rv, struct policy **oldp, char *errbuf, size_t errlen)
{
	struct policy *old = t->policy;
	int err;

	memset(rv, 0, sizeof(*rv));
	t->policy = p;
	t->o = o;
	listeners_set_policy(t, rv);
	if (oldp)
		*oldp = old;
	else
		policy_free(old);
	err = t->ld ? target_kpath_sync_rules(t, errbuf, errlen) : 0;
	target_revoke_direct(t, rv);
	return err;
}

int
target_add_rule(struct target *t, const struct target_rule *r, struct target_revoked *rv,
		char *errbuf, size_t errlen)
{
	char why[400];
	int err;

	memset(rv, 0, sizeof(*rv));
	if (policy_add(t->policy, r->action, r->text, NULL, "runtime", why, sizeof(why))) {
		snprintf(errbuf, errlen, "%s", why);
		return -EINVAL;
	}
	if (r->action == POLICY_DENY) /* what it denies is revoked */
		listeners_set_policy(t, rv);
	err = t->ld ? target_kpath_sync_rules(t, errbuf, errlen) : 0;
	if (r->action == POLICY_DENY)
		target_revoke_direct(t, rv);
	return err;
}

unsigned int
target_rule_count(const struct target *t)
{
	return policy_count(t->policy);
}

uint64_t
target_cgid(const struct target *t)
{
	return t->cgid;
}

int
target_peer_sync(struct target *t, const struct egr_peer_key *k, int n)
{
	return t->ld ? loader_peer_sync(t->ld, k, n) : -ENODEV;
}

void
target_link_ids(const struct target *t, uint32_t *ids, int max, int *n)
{
	*n = 0;
	if (t->ld)
		loader_link_ids(t->ld, ids, max, n);
}
