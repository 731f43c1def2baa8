// SPDX-License-Identifier: Apache-2.0
/* One confined cgroup, the composition root: its policy, decision log and
 * summary, the proxy and the DNS responder side by side (sharing one
 * resolver; neither knows the other), the BPF programs attached to it with
 * their kernel paths (kpath.c), and the status socket. `run` makes one for
 * the cgroup it starts CMD in; the daemon one per target it confines. The
 * options every target takes are options.h's. */
#ifndef TARGET_H
#define TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_abi.h"
#include "lib/ask_hook.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "dns/responder.h"
#include "confine/options.h"

struct event_base;
struct summary;
struct audit_rec;
struct status_info;
struct existing_conn;
struct existing_stats;
struct unixsvc;

/* What the command around a target adds. */
struct target_env {
	const char *label;   /* prefix of its stderr lines ("" for run) */
	const char *command; /* what status shows as the command */
	bool denial_lines;   /* print denials on stderr (rate-limited) */
	struct ask_hook ask; /* --ask (run: cli/ask.c); .ask NULL for none */
	bool emit_redirects; /* the kernel reports redirects too (someone reads them) */
	/* every record written to the target's log, decisions and events
	 * (the daemon's `log -f`); NULL for none */
	void (*on_record)(void *arg, const struct audit_rec *r);
	void *record_arg;
	/* names the cgroup of each record (the daemon's containers: its path
	 * and container id, audit_namer); NULL for none */
	void (*name_cgroup)(void *arg, uint64_t cgid, const char **path, const char **id);
	void *name_arg;
	/* OTLP logs: resource attributes of the target's own, key, value
	 * pairs (the daemon's for a pod: container.id, k8s.pod.name, ...) */
	const char *const *resource;
	int nresource;
	/* attaching to a live cgroup (the daemon): right after the attach, the
	 * connections it had open are found (kernel/existing.c) and left open
	 * or, with kill_existing, ended; on_existing gets them (err: why the
	 * pass could not run, or NULL). Not when pinned programs are taken
	 * over: their pass ran when they were attached. */
	bool existing_pass;
	bool kill_existing;
	/* after each change of the policy, end the connections that went
	 * direct (the kernel fast path) to a destination it no longer allows
	 * (confine/revoke.c): the daemon. run's policy only grows (an --ask
	 * "always" adds an allow), so it has nothing to revoke */
	bool revoke_direct;
	void (*on_existing)(void *arg, const struct existing_conn *c, size_t n,
			    const struct existing_stats *st, const char *err);
	/* HTTPS inspection: the command hands the CA to what it confines
	 * (run: CMD's trust files); else a CA made now is trusted by nothing
	 * confined, which is said at start (the daemon: give it --ca) */
	bool hands_ca;
	/* secrets (policy/secret.h): the command gives CMD their placeholders
	 * (run), or they go to --secret-placeholders' file for whoever started
	 * it (the daemon's one target given it); else a policy with secrets
	 * is refused */
	bool hands_secrets;
	/* the service's run (root, for a user): secrets only from fd:N, the
	 * values its client read as the user: --secret's, and a policy file's
	 * as client_secrets gives them, "NAME=fd:N" each (--client-secret) */
	bool secrets_from_client;
	const char *const *client_secrets;
	int nclient_secrets;
	/* the policy file's name for status, where o->policy_file is another
	 * (the service's run: fd:N of what its client read; NULL: that) */
	const char *policy_name;
	/* names its DNS responder answers itself (dns_opts.local_name: the
	 * daemon's docker, a job's containers by their names on the docker
	 * networks they share); NULL for none */
	int (*local_name)(void *arg, uint64_t netns, const char *name, int af, uint8_t (*addr)[16],
			  int max);
	void *local_arg;
};

struct target;

/* The policy (policy, owned from now on, when it was built already; else
 * built from o), the log and the summary; nothing listens or is attached
 * yet. o and env must outlive the target. NULL with errbuf set. */
struct target *target_new(struct event_base *base, const struct target_opts *o,
			  const struct target_env *env, struct policy *policy, char *errbuf,
			  size_t errlen);

/* Opens the proxy and DNS listeners, loads the programs for cgroup cgid
 * (directory fd cg_fd, path cgpath), attaches and pins them, gives the
 * proxy and the responder the kernel's index and paths, opens the fast path for
 * exact-address rules, sizes the limits and opens the status socket. With
 * take_over, programs an egressctl that is gone left pinned on the cgroup
 * are taken over as they are (the listeners open on the ports they
 * redirect to) when they can be; else they are replaced after the new
 * links are in. Returns 0 or -errno with errbuf set (nothing this call
 * attached stays attached then). */
int target_attach(struct target *t, const char *cgpath, int cg_fd, uint64_t cgid, bool take_over,
		  char *errbuf, size_t errlen);

/* The iterators of the revoke pass for a take-over of the programs pinned
 * on cgid (cgpath), loaded before the target is (on another thread: they
 * touch nothing but the pinned maps): 25-30 ms of a daemon's restart that
 * its policies' build hides. NULL with errbuf set and errno (ENOENT:
 * nothing pinned). target_take_iterators() hands them to the target,
 * whose take-over uses them if they match its programs' maps, else frees
 * them. kill and revoke as in target_env (kill_existing; revoke_direct
 * and not audit). */
struct existing;
struct existing *target_iterators_ahead(uint64_t cgid, const char *cgpath, bool kill, bool revoke,
					char *errbuf, size_t errlen);
void target_take_iterators(struct target *t, struct existing *ex);

/* target_attach() in three steps, for a caller that loads the programs
 * off its event loop (the daemon's selectors): target_attach_begin() on
 * the loop takes pinned programs over (take_over) and then is done (0),
 * or opens the listeners and says what to load (1, *jp); then
 * target_load_run(*jp) anywhere (a worker thread: it touches nothing but
 * *jp and what the target holds still meanwhile), then, on the loop,
 * target_attach_loaded() and target_load_free(). -errno with errbuf set
 * from either end (the listeners closed, nothing attached). */
struct target_load;
int target_attach_begin(struct target *t, const char *cgpath, uint64_t cgid, bool take_over,
			struct target_load **jp, char *errbuf, size_t errlen);
void target_load_run(struct target_load *j);
int target_attach_loaded(struct target *t, struct target_load *j, const char *cgpath, int cg_fd,
			 uint64_t cgid, char *errbuf, size_t errlen);
void target_load_free(struct target_load *j);

/* Does an exact ADDR:PORT rule of p (IPv6 ones with v6) put sa on the
 * kernel fast path, as a target's programs would? */
bool target_fast_rule(const struct policy *p, bool v6, const struct sockaddr *sa);

/* The secrets CMD gets placeholders for (policy/secret.h); NULL when the
 * policy has none. */
const struct secrets *target_secrets(const struct target *t);

/* The policy in force (the target's, until its next swap). */
const struct policy *target_policy(const struct target *t);

/* Whether target_attach() took pinned programs over. */
bool target_adopted(const struct target *t);
/* Of a target that took over pinned programs: the learned names, fast-path
 * and kernel-verified approvals taken back from the daemon before it. */
void target_restored(const struct target *t, int *names, int *fast, int *kv);

/* HTTPS inspection's CA certificate in PEM (malloc'd), for CMD to trust;
 * NULL when nothing inspects (the policy has no rule that does, no --ca)
 * or out of memory. */
char *target_ca_pem(const struct target *t, size_t *len);

/* "http://127.0.0.1:PORT" and "socks5h://127.0.0.1:PORT" for CMD. */
const char *target_http_url(const struct target *t);
const char *target_socks_url(const struct target *t);

/* NO_PROXY for CMD (len: 4096 is enough): loopback, and while the
 * kernel-verified path is on (not --no-kernel-verify, not --audit) the
 * names it serves (policy_noproxy_names, at most TARGET_NOPROXY_MAX):
 * proxy-aware clients reach them direct at full speed, and go through the
 * proxy, with its 403, for everything else. */
#define TARGET_NOPROXY_MAX 64
void target_no_proxy(const struct target *t, char *buf, size_t len);

/* Reads what the programs reported last, closes every connection (their
 * last decisions go in), and finishes the log; the summary is complete. */
void target_finish(struct target *t);

/* Lifts confinement: unpins and detaches the programs. */
void target_detach(struct target *t);

/* The pins' directory (for messages). */
const char *target_pin_dir(const struct target *t);

/* The unix sockets denied to the target (its defaults and options): the
 * programs check the name CMD gives; run also masks them in CMD's mount
 * namespace (which every other name resolves into). */
const struct unixsvc *target_unix_svc(const struct target *t);

/* The summary of everything decided; the log's fate for it. */
struct summary *target_summary(const struct target *t);
void target_print_summary(struct target *t, bool audit_mode);

/* Writes --suggest-policy if it was asked for (said on stderr). */
void target_write_suggestion(const struct target *t);

/* Opens a --log FILE anew (logrotate): SIGUSR1 for run, SIGHUP for the
 * daemon. */
void target_reopen_log(struct target *t);

/* Appends the summary to --summary FILE, if it was asked for (a failure is
 * said on stderr). After target_finish(). */
void target_write_summary_file(struct target *t);

/* What a change of the policy revoked. */
struct target_revoked {
	uint64_t conns; /* proxy connections closed, direct ones ended */
	uint64_t fast;	/* fast-path entries removed */
	uint64_t names; /* learned names forgotten */
};

/* p (owned from now on) decides everything from now on; o (which must
 * outlive the target) differs from the old one only in the policy's
 * options: open connections, fast-path entries and learned names p no
 * longer allows are revoked (rv), the exact-address fast path follows p's
 * exact-address rules. The old policy goes to *oldp (for the caller to free
 * off the loop: a big one takes milliseconds), or is freed (oldp NULL).
 * Returns 0, or -errno with errbuf set when the fast path cannot follow
 * (the policy is in force either way). */
int target_swap_policy(struct target *t, const struct target_opts *o, struct policy *p,
		       struct target_revoked *rv, struct policy **oldp, char *errbuf,
		       size_t errlen);

/* One runtime rule added to the policy in force (the fast path follows).
 * A deny revokes what it denies. */
int target_add_rule(struct target *t, const struct target_rule *r, struct target_revoked *rv,
		    char *errbuf, size_t errlen);

/* Rules in force. */
unsigned int target_rule_count(const struct target *t);

/* One of the daemon's own events in the target's log (event, words, and
 * optionally who and where). */
void target_log_event(struct target *t, const struct audit_rec *r);

/* The cgroup's id, and the programs' link ids (n of at most max). */
uint64_t target_cgid(const struct target *t);

/* Its egr_peer := exactly the n keys k (loader_peer_sync): whom a socket
 * of one of its containers' network namespaces reaches direct. 0 or
 * -errno (-ENODEV: not attached). */
int target_peer_sync(struct target *t, const struct egr_peer_key *k, int n);
void target_link_ids(const struct target *t, uint32_t *ids, int max, int *n);

/* The proxy's and the responder's counters, as `status` shows them. */
void target_status(const struct target *t, struct status_info *si);

/* What a target's counters say now, for metrics. */
struct target_counters {
	struct proxy_stats proxy;   /* zeros without a proxy */
	uint64_t kernel[EGR_C_MAX]; /* the programs' counters */
	int fast_entries;	    /* fast-path entries (egr_fast), of EGR_FAST_CAPACITY */
	struct dns_stats dns;	    /* zeros without a responder */
};
void target_counters(const struct target *t, struct target_counters *c);

/* Frees; pinned programs stay attached unless target_detach() ran. */
void target_free(struct target *t);

#endif /* TARGET_H */
