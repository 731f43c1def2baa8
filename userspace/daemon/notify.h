// SPDX-License-Identifier: Apache-2.0
/* systemd's readiness protocol (sd_notify(3)), spoken directly: one
 * datagram of "KEY=VALUE" lines to $NOTIFY_SOCKET (a path, or "@name" for
 * an abstract socket). No library: the protocol is the datagram. */
#ifndef NOTIFY_H
#define NOTIFY_H

/* Sends msg ("READY=1\nSTATUS=...") if $NOTIFY_SOCKET is set. Returns 1
 * sent, 0 no socket set, or -errno. */
int notify_send(const char *msg);

#endif /* NOTIFY_H */
