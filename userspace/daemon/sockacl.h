// SPDX-License-Identifier: Apache-2.0
/* Who may connect to the user socket (usersock.c), as its file's owner,
 * group, mode and access ACL say. */
#ifndef DAEMON_SOCKACL_H
#define DAEMON_SOCKACL_H

#include <stddef.h>

#include "daemon/usersock.h"

/* Who may connect to the socket at path: root, and the group of c's
 * first group (its owner and group, mode 0660); c's other groups and the
 * accounts its "users" names by an access ACL (none when there are none:
 * an ACL left from before is removed). 0, or -errno with errbuf set. */
int usersock_access(const char *path, const struct usercfg *c, char *errbuf, size_t errlen);

#endif /* DAEMON_SOCKACL_H */
