// SPDX-License-Identifier: Apache-2.0
/* The upstream proxy egressctl reaches destinations through
 * (--upstream-proxy): its URL read, and its credentials (one line
 * user:password in --upstream-proxy-auth FILE, or the variable
 * PROXYURL_ENV) made into the Proxy-Authorization value. Credentials are
 * never taken from a URL (a command line is readable by every process),
 * never printed, and never left in egressctl's environment, which CMD
 * inherits: proxyurl_take_env() takes the variable out before anything
 * starts. No I/O but reading the credentials file. */
#ifndef PROXYURL_H
#define PROXYURL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXYURL_ENV	  "EGRESSCTL_UPSTREAM_PROXY_CREDENTIALS"
#define PROXYURL_CRED_MAX 512  /* user:password, bytes */
#define PROXYURL_AUTH_MAX 1024 /* "Basic " and the base64 of user:password, NUL */
#define PROXYURL_HOST_MAX 256

struct proxyurl {
	char host[PROXYURL_HOST_MAX]; /* a name (lower-case) or an address literal, IPv6 bare */
	uint16_t port;
	char text[PROXYURL_HOST_MAX + 16]; /* "http://HOST:PORT", for messages */
};

/* Reads "http://HOST:PORT" (scheme case-insensitive, a trailing '/'
 * allowed; HOST a name, an IPv4 address or [IPv6]) into u. https://,
 * other schemes, user info, a path or query, or a missing port are
 * -EINVAL with err saying why. */
int proxyurl_parse(const char *url, struct proxyurl *u, char *err, size_t errlen);

/* Takes PROXYURL_ENV out of the environment: its value kept in this
 * process's memory, erased where the environment held it (so that
 * /proc/PID/environ no longer shows it) and unset, so no child inherits
 * it. Call first thing in main(). */
void proxyurl_take_env(void);

/* "Basic BASE64" for the credentials user:password (n bytes) into auth
 * (len bytes). One colon at least, a user before it, no control bytes, at
 * most PROXYURL_CRED_MAX bytes: otherwise -EINVAL with err saying why
 * (never quoting the credentials). */
int proxyurl_basic(const char *cred, size_t n, char *auth, size_t len, char *err, size_t errlen);

/* The Proxy-Authorization value: from file (its first line; a file others
 * may read is warned about; a second line is an error), else from the
 * variable proxyurl_take_env() took, else none (auth ""). *from says
 * which ("FILE", "$" PROXYURL_ENV, or NULL for none). Returns 0 or -errno
 * with err saying why. */
int proxyurl_credentials(const char *file, char *auth, size_t len, const char **from, char *err,
			 size_t errlen);

#endif /* PROXYURL_H */
