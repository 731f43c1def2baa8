// SPDX-License-Identifier: Apache-2.0
/* One connection to egressctl's docker socket (conn.c), and the check of
 * whose a container is that a request of it may wait for (check.c). Only
 * dockerapi/ includes it. */
#ifndef DOCKERAPI_CONN_H
#define DOCKERAPI_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <event2/bufferevent.h>

#include "dockerapi/core.h"
#include "dockerapi/rules.h"
#include "kernel/peer.h"
#include "parse/parse.h"

enum dk_state {
	DK_ST_HEAD,  /* a job's request head being read */
	DK_ST_CHECK, /* dockerd asked whose the container in the path is */
	DK_ST_BODY,  /* a JSON body being read, to be judged */
	DK_ST_SEND,  /* the request's own body relayed to dockerd */
	DK_ST_RESP,  /* dockerd's response head awaited */
	DK_ST_DOWN,  /* the response relayed until dockerd closes */
	DK_ST_BOTH,  /* bytes both ways: anybody else's, or a stream taken over */
	DK_ST_END,   /* an answer of egressctl's written; the request read off */
};

struct dk_conn {
	LIST_ENTRY(dk_conn) entry;
	struct dockerapi *d;
	enum dk_state st;
	struct bufferevent *cl;	 /* the client */
	struct bufferevent *up;	 /* dockerd, for the request */
	struct bufferevent *sub; /* dockerd, for the check */
	struct event *timer;
	struct peer peer;
	char comm[17]; /* the peer's, escaped */
	bool is_job;
	struct dockerapi_job job;
	/* the job's containers' CgroupParent: its cgroup (cgroupfs), its slice
	 * (systemd); place: dockerd can take it */
	char parent[PATH_MAX];
	bool place;
	bool refuse_all; /* answered with pre once its head is read */
	struct dk_verdict pre;
	char *head; /* the request head; req's strings point into it */
	struct http_request req;
	struct dk_route route;
	uint64_t left;		/* body bytes still to relay or read off */
	struct http_chunked ch; /* a chunked body's framing */
	uint64_t discarded;
	bool body_done; /* DK_ST_END: read off */
	bool cl_eof, up_eof;
	char id[80]; /* the container's full id, once checked */
	char target[DK_TARGET_MAX];
};

void dk_conn_free(struct dk_conn *c);
/* Answers with v (egressctl's JSON error) and closes. */
void dk_conn_reply(struct dk_conn *c, const struct dk_verdict *v);
/* Answers (and logs) a refusal; in audit mode only logs. True: refused. */
bool dk_conn_refuse(struct dk_conn *c, const struct dk_verdict *v);
/* After the check: the body, or the request forwarded. */
void dk_conn_checked(struct dk_conn *c);
/* A line in the job's log: "WHAT METHOD TARGET from comm[pid]: MSG". */
void dk_conn_say(struct dk_conn *c, const char *what, const char *msg);

/* check.c: GET /containers/{id}/json on a connection of its own; the
 * container must be the job's: then c->id is its full id and
 * dk_conn_checked() goes on, else the request is refused. */
void dk_check_start(struct dk_conn *c);
void dk_check_cancel(struct dk_conn *c);

/* server.c: may a job's container bind this host path (rules.h's
 * host_path, arg the struct dockerapi)? */
int dk_host_path(void *arg, const char *path, bool ro, char *why, size_t whylen);
/* dk_ctx's idmap: the idmapped mount of path (idmap.h) */
int dk_idmap(void *arg, const char *path, unsigned int uid, unsigned int gid, uint64_t job,
	     char *out, size_t outlen, char *why, size_t whylen);

#endif /* DOCKERAPI_CONN_H */
