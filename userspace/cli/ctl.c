// SPDX-License-Identifier: Apache-2.0
/* The commands that talk to a running daemon over its control socket
 * (reload, allow, deny, log, summary) and detach, which also works with no
 * daemon alive: it removes the pins of what a killed daemon or run left. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "lib/jsonx.h"
#include "cli/ctl.h"
#include "cli/userrun.h"
#include "confine/suggest.h"
#include "lib/opts.h"
#include "confine/status.h"
#include "daemon/control.h"
#include "daemon/dconfig.h"
#include "egress_abi.h"
#include "kernel/cgroup.h"
#include "kernel/hold.h"
#include "kernel/loader.h"
#include "lib/duration.h"
#include "lib/log.h"

struct ctl_opts {
	const char *control;
	const char *cgroup;
	const char *format;
	const char *suggest;
	uint64_t for_ns;
	int reply_ms; /* the wait for the daemon's first reply (-1: none) */
	bool follow;
	bool all;
	bool json;
};

#define CO(field) offsetof(struct ctl_opts, field)

/* rows several commands share (macros: C wants constants in initializers) */
#define OPT_CONTROL                                                                                \
	{                                                                                          \
		"control", 0, OPT_T_STR, CO(control), "PATH",                                      \
			"the daemon's control socket (default\n" DCONFIG_CONTROL                   \
			", or $EGRESSCTL_CONTROL)"                                                 \
	}
#define OPT_CGROUP                                                                                 \
	{                                                                                          \
		"cgroup", 0, OPT_T_STR, CO(cgroup), "NAME|PATH",                                   \
			"the target: its name in the daemon, its cgroup\n"                         \
			"(absolute or relative to the cgroup2 mount) or id"                        \
	}
#define OPT_HELP                                                                                   \
	{                                                                                          \
		"help", 'h', OPT_T_HELP, 0, NULL, "this text"                                      \
	}

static const struct opt reload_table[] = {OPT_CONTROL, OPT_HELP, {0}};
static const struct opt rule_table[] = {
	OPT_CGROUP,
	{"for", 0, OPT_T_NSEC, CO(for_ns), "D",
	 "the rule expires after D (30s, 10m, 1h; default:\n"
	 "until the daemon stops)"},
	OPT_CONTROL,
	OPT_HELP,
	{0},
};
static const struct opt log_table[] = {
	OPT_CGROUP,
	{"follow", 'f', OPT_T_FLAG, CO(follow), NULL,
	 "after the recent lines, every new one as it comes"},
	OPT_CONTROL,
	OPT_HELP,
	{0},
};
static const struct opt summary_table[] = {
	OPT_CGROUP,
	{"format", 0, OPT_T_STR, CO(format), "F", "text (default), markdown or json"},
	{"json", 'j', OPT_T_FLAG, CO(json), NULL, "the same as --format json"},
	{"suggest-policy", 0, OPT_T_STR, CO(suggest), "FILE",
	 "also write the policy (JSON) that would allow\n"
	 "everything the target did"},
	OPT_CONTROL,
	OPT_HELP,
	{0},
};
static const struct opt detach_table[] = {
	OPT_CGROUP,
	{"all", 0, OPT_T_FLAG, CO(all), NULL, "every cgroup egressctl confines on this machine"},
	OPT_CONTROL,
	OPT_HELP,
	{0},
};

struct ctl_cmd {
	const char *name;
	const struct opt *table;
	const char *synopsis;
	const char *text;
	int nargs; /* arguments after the options: the rule */
};

static const struct ctl_cmd ctl_cmds[] = {
	{"reload", reload_table, "[--control PATH]",
	 "Makes the daemon read its configuration and every policy again (as SIGHUP\n"
	 "does). A file that does not load is rejected whole: the old policy stays,\n"
	 "the error is printed and logged, and reload exits 1.\n",
	 0},
	{"allow", rule_table, "[--cgroup X] [--for D] RULE",
	 "Adds an allow rule to a target of the daemon at runtime (logged), for D or\n"
	 "until the daemon stops; it survives reloads. RULE has the syntax of --allow.\n",
	 1},
	{"deny", rule_table, "[--cgroup X] [--for D] RULE",
	 "Adds a deny rule to a target of the daemon at runtime (logged); open\n"
	 "connections it denies are closed.\n",
	 1},
	{"log", log_table, "[-f] [--cgroup X]",
	 "Prints the daemon's recent decision and event lines (JSON, as in --log),\n"
	 "of one target or all; with -f, then every new one until interrupted (the\n"
	 "daemon stopping ends it: status 125).\n"
	 "Without --cgroup, root also gets every user's runs' lines through the\n"
	 "service (each with \"user\" and \"uid\"); a user, their own runs'.\n",
	 0},
	{"summary", summary_table, "[--cgroup X] [--format text|markdown|json]",
	 "Prints what a target of the daemon tried, as `run` prints at exit: one row\n"
	 "per destination, allowed or denied, the commands, and the rule that would\n"
	 "allow each. Markdown is ready for $GITHUB_STEP_SUMMARY.\n",
	 0},
	{"detach", detach_table, "--cgroup X | --all",
	 "Lifts confinement: detaches the programs and removes their pins, through\n"
	 "the daemon when it holds the target, else directly (what a killed daemon\n"
	 "or run left). The only way confinement ends; nothing of egressctl's stays.\n"
	 "A selector's root as X: its hold (cgroups made below it wait for the\n"
	 "daemon), which stays when the daemon stops; --all lifts every hold too.\n",
	 0},
	{0},
};

static const struct ctl_cmd *
find(const char *name)
{
	for (const struct ctl_cmd *c = ctl_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static void
usage_of(const struct ctl_cmd *c, FILE *f)
{
	struct ctl_opts o;
	const struct opt_set set = {c->table, &o};

	fprintf(f, "usage: egressctl %s %s\n\n%s\n", c->name, c->synopsis, c->text);
	opts_help(f, &set, 1);
	fprintf(f, "\nExit status: 0 done; 1 the daemon refused (the reason is printed);\n"
		   "2 a usage error; 125 no daemon answered (within a minute, or\n"
		   "$EGRESSCTL_CONTROL_TIMEOUT; log -f waits as long as the daemon serves\n"
		   "it), the daemon ended log -f (it stopped), or another failure.\n");
}

void
ctl_usage(const char *name, FILE *f)
{
	const struct ctl_cmd *c = find(name);

	if (c)
		usage_of(c, f);
}

static const char *
control_path(const struct ctl_opts *o)
{
	const char *env = getenv("EGRESSCTL_CONTROL");

	return o->control ? o->control : env && env[0] ? env : DCONFIG_CONTROL;
}

/* How long a command waits for the daemon's first reply:
 * $EGRESSCTL_CONTROL_TIMEOUT (a duration, 0 none), else a minute. Not
 * log -f: a daemon with nothing to log yet says nothing, for as long as it
 * likes, and only its close ends the wait. */
#define CTL_REPLY_MS 60000

static int
reply_wait(int *ms)
{
	const char *env = getenv("EGRESSCTL_CONTROL_TIMEOUT");
	char err[160];
	uint64_t ns;

	*ms = CTL_REPLY_MS;
	if (!env || !env[0])
		return 0;
	if (duration_parse(env, &ns, err, sizeof(err))) {
		log_warnx("$EGRESSCTL_CONTROL_TIMEOUT: %s", err);
		return EGR_EXIT_USAGE;
	}
	if (!ns)
		*ms = -1;
	else if (ns / 1000000 >= INT_MAX)
		*ms = INT_MAX;
	else
		*ms = (int)((ns + 999999) / 1000000);
	return 0;
}

/* ---- the reply ---- */

struct answer {
	json_t *first; /* the first line, if it was a JSON reply; log's if it refused */
	bool raw;      /* print every line as it comes (log) */
	bool follow;   /* log -f: no wait bounded, and the daemon's close is an error */
	int lines;
};

static int
on_line(void *arg, const char *line)
{
	struct answer *a = arg;

	a->lines++;
	if (a->raw && a->lines == 1) {
		json_t *o = json_loads(line, 0, NULL); /* a decision or event line has no "ok" */

		if (json_is_false(json_object_get(o, "ok"))) {
			a->first = o; /* refused: no target X, or not an administrator */
			return 1;
		}
		json_decref(o);
	}
	if (a->raw) {
		printf("%s\n", line);
		fflush(stdout);
		return 0;
	}
	if (!a->first)
		a->first = json_loads(line, 0, NULL);
	return 0;
}

/* control_request()'s result for cmd; 0 or an exit status, said. */
static int
request_failed(const char *cmd, const char *path, int err, int ms)
{
	char d[32];

	if (err == -ENOENT || err == -ECONNREFUSED) {
		log_warnx("%s: no egressctl daemon answers on %s", cmd, path);
		return EGR_EXIT_ERROR;
	}
	if (err == -ETIMEDOUT) {
		duration_format((uint64_t)ms * 1000000, d, sizeof(d));
		log_warnx("%s: the daemon on %s did not answer within %s "
			  "($EGRESSCTL_CONTROL_TIMEOUT)",
			  cmd, path, d);
		return EGR_EXIT_ERROR;
	}
	if (err) {
		log_warnx("%s: %s: %s", cmd, path, strerror(-err));
		return EGR_EXIT_ERROR;
	}
	return 0;
}

/* The end of log's lines from the daemon (raw): 0, or an exit status,
 * said. With -f the daemon alone ends the stream, by closing it when it
 * stops: not a success. */
static int
stream_end(const char *cmd, const char *path, const struct answer *a)
{
	const char *e;

	if (a->first) {
		e = jsonx_get_str(a->first, "error");
		log_warnx("%s: %s", cmd, e ? e : "refused");
		return 1;
	}
	if (!a->follow)
		return 0;
	log_warnx("%s -f: the daemon on %s closed the connection (it stopped or restarts): "
		  "no more lines",
		  cmd, path);
	return EGR_EXIT_ERROR;
}

/* Sends req; 0 and the reply in a (a->first), or an exit status. */
static int
ask_daemon(const struct ctl_opts *o, json_t *req, struct answer *a, const char *cmd)
{
	char *text = jsonx_line(req);
	const char *path = control_path(o);
	int err, ms = a->follow ? -1 : o->reply_ms;

	json_decref(req);
	if (!text)
		return EGR_EXIT_ERROR;
	err = control_request(path, text, on_line, a, ms);
	free(text);
	if (err)
		return request_failed(cmd, path, err, ms);
	if (a->raw)
		return stream_end(cmd, path, a);
	if (!json_is_object(a->first)) {
		log_warnx("%s: the daemon sent no reply", cmd);
		return EGR_EXIT_ERROR;
	}
	if (!jsonx_get_true(a->first, "ok")) {
		const char *e = jsonx_get_str(a->first, "error");

		log_warnx("%s: %s", cmd, e ? e : "refused");
		return 1;
	}
	return 0;
}

static json_t *
request(const char *cmd, const struct ctl_opts *o)
{
	json_t *r = json_object();

	jsonx_set_str(r, "cmd", cmd);
	if (o->cgroup)
		jsonx_set_str(r, "target", o->cgroup);
	return r;
}

/* ---- the commands ---- */

static int
do_summary(const struct ctl_opts *o)
{
	struct answer a = {0};
	json_t *req = request("summary", o);
	const char *text;
	int rc;

	jsonx_set_str(req, "format", o->json ? "json" : o->format ? o->format : "text");
	rc = ask_daemon(o, req, &a, "summary");
	if (rc)
		goto out;
	text = jsonx_get_str(a.first, "text");
	if (text)
		fputs(text, stdout);
	if (o->suggest) { /* merged with what the file holds (confine/suggest.h) */
		char errbuf[1024];

		if (suggest_write_file(o->suggest, json_object_get(a.first, "observed"), errbuf,
				       sizeof(errbuf))) {
			log_warnx("summary: --suggest-policy: %s", errbuf);
			rc = EGR_EXIT_ERROR;
		} else {
			log_warnx("suggested policy written to %s", o->suggest);
		}
	}
out:
	json_decref(a.first);
	return rc;
}

/* No daemon holds X: remove the pins of cgroup X's programs (their links
 * go with the last reference), unless a live run holds its cgroup. */
static int
detach_pins(uint64_t cgid, const char *cgpath)
{
	char dir[PATH_MAX], sock[160];
	struct stat st;
	int err, fd;

	err = loader_pin_dir_of(cgid, dir, sizeof(dir));
	if (err) {
		log_warnx("detach: cannot open bpffs: %s", strerror(-err));
		return EGR_EXIT_ERROR;
	}
	if (stat(dir, &st)) {
		log_warnx("detach: nothing of egressctl's is attached to %s",
			  cgpath ? cgpath : "that cgroup");
		return 1;
	}
	if (cgpath) {
		fd = open(cgpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
			log_warnx("detach: a live egressctl run confines %s: stop it instead",
				  cgpath);
			close(fd);
			return 1;
		}
		if (fd >= 0)
			close(fd);
	}
	err = loader_remove_pin_dir(dir);
	if (err) {
		log_warnx("detach: cannot remove %s: %s", dir, strerror(-err));
		return EGR_EXIT_ERROR;
	}
	snprintf(sock, sizeof(sock), "%s/%llu.sock", STATUS_DIR, (unsigned long long)cgid);
	unlink(sock);
	printf("detached %s\n", cgpath ? cgpath : dir);
	return 0;
}

static bool
has_pins(uint64_t cgid)
{
	char dir[PATH_MAX];
	struct stat st;

	if (loader_pin_dir_of(cgid, dir, sizeof(dir)))
		return true; /* detach_pins says why */
	return !stat(dir, &st);
}

/* The hold on a selector's root (kernel/hold.h): 1 lifted, 0 none, -1 an
 * error, said. */
static int
detach_hold(uint64_t cgid, const char *cgpath)
{
	int err = cgid ? hold_remove_pins(cgid) : -ENOENT;

	if (err == -ENOENT)
		return 0;
	if (err) {
		log_warnx("detach: cannot lift the hold on cgroup %llu: %s",
			  (unsigned long long)cgid, strerror(-err));
		return -1;
	}
	if (cgpath)
		printf("lifted the hold on %s: cgroups made below it are free again\n", cgpath);
	else
		printf("lifted the hold on cgroup %llu: cgroups made below it are free again\n",
		       (unsigned long long)cgid);
	return 1;
}

static int
detach_all_pins(void)
{
	char root[PATH_MAX], mnt[PATH_MAX], own[PATH_MAX + 32];
	struct dirent *de;
	int rc = 0;
	DIR *d;

	if (loader_pin_root(root, sizeof(root)) || !(d = opendir(root))) {
		log_warnx("detach: cannot open the pins");
		return EGR_EXIT_ERROR;
	}
	while ((de = readdir(d))) {
		char *end;
		uint64_t cgid = strtoull(de->d_name, &end, 10);

		if (de->d_name[0] != '.' && !*end && cgid) {
			int r = detach_pins(cgid, NULL);

			if (r && !rc)
				rc = r;
		}
		if (!strncmp(de->d_name, EGR_HOLD_PIN_PREFIX, strlen(EGR_HOLD_PIN_PREFIX)) &&
		    detach_hold(strtoull(de->d_name + strlen(EGR_HOLD_PIN_PREFIX), NULL, 10),
				NULL) < 0 &&
		    !rc)
			rc = EGR_EXIT_ERROR;
	}
	closedir(d);
	if (!cgroup_find_mount(mnt, sizeof(mnt))) {
		snprintf(own, sizeof(own), "%s/egressctl/daemon", mnt);
		rmdir(own); /* the daemon's own, if it made one and is gone */
	}
	return rc;
}

static int
do_detach(const struct ctl_opts *o)
{
	struct answer a = {0};
	json_t *req;
	int rc;

	if (!o->all == !o->cgroup) {
		log_warnx("detach: give --cgroup X or --all");
		return EGR_EXIT_USAGE;
	}
	if (geteuid() != 0) {
		log_warnx("detach needs root");
		return EGR_EXIT_ERROR;
	}
	req = request("detach", o);
	if (o->all)
		jsonx_set_bool(req, "all", true);
	a.raw = false;
	{
		char *text = jsonx_line(req);
		int err = text ? control_request(control_path(o), text, on_line, &a, o->reply_ms)
			       : -ENOMEM;

		json_decref(req);
		free(text);
		if (!err && jsonx_get_true(a.first, "ok")) {
			const json_t *v;
			size_t i;

			json_array_foreach(json_object_get(a.first, "detached"), i, v)
				if (json_is_string(v))
					printf("detached %s (by the daemon)\n",
					       json_string_value(v));
			json_decref(a.first);
			return o->all ? detach_all_pins() : 0;
		}
		json_decref(a.first);
	}
	/* no daemon, or not its target: the pins themselves */
	if (o->all)
		return detach_all_pins();
	{
		char mnt[PATH_MAX], path[PATH_MAX], buf[PATH_MAX + 2];
		uint64_t cgid;

		if ((rc = cgroup_find_mount(mnt, sizeof(mnt)))) {
			log_warnx("detach: no cgroup2 mount: %s", strerror(-rc));
			return EGR_EXIT_ERROR;
		}
		snprintf(buf, sizeof(buf), "%s%s%s",
			 o->cgroup[0] == '/' || !strchr(o->cgroup, '/') ? "" : mnt,
			 o->cgroup[0] == '/' || !strchr(o->cgroup, '/') ? "" : "/", o->cgroup);
		if (cgroup_resolve(mnt, buf, 1, path, sizeof(path), NULL)) {
			log_warnx("detach: --cgroup %s: not a NAME nor a path below %s", o->cgroup,
				  mnt);
			return EGR_EXIT_USAGE;
		}
		cgid = cgroup_id_of(path);
		if (!cgid) {
			log_warnx("detach: %s: %s", path, strerror(errno));
			return EGR_EXIT_ERROR;
		}
		rc = detach_hold(cgid, path); /* a selector's root */
		if (rc < 0)
			return EGR_EXIT_ERROR;
		if (rc > 0 && !has_pins(cgid))
			return 0;
		return detach_pins(cgid, path);
	}
}

struct users_log {
	bool follow;
	int rc, cerr;
	struct userrun_log_stop stop;
};

static void *
users_log(void *arg)
{
	struct users_log *u = arg;

	u->rc = userrun_log_lines(u->follow, &u->cerr, &u->stop);
	return NULL;
}

/* log as root where the user service is: the daemon's lines, then every
 * user's runs' through the service (with -f both as they come, the
 * service's followed by a thread of its own). Either may be missing; not
 * both. With -f, the daemon's stream ending ends both: the thread is
 * stopped and joined before the exit (an exit while it prints crashed in
 * exit's destructors: both streams end at once when the daemon dies). */
static int
log_with_users(const struct ctl_opts *o, json_t *req)
{
	struct answer a = {.raw = true, .follow = o->follow};
	struct users_log u = {.follow = o->follow, .stop = {.sock = -1}};
	const char *path = control_path(o);
	bool threaded = false, dgone, ugone;
	int err, ms = o->follow ? -1 : o->reply_ms;
	char *text;
	pthread_t t;

	if (o->follow)
		jsonx_set_bool(req, "follow", true);
	text = jsonx_line(req);
	json_decref(req);
	if (!text)
		return EGR_EXIT_ERROR;
	if (o->follow)
		threaded = !pthread_create(&t, NULL, users_log, &u);
	err = control_request(path, text, on_line, &a, ms);
	free(text);
	dgone = err == -ENOENT || err == -ECONNREFUSED;
	if (o->follow && !dgone) {
		int rc = err ? request_failed("log", path, err, ms) : stream_end("log", path, &a);

		json_decref(a.first);
		if (threaded) {
			userrun_log_stop(&u.stop);
			pthread_join(t, NULL);
		}
		return rc;
	}
	if (threaded)
		pthread_join(t, NULL);
	else
		users_log(&u);
	ugone = u.cerr == ENOENT || u.cerr == ECONNREFUSED;
	if (dgone && ugone) {
		log_warnx("log: no egressctl daemon answers on %s, nor the service on %s", path,
			  userrun_socket_path());
		return EGR_EXIT_ERROR;
	}
	if (err && !dgone)
		return request_failed("log", path, err, ms);
	if (a.first) { /* refused */
		err = stream_end("log", path, &a);
		json_decref(a.first);
		return err;
	}
	if (u.cerr && !ugone) {
		log_warnx("log: the service at %s: %s", userrun_socket_path(), strerror(u.cerr));
		return EGR_EXIT_ERROR;
	}
	return ugone ? 0 : u.rc;
}

static int
run_cmd(const struct ctl_cmd *c, const struct ctl_opts *o, char *arg)
{
	struct answer a = {0};
	json_t *req;
	int rc;

	if (!strcmp(c->name, "summary"))
		return do_summary(o);
	if (!strcmp(c->name, "detach"))
		return do_detach(o);
	req = request(c->name, o);
	if (arg)
		jsonx_set_str(req, "rule", arg);
	if (o->for_ns)
		jsonx_set_int(req, "for", (long long)((o->for_ns + 999999999) / 1000000000));
	if (!strcmp(c->name, "log") && geteuid() != 0 && userrun_service()) {
		json_decref(req); /* a user: their runs' lines, through the service */
		if (o->cgroup) {
			log_warnx("log --cgroup: root's (a user sees the lines of their runs)");
			return EGR_EXIT_USAGE;
		}
		return userrun_log(o->follow);
	}
	if (!strcmp(c->name, "log") && !o->cgroup && userrun_service())
		return log_with_users(o, req); /* root: users' runs too */
	if (!strcmp(c->name, "log")) {
		a.raw = true;
		a.follow = o->follow;
		if (o->follow)
			jsonx_set_bool(req, "follow", true);
	}
	rc = ask_daemon(o, req, &a, c->name);
	json_decref(a.first);
	return rc;
}

int
ctl_main(int argc, char **argv)
{
	const struct ctl_cmd *c = find(argv[0]);
	struct ctl_opts o = {0};
	struct opt_set set;
	int first, rc;

	if (!c)
		return EGR_EXIT_USAGE;
	set.opts = c->table;
	set.dst = &o;
	rc = opts_parse(c->name, &set, 1, argc, argv, false, &first);
	if (rc == OPTS_HELP) {
		usage_of(c, stdout);
		return 0;
	}
	if (rc != OPTS_OK)
		return EGR_EXIT_USAGE;
	if (argc - first != c->nargs) {
		log_warnx("%s: expected %s (see egressctl %s --help)", c->name,
			  c->nargs ? "one RULE" : "no arguments", c->name);
		return EGR_EXIT_USAGE;
	}
	rc = reply_wait(&o.reply_ms);
	if (rc)
		return rc;
	if (o.format && strcmp(o.format, "text") && strcmp(o.format, "markdown") &&
	    strcmp(o.format, "md") && strcmp(o.format, "json")) {
		log_warnx("%s: --format %s: expected text, markdown or json", c->name, o.format);
		return EGR_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_DFL);
	return run_cmd(c, &o, c->nargs ? argv[first] : NULL);
}

int
ctl_status_json(const char *control, char **out)
{
	struct ctl_opts o = {.control = control};
	struct answer a = {0};
	json_t *req = request("status", &o);
	char *text = jsonx_line(req);
	int err;

	json_decref(req);
	*out = NULL;
	if (!text)
		return -ENOMEM;
	err = control_request(control_path(&o), text, on_line, &a, 5000);
	free(text);
	if (!err && jsonx_get_true(a.first, "ok"))
		*out = jsonx_line(a.first);
	else if (!err)
		err = -EPROTO;
	json_decref(a.first);
	return err;
}
