// SPDX-License-Identifier: Apache-2.0
/* The JSON bodies of a confined job's requests judged (see rules.h): a
 * container's HostConfig (and the top level of /containers/create, which
 * dockerd reads as the HostConfig when there is no "HostConfig" member),
 * an exec's, an update's, a volume's. The first field that would take a
 * container out of the job's confinement is refused, named as the docker
 * command line names it. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dockerapi/rules.h"

/* Capabilities a container may be given beyond docker's defaults: none of
 * them reaches past the container (its own PID namespace, processes and
 * limits). Everything else (NET_ADMIN, SYS_ADMIN, BPF, DAC_READ_SEARCH,
 * SYS_MODULE, ALL, ...) is refused, and NET_RAW, which every container of
 * the job's is made without (judge_create): an AF_PACKET socket writes
 * frames no cgroup hook sees. */
static const char *const caps_ok[] = {
	"CHOWN",
	"DAC_OVERRIDE",
	"FSETID",
	"FOWNER",
	"MKNOD",
	"SETGID",
	"SETUID",
	"SETFCAP",
	"SETPCAP",
	"KILL",
	"SYS_CHROOT",
	"AUDIT_WRITE",
	"NET_BIND_SERVICE",
	"SYS_PTRACE",
	"SYS_NICE",
	"SYS_RESOURCE",
	"IPC_LOCK",
	"IPC_OWNER",
	"LEASE",
	"WAKE_ALARM",
	"BLOCK_SUSPEND",
	"AUDIT_READ",
	NULL,
};

/* Log drivers that keep the output on this host; the others send it over
 * the network from dockerd, outside the job's confinement. */
static const char *const log_ok[] = {"", "json-file", "local", "journald", "none", NULL};

/* Runtimes Debian's and Docker's dockerd name runc by. */
static const char *const runtime_ok[] = {"", "runc", "io.containerd.runc.v2",
					 "io.containerd.runtime.v1.linux", NULL};

static bool
in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

static int
bad_json(struct dk_verdict *v, const char *what)
{
	dk_refuse(v, 400, "%s", what);
	return -EPERM;
}

static int
check_keys(const struct dj *o, const char *where, struct dk_verdict *v)
{
	char bad[96];

	if (!dj_check_keys(o, bad, sizeof(bad)))
		return 0;
	dk_refuse(v, 400, "%s: %s (dockerd would read it otherwise than egressctl)", where, bad);
	return -EPERM;
}

static int
refused(struct dk_verdict *v, const char *flag)
{
	if (!strcmp(flag, "--cgroup-parent"))
		dk_refuse(v, 403,
			  "--cgroup-parent is refused in a confined job: its containers "
			  "run under the job's cgroup");
	else
		dk_refuse(v, 403, "%s is refused in a confined job", flag);
	return -EPERM;
}

/* Is the member given a value: not absent, null, false, "", [] or {}? */
static bool
set(const struct dj *o, const char *key)
{
	const struct dj *m = dj_get(o, key);

	if (dj_is_null(m) || dj_is_false(m))
		return false;
	if (dj_is_string(m))
		return dj_str(m)[0] != 0;
	if (dj_is_array(m) || dj_is_object(m))
		return dj_count(m) > 0;
	return true; /* true, a number */
}

/* Is it there at all (an empty list of masked paths unmasks them all)? */
static bool
present(const struct dj *o, const char *key)
{
	return !dj_is_null(dj_get(o, key));
}

static int
judge_caps(const struct dj *o, struct dk_verdict *v)
{
	const struct dj *add = dj_get(o, "CapAdd");
	char flag[96], name[64];

	if (!dj_is_null(add) && !dj_is_array(add))
		return bad_json(v, "CapAdd is not a list");
	for (int i = 0; i < dj_count(add); i++) {
		const char *s = dj_str(dj_at(add, i));
		size_t k = 0;

		if (!s)
			return bad_json(v, "CapAdd holds something other than a string");
		if (!strncasecmp(s, "CAP_", 4))
			s += 4;
		for (; s[k] && k + 1 < sizeof(name); k++)
			name[k] = (char)toupper((unsigned char)s[k]);
		name[k] = 0;
		if (!in_list(caps_ok, name) || s[k]) {
			snprintf(flag, sizeof(flag), "--cap-add %.60s", name);
			return refused(v, flag);
		}
	}
	if (present(o, "Capabilities"))
		return refused(v, "HostConfig.Capabilities");
	return 0;
}

/* --pid, --ipc, --userns, and the cgroup fields */
static int
judge_modes(const struct dj *o, struct dk_verdict *v)
{
	const char *pid = dj_str(dj_get(o, "PidMode")), *ipc = dj_str(dj_get(o, "IpcMode"));
	const char *userns = dj_str(dj_get(o, "UsernsMode"));
	char flag[200];

	if (pid && (!strcmp(pid, "host") || !strncmp(pid, "container:", 10))) {
		snprintf(flag, sizeof(flag), "--pid %.150s", pid);
		return refused(v, flag);
	}
	if (ipc && !strcmp(ipc, "host"))
		return refused(v, "--ipc host");
	if (userns && !strcmp(userns, "host"))
		return refused(v, "--userns host");
	if (set(o, "Cgroup"))
		return refused(v, "HostConfig.Cgroup");
	return 0;
}

/* --security-opt KEY=VALUE (or KEY:VALUE) */
static int
judge_secopts(const struct dj *o, struct dk_verdict *v)
{
	const struct dj *l = dj_get(o, "SecurityOpt");
	char flag[200];

	if (!dj_is_null(l) && !dj_is_array(l))
		return bad_json(v, "SecurityOpt is not a list");
	for (int i = 0; i < dj_count(l); i++) {
		const char *s = dj_str(dj_at(l, i)), *val;
		size_t k;

		if (!s)
			return bad_json(v, "SecurityOpt holds something other than a string");
		k = strcspn(s, "=:");
		val = s[k] ? s + k + 1 : "";
		snprintf(flag, sizeof(flag), "--security-opt %.150s", s);
		if ((k == 7 && !strncmp(s, "seccomp", 7)) ||
		    (k == 8 && !strncmp(s, "apparmor", 8) && !strcmp(val, "unconfined")) ||
		    (k == 5 && !strncmp(s, "label", 5) && !strcmp(val, "disable")) ||
		    (k == 11 && !strncmp(s, "systempaths", 11) && !strcmp(val, "unconfined")))
			return refused(v, flag);
	}
	if (present(o, "MaskedPaths"))
		return refused(v, "HostConfig.MaskedPaths");
	if (present(o, "ReadonlyPaths"))
		return refused(v, "HostConfig.ReadonlyPaths");
	return 0;
}

/* --device, --device-cgroup-rule, --gpus (also the fields of an update) */
static int
judge_devices(const struct dj *o, struct dk_verdict *v)
{
	if (set(o, "Devices"))
		return refused(v, "--device");
	if (set(o, "DeviceCgroupRules"))
		return refused(v, "--device-cgroup-rule");
	if (set(o, "DeviceRequests"))
		return refused(v, "--gpus");
	return 0;
}

static int
judge_misc(const struct dj *o, struct dk_verdict *v)
{
	const char *rt = dj_str(dj_get(o, "Runtime")), *vd = dj_str(dj_get(o, "VolumeDriver"));
	const struct dj *lc = dj_get(o, "LogConfig");
	const char *ld;
	char flag[200];

	if (dj_is_true(dj_get(o, "Privileged")))
		return refused(v, "--privileged");
	if (rt && !in_list(runtime_ok, rt)) {
		snprintf(flag, sizeof(flag), "--runtime %.150s", rt);
		return refused(v, flag);
	}
	if (set(o, "VolumesFrom"))
		return refused(v, "--volumes-from");
	if (vd && *vd && strcmp(vd, "local")) {
		snprintf(flag, sizeof(flag), "--volume-driver %.150s", vd);
		return refused(v, flag);
	}
	if (!dj_is_null(lc)) {
		if (!dj_is_object(lc) || check_keys(lc, "LogConfig", v))
			return v->status ? -EPERM : bad_json(v, "LogConfig is not an object");
		ld = dj_str(dj_get(lc, "Type"));
		if (ld && !in_list(log_ok, ld)) {
			snprintf(flag, sizeof(flag),
				 "--log-driver %.100s (it sends the container's output from "
				 "dockerd)",
				 ld);
			return refused(v, flag);
		}
	}
	return 0;
}

/* A host path a container would see: the judge's callback says. */
static int
judge_host_path(const struct dk_ctx *c, const char *path, bool ro, const char *spec,
		struct dk_verdict *v)
{
	char why[256];
	int rc = c->host_path(c->arg, path, ro, why, sizeof(why));

	if (rc >= 0) {
		if (!rc && !ro && !v->rw_bind[0])
			snprintf(v->rw_bind, sizeof(v->rw_bind), "%.150s", spec);
		return 0;
	}
	dk_refuse(v, 403, "%.200s is refused in a confined job: %s", spec, why);
	return -EPERM;
}

/* -v SRC:DST[:OPTS] (s): a host bind when SRC is a path, else a
 * volume's name (0). 1 with SRC into src (of srclen, PATH_MAX), *ro, and
 * *rest where ":DST..." starts; -ENAMETOOLONG. */
static int
bind_parse(const char *s, char *src, size_t srclen, bool *ro, const char **rest)
{
	const char *c1 = strchr(s, ':'), *c2;
	char opts[256] = "";

	if (!c1 || s[0] != '/')
		return 0;
	if ((size_t)(c1 - s) >= srclen)
		return -ENAMETOOLONG;
	memcpy(src, s, (size_t)(c1 - s));
	src[c1 - s] = 0;
	c2 = strchr(c1 + 1, ':');
	if (c2)
		snprintf(opts, sizeof(opts), ",%s,", c2 + 1);
	*ro = strstr(opts, ",ro,") != NULL;
	*rest = c1;
	return 1;
}

static int
judge_bind(const struct dk_ctx *c, const char *s, struct dk_verdict *v)
{
	char src[PATH_MAX], spec[300];
	const char *rest;
	bool ro;
	int rc = bind_parse(s, src, sizeof(src), &ro, &rest);

	if (rc <= 0)
		return rc ? bad_json(v, "a bind's source is too long") : 0;
	snprintf(spec, sizeof(spec), "-v %s", s);
	return judge_host_path(c, src, ro, spec, v);
}

/* local driver options: a tmpfs only (type=none,o=bind,device=/ binds any
 * path; nfs, cifs mount from the network, outside the job) */
static int
judge_volume_opts(const struct dj *opts, const char *flag, struct dk_verdict *v)
{
	const char *type, *o;
	char toks[512];

	if (dj_is_null(opts) || !dj_count(opts))
		return 0;
	if (!dj_is_object(opts) || check_keys(opts, "DriverOpts", v))
		return v->status ? -EPERM : bad_json(v, "the volume's options are not an object");
	for (int i = 0; i < dj_count(opts); i++) {
		const char *k = dj_key_at(opts, i);

		if (strcmp(k, "type") && strcmp(k, "o") && strcmp(k, "device"))
			return refused(v, flag);
	}
	type = dj_str(dj_get(opts, "type"));
	o = dj_str(dj_get(opts, "o"));
	snprintf(toks, sizeof(toks), ",%s,", o ? o : "");
	if (!type || strcmp(type, "tmpfs") || strstr(toks, ",bind,") || strstr(toks, ",rbind,") ||
	    strstr(toks, ",remount,") || strstr(toks, ",move,"))
		return refused(v, flag);
	return 0;
}

static int
judge_mount(const struct dk_ctx *c, const struct dj *m, struct dk_verdict *v)
{
	const char *type, *src;
	const struct dj *dc;
	char spec[300];

	if (!dj_is_object(m))
		return bad_json(v, "a mount is not an object");
	if (check_keys(m, "Mounts", v))
		return -EPERM;
	type = dj_str(dj_get(m, "Type"));
	src = dj_str(dj_get(m, "Source"));
	snprintf(spec, sizeof(spec), "--mount type=%.40s,source=%.200s", type ? type : "",
		 src ? src : "");
	if (type && !strcmp(type, "bind"))
		return judge_host_path(c, src ? src : "", dj_is_true(dj_get(m, "ReadOnly")), spec,
				       v);
	if (type && !strcmp(type, "tmpfs"))
		return 0;
	if (!type || strcmp(type, "volume"))
		return refused(v, spec);
	dc = dj_get(dj_get(m, "VolumeOptions"), "DriverConfig");
	if (dj_is_null(dc))
		return 0;
	if (check_keys(dc, "DriverConfig", v))
		return -EPERM;
	if (set(dc, "Name") && strcmp(dj_str(dj_get(dc, "Name")) ?: "", "local"))
		return refused(v, "--mount volume-driver=...");
	return judge_volume_opts(dj_get(dc, "Options"), "--mount volume-opt=...", v);
}

static int
judge_mounts(const struct dk_ctx *c, const struct dj *o, struct dk_verdict *v)
{
	const struct dj *b = dj_get(o, "Binds"), *m = dj_get(o, "Mounts");

	if ((!dj_is_null(b) && !dj_is_array(b)) || (!dj_is_null(m) && !dj_is_array(m)))
		return bad_json(v, "Binds or Mounts is not a list");
	for (int i = 0; i < dj_count(b); i++) {
		const char *s = dj_str(dj_at(b, i));

		if (!s)
			return bad_json(v, "Binds holds something other than a string");
		if (judge_bind(c, s, v))
			return -EPERM;
	}
	for (int i = 0; i < dj_count(m); i++)
		if (judge_mount(c, dj_at(m, i), v))
			return -EPERM;
	return 0;
}

/* One object dockerd may read as a HostConfig (its keys checked). */
static int
judge_host(const struct dk_ctx *c, const struct dj *o, struct dk_verdict *v)
{
	if (judge_misc(o, v) || judge_caps(o, v) || judge_modes(o, v) || judge_secopts(o, v) ||
	    judge_devices(o, v) || judge_mounts(c, o, v))
		return -EPERM;
	return 0;
}

/* A read-write bind of a host file or directory (v->rw_bind): what the
 * container runs as may leave a file there that the job's user then runs
 * on the host, outside any container. As root (docker's default, the
 * image's USER, any other uid, an exec's -u 0) that is a set-id root file:
 * the job's user becomes root outside egressctl's sudo sandbox and leaves
 * its cgroup. So such a container runs as the job's own uid:gid, or (any
 * other user) with its read-write binds idmapped, the job's uid:gid as its
 * 0 (idmap.h), and MKNOD dropped; either way with no group added and
 * no-new-privileges (no set-id file of the image or of the bind makes it
 * anybody else inside). Root asking (uid or gid 0: a container of the
 * job's with docker's socket) gets no read-write bind at all: its uid:gid
 * is not the job user's, and an idmap of 0 to 0 would change nothing. */
/* Is user ("User" of a create or an exec) the requester's uid:gid (in
 * want)? */
static bool
job_user(const struct dk_ctx *c, const char *user, char *want, size_t len)
{
	snprintf(want, len, "%u:%u", c->uid, c->gid);
	return c->user_known && c->uid && c->gid && user && !strcmp(user, want);
}

/* One read-write bind's source (spec: how the job wrote it, for a
 * refusal) replaced by its idmapped copy: into out. 0 (docker's socket,
 * kept), or -EPERM with v set. */
static int
idmap_one(const struct dk_ctx *c, const char *src, const char *spec, char *out, size_t outlen,
	  struct dk_verdict *v)
{
	char why[512], want[32];

	if (c->host_path(c->arg, src, false, why, sizeof(why)) == 1) {
		snprintf(out, outlen, "%s", src);
		return 0;
	}
	if (!c->idmap(c->arg, src, c->uid, c->gid, c->job, out, outlen, why, sizeof(why)))
		return 0;
	snprintf(want, sizeof(want), "%u:%u", c->uid, c->gid);
	dk_refuse(v, 403,
		  "%.200s (read-write) as the image's user or root is refused in a confined "
		  "job: such a bind is idmapped (your uid:gid as the container's root), and %.150s "
		  "cannot be: %s; run it as you (--user %s) or bind it read-only (:ro)",
		  spec, src, why, want);
	return -EPERM;
}

/* Every read-write bind of a host path in o (Binds, Mounts): through its
 * idmapped copy. 0, or -EPERM with v set. */
static int
idmap_binds(struct dj *o, const struct dk_ctx *c, struct dk_verdict *v)
{
	struct dj *b = dj_get(o, "Binds"), *m = dj_get(o, "Mounts");
	char point[PATH_MAX], spec[300], *nb;
	int err;

	for (int i = 0; i < dj_count(b); i++) {
		const char *s = dj_str(dj_at(b, i)), *rest;
		char src[PATH_MAX];
		bool ro;

		/* (a volume's name, read-only: as judge_bind judged them) */
		if (!s || bind_parse(s, src, sizeof(src), &ro, &rest) <= 0 || ro)
			continue;
		snprintf(spec, sizeof(spec), "-v %s", s);
		if (idmap_one(c, src, spec, point, sizeof(point), v))
			return -EPERM;
		if (asprintf(&nb, "%s%s", point, rest) < 0) {
			dk_refuse(v, 500, "out of memory");
			return -EPERM;
		}
		err = dj_set_at_str(b, i, nb);
		free(nb);
		if (err) {
			dk_refuse(v, 500, "out of memory");
			return -EPERM;
		}
	}
	for (int i = 0; i < dj_count(m); i++) {
		struct dj *x = dj_at(m, i);
		const char *type = dj_str(dj_get(x, "Type")), *src = dj_str(dj_get(x, "Source"));

		if (!type || strcmp(type, "bind") || !src || dj_is_true(dj_get(x, "ReadOnly")))
			continue;
		snprintf(spec, sizeof(spec), "--mount type=bind,source=%.200s", src);
		if (idmap_one(c, src, spec, point, sizeof(point), v))
			return -EPERM;
		if (dj_set_str(x, "Source", point)) {
			dk_refuse(v, 500, "out of memory");
			return -EPERM;
		}
	}
	return 0;
}

/* A container with a read-write bind that runs as anybody but the job's
 * user: its binds idmapped, MKNOD dropped (a device node it made there
 * would be the job user's to open on the host). 0, or -EPERM with v. */
static int
judge_idmapped(struct dj *body, struct dj *hc, const struct dk_ctx *c, struct dk_verdict *v)
{
	for (int k = 0; k < 2; k++) {
		const struct dj *add = dj_get(k ? hc : body, "CapAdd");

		for (int i = 0; i < dj_count(add); i++) {
			const char *s = dj_str(dj_at(add, i));

			if (s && (!strcasecmp(s, "MKNOD") || !strcasecmp(s, "CAP_MKNOD")))
				return refused(v, "--cap-add MKNOD beside a read-write bind");
		}
	}
	if (idmap_binds(body, c, v) || (dj_is_object(hc) && idmap_binds(hc, c, v)))
		return -EPERM;
	if (dj_append_str(dj_is_object(hc) ? hc : body, "CapDrop", "MKNOD")) {
		dk_refuse(v, 500, "out of memory");
		return -EPERM;
	}
	return 0;
}

static int
judge_setid(struct dj *body, struct dj *hc, const struct dk_ctx *c, struct dk_verdict *v)
{
	const char *user = dj_str(dj_get(body, "User"));
	struct dj *o = dj_is_object(hc) ? hc : body;
	const struct dj *l = dj_get(o, "SecurityOpt");
	char want[32];
	bool mine = job_user(c, user, want, sizeof(want));

	if (c->user_known && (!c->uid || !c->gid)) {
		dk_refuse(
			v, 403,
			"%.150s (read-write) asked for by root (uid:gid %u:%u) is refused in a "
			"confined job: the container could leave a set-id root file there for the "
			"job to run outside its confinement (a container of the job's that binds "
			"docker's socket asks as root); bind it read-only (:ro)",
			v->rw_bind, c->uid, c->gid);
		return -EPERM;
	}
	if (!mine && (!c->idmap || !c->user_known)) {
		dk_refuse(v, 403,
			  "%.150s (read-write) as %.40s is refused in a confined job: the "
			  "container could leave a set-id root file there for the job to run "
			  "outside its confinement; run it as you (--user %s) or bind it "
			  "read-only (:ro)",
			  v->rw_bind, user && *user ? user : "the image's user", want);
		return -EPERM;
	}
	if (dj_count(dj_get(body, "GroupAdd")) || dj_count(dj_get(hc, "GroupAdd")))
		return refused(v, "--group-add beside a read-write bind");
	for (int i = 0; i < dj_count(l); i++) {
		const char *s = dj_str(dj_at(l, i));

		if (s && !strncmp(s, "no-new-privileges", 17) && (s[17] == '=' || s[17] == ':') &&
		    strcmp(s + 18, "true"))
			return refused(v, "--security-opt no-new-privileges=false");
	}
	/* (last: nothing is mounted for a container refused) */
	if (!mine && judge_idmapped(body, hc, c, v))
		return -EPERM;
	if (dj_append_str(o, "SecurityOpt", "no-new-privileges:true")) {
		dk_refuse(v, 500, "out of memory");
		return -EPERM;
	}
	return 0;
}

static int
judge_create(struct dj *body, const struct dk_ctx *c, struct dk_verdict *v)
{
	struct dj *hc = dj_get(body, "HostConfig");
	bool theirs;
	int err;

	if (!dj_is_null(hc) && !dj_is_object(hc))
		return bad_json(v, "HostConfig is not an object");
	if (check_keys(body, "the body", v) ||
	    (dj_is_object(hc) && check_keys(hc, "HostConfig", v)))
		return -EPERM;
	theirs = set(body, "CgroupParent") || set(hc, "CgroupParent");
	/* the top level too: dockerd reads it as the HostConfig when there is
	 * none, and judging it always costs nothing */
	if (theirs)
		err = refused(v, "--cgroup-parent");
	else
		err = judge_host(c, body, v) || (dj_is_object(hc) && judge_host(c, hc, v)) ? -EPERM
											   : 0;
	if (!theirs && !err && v->rw_bind[0])
		err = judge_setid(body, hc, c, v);
	/* set also when refused: audit mode sends it on */
	if (!theirs && c->place &&
	    dj_set_str(dj_is_object(hc) ? hc : body, "CgroupParent", c->parent)) {
		dk_refuse(v, 500, "out of memory");
		return -EPERM;
	}
	/* no NET_RAW (docker gives it by default): an AF_PACKET socket
	 * writes IP packets as frames to the gateway, or with --network host
	 * on the host's interfaces, where no connect, sendmsg or egress hook
	 * of a cgroup sees them (the raw IP sockets it also allows are the
	 * programs' to refuse) */
	if (dj_append_str(dj_is_object(hc) ? hc : body, "CapDrop", "NET_RAW")) {
		dk_refuse(v, 500, "out of memory");
		return -EPERM;
	}
	return err;
}

int
dk_judge_body(const struct dk_route *r, struct dj *body, const struct dk_ctx *c,
	      struct dk_verdict *v)
{
	const char *drv;

	v->status = 0;
	if (!dj_is_object(body))
		return bad_json(v, "the body is not a JSON object");
	switch (r->kind) {
	case DK_CREATE:
		return judge_create(body, c, v);
	case DK_EXEC: {
		const char *user = dj_str(dj_get(body, "User"));
		char want[32];

		if (check_keys(body, "the body", v))
			return -EPERM;
		if (dj_is_true(dj_get(body, "Privileged")))
			return refused(v, "docker exec --privileged");
		/* as the container's user, or the job's own: any other may
		 * leave a set-id file in a read-write bind (judge_setid) */
		if (user && *user && !job_user(c, user, want, sizeof(want))) {
			dk_refuse(v, 403,
				  "docker exec -u %.40s is refused in a confined job: as you "
				  "(-u %s) or as the container's user",
				  user, want);
			return -EPERM;
		}
		return 0;
	}
	case DK_UPDATE:
		if (check_keys(body, "the body", v) || judge_devices(body, v))
			return -EPERM;
		return set(body, "CgroupParent") ? refused(v, "--cgroup-parent") : 0;
	case DK_VOLUME:
		if (check_keys(body, "the body", v))
			return -EPERM;
		drv = dj_str(dj_get(body, "Driver"));
		if (drv && *drv && strcmp(drv, "local"))
			return refused(v, "docker volume create --driver");
		return judge_volume_opts(dj_get(body, "DriverOpts"), "docker volume create --opt",
					 v);
	default:
		return 0;
	}
}
