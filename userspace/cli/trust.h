// SPDX-License-Identifier: Apache-2.0
/* What CMD is told to trust when HTTPS is inspected: the run's CA in
 * files it can read and not change, and the variables that name them. */
#ifndef CLI_TRUST_H
#define CLI_TRUST_H

#include <stddef.h>

struct trust {
	char dir[64];	 /* "" until written */
	char ca[96];	 /* the CA alone (NODE_EXTRA_CA_CERTS) */
	char bundle[96]; /* the system's bundle, then the CA (the others) */
};

/* Writes them (ca_pem: len bytes of PEM): a directory of their own under
 * /tmp (mkdtemp, root's, 0755), ca.pem and bundle.pem in it, 0444. CMD's
 * mount namespace gets the directory read-only (sandbox_opts.ro_dir).
 * Returns 0 or -errno with errbuf set (nothing left behind). */
int trust_write(struct trust *t, const char *ca_pem, size_t len, char *errbuf, size_t errlen);

/* Removes what trust_write() made; nothing when it made nothing. */
void trust_remove(struct trust *t);

/* The variables CMD gets (names and, for each, the file: ca or bundle),
 * for child.c and the docs: SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
 * CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT, NPM_CONFIG_CAFILE,
 * AWS_CA_BUNDLE (the bundle) and NODE_EXTRA_CA_CERTS (the CA). */
void trust_setenv(const struct trust *t);

#endif /* CLI_TRUST_H */
