// SPDX-License-Identifier: Apache-2.0
/* Kernel events (struct egr_event) in words: one line per event, for the
 * denial lines on stderr and the decision log. Pure: no I/O. */
#ifndef EVENTS_H
#define EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "egress_abi.h"

/* "ipv6 denied", "to the transparent proxy", ...; "?" for unknown values. */
const char *events_reason(unsigned int reason);

/* The decision log's word for e's verdict: "allow" (a loopback socket of
 * the sandbox), "deny", "would-deny" or "redirect". */
const char *events_decision(const struct egr_event *e);

/* Writes e's destination: "198.51.100.7:80", "[2001:db8::1]:443", "@name",
 * or a socket description for socket-creation events. */
void events_dest(const struct egr_event *e, char *buf, size_t len);

/* "denied curl[1234] → [2001:db8::1]:443 (ipv6 denied)". The command name
 * is the task's own choice: anything but printable ASCII becomes '?'.
 * Returns the length snprintf would have written. */
int events_format(const struct egr_event *e, char *buf, size_t len);

/* The same with the destination in words given (dest: what events_dest
 * cannot know, e.g. the unix socket entry an EGR_R_UNIX_SERVICE index
 * names), and for those the option that allows it. */
int events_format_dest(const struct egr_event *e, const char *dest, char *buf, size_t len);

/* Is e the catch-all's judgment of a kernel-verified connection's first
 * bytes (EGR_R_KV_OK or a refusal; e->name holds the name seen)? */
bool events_is_kv(const struct egr_event *e);

#endif /* EVENTS_H */
