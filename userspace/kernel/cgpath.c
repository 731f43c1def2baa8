// SPDX-License-Identifier: Apache-2.0
/* cgroup v2 paths as text (see cgroup.h): finding the cgroup2 mount in
 * mountinfo text, resolving a --cgroup argument to a path strictly below
 * that mount, and a process's cgroup in its /proc/PID/cgroup text. Pure:
 * no I/O, and they must survive any input (they are fuzzed): every field
 * is a (pointer, length) span into the caller's string, nothing is copied
 * into a fixed-size buffer without a bound check. cgroup.c does the
 * filesystem work. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/cgroup.h"

#define CGROUP_DEFAULT_MNT "/sys/fs/cgroup"
#define CGROUP_SUBDIR	   "egressctl" /* parent of named and run-<pid> cgroups */

/* One parsed mountinfo line; spans point into the caller's text and are
 * still escaped (\ooo) as the kernel wrote them. */
struct mi_entry {
	const char *root; /* the mount's root in its filesystem (field 4) */
	size_t root_len;
	const char *mnt; /* mount point (field 5) */
	size_t mnt_len;
	const char *fstype; /* first field after the " - " separator */
	size_t fstype_len;
};

/* The byte at raw[*i], decoding the kernel's \ooo escapes (it escapes space,
 * tab, newline and backslash). A backslash not followed by three octal digits
 * worth 1..0377 stays a literal backslash, so decoding never yields NUL. */
static unsigned char
mi_decode(const char *raw, size_t len, size_t *i)
{
	size_t k = *i;

	if (raw[k] == '\\' && len - k >= 4 && raw[k + 1] >= '0' && raw[k + 1] <= '3' &&
	    raw[k + 2] >= '0' && raw[k + 2] <= '7' && raw[k + 3] >= '0' && raw[k + 3] <= '7') {
		unsigned int v =
			(raw[k + 1] - '0') << 6 | (raw[k + 2] - '0') << 3 | (raw[k + 3] - '0');

		if (v) {
			*i = k + 4;
			return v;
		}
	}
	*i = k + 1;
	return raw[k];
}

/* Unescapes raw into out[outlen], NUL-terminated, or -ENAMETOOLONG. */
static int
mi_unescape(const char *raw, size_t len, char *out, size_t outlen)
{
	size_t i = 0, n = 0;

	while (i < len) {
		if (n + 1 >= outlen)
			return -ENAMETOOLONG;
		out[n++] = mi_decode(raw, len, &i);
	}
	if (!outlen)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}

/* Whether raw, unescaped, equals s. */
static bool
mi_eq(const char *raw, size_t len, const char *s)
{
	size_t i = 0;

	while (i < len) {
		if (*s == '\0' || mi_decode(raw, len, &i) != (unsigned char)*s)
			return false;
		s++;
	}
	return *s == '\0';
}

static bool
all_digits(const char *s, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* The next blank-separated token of line[0..len) at or after *pos. */
static bool
mi_token(const char *line, size_t len, size_t *pos, const char **tok, size_t *tok_len)
{
	size_t i = *pos, start;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len)
		return false;
	start = i;
	while (i < len && line[i] != ' ' && line[i] != '\t')
		i++;
	*tok = line + start;
	*tok_len = i - start;
	*pos = i;
	return true;
}

/* Parses one line (without its newline):
 *   id parent maj:min root mountpoint opts [optional...] - fstype source superopts
 * Lines that do not have that shape are rejected, so garbage and lines cut
 * short are skipped rather than misread. root is not checked: it is not a
 * path for nsfs and differs from "/" inside cgroup namespaces. */
static bool
mi_parse_line(const char *line, size_t len, struct mi_entry *e)
{
	const char *tok, *colon;
	size_t pos = 0, tok_len;
	int field = 0, after_sep = -1;

	while (mi_token(line, len, &pos, &tok, &tok_len)) {
		switch (field) {
		case 0:
		case 1:
			if (!all_digits(tok, tok_len))
				return false;
			break;
		case 2:
			colon = memchr(tok, ':', tok_len);
			if (!colon || !all_digits(tok, colon - tok) ||
			    !all_digits(colon + 1, tok_len - (colon - tok) - 1))
				return false;
			break;
		case 3:
			e->root = tok;
			e->root_len = tok_len;
			break;
		case 4:
			if (tok[0] != '/')
				return false;
			e->mnt = tok;
			e->mnt_len = tok_len;
			break;
		case 5:
			break;
		default:
			if (after_sep < 0) {
				if (tok_len == 1 && tok[0] == '-')
					after_sep = 0;
				break;
			}
			if (++after_sep == 1) {
				e->fstype = tok;
				e->fstype_len = tok_len;
			}
			break;
		}
		field++;
	}
	return after_sep >= 3;
}

/* Walks the lines of text, returning the next well-formed entry in *e and
 * advancing *p; false at the end of the string. */
static bool
mi_next(const char **p, struct mi_entry *e)
{
	const char *line, *eol;

	while (**p) {
		line = *p;
		eol = strchrnul(line, '\n');
		*p = *eol ? eol + 1 : eol;
		if (mi_parse_line(line, eol - line, e))
			return true;
	}
	return false;
}

int
cgroup_find_mount_in(const char *mountinfo, char *out, size_t outlen)
{
	const char *p = mountinfo;
	struct mi_entry e, first = {0};
	bool default_is_cg2 = false;

	if (!mountinfo || !out)
		return -EINVAL;
	while (mi_next(&p, &e)) {
		bool cg2 = mi_eq(e.fstype, e.fstype_len, "cgroup2");

		/* The last mount on /sys/fs/cgroup is the visible one. */
		if (mi_eq(e.mnt, e.mnt_len, CGROUP_DEFAULT_MNT))
			default_is_cg2 = cg2;
		else if (cg2 && !first.mnt)
			first = e;
	}
	if (default_is_cg2) {
		if (outlen < sizeof(CGROUP_DEFAULT_MNT))
			return -ENAMETOOLONG;
		memcpy(out, CGROUP_DEFAULT_MNT, sizeof(CGROUP_DEFAULT_MNT));
		return 0;
	}
	if (!first.mnt)
		return -ENOENT;
	return mi_unescape(first.mnt, first.mnt_len, out, outlen);
}

int
cgroup_foreach_mount_in(const char *mountinfo, const char *fstype,
			int (*fn)(const char *mountpoint, void *arg), void *arg)
{
	const char *p = mountinfo;
	struct mi_entry e;
	char *buf = NULL;
	size_t buflen;
	int n = 0, err;

	if (!mountinfo || !fstype)
		return -EINVAL;
	buflen = strlen(mountinfo) + 1; /* no mount point is longer */
	while (mi_next(&p, &e)) {
		if (!mi_eq(e.fstype, e.fstype_len, fstype))
			continue;
		if (n == INT_MAX) {
			err = -EOVERFLOW;
			goto out_free;
		}
		n++;
		if (!fn)
			continue;
		if (!buf) {
			buf = malloc(buflen);
			if (!buf)
				return -ENOMEM;
		}
		mi_unescape(e.mnt, e.mnt_len, buf, buflen);
		err = fn(buf, arg);
		if (err < 0)
			goto out_free;
	}
	err = n;
out_free:
	free(buf);
	return err;
}

int
cgroup_foreach_mount_at(const char *mountinfo, const char *mountpoint,
			int (*fn)(const char *root, void *arg), void *arg)
{
	const char *p = mountinfo;
	struct mi_entry e;
	char *buf;
	int n = 0, err = 0;

	if (!mountinfo || !mountpoint || !fn)
		return -EINVAL;
	buf = malloc(strlen(mountinfo) + 1); /* no root is longer */
	if (!buf)
		return -ENOMEM;
	while (mi_next(&p, &e)) {
		if (!mi_eq(e.mnt, e.mnt_len, mountpoint))
			continue;
		if (n == INT_MAX) {
			err = -EOVERFLOW;
			break;
		}
		n++;
		mi_unescape(e.root, e.root_len, buf, strlen(mountinfo) + 1);
		err = fn(buf, arg);
		if (err < 0)
			break;
	}
	free(buf);
	return err < 0 ? err : n;
}

/* The next '/'-separated component of *p, skipping empty ones. */
static bool
path_next(const char **p, const char **comp, size_t *len)
{
	const char *s = *p;

	while (*s == '/')
		s++;
	if (*s == '\0') {
		*p = s;
		return false;
	}
	*comp = s;
	s = strchrnul(s, '/');
	*len = s - *comp;
	*p = s;
	return true;
}

static bool
comp_is(const char *comp, size_t len, const char *s)
{
	return strlen(s) == len && !memcmp(comp, s, len);
}

/* Appends "/comp" to out[0..*len), keeping it NUL-terminated. */
static int
path_push(char *out, size_t outlen, size_t *len, const char *comp, size_t clen)
{
	if (clen > NAME_MAX || clen + 2 > outlen - *len)
		return -ENAMETOOLONG;
	out[(*len)++] = '/';
	memcpy(out + *len, comp, clen);
	*len += clen;
	out[*len] = '\0';
	return 0;
}

/* Copies mnt into out with repeated and trailing slashes dropped; *depth is
 * its number of components. mnt comes from mountinfo, so "." and ".." in it
 * are refused rather than interpreted. */
static int
path_put_mnt(const char *mnt, char *out, size_t outlen, size_t *len, size_t *depth)
{
	const char *comp;
	size_t clen;
	int err;

	if (mnt[0] != '/')
		return -EINVAL;
	*len = 0;
	*depth = 0;
	out[0] = '\0';
	while (path_next(&mnt, &comp, &clen)) {
		if (comp_is(comp, clen, ".") || comp_is(comp, clen, ".."))
			return -EINVAL;
		err = path_push(out, outlen, len, comp, clen);
		if (err)
			return err;
		(*depth)++;
	}
	return 0;
}

/* NAME of --cgroup NAME: [A-Za-z0-9._-]+, neither "." nor "..". */
static int
name_check(const char *name)
{
	size_t i, len = strlen(name);

	if (!len || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return -EINVAL;
	}
	return len > NAME_MAX ? -ENAMETOOLONG : 0;
}

/* Lexically normalises the absolute path arg into out. A ".." may only
 * remove a component deeper than mnt_depth: the components that end up
 * compared against mnt are then never rewritten, so a path cannot leave mnt
 * and come back, nor climb above "/". */
static int
path_normalise(const char *arg, size_t mnt_depth, char *out, size_t outlen, size_t *depth)
{
	const char *comp;
	size_t clen, len = 0;
	int err;

	*depth = 0;
	out[0] = '\0';
	while (path_next(&arg, &comp, &clen)) {
		if (comp_is(comp, clen, "."))
			continue;
		if (comp_is(comp, clen, "..")) {
			if (*depth <= mnt_depth)
				return -EINVAL;
			while (out[--len] != '/')
				;
			out[len] = '\0';
			(*depth)--;
			continue;
		}
		err = path_push(out, outlen, &len, comp, clen);
		if (err)
			return err;
		(*depth)++;
	}
	return 0;
}

/* Whether the first components of the normalised path are those of mnt. */
static bool
path_has_prefix(const char *path, const char *mnt)
{
	const char *pc, *mc;
	size_t plen, mlen;

	while (path_next(&mnt, &mc, &mlen)) {
		if (!path_next(&path, &pc, &plen) || plen != mlen || memcmp(pc, mc, mlen))
			return false;
	}
	return true;
}

int
cgroup_resolve(const char *mnt, const char *arg, pid_t pid, char *out, size_t outlen, bool *fresh)
{
	char run[32];
	size_t len, depth, mnt_depth;
	int err;

	if (fresh)
		*fresh = false;
	if (!mnt || !out)
		return -EINVAL;
	if (outlen < 2)
		return -ENAMETOOLONG;

	if (arg && arg[0] == '/') {
		/* Count mnt's components, then normalise arg over it. */
		err = path_put_mnt(mnt, out, outlen, &len, &mnt_depth);
		if (err)
			return err;
		err = path_normalise(arg, mnt_depth, out, outlen, &depth);
		if (err)
			return err;
		if (depth <= mnt_depth || !path_has_prefix(out, mnt))
			return -EINVAL;
		return 0;
	}

	if (arg) {
		if (strchr(arg, '/'))
			return -EINVAL;
		err = name_check(arg);
		if (err)
			return err;
	} else {
		if (pid <= 0)
			return -EINVAL;
		snprintf(run, sizeof(run), "run-%d", (int)pid);
		arg = run;
	}
	err = path_put_mnt(mnt, out, outlen, &len, &mnt_depth);
	if (err)
		return err;
	err = path_push(out, outlen, &len, CGROUP_SUBDIR, strlen(CGROUP_SUBDIR));
	if (err)
		return err;
	err = path_push(out, outlen, &len, arg, strlen(arg));
	if (err)
		return err;
	if (fresh && arg == run)
		*fresh = true;
	return 0;
}

int
cgroup_of_pid_in(const char *text, char *out, size_t outlen)
{
	const char *line = text;

	/* cgroup v2's line is "0::/path" (hybrid hosts list v1 ones too) */
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (len >= 3 && !strncmp(line, "0::", 3)) {
			if (len - 3 >= outlen)
				return -ENAMETOOLONG;
			memcpy(out, line + 3, len - 3);
			out[len - 3] = 0;
			return out[0] == '/' ? 0 : -EINVAL;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}
