// SPDX-License-Identifier: Apache-2.0
/* The inspection CA and its leaf certificates (see ca.h). A CA made here
 * lives in this process's memory only: EC P-256, a random serial and name,
 * valid from a day before to 30 days after it was made, pathlen 0. Leaf
 * certificates share one EC P-256 key made with the CA (a key per name
 * would cost a key generation per new name and protect nothing more: the
 * key never leaves the process), name the host in their subjectAltName
 * (DNS, or IP for an address literal), serverAuth only, and end when the
 * CA does or in 30 days. They are cached by name, least recently used
 * dropped past CA_LEAF_CACHE: an SSL holds its own reference, so dropping
 * one never pulls it from under a handshake. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "inspect/ca.h"
#include "lib/hash.h"

#define CA_BUCKETS 2048
#define DAY	   (24L * 3600)

struct leaf {
	struct leaf *hnext;	  /* the bucket's chain */
	struct leaf *prev, *next; /* LRU: most recent first */
	X509 *cert;
	char name[];
};

struct inspect_ca {
	X509 *cert;
	EVP_PKEY *key;	    /* the CA's: signs leaves, never written */
	EVP_PKEY *leaf_key; /* every leaf's */
	struct leaf *bucket[CA_BUCKETS];
	struct leaf *head, *tail;
	unsigned int nleaves;
	unsigned long minted;
};

/* OpenSSL's last error in errbuf after what; returns -EINVAL. */
static int
ssl_fail(char *errbuf, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char msg[256];

	ERR_error_string_n(e, msg, sizeof(msg));
	ERR_clear_error();
	snprintf(errbuf, errlen, "%s: %s", what, e ? msg : "failed");
	return -EINVAL;
}

static int
add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A certificate for pub named subject, not yet signed: a random 127-bit
 * serial, version 3, valid from not_before to not_after (seconds from
 * now), or to until when that is sooner. */
static X509 *
cert_base(EVP_PKEY *pub, const X509_NAME *subject, const X509_NAME *issuer, long not_before,
	  long not_after, const ASN1_TIME *until)
{
	X509 *x = X509_new();
	BIGNUM *bn = BN_new();
	bool ok = x && bn && X509_set_version(x, 2) &&
		  BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
		  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
		  X509_gmtime_adj(X509_getm_notBefore(x), not_before) &&
		  X509_gmtime_adj(X509_getm_notAfter(x), not_after) &&
		  X509_set_subject_name(x, subject) && X509_set_issuer_name(x, issuer) &&
		  X509_set_pubkey(x, pub);

	if (ok && until && ASN1_TIME_compare(until, X509_get0_notAfter(x)) < 0)
		ok = X509_set1_notAfter(x, until);
	BN_free(bn);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* This run's CA: a fresh key and a self-signed certificate. */
static int
ca_make(struct inspect_ca *ca, char *errbuf, size_t errlen)
{
	unsigned char rnd[6];
	char cn[64];
	X509_NAME *name = X509_NAME_new();
	int err = 0;

	ca->key = EVP_EC_gen("P-256");
	if (!name || !ca->key || RAND_bytes(rnd, sizeof(rnd)) != 1) {
		X509_NAME_free(name);
		return ssl_fail(errbuf, errlen, "cannot make the inspection CA's key");
	}
	snprintf(cn, sizeof(cn), "egressctl inspection CA %02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
		 rnd[2], rnd[3], rnd[4], rnd[5]);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"egressctl",
					-1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
					0))
		err = ssl_fail(errbuf, errlen, "cannot name the inspection CA");
	if (!err)
		ca->cert = cert_base(ca->key, name, name, -DAY, 30 * DAY, NULL);
	if (!err &&
	    (!ca->cert ||
	     add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	     add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	     add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") ||
	     !X509_sign(ca->cert, ca->key, EVP_sha256())))
		err = ssl_fail(errbuf, errlen, "cannot make the inspection CA's certificate");
	X509_NAME_free(name);
	return err;
}

/* No passphrase: an encrypted key is refused rather than asked for. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* fopen(path) for reading; NULL with errbuf set. */
static FILE *
open_read(const char *path, char *errbuf, size_t errlen)
{
	FILE *f = fopen(path, "re");

	if (!f)
		snprintf(errbuf, errlen, "--ca: cannot read %s: %s", path, strerror(errno));
	return f;
}

/* --ca CERT,KEY: read, and checked to be a CA valid now whose key it is. */
static int
ca_load(struct inspect_ca *ca, const char *cert, const char *key, char *errbuf, size_t errlen)
{
	FILE *f = open_read(cert, errbuf, errlen);

	if (!f)
		return -EINVAL;
	ca->cert = PEM_read_X509(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (!ca->cert)
		return ssl_fail(errbuf, errlen, "--ca: no PEM certificate in the first file");
	f = open_read(key, errbuf, errlen);
	if (!f)
		return -EINVAL;
	ca->key = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (!ca->key)
		return ssl_fail(errbuf, errlen,
				"--ca: no unencrypted PEM private key in the second file");
	if (X509_check_private_key(ca->cert, ca->key) != 1)
		return ssl_fail(errbuf, errlen, "--ca: the key is not the certificate's");
	if (X509_check_ca(ca->cert) < 1)
		return snprintf(errbuf, errlen, "--ca: %s is no CA certificate", cert), -EINVAL;
	if (X509_cmp_current_time(X509_get0_notBefore(ca->cert)) > 0 ||
	    X509_cmp_current_time(X509_get0_notAfter(ca->cert)) < 0)
		return snprintf(errbuf, errlen, "--ca: %s is not valid now", cert), -EINVAL;
	return 0;
}

struct inspect_ca *
inspect_ca_new(const char *cert, const char *key, char *errbuf, size_t errlen)
{
	struct inspect_ca *ca = calloc(1, sizeof(*ca));
	int err;

	if (!ca) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	err = cert ? ca_load(ca, cert, key, errbuf, errlen) : ca_make(ca, errbuf, errlen);
	if (!err) {
		ca->leaf_key = EVP_EC_gen("P-256");
		if (!ca->leaf_key)
			err = ssl_fail(errbuf, errlen, "cannot make the leaf certificates' key");
	}
	if (err) {
		inspect_ca_free(ca);
		return NULL;
	}
	return ca;
}

void
inspect_ca_free(struct inspect_ca *ca)
{
	struct leaf *l, *next;

	if (!ca)
		return;
	for (l = ca->head; l; l = next) {
		next = l->next;
		X509_free(l->cert);
		free(l);
	}
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	free(ca);
}

char *
inspect_ca_pem(const struct inspect_ca *ca, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;

	if (b && PEM_write_bio_X509(b, ca->cert)) {
		n = BIO_get_mem_data(b, &data);
		out = n > 0 ? malloc((size_t)n + 1) : NULL;
		if (out) {
			memcpy(out, data, (size_t)n);
			out[n] = 0;
			*len = (size_t)n;
		}
	}
	BIO_free(b);
	return out;
}

/* A leaf certificate for name, signed by the CA. */
static X509 *
leaf_mint(struct inspect_ca *ca, const char *name)
{
	unsigned char ip[16];
	char san[300];
	bool literal = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
	X509_NAME *subject = X509_NAME_new();
	X509 *x = NULL;

	snprintf(san, sizeof(san), "%s:%s", literal ? "IP" : "DNS", name);
	if (subject && strlen(name) <= 64 &&
	    !X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, (const unsigned char *)name,
					-1, -1, 0))
		goto out;
	if (subject)
		x = cert_base(ca->leaf_key, subject, X509_get_subject_name(ca->cert), -3600,
			      30 * DAY, X509_get0_notAfter(ca->cert));
	if (x && (add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ||
		  add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") ||
		  add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") ||
		  add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") ||
		  add_ext(x, ca->cert, NID_subject_alt_name, san) ||
		  !X509_sign(x, ca->key, EVP_sha256()))) {
		X509_free(x);
		x = NULL;
	}
out:
	X509_NAME_free(subject);
	return x;
}

static void
lru_unlink(struct inspect_ca *ca, struct leaf *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		ca->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		ca->tail = l->prev;
	l->prev = l->next = NULL;
}

static void
lru_front(struct inspect_ca *ca, struct leaf *l)
{
	l->next = ca->head;
	if (ca->head)
		ca->head->prev = l;
	ca->head = l;
	if (!ca->tail)
		ca->tail = l;
}

/* Drops the least recently used leaf. */
static void
lru_evict(struct inspect_ca *ca)
{
	struct leaf *l = ca->tail, **pp;

	lru_unlink(ca, l);
	for (pp = &ca->bucket[fnv1a_str(FNV1A_BASIS, l->name) % CA_BUCKETS]; *pp != l;
	     pp = &(*pp)->hnext)
		;
	*pp = l->hnext;
	X509_free(l->cert);
	free(l);
	ca->nleaves--;
}

/* name's leaf, from the cache or minted; NULL when it cannot be made. */
static X509 *
leaf_get(struct inspect_ca *ca, const char *name)
{
	uint32_t h = fnv1a_str(FNV1A_BASIS, name) % CA_BUCKETS;
	size_t n = strlen(name);
	struct leaf *l;

	for (l = ca->bucket[h]; l; l = l->hnext) {
		if (!strcmp(l->name, name)) {
			lru_unlink(ca, l);
			lru_front(ca, l);
			return l->cert;
		}
	}
	l = malloc(sizeof(*l) + n + 1);
	if (!l)
		return NULL;
	memcpy(l->name, name, n + 1);
	l->cert = leaf_mint(ca, name);
	if (!l->cert) {
		free(l);
		return NULL;
	}
	ca->minted++;
	l->hnext = ca->bucket[h];
	ca->bucket[h] = l;
	l->prev = NULL;
	lru_front(ca, l);
	if (++ca->nleaves > CA_LEAF_CACHE)
		lru_evict(ca);
	return l->cert;
}

int
inspect_ca_use(struct inspect_ca *ca, SSL *ssl, const char *name, char *errbuf, size_t errlen)
{
	X509 *leaf;

	if (!name[0] || strlen(name) > 253) {
		snprintf(errbuf, errlen, "no name to make a certificate for");
		return -EINVAL;
	}
	leaf = leaf_get(ca, name);
	if (!leaf) {
		ssl_fail(errbuf, errlen, "cannot make a certificate");
		return -ENOMEM;
	}
	if (SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl, ca->leaf_key) != 1 ||
	    SSL_add1_chain_cert(ssl, ca->cert) != 1)
		return ssl_fail(errbuf, errlen, "cannot use the certificate");
	return 0;
}

void
inspect_ca_counts(const struct inspect_ca *ca, unsigned long *minted, unsigned int *cached)
{
	*minted = ca->minted;
	*cached = ca->nleaves;
}
