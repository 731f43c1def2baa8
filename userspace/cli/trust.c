// SPDX-License-Identifier: Apache-2.0
/* CMD's trust files for HTTPS inspection (trust.h). The system's bundle
 * is OpenSSL's default certificate file (X509_get_default_cert_file(), on
 * Debian /usr/lib/ssl/cert.pem, that is /etc/ssl/certs/ca-certificates.crt),
 * read as it is now; without one CMD trusts the CA alone, and that is said.
 * Only certificates are written: the CA's key stays in egressctl's memory
 * (inspect/ca.c). The files are root's, 0444, in a root 0755 directory of
 * their own, which CMD's mount namespace has read-only: uid 0 in CMD (which
 * may chmod root's files) and --allow-sudo's CAP_DAC_OVERRIDE cannot
 * change them either. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/x509.h>

#include "cli/trust.h"
#include "lib/log.h"

/* Appends the file at path to out; 0 or -errno. */
static int
copy_file(int out, const char *path)
{
	char buf[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (in == -1)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (n < 0) {
		int err = -errno;

		close(in);
		return err ? err : -EIO;
	}
	close(in);
	return 0;
}

/* path, made 0444, with data (after the system's bundle with with_system). */
static int
write_file(const char *path, const char *data, size_t len, int with_system)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444), err = 0;
	const char *sys = X509_get_default_cert_file();

	if (fd == -1)
		return -errno;
	if (with_system) {
		err = copy_file(fd, sys);
		if (err == -ENOENT) {
			log_warnx(
				"HTTPS inspection: no system certificate bundle at %s: CMD trusts "
				"the inspection CA alone",
				sys);
			err = 0;
		} else if (!err && write(fd, "\n", 1) != 1) {
			err = -errno;
		}
	}
	if (!err && write(fd, data, len) != (ssize_t)len)
		err = -EIO;
	if (!err && (fchmod(fd, 0444) || fsync(fd)))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

int
trust_write(struct trust *t, const char *ca_pem, size_t len, char *errbuf, size_t errlen)
{
	int err;

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/egressctl-ca.XXXXXX");
	if (!mkdtemp(t->dir)) {
		err = -errno;
		t->dir[0] = 0;
		snprintf(errbuf, errlen, "cannot make a directory for the inspection CA: %s",
			 strerror(-err));
		return err;
	}
	snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", t->dir);
	snprintf(t->bundle, sizeof(t->bundle), "%s/bundle.pem", t->dir);
	err = chmod(t->dir, 0755) ? -errno : 0;
	if (!err)
		err = write_file(t->ca, ca_pem, len, 0);
	if (!err)
		err = write_file(t->bundle, ca_pem, len, 1);
	if (err) {
		snprintf(errbuf, errlen, "cannot write the inspection CA into %s: %s", t->dir,
			 strerror(-err));
		trust_remove(t);
	}
	return err;
}

void
trust_remove(struct trust *t)
{
	if (!t->dir[0])
		return;
	unlink(t->ca);
	unlink(t->bundle);
	if (rmdir(t->dir) && errno != ENOENT)
		log_warn("cannot remove %s", t->dir);
	t->dir[0] = 0;
}

void
trust_setenv(const struct trust *t)
{
	static const char *const bundle_vars[] = {
		"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
		"PIP_CERT",	 "NPM_CONFIG_CAFILE",  "AWS_CA_BUNDLE",
	};

	if (!t || !t->dir[0])
		return;
	for (size_t i = 0; i < sizeof(bundle_vars) / sizeof(bundle_vars[0]); i++)
		setenv(bundle_vars[i], t->bundle, 1);
	setenv("NODE_EXTRA_CA_CERTS", t->ca, 1);
}
