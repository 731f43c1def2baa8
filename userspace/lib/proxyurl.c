// SPDX-License-Identifier: Apache-2.0
/* The upstream proxy's URL and credentials (see proxyurl.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include "lib/log.h"
#include "lib/proxyurl.h"

/* what proxyurl_take_env() took */
static char env_cred[PROXYURL_CRED_MAX + 1];
static size_t env_len;
static bool env_taken;

static int
fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

/* A host name as a resolver takes it: letters, digits, '-', '_', '.',
 * no empty label; lower-cased into out. */
static bool
host_name(const char *s, size_t n, char *out)
{
	if (!n || n >= PROXYURL_HOST_MAX || s[0] == '.' || s[0] == '-' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '.' && s[i + 1] == '.')
			return false;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'))
			return false;
		out[i] = (char)((ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch);
	}
	out[n] = 0;
	return true;
}

/* HOST[:PORT] of the URL (n bytes) into u. */
static int
parse_authority(const char *a, size_t n, struct proxyurl *u, char *err, size_t errlen)
{
	const char *colon, *h = a;
	size_t hn;
	char buf[PROXYURL_HOST_MAX];
	struct in6_addr a6;
	long port = 0;

	if (n && a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (!close)
			return fail(err, errlen, "an IPv6 address without its ']'");
		h = a + 1;
		hn = (size_t)(close - h);
		colon = close + 1 < a + n ? close + 1 : NULL;
		if (colon && *colon != ':')
			return fail(err, errlen, "expected ':PORT' after the IPv6 address");
		if (hn >= sizeof(buf))
			return fail(err, errlen, "invalid IPv6 address");
		memcpy(buf, h, hn);
		buf[hn] = 0;
		if (inet_pton(AF_INET6, buf, &a6) != 1)
			return fail(err, errlen, "invalid IPv6 address");
		snprintf(u->host, sizeof(u->host), "%s", buf);
	} else {
		colon = memrchr(a, ':', n);
		hn = colon ? (size_t)(colon - a) : n;
		if (!host_name(a, hn, u->host))
			return fail(err, errlen, "invalid host name");
	}
	if (!colon)
		return fail(err, errlen, "the port is missing (expected http://HOST:PORT)");
	for (const char *p = colon + 1; p < a + n; p++) {
		if (*p < '0' || *p > '9' || port > 65535)
			return fail(err, errlen, "expected a port from 1 to 65535");
		port = port * 10 + (*p - '0');
	}
	if (port < 1 || port > 65535)
		return fail(err, errlen, "expected a port from 1 to 65535");
	u->port = (uint16_t)port;
	snprintf(u->text, sizeof(u->text), strchr(u->host, ':') ? "http://[%s]:%u" : "http://%s:%u",
		 u->host, u->port);
	return 0;
}

int
proxyurl_parse(const char *url, struct proxyurl *u, char *err, size_t errlen)
{
	const char *a;
	size_t n;

	memset(u, 0, sizeof(*u));
	if (!strncasecmp(url, "https://", 8))
		return fail(err, errlen,
			    "https:// to the upstream proxy is not supported: egressctl speaks "
			    "plain HTTP to it (TLS to each site stays end to end inside CONNECT); "
			    "use http://HOST:PORT");
	if (strncasecmp(url, "http://", 7))
		return fail(err, errlen, "expected http://HOST:PORT");
	a = url + 7;
	n = strcspn(a, "/?#");
	if (memchr(a, '@', n))
		return fail(err, errlen,
			    "credentials do not go in the URL (a command line is readable by "
			    "every process): use --upstream-proxy-auth FILE or $" PROXYURL_ENV);
	if (a[n] && strcmp(a + n, "/"))
		return fail(err, errlen,
			    "a path or query is not taken (expected http://HOST:PORT)");
	return parse_authority(a, n, u, err, errlen);
}

void
proxyurl_take_env(void)
{
	static const char name[] = PROXYURL_ENV "=";
	extern char **environ;

	for (char **e = environ; e && *e; e++) {
		size_t n;

		if (strncmp(*e, name, sizeof(name) - 1))
			continue;
		n = strlen(*e + sizeof(name) - 1);
		if (!env_taken && n <= PROXYURL_CRED_MAX) {
			memcpy(env_cred, *e + sizeof(name) - 1, n);
			env_len = n;
		}
		env_taken = true; /* too long: proxyurl_basic() says so */
		if (n > PROXYURL_CRED_MAX)
			env_len = PROXYURL_CRED_MAX + 1;
		explicit_bzero(*e + sizeof(name) - 1, n);
	}
	unsetenv(PROXYURL_ENV);
}

static void
base64(const unsigned char *in, size_t n, char *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned int v = (unsigned int)in[i] << 16;

		if (i + 1 < n)
			v |= (unsigned int)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = tab[(v >> 18) & 63];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = 0;
}

int
proxyurl_basic(const char *cred, size_t n, char *auth, size_t len, char *err, size_t errlen)
{
	const char *colon = memchr(cred, ':', n);

	if (n > PROXYURL_CRED_MAX)
		return fail(err, errlen, "the credentials are longer than 512 bytes");
	if (!colon)
		return fail(err, errlen, "expected user:password (no ':' found)");
	if (colon == cred)
		return fail(err, errlen, "expected user:password (the user is empty)");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)cred[i] < 0x20 || cred[i] == 0x7f)
			return fail(err, errlen, "a control character in the credentials");
	if (len < 6 + (n + 2) / 3 * 4 + 1)
		return fail(err, errlen, "the credentials do not fit");
	memcpy(auth, "Basic ", 6);
	base64((const unsigned char *)cred, n, auth + 6);
	return 0;
}

/* The one line of file into buf (at most PROXYURL_CRED_MAX + 1 bytes kept,
 * so that a longer one is said to be too long): its length, or -errno
 * with err set. */
static long
read_line(const char *file, char *buf, char *err, size_t errlen)
{
	char data[PROXYURL_CRED_MAX + 64];
	const char *nl;
	struct stat st;
	ssize_t got;
	size_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0 || fstat(fd, &st)) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", file, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_size >= (off_t)sizeof(data)) {
		close(fd);
		snprintf(err, errlen, "%s: %s", file,
			 S_ISREG(st.st_mode) ? "longer than one line user:password"
					     : "not a regular file");
		return -EINVAL;
	}
	if (st.st_mode & 077)
		log_warnx("%s can be read by other users (mode %04o): chmod 600 it", file,
			  (unsigned int)(st.st_mode & 07777));
	got = read(fd, data, sizeof(data));
	close(fd);
	if (got < 0) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -EIO;
	}
	nl = memchr(data, '\n', (size_t)got);
	n = nl ? (size_t)(nl - data) : (size_t)got;
	for (size_t i = n; i < (size_t)got; i++) {
		if (data[i] == '\n' || data[i] == '\r' || data[i] == ' ' || data[i] == '\t')
			continue;
		explicit_bzero(data, sizeof(data));
		snprintf(err, errlen, "%s: expected one line, user:password", file);
		return -EINVAL;
	}
	if (n && data[n - 1] == '\r')
		n--;
	if (n > PROXYURL_CRED_MAX)
		n = PROXYURL_CRED_MAX + 1;
	memcpy(buf, data, n);
	explicit_bzero(data, sizeof(data));
	return (long)n;
}

int
proxyurl_credentials(const char *file, char *auth, size_t len, const char **from, char *err,
		     size_t errlen)
{
	char buf[PROXYURL_CRED_MAX + 1], why[160];
	const char *cred = buf;
	long n;
	int rc;

	auth[0] = 0;
	*from = NULL;
	if (file) {
		n = read_line(file, buf, err, errlen);
		if (n < 0)
			return (int)n;
		*from = file;
	} else if (env_taken) {
		cred = env_cred;
		n = (long)env_len;
		*from = "$" PROXYURL_ENV;
	} else {
		return 0;
	}
	rc = proxyurl_basic(cred, (size_t)n, auth, len, why, sizeof(why));
	explicit_bzero(buf, sizeof(buf));
	if (rc)
		snprintf(err, errlen, "%s: %s", *from, why);
	return rc;
}
