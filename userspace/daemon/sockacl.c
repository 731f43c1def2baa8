// SPDX-License-Identifier: Apache-2.0
/* The user socket's access (sockacl.h): the group of users.json's first
 * group by the file's owner and mode, the others and the accounts it
 * names by a POSIX access ACL, written as the kernel's
 * system.posix_acl_access xattr (linux/posix_acl_xattr.h): a header and
 * one entry per id, sorted, no library between. */
#include <endian.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "daemon/sockacl.h"

static int
cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* ids sorted, each once; the new count. */
static int
sort_ids(uint32_t *ids, int n)
{
	int k = 0;

	qsort(ids, (size_t)n, sizeof(*ids), cmp_id);
	for (int i = 0; i < n; i++)
		if (!k || ids[i] != ids[k - 1])
			ids[k++] = ids[i];
	return k;
}

/* An entry of an ACL as the system.posix_acl_access xattr has it. */
static struct posix_acl_xattr_entry
acl_entry(uint16_t tag, uint16_t perm, uint32_t id)
{
	return (struct posix_acl_xattr_entry){htole16(tag), htole16(perm), htole32(id)};
}

int
usersock_access(const char *path, const struct usercfg *c, char *errbuf, size_t errlen)
{
	uint32_t uids[USERCFG_MAX_USERS], gids[USERCFG_MAX_GROUPS];
	struct posix_acl_xattr_entry e[4 + USERCFG_MAX_USERS + USERCFG_MAX_GROUPS];
	char buf[sizeof(struct posix_acl_xattr_header) + sizeof(e)];
	struct posix_acl_xattr_header h = {.a_version = htole32(POSIX_ACL_XATTR_VERSION)};
	struct group *gr = getgrnam(c->groups[0]);
	int nu = 0, ng = 0, k = 0;
	gid_t own;

	if (!gr) {
		snprintf(errbuf, errlen, "%s: no group called %s", path, c->groups[0]);
		return -ENOENT;
	}
	own = gr->gr_gid;
	if (chown(path, 0, own) || chmod(path, 0660)) {
		snprintf(errbuf, errlen, "%s: cannot give it to group %s: %s", path, c->groups[0],
			 strerror(errno));
		return -errno;
	}
	for (int i = 1; i < c->ngroups; i++) {
		gr = getgrnam(c->groups[i]);
		if (!gr) {
			snprintf(errbuf, errlen, "%s: no group called %s", path, c->groups[i]);
			return -ENOENT;
		}
		if (gr->gr_gid != own)
			gids[ng++] = gr->gr_gid;
	}
	for (int i = 0; i < c->nusers; i++) {
		struct passwd *pw = getpwnam(c->users[i].name);

		if (!pw || !pw->pw_uid) {
			snprintf(errbuf, errlen, "%s: no user called %s", path, c->users[i].name);
			return -ENOENT;
		}
		uids[nu++] = pw->pw_uid;
	}
	if (!nu && !ng) {
		if (lremovexattr(path, "system.posix_acl_access") && errno != ENODATA &&
		    errno != EOPNOTSUPP) {
			snprintf(errbuf, errlen, "%s: cannot remove its ACL: %s", path,
				 strerror(errno));
			return -errno;
		}
		return 0;
	}
	nu = sort_ids(uids, nu);
	ng = sort_ids(gids, ng);
	e[k++] = acl_entry(ACL_USER_OBJ, ACL_READ | ACL_WRITE, (uint32_t)ACL_UNDEFINED_ID);
	for (int i = 0; i < nu; i++)
		e[k++] = acl_entry(ACL_USER, ACL_READ | ACL_WRITE, uids[i]);
	e[k++] = acl_entry(ACL_GROUP_OBJ, ACL_READ | ACL_WRITE, (uint32_t)ACL_UNDEFINED_ID);
	for (int i = 0; i < ng; i++)
		e[k++] = acl_entry(ACL_GROUP, ACL_READ | ACL_WRITE, gids[i]);
	e[k++] = acl_entry(ACL_MASK, ACL_READ | ACL_WRITE, (uint32_t)ACL_UNDEFINED_ID);
	e[k++] = acl_entry(ACL_OTHER, 0, (uint32_t)ACL_UNDEFINED_ID);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), e, sizeof(e[0]) * (size_t)k);
	if (lsetxattr(path, "system.posix_acl_access", buf, sizeof(h) + sizeof(e[0]) * (size_t)k,
		      0)) {
		snprintf(errbuf, errlen,
			 "%s: cannot let users.json's %s reach it (an access ACL): %s", path,
			 nu ? "users" : "groups after the first", strerror(errno));
		return -errno;
	}
	return 0;
}
