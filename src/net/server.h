/* A listening endpoint: accepts connections, runs the server side of the handshake,
 * hands ready connections' requests to the caller's handlers, and closes peers that do
 * not authenticate within 5 s. Strangers are limited (256 unauthenticated at once, 32 per
 * address) and a shortage of descriptors pauses accepting instead of spinning (see
 * docs/protocol.md). All server calls belong to the loop thread unless noted. */
#ifndef WEFT_SERVER_H
#define WEFT_SERVER_H

#include <stddef.h>

#include "net/conn.h"

struct server;

struct server_params {
	struct loop *loop;
	const struct weft_key *key;
	uint8_t role;                /* WEFT_ROLE_META or WEFT_ROLE_STORE (0: meta) */
	const char *name;            /* our name, told to peers in the HELLO reply */
	/* checks a peer's credential (auth.h); NULL: any credential derived from key (the
	 * cluster secret), with no registry of nodes and no revocation */
	auth_verify_fn verify;
	void *verify_arg;
	const char *listen;          /* "host:port", "[v6]:port" or ":port" */
	int default_port;
	const struct conn_ops *ops;  /* on_request is required */
	void *ctx;                   /* conn_ctx() of every accepted connection */
};

/* Binds and starts accepting (any thread, before or after the loop starts). Returns 0 or
 * -errno with a one-line reason in err. */
int server_new(const struct server_params *p, struct server **out, char *err, size_t errlen);
/* The bound port (useful with port 0). */
int server_port(const struct server *s);
/* Closes every connection of node name whose credential serial is below `below`
 * (UINT32_MAX: every credential of name; never those of the cluster secret). Loop
 * thread. Returns how many. */
unsigned server_close_peer(struct server *s, const char *name, uint32_t below, int err);
/* Calls fn for every ready connection (loop thread). */
void server_foreach(struct server *s, void (*fn)(struct conn *c, void *arg), void *arg);
/* Stops accepting and closes every connection; the server is freed by a task on the
 * loop (run by the loop, or by loop_free), so call it before loop_free. */
void server_free(struct server *s);

#endif
