// SPDX-License-Identifier: Apache-2.0
/* `egressctl run` by a user who is not root (see userrun.h): the
 * request to the service's user socket. The client opens, as the user,
 * every file its options name (--policy, --log, --summary,
 * --suggest-policy) and sends descriptors
 * instead of paths, with its stdin, stdout, stderr and working directory;
 * then it waits for the exit status, forwarding SIGINT, SIGTERM, SIGHUP
 * and SIGQUIT as requests to stop. Its going away ends the run. With
 * --ask the service's run asks on the client's terminal (its stdio) and
 * relays CMD's pty: the client forwards SIGWINCH too, and puts the
 * terminal's modes back as they were should run not have. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>

#include "cli/run.h"
#include "cli/userrun.h"
#include "daemon/usreq.h"
#include "confine/secrets.h"
#include "lib/fdread.h"
#include "lib/jsonx.h"
#include "lib/log.h"
#include "lib/plimits.h"
#include "lib/opts.h"
#include "policy/policy.h"
#include "policy/secret.h"

struct client {
	char **args; /* what goes in the request */
	int nargs;
	int fds[USREQ_MAX_FDS];
	int nfds;
	char *owned[USREQ_MAX_FDS]; /* the fd:K strings made here (one an option at most) */
	int nowned;
};

/* The descriptor an option's value names: fd:N (the user's own), else
 * the file opened as the user. -1 with the reason said. */
static int
open_value(const char *opt, const char *v, int flags, mode_t mode)
{
	int fd;

	if (!strncmp(v, "fd:", 3)) {
		char *end;
		long n = strtol(v + 3, &end, 10);

		if (v[3] && !*end && n >= 0 && n < 1024 && fcntl((int)n, F_GETFD) != -1)
			return (int)n;
		log_warnx("%s %s: expected fd:N, N an open descriptor", opt, v);
		return -1;
	}
	if (!strcmp(opt, "--log") && (!strcmp(v, "-") || !strncmp(v, "syslog:", 7))) {
		log_warnx("%s %s: not through the service: give a file, fd:N, syslog (/dev/log) "
			  "or otlp:URL",
			  opt, v);
		return -1;
	}
	fd = open(v, flags | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		log_warn("%s %s", opt, v);
	return fd;
}

static bool
regular(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode);
}

/* The file v of opt, opened as the user (open_value), one more of the
 * descriptors sent: its fd:K in fdk. */
static int
add_file(struct client *c, const char *opt, const char *v, int flags, mode_t mode, char *fdk,
	 size_t len)
{
	int fd;

	if (c->nfds == USREQ_MAX_FDS) {
		log_warnx("%s: too many files for the service", opt);
		return -1;
	}
	fd = open_value(opt, v, flags, mode);
	if (fd < 0)
		return -1;
	snprintf(fdk, len, "fd:%d", c->nfds);
	c->fds[c->nfds++] = fd;
	return 0;
}

/* "opt value" put in front of the arguments (before CMD's "--": run's
 * options in any order); c->args has room for them (client_build). */
static void
prepend(struct client *c, const char *opt, char *value)
{
	memmove(c->args + 2, c->args, (size_t)c->nargs * sizeof(*c->args));
	c->args[0] = (char *)opt;
	c->args[1] = value;
	c->nargs += 2;
}

/* Replaces the value v of opt in the arguments (as the argument itself or
 * after "--opt=") by text; a value that came from the environment
 * (EGRESSCTL_POLICY, _LOG) goes in front as "--opt text". */
static int
replace_value(struct client *c, const char *opt, const char *v, const char *text, int nopts)
{
	for (int i = 0; i < nopts; i++) {
		const char *a = c->args[i];

		if (v == a || (v > a && v <= a + strlen(a) && v[-1] == '=')) {
			if (asprintf(&c->args[i], "%.*s%s", (int)(v - a), a, text) < 0)
				return -1;
			c->owned[c->nowned++] = c->args[i];
			return 0;
		}
	}
	prepend(c, opt, strdup(text));
	c->owned[c->nowned++] = c->args[1];
	return c->args[1] ? 0 : -1;
}

/* A file option's value v sent as fd:K, the file opened as the user. */
static int
pass_value(struct client *c, const char *opt, const char *v, int flags, mode_t mode, int nopts)
{
	char fdk[16];

	if (!v || (!strcmp(opt, "--log") && (!strcmp(v, "syslog") || !strncmp(v, "otlp:", 5))))
		return 0; /* the service's run writes to /dev/log, or sends, itself */
	if (add_file(c, opt, v, flags, mode, fdk, sizeof(fdk)))
		return -1;
	return replace_value(c, opt, v, fdk, nopts);
}

/* A secret's value read here, as the user, from src (as --secret and a
 * policy file give it: env:VAR from the client's environment, then left
 * out of what it sends, which CMD gets; file:/PATH; command:CMDLINE run by
 * /bin/sh -c; fd:N), into a memfd: one more of the descriptors sent, its
 * number returned (-1, said, when it cannot be). The service reads
 * nothing for a user, and CMD's environment never holds the value. */
static int
secret_memfd(struct client *c, const char *what, const char *src)
{
	char why[200], *buf;
	size_t cap = SECRET_VALUE_MAX + 1, argoff;
	enum secret_kind kind;
	int fd = -1, k = -1;
	ssize_t n;

	if (secret_from_parse(src, &kind, &argoff, why, sizeof(why))) {
		log_warnx("%s (%s): %s", what, src, why);
		return -1;
	}
	if (c->nfds == USREQ_MAX_FDS) {
		log_warnx("%s: too many files for the service", what);
		return -1;
	}
	buf = malloc(cap);
	if (!buf)
		return -1;
	n = secret_source_read(kind, src + argoff, buf, cap, why, sizeof(why));
	if (n < 0) {
		log_warnx("%s (%s): %s", what, src, why);
		goto out;
	}
	fd = memfd_create("egressctl-secret", MFD_CLOEXEC);
	if (fd < 0 || write(fd, buf, (size_t)n) != n || lseek(fd, 0, SEEK_SET)) {
		log_warn("%s: cannot hand the value to the service", what);
		goto out;
	}
	k = c->nfds;
	c->fds[c->nfds++] = fd;
	fd = -1;
out:
	explicit_bzero(buf, cap);
	free(buf);
	if (fd >= 0)
		close(fd);
	return k;
}

/* --secret NAME=SOURCE@HOSTS: sent as NAME=fd:K@HOSTS (secret_memfd). */
static int
pass_secret(struct client *c, const char *v, int nopts)
{
	const char *from;
	char src[SECRET_FROM_MAX + 1], what[SECRET_NAME_MAX + 16], *text = NULL;
	size_t name_len, from_len;
	int k, rc;

	/* run's own parse (the option table) refused a bad one already */
	if (secret_arg_split(v, &name_len, &from, &from_len) || from_len > SECRET_FROM_MAX)
		return 0;
	snprintf(src, sizeof(src), "%.*s", (int)from_len, from);
	snprintf(what, sizeof(what), "--secret %.*s", (int)name_len, v);
	k = secret_memfd(c, what, src);
	if (k < 0)
		return -1;
	if (asprintf(&text, "%.*s=fd:%d%s", (int)name_len, v, k, from + from_len) < 0)
		return -1;
	rc = replace_value(c, "--secret", v, text, nopts);
	free(text);
	return rc;
}

/* --policy FILE (sent as descriptor k): read here, as the user, and sent
 * as a memfd of what was read, so that run parses these very bytes; the
 * value of each of its secrets read here from its source (secret_memfd)
 * and sent as --client-secret NAME=fd:K, which run takes in place of the
 * source (confine/target.c). A file that does not parse is refused here,
 * naming it as the user did, nothing sent. */
static int
pass_policy(struct client *c, const char *v, int k)
{
	char *buf, err[256];
	struct policy *p;
	int mfd, rc = -1;
	ssize_t n = fd_read_all(c->fds[k], CONFIG_MAX_SIZE, &buf);
	size_t len = n > 0 ? (size_t)n : 0;

	if (n < 0) {
		if (n == -EFBIG)
			log_warnx("--policy %s: larger than %u MiB", v, CONFIG_MAX_SIZE >> 20);
		else
			log_warnx("--policy %s: %s", v, strerror((int)-n));
		return -1;
	}
	mfd = memfd_create("egressctl-policy", MFD_CLOEXEC);
	if (mfd < 0 || write(mfd, buf, len) != (ssize_t)len || lseek(mfd, 0, SEEK_SET)) {
		log_warn("--policy %s: cannot hand it to the service", v);
		if (mfd >= 0)
			close(mfd);
		goto out;
	}
	if (c->fds[k] > 2)
		close(c->fds[k]);
	c->fds[k] = mfd;
	p = policy_new();
	if (!p) {
		log_warnx("--policy %s: out of memory", v);
		goto out;
	}
	/* said here, by the name the user gave (run would say fd:K) */
	if (config_load_buf(p, buf, len, v, err, sizeof(err))) {
		log_warnx("--policy %s: %s", v, err);
		policy_free(p);
		goto out;
	}
	/* the name the user gave, for status (it would show fd:K) */
	prepend(c, "--client-policy-name", (char *)v);
	rc = 0;
	for (unsigned int i = 0; !rc && i < policy_secret_count(p); i++) {
		const struct policy_secret *s = policy_secret_at(p, i);
		char what[SECRET_NAME_MAX + 32], *text;
		int fdk;

		snprintf(what, sizeof(what), "secret %s", s->name);
		fdk = secret_memfd(c, what, s->from);
		if (fdk < 0 || asprintf(&text, "%s=fd:%d", s->name, fdk) < 0) {
			rc = -1;
			break;
		}
		prepend(c, "--client-secret", text);
		c->owned[c->nowned++] = text;
	}
	policy_free(p);
out:
	free(buf);
	return rc;
}

/* --ca CERT,KEY: both files opened as the user, sent as fd:K,fd:L. */
static int
pass_ca(struct client *c, const char *v, int nopts)
{
	const char *comma = v ? strchr(v, ',') : NULL;
	char cert[PATH_MAX], fdk[16], fdl[16], text[40];

	if (!comma)
		return 0; /* none, or refused by run's own check */
	snprintf(cert, sizeof(cert), "%.*s", (int)(comma - v), v);
	if (add_file(c, "--ca", cert, O_RDONLY, 0, fdk, sizeof(fdk)) ||
	    add_file(c, "--ca", comma + 1, O_RDONLY, 0, fdl, sizeof(fdl)))
		return -1;
	snprintf(text, sizeof(text), "%s,%s", fdk, fdl);
	return replace_value(c, "--ca", v, text, nopts);
}

/* The caller's umask and rlimits, CMD's: "umask" and "rlimits" ([CUR,
 * MAX] each, -1 unlimited). */
static int
add_limits(json_t *o)
{
	json_t *rl = jsonx_add_array(o, "rlimits");
	struct plimits l;

	plimits_get(&l);
	if (!rl || jsonx_set_int(o, "umask", (long long)l.umask))
		return -1;
	for (int i = 0; i < PLIMITS_N; i++) {
		json_t *pair =
			json_pack("[II]", l.cur[i] == PLIMITS_INF ? -1 : (json_int_t)l.cur[i],
				  l.max[i] == PLIMITS_INF ? -1 : (json_int_t)l.max[i]);

		if (json_array_append_new(rl, pair))
			return -1;
	}
	return 0;
}

/* The request: {"args", "env", "nfds", "umask", "rlimits"} as one line. */
static char *
request_text(const struct client *c)
{
	extern char **environ;
	json_t *o = json_object(), *a, *e;
	char *line = NULL;

	a = jsonx_add_array(o, "args");
	e = jsonx_add_array(o, "env");
	if (!a || !e || jsonx_set_int(o, "nfds", c->nfds) || add_limits(o))
		goto out;
	for (int i = 0; i < c->nargs; i++) {
		json_t *s = json_string(c->args[i]);

		if (!s)
			log_warnx("argument %s: not UTF-8: the service takes UTF-8 text only",
				  c->args[i]);
		if (json_array_append_new(a, s))
			goto out;
	}
	for (char **v = environ; *v; v++) {
		json_t *s = strchr(*v, '=') ? json_string(*v) : NULL;

		if (!s)
			log_warnx("environment entry %.*s: not NAME=VALUE in UTF-8: left out",
				  (int)strcspn(*v, "="), *v);
		else if (json_array_append_new(e, s))
			goto out;
	}
	line = jsonx_line(o);
out:
	json_decref(o);
	return line;
}

/* Sends the request with the descriptors. */
static int
send_request(int sock, const struct client *c)
{
	char cbuf[CMSG_SPACE(sizeof(int) * USREQ_MAX_FDS)] = {0};
	char *text = request_text(c);
	struct iovec iov;
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)c->nfds)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	size_t len = text ? strlen(text) : 0;
	int sz = (int)len + 4096;

	if (!text)
		return -1;
	if (len > USREQ_MAX_BYTES) {
		log_warnx("the request (arguments and environment) is %zu bytes, more than the "
			  "service takes (%d)",
			  len, USREQ_MAX_BYTES);
		free(text);
		return -1;
	}
	iov = (struct iovec){text, len};
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)c->nfds);
	memcpy(CMSG_DATA(cm), c->fds, sizeof(int) * (size_t)c->nfds);
	setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t)len) {
		int err = errno;

		free(text);
		if (err == EPIPE || err == ECONNRESET)
			return 0; /* refused at once: the answer says why */
		log_warnx("cannot send the request to the service: %s", strerror(err));
		return -1;
	}
	free(text);
	return 0;
}

/* The answer: {"exit": N} or {"error": "...", "exit": N}. */
static int
answer(const char *buf, ssize_t n)
{
	char why[256];
	size_t end;
	json_t *o = n > 0 ? jsonx_parse(buf, (size_t)n, 4, &end, why, sizeof(why)) : NULL;
	json_t *x = json_object_get(o, "exit");
	const char *err = jsonx_get_str(o, "error");
	int rc = json_is_integer(x) ? (int)json_integer_value(x) : EGR_EXIT_ERROR;

	if (n <= 0)
		log_warnx("the service closed the connection without an exit status");
	else if (err || !json_is_integer(x))
		log_warnx("the service: %s", err ? err : "an answer without an exit status");
	json_decref(o);
	return rc < 0 || rc > 255 ? EGR_EXIT_ERROR : rc;
}

/* Until the answer: signals become requests to stop (and with winch,
 * SIGWINCH goes on for --ask's relay). */
static int
wait_run(int sock, bool winch)
{
	struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.events = POLLIN}};
	char buf[4096];
	sigset_t mask;
	int reset = 0;
	ssize_t n;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	if (winch)
		sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	p[1].fd = signalfd(-1, &mask, SFD_CLOEXEC);
	for (;;) {
		struct signalfd_siginfo si;

		if (poll(p, p[1].fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			return EGR_EXIT_ERROR;
		if (p[1].fd >= 0 && (p[1].revents & POLLIN) &&
		    read(p[1].fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			int k = snprintf(buf, sizeof(buf), "{\"signal\":%u}", si.ssi_signo);

			send(sock, buf, (size_t)k, MSG_NOSIGNAL);
		}
		if (p[0].revents) {
			n = recv(sock, buf, sizeof(buf), 0);
			if (n < 0 && (errno == EINTR || (errno == ECONNRESET && !reset++)))
				continue; /* a reset comes before what is queued */
			return answer(buf, n);
		}
	}
}

/* --ask: the terminal among fds 0-2 and its modes now, to be put back
 * (restore_modes) should the service's run end without (SIGKILL). -1
 * when none is a terminal (run then says --ask has none). */
static int
save_modes(struct termios *saved)
{
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd) && !tcgetattr(fd, saved))
			return fd;
	return -1;
}

static void
restore_modes(int fd, const struct termios *saved)
{
	struct termios now;
	sigset_t ttou, old;

	if (fd < 0 || tcgetattr(fd, &now) || !memcmp(&now, saved, sizeof(now)))
		return;
	/* a client in the background would be stopped by SIGTTOU */
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	if (tcsetattr(fd, TCSADRAIN, saved))
		log_warn("cannot put the terminal's modes back");
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static int
connect_service(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (s >= 0 && connect(s, (struct sockaddr *)&sun, sizeof(sun))) {
		int e = errno;

		close(s);
		errno = e;
		return -1;
	}
	return s;
}

/* The arguments as they go: argv[1..], the files passed as fd:K. A
 * value from the environment (EGRESSCTL_POLICY, _LOG) goes in front as
 * two more arguments: the options before CMD are counted again each time. */
static int
client_build(struct client *c, int argc, char **argv, struct run_opts *o)
{
	static const struct {
		const char *opt;
		size_t off;
		int flags;
		mode_t mode;
	} files[] = {
		{"--policy", offsetof(struct target_opts, policy_file), O_RDONLY, 0},
		{"--log", offsetof(struct target_opts, log_file), O_WRONLY | O_CREAT | O_APPEND,
		 0640},
		{"--summary", offsetof(struct target_opts, summary_file),
		 O_WRONLY | O_CREAT | O_APPEND, 0640},
		/* read to merge, then truncated and written by the run at exit */
		{"--suggest-policy", offsetof(struct target_opts, suggest_policy), O_RDWR | O_CREAT,
		 0644},
		{"--upstream-ca", offsetof(struct target_opts, upstream_ca), O_RDONLY, 0},
		{"--log-ca", offsetof(struct target_opts, log_ca), O_RDONLY, 0},
		{"--upstream-proxy-auth", offsetof(struct target_opts, upstream_auth), O_RDONLY, 0},
	};
	int nopts = (int)(o->argv - argv) - 1;

	/* room for what goes in front (prepend): two values from the
	 * environment, the policy's name and a --client-secret a secret */
	c->args = calloc((size_t)argc + 10 + 2 * SECRET_MAX, sizeof(*c->args));
	if (!c->args)
		return -1;
	memcpy(c->args, argv + 1, (size_t)(argc - 1) * sizeof(*c->args));
	c->nargs = argc - 1;
	for (int i = 0; i < 3; i++)
		c->fds[c->nfds++] = i;
	c->fds[c->nfds] = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->fds[c->nfds++] < 0) {
		log_warn("cannot open the working directory");
		return -1;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *v = *(const char **)((char *)&o->t + files[i].off);

		if (pass_value(c, files[i].opt, v, files[i].flags, files[i].mode,
			       nopts + c->nargs - (argc - 1)))
			return -1;
		if (v && !strcmp(files[i].opt, "--policy") && pass_policy(c, v, c->nfds - 1))
			return -1;
		/* the run reads it whole and rewrites it: a pipe or a terminal
		 * would have it block at exit */
		if (v && (files[i].flags & O_RDWR) && !regular(c->fds[c->nfds - 1])) {
			log_warnx("%s %s: not a regular file", files[i].opt, v);
			return -1;
		}
	}
	for (int i = 0; i < o->t.nsecrets; i++)
		if (pass_secret(c, o->t.secrets[i], nopts + c->nargs - (argc - 1)))
			return -1;
	return pass_ca(c, o->t.ca, nopts + c->nargs - (argc - 1));
}

int
userrun_status(bool json)
{
	const char *path = userrun_socket_path(), *req = "{\"status\":true}";
	json_t *o = NULL, *runs;
	char buf[65536], why[256];
	int sock = connect_service(path), rc = EGR_EXIT_ERROR;
	size_t end, i;
	ssize_t n;
	json_t *e;

	if (sock < 0) {
		log_warnx("status needs root, or the service at %s (%s)", path, strerror(errno));
		return EGR_EXIT_ERROR;
	}
	if (send(sock, req, strlen(req), MSG_NOSIGNAL) < 0)
		log_warn("status: the service");
	n = recv(sock, buf, sizeof(buf), 0);
	close(sock);
	o = n > 0 ? jsonx_parse(buf, (size_t)n, 4, &end, why, sizeof(why)) : NULL;
	runs = json_object_get(o, "runs");
	if (!json_is_array(runs)) {
		rc = answer(buf, n); /* says the service's error */
		json_decref(o);
		return rc ? rc : EGR_EXIT_ERROR;
	}
	if (json) {
		char *text = jsonx_pretty(runs);

		if (text)
			printf("%s\n", text);
		free(text);
	} else if (!json_array_size(runs)) {
		printf("no runs of yours through the service\n");
	}
	json_array_foreach(runs, i, e) {
		if (!json)
			printf("run[%lld] %s: up %lld s, cgroup %s\n",
			       (long long)json_integer_value(json_object_get(e, "pid")),
			       jsonx_get_str(e, "command") ? jsonx_get_str(e, "command") : "?",
			       (long long)json_integer_value(json_object_get(e, "uptime")),
			       jsonx_get_str(e, "cgroup") ? jsonx_get_str(e, "cgroup") : "?");
	}
	json_decref(o);
	return 0;
}

json_t *
userrun_runs(void)
{
	const char *req = "{\"status\":true}";
	struct pollfd p = {.events = POLLIN};
	json_t *o = NULL, *runs = NULL;
	size_t end, cap = 1 << 20; /* every user's runs: up to 256 */
	char *buf = malloc(cap), why[256];
	ssize_t n = -1;

	p.fd = buf ? connect_service(userrun_socket_path()) : -1;
	if (p.fd < 0) {
		free(buf);
		return NULL;
	}
	if (send(p.fd, req, strlen(req), MSG_NOSIGNAL) > 0 && poll(&p, 1, 5000) > 0)
		n = recv(p.fd, buf, cap, MSG_TRUNC);
	close(p.fd);
	o = n > 0 && (size_t)n <= cap ? jsonx_parse(buf, (size_t)n, 4, &end, why, sizeof(why))
				      : NULL;
	if (json_is_array(json_object_get(o, "runs")))
		runs = json_incref(json_object_get(o, "runs"));
	json_decref(o);
	free(buf);
	return runs;
}

int
userrun_log(bool follow)
{
	int cerr = 0, rc = userrun_log_lines(follow, &cerr, NULL);

	if (cerr)
		log_warnx("log needs root, or the service at %s (%s)", userrun_socket_path(),
			  strerror(cerr));
	return rc;
}

int
userrun_log_lines(bool follow, int *cerr, struct userrun_log_stop *stop)
{
	const char *path = userrun_socket_path();
	const char *req = follow ? "{\"log\":true,\"follow\":true}" : "{\"log\":true}";
	int sock = connect_service(path);
	char buf[4096];
	ssize_t n;

	*cerr = 0;
	if (sock < 0) {
		*cerr = errno;
		return EGR_EXIT_ERROR;
	}
	if (stop) { /* published, then stop looked at: one of the two sides sees the other */
		__atomic_store_n(&stop->sock, sock, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&stop->stop, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&stop->sock, -1, __ATOMIC_SEQ_CST);
			close(sock);
			return EGR_EXIT_ERROR;
		}
	}
	signal(SIGPIPE, SIG_DFL);
	if (send(sock, req, strlen(req), MSG_NOSIGNAL) < 0) {
		log_warn("log: the service");
		close(sock);
		return EGR_EXIT_ERROR;
	}
	while ((n = recv(sock, buf, sizeof(buf) - 1, 0)) > 0) {
		char why[128];
		size_t end;
		json_t *o;
		bool refused;

		buf[n] = 0;
		o = jsonx_parse(buf, (size_t)n, 4, &end, why, sizeof(why));
		refused = json_object_get(o, "exit") && !json_object_get(o, "decision") &&
			  !json_object_get(o, "event");
		json_decref(o);
		if (refused) {
			close(sock);
			return answer(buf, n); /* refused: the service says why */
		}
		printf("%s\n", buf);
		fflush(stdout);
	}
	if (stop && __atomic_load_n(&stop->stop, __ATOMIC_SEQ_CST))
		;		  /* ended by the other thread: it says why */
	else if (follow && n < 0) /* only the service ends -f: it stopped */
		log_warn("log -f: the service at %s", path);
	else if (follow)
		log_warnx(
			"log -f: the service at %s closed the connection (it stopped or restarts): "
			"no more lines",
			path);
	if (stop)
		__atomic_store_n(&stop->sock, -1, __ATOMIC_SEQ_CST);
	close(sock);
	return follow ? EGR_EXIT_ERROR : 0;
}

void
userrun_log_stop(struct userrun_log_stop *s)
{
	int sock;

	__atomic_store_n(&s->stop, 1, __ATOMIC_SEQ_CST);
	sock = __atomic_load_n(&s->sock, __ATOMIC_SEQ_CST);
	if (sock >= 0)
		shutdown(sock, SHUT_RDWR); /* its recv returns 0 */
}

const char *
userrun_socket_path(void)
{
	const char *path = getenv("EGRESSCTL_USER_SOCKET");

	return path && path[0] ? path : USERRUN_SOCKET;
}

bool
userrun_service(void)
{
	return access(userrun_socket_path(), F_OK) == 0;
}

int
userrun_client(int argc, char **argv)
{
	const char *path = userrun_socket_path();
	struct run_opts *o = calloc(1, sizeof(*o));
	struct client c = {0};
	int rc = EGR_EXIT_ERROR, sock = -1, tty = -1;
	struct termios saved;

	if (!o)
		return EGR_EXIT_ERROR;
	switch (run_parse(argc, argv, o, NULL)) {
	case OPTS_HELP:
		run_usage(stdout);
		rc = 0;
		goto out;
	case OPTS_USAGE:
		rc = EGR_EXIT_USAGE;
		goto out;
	}
	target_env_defaults(&o->t);
	sock = connect_service(path);
	if (sock < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			log_warnx(
				"run needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN): use sudo, "
				"or have the service run (egressctl daemon --user-socket %s) and "
				"join its group (egressctl)",
				path);
		else
			log_warnx(
				"run needs root, and the service at %s refused you (%s): join its "
				"group (egressctl), or use sudo",
				path, strerror(errno));
		goto out;
	}
	if (o->ask)
		tty = save_modes(&saved);
	if (!client_build(&c, argc, argv, o) && !send_request(sock, &c))
		rc = wait_run(sock, o->ask);
	if (o->ask)
		restore_modes(tty, &saved);
out:
	if (sock >= 0)
		close(sock);
	for (int i = 0; i < c.nowned; i++)
		free(c.owned[i]);
	free(c.args);
	free(o);
	return rc;
}
