// SPDX-License-Identifier: Apache-2.0
/* The unix sockets of services outside, masked in CMD's mount namespace
 * (sandbox_opts.unix_masks): each denied socket that exists
 * (unixsvc_existing) found again through every mount of its filesystem,
 * so that no bind mount of /run, or of the socket, is left unmasked
 * (sandbox_unix_masks); /dev/null bound over each (masks_apply). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/cgroup.h"
#include "lib/fdread.h"
#include "sandbox/kfiles.h"
#include "sandbox/sandbox.h"
#include "sandbox/steps.h"
#include "sandbox/unixsvc.h"

struct mnt_ent {
	unsigned int maj, min;
	char root[PATH_MAX];
	char point[PATH_MAX];
};

/* mountinfo's octal escapes (\040 for a blank...) undone in place */
static void
unescape(char *p)
{
	char *o = p;

	while (*p) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
}

static int
parse_mounts(struct mnt_ent **out, size_t *n)
{
	char *mi = NULL, *line, *save = NULL;
	struct mnt_ent *v = NULL, *nv;
	size_t cap = 0;
	int err;

	*n = 0;
	err = cgroup_read_mountinfo(&mi);
	if (err)
		return err;
	for (line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mnt_ent e;
		char root[PATH_MAX], point[PATH_MAX];

		if (sscanf(line, "%*d %*d %u:%u %4095s %4095s", &e.maj, &e.min, root, point) != 4)
			continue;
		unescape(root);
		unescape(point);
		snprintf(e.root, sizeof(e.root), "%s", root);
		snprintf(e.point, sizeof(e.point), "%s", point);
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				free(mi);
				return -ENOMEM;
			}
			v = nv;
		}
		v[(*n)++] = e;
	}
	free(mi);
	*out = v;
	return 0;
}

/* Is p equal to dir or below it? ("/" is above everything) */
static bool
path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(p, dir, n) && (p[n] == 0 || p[n] == '/');
}

static int
list_add(char ***list, size_t *n, const char *path)
{
	char **nl;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*list)[i], path))
			return 0;
	nl = realloc(*list, (*n + 2) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	nl[*n] = strdup(path);
	if (!nl[*n])
		return -ENOMEM;
	nl[++*n] = NULL;
	return 0;
}

/* A list list_add() made, its first entry a placeholder (so that an empty
 * list is one too): without it into *out, or with err freed (out of
 * memory said; any other reason the caller's). */
static int
list_done(char **list, size_t n, int err, char ***out, char *errbuf, size_t errlen)
{
	if (err) {
		if (err == -ENOMEM)
			sandbox_err(errbuf, errlen, "out of memory");
		unixsvc_free_list(list);
		return err;
	}
	free(list[0]);
	memmove(list, list + 1, n * sizeof(*list));
	*out = list;
	return 0;
}

void
sandbox_free_masks(char **masks)
{
	unixsvc_free_list(masks); /* the same NULL-terminated list of strings */
}

int
sandbox_unix_masks(char *const *sockets, char ***out, char *errbuf, size_t errlen)
{
	struct mnt_ent *m = NULL;
	char **list = NULL, real[PATH_MAX], cand[2 * PATH_MAX];
	size_t nm = 0, n = 0;
	int err;

	*out = NULL;
	if (errbuf && errlen)
		errbuf[0] = 0;
	err = parse_mounts(&m, &nm);
	if (err) {
		sandbox_err(errbuf, errlen, "cannot read the mount table: %s", strerror(-err));
		return err;
	}
	err = list_add(&list, &n, "/dev/null") ? -ENOMEM : 0; /* placeholder (list_done) */
	for (size_t i = 0; !err && sockets && sockets[i]; i++) {
		struct stat st, cs;
		const struct mnt_ent *home = NULL;
		const char *rel;

		if (stat(sockets[i], &st) || !(S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode)) ||
		    !realpath(sockets[i], real))
			continue; /* gone since it was listed */
		if (S_ISSOCK(st.st_mode) && st.st_nlink > 1) {
			/* a name of it that no mask covers, wherever it is */
			sandbox_err(errbuf, errlen,
				    "%s has %ju other hard link(s): a way around its mask in "
				    "CMD's mount namespace (remove them, or --allow-unix %s)",
				    sockets[i], (uintmax_t)(st.st_nlink - 1), sockets[i]);
			err = -EMLINK;
			break;
		}
		err = list_add(&list, &n, real);
		/* the mount it was found through: the longest mount point above it
		 * on its device (the last one listed wins: mounted on top) */
		for (size_t j = 0; j < nm; j++)
			if (makedev(m[j].maj, m[j].min) == st.st_dev &&
			    path_under(real, m[j].point) &&
			    (!home || strlen(m[j].point) >= strlen(home->point)))
				home = &m[j];
		if (err || !home)
			continue;
		/* its path inside the filesystem, then through every other mount of
		 * the same filesystem (a bind mount of /run, of the socket itself) */
		rel = real + (strcmp(home->point, "/") ? strlen(home->point) : 0);
		if ((size_t)snprintf(cand, sizeof(cand), "%s%s",
				     strcmp(home->root, "/") ? home->root : "",
				     rel) >= sizeof(real))
			continue;
		memcpy(real, cand, strlen(cand) + 1); /* real := path in the filesystem */
		for (size_t j = 0; !err && j < nm; j++) {
			const char *tail;

			if (makedev(m[j].maj, m[j].min) != st.st_dev ||
			    !path_under(real, m[j].root))
				continue;
			tail = real + (strcmp(m[j].root, "/") ? strlen(m[j].root) : 0);
			if ((size_t)snprintf(cand, sizeof(cand), "%s%s",
					     strcmp(m[j].point, "/") ? m[j].point : "",
					     *tail ? tail : "") >= PATH_MAX ||
			    !cand[0])
				continue;
			if (!lstat(cand, &cs) && ((cs.st_mode ^ st.st_mode) & S_IFMT) == 0 &&
			    cs.st_ino == st.st_ino && cs.st_dev == st.st_dev)
				err = list_add(&list, &n, cand);
		}
	}
	free(m);
	return list_done(list, n, err, out, errbuf, errlen);
}

/* /dev/null over each socket (a directory gets an empty tmpfs): connect()
 * there is ECONNREFUSED (no socket), and every way of naming it (relative,
 * through a symlink, /proc/self/root) resolves into the mask. Taking a
 * mask off needs CAP_SYS_ADMIN and umount2(): neither is left. */
int
masks_apply(char *const *masks, const char **what)
{
	for (size_t i = 0; masks && masks[i]; i++) {
		int err = kfiles_mask_path(masks[i]);

		*what = masks[i];
		if (err && err != -ENOENT) /* gone, or under a directory masked before */
			return err;
	}
	return 0;
}

/* The helper's answer: its status (an int), errbuf's text, then each mask,
 * every string ending in a NUL. */
static void
as_child(int fd, const struct sandbox_user *u, char *const *sockets)
{
	char **masks = NULL, ebuf[512] = "";
	const char *what = "";
	size_t off = 0, len;
	char *msg = NULL;
	FILE *f;
	int rc;

	rc = privs_change_ids(u, &what);
	if (rc)
		snprintf(ebuf, sizeof(ebuf),
			 "cannot become uid %u to find the sockets to mask: %s: %s",
			 (unsigned int)u->uid, what, strerror(-rc));
	else
		rc = sandbox_unix_masks(sockets, &masks, ebuf, sizeof(ebuf));
	f = open_memstream(&msg, &len);
	if (!f)
		_exit(1);
	fwrite(&rc, sizeof(rc), 1, f);
	fwrite(ebuf, strlen(ebuf) + 1, 1, f);
	for (size_t i = 0; masks && masks[i]; i++)
		fwrite(masks[i], strlen(masks[i]) + 1, 1, f);
	if (fclose(f))
		_exit(1);
	while (off < len) {
		ssize_t n = write(fd, msg + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		off += (size_t)n;
	}
	_exit(0);
}

int
sandbox_unix_masks_as(const struct sandbox_user *u, char *const *sockets, char ***out, char *errbuf,
		      size_t errlen)
{
	char *buf = NULL, *p, *end, **list = NULL;
	size_t len = 0, n = 0;
	int pfd[2], status = 0, rc;
	ssize_t got;
	pid_t pid;

	*out = NULL;
	if (errbuf && errlen)
		errbuf[0] = 0;
	if (pipe2(pfd, O_CLOEXEC)) {
		rc = -errno;
		sandbox_err(errbuf, errlen, "cannot find the sockets to mask: pipe: %s",
			    strerror(-rc));
		return rc;
	}
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		as_child(pfd[1], u, sockets);
	}
	rc = pid < 0 ? -errno : 0;
	close(pfd[1]);
	if (!rc) {
		got = fd_read_all(pfd[0], 16u << 20, &buf);
		rc = got < 0 ? (int)got : 0;
		len = got > 0 ? (size_t)got : 0;
	}
	close(pfd[0]);
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (!rc &&
	    (!WIFEXITED(status) || WEXITSTATUS(status) || len < sizeof(int) + 1 || buf[len - 1]))
		rc = -EIO;
	if (rc) {
		sandbox_err(errbuf, errlen, "cannot find the sockets to mask as uid %u: %s",
			    (unsigned int)u->uid, rc == -EIO ? "its helper failed" : strerror(-rc));
		free(buf);
		return rc;
	}
	memcpy(&rc, buf, sizeof(rc));
	p = buf + sizeof(int);
	end = buf + len;
	if (rc) {
		sandbox_err(errbuf, errlen, "%s", p);
		free(buf);
		return rc < 0 ? rc : -EIO;
	}
	p += strlen(p) + 1;
	rc = list_add(&list, &n, "/dev/null") ? -ENOMEM : 0; /* placeholder (list_done) */
	for (; !rc && p < end; p += strlen(p) + 1)
		rc = list_add(&list, &n, p) ? -ENOMEM : 0;
	free(buf);
	return list_done(list, n, rc, out, errbuf, errlen);
}
