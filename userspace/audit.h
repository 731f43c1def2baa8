/* Decisions as data: one JSON object per line to --log FILE (or "-" for
 * stdout), fields as DESIGN.md "Events and logs" says. No URL paths, query
 * strings or bodies are ever passed in. */
#ifndef AUDIT_H
#define AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct audit_rec {
	const char *decision;	   /* "allow" or "deny" */
	const char *reason;	   /* short words: "no rule allows it", "rule 2 \"x\"" */
	const char *source;	   /* bpf, http, connect, socks5, transparent, dns */
	const char *host;	   /* NULL or "" when unknown */
	uint16_t port;		   /* 0 when unknown */
	const struct sockaddr *ip; /* NULL when unknown */
	const char *method;	   /* plain HTTP only, else NULL */
	uint32_t pid;
	const char *comm; /* task command name (escaped on output) */
	uint64_t cgroup;
	const char *rule; /* the deciding rule's text, NULL if none */
};

struct audit;

/* NULL with errbuf set on failure. */
struct audit *audit_open(const char *path, char *errbuf, size_t errlen);
void audit_write(struct audit *a, const struct audit_rec *r);
void audit_close(struct audit *a);

/* The JSON line for r (without newline) into buf; returns the length it
 * needed (as snprintf). Pure, for tests. */
int audit_format(const struct audit_rec *r, uint64_t time_ms, char *buf, size_t len);

#endif /* AUDIT_H */
