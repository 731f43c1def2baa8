// SPDX-License-Identifier: Apache-2.0
/* The daemon's control socket: a unix stream socket, root only (mode 0600
 * in a 0700 directory), speaking JSON lines. A peer is served only when it
 * is an administrator outside confinement (kernel/peer.h: uid 0,
 * CAP_SYS_ADMIN in egressctl's user namespace, in no cgroup egressctl
 * confines); any other gets one line, {"ok": false, "error": "refused
 * comm[pid] (uid U, cgroup /x): why"}, logged on stderr too, and is closed.
 * The socket is registered for `run`, which masks it from CMD
 * (sandbox/unixsvc.h).
 * A client sends one request line ({"cmd": "status", ...}) and reads
 * reply lines until the daemon closes; `log -f` keeps reading. The server
 * runs on the daemon's event loop; the client is a blocking helper for
 * the commands (reload, allow, log, summary, detach, status). */
#ifndef CONTROL_H
#define CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct control;
struct control_client;

/* A request: req is the parsed line (a json_t object, lib/jsonx.h). The handler replies
 * with control_send() and ends with control_end(), now or later. */
typedef void (*control_handler)(void *arg, struct control_client *cl, const void *req);
/* A client went away (its udata may be freed). */
typedef void (*control_gone)(void *arg, struct control_client *cl);

/* Listens on path (replacing a stale socket; -EADDRINUSE with errbuf set
 * when a live daemon answers there). NULL with errbuf set. */
struct control *control_open(struct event_base *base, const char *path, control_handler fn,
			     control_gone gone, void *arg, char *errbuf, size_t errlen);
void control_free(struct control *c);

/* Queues one line (a newline is added). False when the client's queue is
 * full (a slow `log -f` reader): the line is dropped. */
bool control_send(struct control_client *cl, const char *line);
/* Closes once what is queued is written. */
void control_end(struct control_client *cl);
/* Who the client is, for the log: "comm[pid] (uid U, cgroup /x)" (at most
 * CONTROL_WHO_MAX bytes with the NUL). */
#define CONTROL_WHO_MAX 600
void control_who(const struct control_client *cl, char *buf, size_t len);
void control_set_udata(struct control_client *cl, void *udata);
void *control_udata(const struct control_client *cl);

/* The client: sends req (one JSON line) to the daemon at path and calls
 * on_line for each reply line until the daemon closes (on_line returns
 * nonzero to stop). timeout_ms bounds the wait for the first reply (-1:
 * none). Returns 0, -ECONNREFUSED/-ENOENT when no daemon listens, or
 * -errno. */
int control_request(const char *path, const char *req, int (*on_line)(void *arg, const char *line),
		    void *arg, int timeout_ms);

#endif /* CONTROL_H */
