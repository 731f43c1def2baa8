// SPDX-License-Identifier: Apache-2.0
/* The table of the proxy's protocols (proto.h): which protocol each
 * listener speaks, and the decision log's word for each source. The only
 * place the core's listeners and the protocols meet by name. */
#include <stddef.h>

#include "proxy/proto.h"

static const struct proto_ops *const listeners[PROXY_L_MAX] = {
	[PROXY_L_HTTP] = &http_proto_ops,
	[PROXY_L_SOCKS] = &socks5_proto_ops,
	[PROXY_L_TPROXY] = &tproxy_proto_ops,
};

const struct proto_ops *
proto_of_listener(enum proxy_listener l, const struct proxy_opts *o)
{
	if (l == PROXY_L_TPROXY && !o->tproxy)
		return NULL; /* the kernel redirects to a listener of its own */
	return l < PROXY_L_MAX ? listeners[l] : NULL;
}

const char *
conn_source_word(enum conn_source s)
{
	/* the decision log's "source" words: never change one */
	static const char *const words[CONN_SRC_MAX] = {
		[CONN_SRC_HTTP] = "http",
		[CONN_SRC_CONNECT] = "connect",
		[CONN_SRC_SOCKS5] = "socks5",
		[CONN_SRC_TRANSPARENT] = "transparent",
	};

	return s < CONN_SRC_MAX ? words[s] : "?";
}
