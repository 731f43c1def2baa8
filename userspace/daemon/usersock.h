// SPDX-License-Identifier: Apache-2.0
/* The user socket (`daemon --user-socket PATH`, usersock.c): `egressctl
 * run` for users of the allowed groups, and accounts named, without sudo. The client sends its
 * arguments, environment and descriptors; the daemon checks who it is and
 * what it asks, starts `egressctl run --user THEM` as root with those
 * descriptors, forwards the client's signals and answers with the exit
 * status. The administrator's ceiling is users.json (usercfg.c). */
#ifndef USERSOCK_H
#define USERSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <event2/event.h>

#include "paths.h"

#define USERSOCK_CONFIG EGR_SYSCONFDIR "/users.json"

/* The administrator's ceiling (users.json; defaults when it is missing). */
#define USERCFG_MAX_GROUPS 16
#define USERCFG_MAX_USERS  256
#define USERCFG_MAX_DENY   64
#define USERCFG_MAX_ALLOW  64 /* POLICY_CEILING_MAX */
#define USERCFG_MAX_UNIX   32 /* TARGET_MAX_UNIX */
struct usercfg_user;
struct usercfg {
	char *groups[USERCFG_MAX_GROUPS]; /* who may run: members of these ("egressctl") */
	int ngroups;
	int max_runs;		      /* runs (and requests) at once per user (4) */
	bool audit;		      /* --audit allowed (true) */
	bool ask;		      /* --ask allowed (true) */
	char *deny[USERCFG_MAX_DENY]; /* --deny RULE added to every run */
	int ndeny;
	/* "allow": the rules a user's allow rules must each be within
	 * (policy_rule_within); has_allow false: no ceiling */
	char *allow[USERCFG_MAX_ALLOW];
	int nallow;
	bool has_allow;
	int max_conns; /* "max_conns_per_run": run's --max-conns at most (0: run's own) */
	/* "allow_unix": the sockets a user's --allow-unix may let CMD reach
	 * (exactly these names); without the key (has_allow_unix false) any
	 * where the ceiling has no allow and no deny rules, none where it has:
	 * a container runtime's or the service manager's socket starts work
	 * outside the run's cgroup, past those rules */
	char *allow_unix[USERCFG_MAX_UNIX];
	int nallow_unix;
	bool has_allow_unix;
	/* "users": accounts by name, who may run whatever their groups, each
	 * with the keys above (but groups) its entry sets in place of these */
	struct usercfg_user *users;
	int nusers;
};

/* The keys a "users" entry sets (usercfg_user.set). */
#define USERCFG_SET_MAX_RUNS   0x01u
#define USERCFG_SET_AUDIT      0x02u
#define USERCFG_SET_DENY       0x04u
#define USERCFG_SET_ALLOW      0x08u
#define USERCFG_SET_MAX_CONNS  0x10u
#define USERCFG_SET_ASK	       0x20u
#define USERCFG_SET_ALLOW_UNIX 0x40u
struct usercfg_user {
	char *name;	  /* the account's */
	unsigned int set; /* USERCFG_SET_*: the keys its entry has */
	struct usercfg c; /* their values (no groups, no users) */
};

/* Reads path into c; a missing file gives the defaults. Returns 0, or
 * -errno with errbuf set. */
int usercfg_load(const char *path, struct usercfg *c, char *errbuf, size_t errlen);
/* Parses a users.json document of len bytes. */
int usercfg_parse(const char *buf, size_t len, struct usercfg *c, char *errbuf, size_t errlen);
void usercfg_free(struct usercfg *c);
/* The entry of the account called name in c's "users", or NULL. */
const struct usercfg_user *usercfg_user(const struct usercfg *c, const char *name);
/* The ceiling of the account called name into *view: c's, each key its
 * "users" entry sets taking the place of c's (deny and allow whole lists:
 * a user's "deny" replaces the top level's, it is not added to it). A
 * view: its strings are c's, valid while c is; never usercfg_free()d. */
void usercfg_for(const struct usercfg *c, const char *name, struct usercfg *view);

/* Whether c restricts nothing: no allow and no deny rules (the user may
 * let CMD reach anything, their own listeners included). */
bool usercfg_open(const struct usercfg *c);
/* Whether c lets a user's --allow-unix name path ("allow_unix"). */
bool usercfg_unix_ok(const struct usercfg *c, const char *path);

/* Whether run's arguments (ending in "--" CMD...) are within a user's
 * reach: no option that names a path the service would open (only fd:N,
 * N from 4 to nfds-1, of the descriptors sent), none that widens the
 * sandbox (--user, --cgroup, --allow-sudo), none the ceiling refuses.
 * Returns 0, or -EPERM / -EINVAL with err set. `run`'s option table is the
 * command's (cli/), so the check is handed to the daemon. */
typedef int (*usersock_check_fn)(char **args, int nargs, int nfds, const struct usercfg *c,
				 char *err, size_t errlen);
void usersock_set_check(usersock_check_fn fn);

struct usersock;

/* Listens on path (mode 0660, group: the first of users.json's groups;
 * its other groups and its "users" by an access ACL), users.json read
 * from cfgpath. NULL with errbuf set. */
struct usersock *usersock_open(struct event_base *base, const char *path, const char *cfgpath,
			       char *errbuf, size_t errlen);
/* Reads users.json again (SIGHUP): the new ceiling for what comes next,
 * the socket's group and ACL with it; one that does not load leaves the
 * old. */
void usersock_reload(struct usersock *us);
/* Ends every run it started (their cgroups killed) and closes. */
void usersock_free(struct usersock *us);

#endif /* USERSOCK_H */
