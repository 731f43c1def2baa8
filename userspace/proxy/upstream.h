// SPDX-License-Identifier: Apache-2.0
/* The upstream proxy step of the proxy's core (upstream.c): the one place
 * an allowed connection is reached through --upstream-proxy rather than
 * direct. conn_connect_upstream() (conn.c) hands it what
 * upstream_wanted() says. Internal to the proxy's core. */
#ifndef PROXY_UPSTREAM_H
#define PROXY_UPSTREAM_H

#include <stdbool.h>
#include <sys/socket.h>

#include "proxy/conn.h"

/* Must c (judged and allowed) go through the upstream proxy: one is set
 * and the policy's routes do not name c's destination
 * (policy_via_upstream(): its name, or the address it is known by)? */
bool upstream_wanted(const struct conn *c);

/* Reaches c's destination through the upstream proxy: its address
 * resolved and connected to, then a CONNECT tunnel asked for (by name
 * when c has one), or for a plain-HTTP request (c->uout, not a WebSocket
 * upgrade) the request rewritten in absolute form. done(c) as for
 * conn_connect_upstream(), c->via_upstream set. */
void upstream_connect(struct conn *c, void (*done)(struct conn *c));

/* The address c was judged by when it went through the upstream proxy
 * (its original destination when it has no name, or only the name the
 * DNS responder answered that address for), or NULL: for conn_rejudge(),
 * since c->up_addr is the upstream proxy's. */
const struct sockaddr *upstream_judged_addr(const struct conn *c);

#endif /* PROXY_UPSTREAM_H */
