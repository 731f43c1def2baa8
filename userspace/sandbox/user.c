// SPDX-License-Identifier: Apache-2.0
/* Whom CMD runs as (sandbox_resolve_user): the user --user names, by name
 * first and then as a numeric uid, or without it the user who ran sudo;
 * never root unless asked for. */
#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "sandbox/steps.h"

#define ROOT_REFUSED                                                                               \
	"CMD would run as root: pass --user USER (or --user root to accept that root can leave "   \
	"the cgroup)"

/* A decimal id: digits only, no sign, no blanks, not (id_t)-1 which the
 * set*id() calls read as "leave unchanged". Returns 0 or -EINVAL. */
static int
parse_id(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v >= UINT32_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

/* getpwnam_r (name != NULL) or getpwuid_r; fills out from the entry.
 * Returns 0, -ENOENT (no such entry), -EINVAL (name or home too long for
 * struct sandbox_user), -ENOMEM or another lookup error. */
static int
pw_lookup(const char *name, uid_t uid, struct sandbox_user *out)
{
	struct passwd pw, *res = NULL;
	size_t len = 16384;
	char *buf = NULL, *nbuf;
	int err;

	for (;;) {
		nbuf = realloc(buf, len);
		if (!nbuf) {
			err = -ENOMEM;
			goto out_free;
		}
		buf = nbuf;
		if (name)
			err = getpwnam_r(name, &pw, buf, len, &res);
		else
			err = getpwuid_r(uid, &pw, buf, len, &res);
		if (err != ERANGE || len >= (1U << 20))
			break;
		len *= 2;
	}
	if (!res) {
		/* "not found" comes back as 0 or, from some NSS modules,
		 * ENOENT/ESRCH/EBADF/EPERM (getpwnam(3)) */
		err = (err == 0 || err == ENOENT || err == ESRCH || err == EBADF || err == EPERM)
			      ? -ENOENT
			      : -err;
		goto out_free;
	}
	if (strlen(pw.pw_name) >= sizeof(out->name) || strlen(pw.pw_dir) >= sizeof(out->home)) {
		err = -EINVAL;
		goto out_free;
	}
	out->uid = pw.pw_uid;
	out->gid = pw.pw_gid;
	strcpy(out->name, pw.pw_name);
	strcpy(out->home, pw.pw_dir);
	err = 0;
out_free:
	free(buf);
	return err;
}

/* --user USER: a name first (as chown(1) does), then a numeric uid. A uid
 * with no passwd entry is accepted (a throwaway uid shares nothing with
 * other processes): gid = uid, no supplementary groups, HOME left alone. */
static int
resolve_named(const char *user, struct sandbox_user *out, char *errbuf, size_t errlen)
{
	uint32_t id;
	int err;

	if (!*user) {
		sandbox_err(errbuf, errlen, "--user: empty user name");
		return -EINVAL;
	}
	err = pw_lookup(user, 0, out);
	if (err != -ENOENT)
		goto out;
	if (parse_id(user, &id)) {
		sandbox_err(errbuf, errlen, "--user %s: no such user", user);
		return -ENOENT;
	}
	err = pw_lookup(NULL, id, out);
	if (err == -ENOENT) {
		out->uid = id;
		out->gid = id;
		return 0;
	}
out:
	if (err == -EINVAL)
		sandbox_err(errbuf, errlen, "--user %s: name or home directory too long", user);
	else if (err)
		sandbox_err(errbuf, errlen, "--user %s: passwd lookup failed", user);
	return err;
}

/* No --user: the user who ran sudo (SUDO_UID/SUDO_GID), never root. */
static int
resolve_sudo(struct sandbox_user *out, char *errbuf, size_t errlen)
{
	const char *s_uid = getenv("SUDO_UID"), *s_gid = getenv("SUDO_GID");
	uint32_t uid, gid;
	bool have_gid = false;
	int err;

	/* SUDO_UID=0 is root running sudo: nobody asked for a lesser user */
	if (!s_uid || !*s_uid || !strcmp(s_uid, "0")) {
		sandbox_err(errbuf, errlen, "%s", ROOT_REFUSED);
		return -EPERM;
	}
	if (parse_id(s_uid, &uid)) {
		sandbox_err(errbuf, errlen, "SUDO_UID=%s: not a uid", s_uid);
		return -EINVAL;
	}
	if (uid == 0) { /* "00" */
		sandbox_err(errbuf, errlen, "%s", ROOT_REFUSED);
		return -EPERM;
	}
	if (s_gid && *s_gid) {
		if (parse_id(s_gid, &gid)) {
			sandbox_err(errbuf, errlen, "SUDO_GID=%s: not a gid", s_gid);
			return -EINVAL;
		}
		if (gid == 0) {
			sandbox_err(errbuf, errlen,
				    "SUDO_GID is 0: pass --user USER to choose whom CMD runs as");
			return -EPERM;
		}
		have_gid = true;
	}
	err = pw_lookup(NULL, uid, out);
	if (err == -ENOENT && have_gid) {
		out->uid = uid; /* sudo from a uid without passwd entry */
	} else if (err == -ENOENT) {
		sandbox_err(errbuf, errlen, "SUDO_UID=%s: no such user and no SUDO_GID", s_uid);
		return err;
	} else if (err) {
		sandbox_err(errbuf, errlen, "SUDO_UID=%s: passwd lookup failed", s_uid);
		return err;
	}
	if (have_gid)
		out->gid = gid; /* the group sudo was run with wins over passwd */
	return 0;
}

int
sandbox_resolve_user(const char *user, struct sandbox_user *out, char *errbuf, size_t errlen)
{
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (user)
		return resolve_named(user, out, errbuf, errlen);
	return resolve_sudo(out, errbuf, errlen);
}
