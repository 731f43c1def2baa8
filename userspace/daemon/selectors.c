// SPDX-License-Identifier: Apache-2.0
/* Selectors (see dconfig.h): a target of the config whose "cgroup" is a
 * glob names no cgroup but every one that matches, now or later. Below each
 * selector's root (the directories before its first glob) every cgroup is
 * looked at when it appears (inotify on each directory under which a match
 * may still come) and at start: the first selector that matches it makes
 * it a target of its own, with the selector's options, policy and a name
 * "SELECTOR:/path"; one under which none can match gets the config's
 * default (confined with nothing allowed, or left alone). A matched cgroup
 * is confined with its descendants; it goes when its cgroup does. Each root
 * is held (kernel/hold.h): a cgroup made below it can do nothing on the
 * network until the walk has passed it, as a target attached, the default's
 * "unconfined", or a directory to watch. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <event2/event.h>

#include "daemon/containers.h"
#include "daemon/core.h"
#include "daemon/oci.h"
#include "egress_abi.h"
#include "kernel/cgroup.h"
#include "kernel/hold.h"
#include "lib/log.h"

struct sel_watch {
	int wd;
	char path[PATH_MAX];
};

/* A match inotify found, attached on a later turn of the loop: the
 * cgroups made with it are looked at (and the ones left alone let go by
 * their holds) first, not after every attach before them. */
struct sel_pending {
	struct sel_pending *next;
	uint64_t cgid;
	int sel;
	char path[PATH_MAX];
};

static bool deferring; /* sel_event's look: matches go to dm->pending */

static bool
below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

/* What selectors read of a cgroup's container, each once per sel_choose
 * (state: 0 unread, 1 read, -1 none): its OCI bundle's annotations, its
 * docker labels. */
struct ctr_meta {
	struct oci_info ann, lab;
	int ann_state, lab_state;
};

/* Does every KEY of globs (a selector's "annotations" or "labels") have a
 * value in in that its GLOB matches? */
static bool
meta_match(const json_t *globs, const struct oci_info *in)
{
	const char *key;
	json_t *glob;

	json_object_foreach((json_t *)globs, key, glob) {
		const char *v = oci_get(in, key);

		if (!v || fnmatch(json_string_value(glob), v, 0))
			return false;
	}
	return true;
}

/* Does the container of path carry every annotation and label of s? */
static bool
container_match(const struct dconfig *c, const struct dspec *s, const char *path,
		struct ctr_meta *m)
{
	char err[300];
	int rc;

	if (s->annotations && !m->ann_state) {
		rc = c->nbundle_dirs ? oci_read_bundle(path, c->bundle_dirs, c->nbundle_dirs,
						       &m->ann, err, sizeof(err))
				     : oci_read_bundle(path, oci_default_dirs, oci_ndefault_dirs,
						       &m->ann, err, sizeof(err));
		m->ann_state = rc ? -1 : 1;
		if (rc)
			log_info("selectors: %s: %s", path, err);
	}
	if (s->labels && !m->lab_state) {
		rc = c->ndocker_dirs
			     ? oci_read_docker(path, c->docker_dirs, c->ndocker_dirs, &m->lab, err,
					       sizeof(err))
			     : oci_read_docker(path, oci_default_docker_dirs,
					       oci_ndefault_docker_dirs, &m->lab, err, sizeof(err));
		m->lab_state = rc ? -1 : 1;
		if (rc)
			log_info("selectors: %s: %s", path, err);
	}
	return (!s->annotations || (m->ann_state > 0 && meta_match(s->annotations, &m->ann))) &&
	       (!s->labels || (m->lab_state > 0 && meta_match(s->labels, &m->lab)));
}

int
sel_choose(const struct dconfig *c, const char *mnt, const char *path, enum dsel_match *best)
{
	const char *rel = path + strlen(mnt);
	struct ctr_meta meta = {0};
	int chosen = -1;

	*best = DSEL_NONE;
	if (!rel[0])
		rel = "/";
	for (int i = 0; i < c->n && chosen < 0; i++) {
		enum dsel_match m;

		if (!c->specs[i].selector)
			continue;
		m = dsel_match(dsel_rel(mnt, c->specs[i].what), rel);
		if (m == DSEL_MATCH && (c->specs[i].annotations || c->specs[i].labels) &&
		    !container_match(c, &c->specs[i], path, &meta))
			continue; /* its cgroup, not its container */
		if (m == DSEL_MATCH)
			chosen = i;
		if (m > *best)
			*best = m;
	}
	oci_free(&meta.ann);
	oci_free(&meta.lab);
	if (chosen >= 0)
		return chosen;
	return c->dflt == DCONFIG_DFLT_DENY ? SEL_DEFAULT_DENY : SEL_UNCONFINED;
}

void
sel_fill(struct dtarget *dt, const struct dspec *s, int sel)
{
	const char *rel = dt->dyn_what + strlen(dt->dm->mnt);

	dt->spec = *s;
	dt->sel = sel;
	dt->spec.selector = false;
	dt->spec.kind = DSPEC_CGROUP;
	dt->spec.what = dt->dyn_what;
	snprintf(dt->dyn_name, sizeof(dt->dyn_name), "%s:%s", s->name, rel);
	dt->spec.name = dt->dyn_name;
	snprintf(dt->spec.where, sizeof(dt->spec.where), "%.40s (%s)", s->where,
		 sel >= 0 ? "selector" : "default");
	snprintf(dt->label, sizeof(dt->label), "target %s: ", dt->dyn_name);
	snprintf(dt->command, sizeof(dt->command), "daemon target %s", dt->dyn_name);
	dt->env.kill_existing = s->kill_existing;
	dt_name_containers(dt);
}

/* A container's identity, as OpenTelemetry's semantic conventions name it,
 * for the resource of dt's OTLP logs: its id, and its pod's namespace,
 * name and container name from the annotations the kubelet's runtime
 * writes (containerd's CRI names, else CRI-O's and dockershim's). */
static void
sel_identity(struct dtarget *dt)
{
	static const struct {
		const char *attr, *keys[3];
	} map[] = {
		{"k8s.namespace.name",
		 {"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace", NULL}},
		{"k8s.pod.name",
		 {"io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name", NULL}},
		{"k8s.container.name",
		 {"io.kubernetes.cri.container-name", "io.kubernetes.container.name", NULL}},
	};
	const struct dconfig *c = &dt->dm->cfg;
	struct oci_info in;
	char err[300], id[80];
	int n = 0;

	if (!ctr_id_of_path(dt->dyn_what, id, sizeof(id)))
		return;
	snprintf(dt->res_text[n], sizeof(dt->res_text[n]), "%s", id);
	dt->res[2 * n] = "container.id";
	dt->res[2 * n + 1] = dt->res_text[n];
	n++;
	if (!(c->nbundle_dirs ? oci_read_bundle(dt->dyn_what, c->bundle_dirs, c->nbundle_dirs, &in,
						err, sizeof(err))
			      : oci_read_bundle(dt->dyn_what, oci_default_dirs, oci_ndefault_dirs,
						&in, err, sizeof(err)))) {
		for (size_t m = 0; m < sizeof(map) / sizeof(map[0]); m++) {
			const char *v = NULL;

			for (int k = 0; map[m].keys[k] && !v; k++)
				v = oci_get(&in, map[m].keys[k]);
			if (!v)
				continue;
			snprintf(dt->res_text[n], sizeof(dt->res_text[n]), "%s", v);
			dt->res[2 * n] = map[m].attr;
			dt->res[2 * n + 1] = dt->res_text[n];
			n++;
		}
		oci_free(&in);
	}
	dt->env.resource = dt->res;
	dt->env.nresource = n;
}

static void sel_attach(struct daemon *dm, const char *path, int sel);

static void
on_pending(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *dm = arg;
	struct sel_pending *p = dm->pending;
	struct dtarget *dt;

	(void)fd;
	(void)what;
	if (!p)
		return;
	dm->pending = p->next;
	if (dm->pending)
		event_active(dm->ev_pending, EV_TIMEOUT, 0); /* the next, after what waits */
	if (cgroup_id_of(p->path) != p->cgid) {
		free(p); /* gone, or made again: its own event comes */
		return;
	}
	TAILQ_FOREACH(dt, &dm->targets, entry)
	if (dt->cgpath[0] && below(p->path, dt->cgpath))
		break;
	if (!dt)
		sel_attach(dm, p->path, p->sel);
	free(p);
}

/* path (matched: sel) attached on a later turn, unless it waits already. */
static void
defer_attach(struct daemon *dm, const char *path, int sel)
{
	struct sel_pending *p, **tail = &dm->pending;
	uint64_t cgid = cgroup_id_of(path);

	for (p = dm->pending; p; tail = &p->next, p = p->next)
		if (p->cgid == cgid)
			return;
	if (!dm->ev_pending)
		dm->ev_pending = event_new(dm->base, -1, 0, on_pending, dm);
	p = calloc(1, sizeof(*p));
	if (!p || !dm->ev_pending) {
		free(p);
		sel_attach(dm, path, sel); /* now, then */
		return;
	}
	p->cgid = cgid;
	p->sel = sel;
	snprintf(p->path, sizeof(p->path), "%s", path);
	*tail = p;
	event_active(dm->ev_pending, EV_TIMEOUT, 0);
}

/* path, matched by selector sel (or the default's): a target of its own. */
static void
sel_attach(struct daemon *dm, const char *path, int sel)
{
	const struct dspec *s = sel >= 0 ? &dm->cfg.specs[sel] : &dm->cfg.deny;
	struct dtarget *dt = dt_new(dm, s);
	char why[512];

	if (!dt) {
		log_warnx("%s: out of memory", path);
		return;
	}
	dt->dyn = true;
	snprintf(dt->dyn_what, sizeof(dt->dyn_what), "%s", path);
	sel_fill(dt, s, sel);
	sel_identity(dt);
	if (dt_start(dt, NULL, why, sizeof(why)) || (!dt->tg && !dt->loading)) {
		if (dt->tg || dt->wd < 0)
			log_warnx("%s%s (held: nothing of it leaves)", dt->label, why);
		dt_free(dt, false); /* or gone already */
		sel_unpass(dm, cgroup_id_of(path));
	}
}

static void
watch_dir(struct daemon *dm, const char *path)
{
	struct sel_watch *w;
	int wd;

	for (int i = 0; i < dm->nsw; i++)
		if (!strcmp(dm->sw[i].path, path))
			return;
	wd = inotify_add_watch(dm->ino_fd, path, IN_CREATE | IN_ONLYDIR);
	if (wd < 0) {
		log_warnx("selectors: cannot watch %s: %s (its new cgroups are found once a "
			  "second)",
			  path, strerror(errno));
		return;
	}
	if (dm->nsw == dm->capsw) {
		int cap = dm->capsw ? dm->capsw * 2 : 16;
		struct sel_watch *n = realloc(dm->sw, (size_t)cap * sizeof(*n));

		if (!n) {
			inotify_rm_watch(dm->ino_fd, wd);
			return;
		}
		dm->sw = n;
		dm->capsw = cap;
	}
	w = &dm->sw[dm->nsw++];
	w->wd = wd;
	snprintf(w->path, sizeof(w->path), "%s", path);
}

/* Is the daemon's own cgroup at or below path? */
static bool
self_below(struct daemon *dm, const char *path)
{
	if (!dm->self_cg[0] && cgroup_of_pid(dm->mnt, getpid(), dm->self_cg, sizeof(dm->self_cg)))
		return false;
	return below(dm->self_cg, path);
}

static void root_of(const char *mnt, const char *glob, char *out, size_t len);
static void hold_root_for(struct daemon *dm, const char *root, char *out, size_t len);

/* Is path at or below a selector's root? (Above one, on the way to it
 * from the hold of its nearest ancestor, the default does not apply.) */
static bool
below_a_root(struct daemon *dm, const char *path)
{
	for (int i = 0; i < dm->cfg.n; i++) {
		char root[PATH_MAX];

		if (!dm->cfg.specs[i].selector)
			continue;
		root_of(dm->mnt, dm->cfg.specs[i].what, root, sizeof(root));
		if (root[0] && below(path, root))
			return true;
	}
	return false;
}

/* One cgroup below a hold's root, as it is now: a target, a directory to
 * watch and walk, or the default's (or, off the way to a selector's root
 * not made yet, let go). */
static void
sel_look(struct daemon *dm, const char *path, int depth)
{
	struct dtarget *dt, *tmp;
	enum dsel_match best;
	int sel;

	if (depth > 32)
		return;
	TAILQ_FOREACH_SAFE(dt, &dm->targets, entry, tmp)
	{
		if (!dt->cgpath[0] || !below(path, dt->cgpath))
			continue;
		/* a recycled name: the target of the cgroup before goes */
		if (dt->dyn && dt->tg && !strcmp(path, dt->cgpath) &&
		    cgroup_id_of(path) != dt->cgid) {
			dt_event(dt, "detach", "cgroup %s (%llu) is gone", dt->cgpath,
				 (unsigned long long)dt->cgid);
			dt_free(dt, true);
			continue;
		}
		return; /* confined with a target above it, or by it */
	}
	sel = sel_choose(&dm->cfg, dm->mnt, path, &best);
	if (self_below(dm, path)) {
		/* the daemon's own cgroup (its pod, as a DaemonSet) is never a
		 * target: what is beside it below path still may be */
		best = DSEL_BELOW;
	}
	if (best == DSEL_NONE && sel == SEL_DEFAULT_DENY && !below_a_root(dm, path))
		sel = SEL_UNCONFINED; /* beside the way to a root: no selector's */
	if (best == DSEL_MATCH || (best == DSEL_NONE && sel == SEL_DEFAULT_DENY)) {
		TAILQ_FOREACH(dt, &dm->targets, entry)
		if (dt->cgpath[0] && below(dt->cgpath, path)) {
			log_warnx("selectors: %s holds target %s (%s): not confined as a whole",
				  path, dt->spec.name, dt->cgpath);
			sel_pass(dm, path, cgroup_id_of(path), EGR_HOLD_SELF);
			return;
		}
		if (deferring)
			defer_attach(dm, path, best == DSEL_MATCH ? sel : SEL_DEFAULT_DENY);
		else
			sel_attach(dm, path, best == DSEL_MATCH ? sel : SEL_DEFAULT_DENY);
		return;
	}
	if (best == DSEL_NONE) { /* the default's "unconfined" */
		sel_pass(dm, path, cgroup_id_of(path), EGR_HOLD_TREE);
		return;
	}
	if (best == DSEL_BELOW) {
		DIR *d;
		struct dirent *e;

		/* it alone: what comes below it is looked at first */
		sel_pass(dm, path, cgroup_id_of(path), EGR_HOLD_SELF);
		watch_dir(dm, path); /* before the walk: nothing made meanwhile is missed */
		d = opendir(path);
		while (d && (e = readdir(d))) {
			char sub[PATH_MAX];

			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >=
			    sizeof(sub))
				continue;
			sel_look(dm, sub, depth + 1);
		}
		if (d)
			closedir(d);
	}
}

/* A selector's root: its directories before the first glob. */
static void
root_of(const char *mnt, const char *glob, char *out, size_t len)
{
	const char *rel = dsel_rel(mnt, glob), *g = strpbrk(rel, "*?[");
	size_t n = (size_t)(g - rel);

	while (n && rel[n - 1] != '/')
		n--;
	if (n > 1)
		n--; /* its slash */
	if ((size_t)snprintf(out, len, "%s%.*s", mnt, n > 1 ? (int)n : 0, rel) >= len)
		out[0] = 0;
}

void
sel_discover(struct daemon *dm)
{
	char err[600];

	if (sel_hold_roots(dm, err, sizeof(err)))
		log_warnx("selectors: %s", err);
	for (int i = 0; i < dm->cfg.n; i++) {
		char root[PATH_MAX];
		struct stat st;

		if (!dm->cfg.specs[i].selector)
			continue;
		root_of(dm->mnt, dm->cfg.specs[i].what, root, sizeof(root));
		if (stat(root, &st) || !S_ISDIR(st.st_mode)) {
			char held[PATH_MAX];

			/* the way to it, from its hold's root: watched, so
			 * that it is looked at as it is made */
			hold_root_for(dm, root, held, sizeof(held));
			if (stat(held, &st) || !S_ISDIR(st.st_mode))
				continue; /* the tick looks again */
			sel_look(dm, held, 0);
			continue;
		}
		sel_look(dm, root, 0);
	}
	/* a hold taken over keeps what the walk passed again: the rest is an
	 * earlier daemon's, of cgroups gone since */
	for (int i = 0; i < dm->nholds; i++)
		if (!dm->swept[i]) {
			hold_sweep(dm->holds[i]);
			dm->swept[i] = true;
		}
}

/* ---- the holds ---- */

static void
hold_drop(struct daemon *dm, int i, const char *why)
{
	uint64_t id = hold_root_id(dm->holds[i]);
	int err = hold_remove_pins(id);

	if (err && err != -ENOENT)
		log_warnx("selectors: cannot remove the hold of %s: %s", hold_root(dm->holds[i]),
			  strerror(-err));
	else
		log_warnx("selectors: hold of %s (cgroup %llu) lifted: %s", hold_root(dm->holds[i]),
			  (unsigned long long)id, why);
	hold_close(dm->holds[i]);
	dm->holds[i] = dm->holds[dm->nholds - 1];
	dm->swept[i] = dm->swept[dm->nholds - 1];
	memcpy(dm->held_said[i], dm->held_said[dm->nholds - 1], sizeof(dm->held_said[i]));
	dm->nholds--;
}

/* Where a selector's root is held: under the deepest hold at or above it
 * already; else at the root, or, while the root is not made yet, at its
 * nearest ancestor that is (a slice systemd makes with its first unit, a
 * runtime's parent made with its first container), so that a cgroup made
 * with the root is held from its mkdir too. A hold stays where it was made
 * while its cgroup does: the root made later is below it, a directory the
 * walk passes on its way. */
static void
hold_root_for(struct daemon *dm, const char *root, char *out, size_t len)
{
	size_t best = 0, mlen = strlen(dm->mnt);
	struct stat st;

	for (int i = 0; i < dm->nholds; i++) {
		const char *r = hold_root(dm->holds[i]);

		if (below(root, r) && strlen(r) > best &&
		    cgroup_id_of(r) == hold_root_id(dm->holds[i])) {
			snprintf(out, len, "%s", r);
			best = strlen(r);
		}
	}
	if (best)
		return;
	snprintf(out, len, "%s", root);
	while (strlen(out) > mlen && (stat(out, &st) || !S_ISDIR(st.st_mode)))
		*strrchr(out, '/') = 0;
	if (strlen(out) < mlen)
		snprintf(out, len, "%s", dm->mnt);
}

int
sel_hold_roots(struct daemon *dm, char *errbuf, size_t errlen)
{
	char roots[SEL_MAX_ROOTS][PATH_MAX];
	int nroots = 0, err = 0;

	for (int i = 0; i < dm->cfg.n; i++) {
		char root[PATH_MAX], sroot[PATH_MAX];
		int k;

		if (!dm->cfg.specs[i].selector)
			continue;
		root_of(dm->mnt, dm->cfg.specs[i].what, sroot, sizeof(sroot));
		if (!sroot[0])
			continue;
		hold_root_for(dm, sroot, root, sizeof(root));
		for (k = 0; k < nroots && strcmp(roots[k], root); k++)
			;
		if (k < nroots || !root[0])
			continue;
		if (nroots == SEL_MAX_ROOTS) {
			daemon_errf(errbuf, errlen, "more than %d selectors' roots: %s is not held",
				    SEL_MAX_ROOTS, root);
			return -E2BIG;
		}
		snprintf(roots[nroots++], PATH_MAX, "%s", root);
	}
	/* a root no selector has now, or removed (and maybe made again) */
	for (int i = 0; i < dm->nholds;) {
		const char *r = hold_root(dm->holds[i]);
		int k;

		for (k = 0; k < nroots && strcmp(roots[k], r); k++)
			;
		if (k == nroots)
			hold_drop(dm, i, "no selector has it as its root now");
		else if (cgroup_id_of(r) != hold_root_id(dm->holds[i]))
			hold_drop(dm, i, "its cgroup is gone");
		else
			i++;
	}
	for (int k = 0; k < nroots && !err; k++) {
		struct stat st;
		struct hold *h;
		bool fresh;
		int i;

		for (i = 0; i < dm->nholds && strcmp(hold_root(dm->holds[i]), roots[k]); i++)
			;
		if (i < dm->nholds || stat(roots[k], &st) || !S_ISDIR(st.st_mode))
			continue; /* held, or gone meanwhile: the tick looks again */
		h = hold_open(roots[k], &fresh, errbuf, errlen);
		if (!h) {
			err = -EINVAL;
			break;
		}
		dm->swept[dm->nholds] = fresh; /* a new one holds only what it seeded */
		memset(dm->held_said[dm->nholds], 0, sizeof(dm->held_said[0]));
		dm->holds[dm->nholds++] = h;
		if (self_below(dm, roots[k]))
			hold_pass(h, dm->self_cg, cgroup_id_of(dm->self_cg), EGR_HOLD_TREE);
		log_warnx("selectors: %s held (cgroup %llu): %s", roots[k],
			  (unsigned long long)hold_root_id(h),
			  fresh ? "the cgroups below it now go on as they were; one made later can "
				  "do nothing on the network until it is confined or let go"
				: "took over its pinned hold");
		for (int s = 0; s < dm->cfg.n; s++) {
			char sroot[PATH_MAX];

			if (!dm->cfg.specs[s].selector)
				continue;
			root_of(dm->mnt, dm->cfg.specs[s].what, sroot, sizeof(sroot));
			if (strcmp(sroot, roots[k]) && below(sroot, roots[k]) &&
			    (stat(sroot, &st) || !S_ISDIR(st.st_mode)))
				log_warnx("selectors: %s is not made yet: %s is held for it", sroot,
					  roots[k]);
		}
	}
	return err;
}

void
sel_pass(struct daemon *dm, const char *path, uint64_t cgid, uint32_t flags)
{
	for (int i = 0; i < dm->nholds; i++) {
		int err;

		if (!below(path, hold_root(dm->holds[i])))
			continue;
		err = hold_pass(dm->holds[i], path, cgid, flags);
		if (err)
			log_warnx("selectors: %s stays held: %s", path, strerror(-err));
	}
}

void
sel_unpass(struct daemon *dm, uint64_t cgid)
{
	for (int i = 0; i < dm->nholds; i++)
		hold_unpass(dm->holds[i], cgid);
}

void
sel_holds_tick(struct daemon *dm)
{
	static unsigned int ticks;

	for (int i = 0; i < dm->nholds; i++) {
		uint64_t n[EGR_HOLD_NSTATS];

		for (int k = 0; k < EGR_HOLD_NSTATS; k++)
			n[k] = hold_refused(dm->holds[i], k);
		if (memcmp(n, dm->held_said[i], sizeof(n))) {
			log_warnx("selectors: held below %s so far: %llu connects and %llu sends "
				  "refused, %llu packets dropped",
				  hold_root(dm->holds[i]), (unsigned long long)n[EGR_HOLD_CONNECT],
				  (unsigned long long)n[EGR_HOLD_SENDMSG],
				  (unsigned long long)n[EGR_HOLD_SKB]);
			memcpy(dm->held_said[i], n, sizeof(n));
		}
		if (ticks % 10 == 0)
			hold_tick(dm->holds[i]);
	}
	ticks++;
}

void
sel_holds_close(struct daemon *dm)
{
	for (int i = 0; i < dm->nholds; i++)
		hold_close(dm->holds[i]);
	dm->nholds = 0;
}

bool
sel_event(struct daemon *dm, const struct inotify_event *ev)
{
	for (int i = 0; i < dm->nsw; i++) {
		char path[PATH_MAX];

		if (dm->sw[i].wd != ev->wd)
			continue;
		if (ev->mask & IN_IGNORED) { /* the directory went */
			dm->sw[i] = dm->sw[--dm->nsw];
			return true;
		}
		if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && ev->len &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dm->sw[i].path, ev->name) <
			    sizeof(path)) {
			deferring = true;
			sel_look(dm, path, 0);
			deferring = false;
		}
		return true;
	}
	return false;
}

void
sel_free(struct daemon *dm)
{
	/* what waits to be attached names the config's selectors by index:
	 * the walk after a reload finds it again */
	while (dm->pending) {
		struct sel_pending *p = dm->pending;

		dm->pending = p->next;
		free(p);
	}
	if (dm->ev_pending)
		event_free(dm->ev_pending);
	dm->ev_pending = NULL;
	for (int i = 0; i < dm->nsw; i++)
		inotify_rm_watch(dm->ino_fd, dm->sw[i].wd);
	free(dm->sw);
	dm->sw = NULL;
	dm->nsw = dm->capsw = 0;
}
