// SPDX-License-Identifier: Apache-2.0
/* The certificates of HTTPS inspection: the CA CMD is told to trust (made
 * for the run in memory, EC P-256, or brought with --ca CERT,KEY), and the
 * leaf certificate for each name the proxy answers for, minted on demand
 * and kept in a bounded LRU cache. The CA's key is never written anywhere
 * by egressctl. OpenSSL; no I/O but reading --ca's two files. */
#ifndef INSPECT_CA_H
#define INSPECT_CA_H

#include <stddef.h>

#include <openssl/ssl.h>

#define CA_LEAF_CACHE 1024 /* leaf certificates kept, the least recently used dropped */

struct inspect_ca;

/* A CA made now (cert and key NULL) or read from the PEM files cert and
 * key (the key unencrypted; the certificate a CA's, matching the key).
 * NULL with errbuf set. */
struct inspect_ca *inspect_ca_new(const char *cert, const char *key, char *errbuf, size_t errlen);
void inspect_ca_free(struct inspect_ca *ca);

/* The CA certificate in PEM (NUL-terminated, *len bytes without it), for
 * CMD's trust file: malloc'd, NULL when out of memory. */
char *inspect_ca_pem(const struct inspect_ca *ca, size_t *len);

/* Makes ssl (a server's, not yet handshaken) present a certificate for
 * name (a host name, or an IPv4/IPv6 literal, which gets an IP SAN),
 * issued by the CA, with the CA after it; minted on first use and cached.
 * Returns 0 or -errno (-ENOMEM, -EINVAL for a name it cannot put in a
 * certificate) with errbuf set. */
int inspect_ca_use(struct inspect_ca *ca, SSL *ssl, const char *name, char *errbuf, size_t errlen);

/* Leaf certificates minted so far, and how many the cache holds now. */
void inspect_ca_counts(const struct inspect_ca *ca, unsigned long *minted, unsigned int *cached);

#endif /* INSPECT_CA_H */
