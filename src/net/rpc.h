/* A reconnecting client endpoint: one address, one authenticated connection at a time,
 * re-established on demand after it drops. Any thread may call; the connection's events
 * run on the given loop (which must be running in its own thread). */
#ifndef WEFT_RPC_H
#define WEFT_RPC_H

#include "net/conn.h"

struct rpc;

struct rpc_params {
	struct loop *loop;
	const struct weft_key *key;
	const char *addr;            /* "host:port" */
	int default_port;
	uint8_t role;                /* WEFT_ROLE_* announced to the server */
	const char *name;            /* our node name */
	const struct conn_ops *ops;  /* for requests the server sends us (may be NULL) */
	void *ctx;
	int connect_timeout_ms;      /* 0: 5000 */
};

/* Does not connect yet. Returns 0, -EINVAL (bad address) or -ENOMEM. */
int rpc_new(const struct rpc_params *p, struct rpc **out);
/* Closes the connection and frees. */
void rpc_free(struct rpc *r);
/* Returns a ready connection (a new reference: conn_put it), connecting and
 * authenticating first if there is none. Returns 0 or -errno (-WEFT_EAUTH on a key
 * mismatch, -ECONNREFUSED, -ETIMEDOUT...). */
int rpc_conn(struct rpc *r, struct conn **out);
/* rpc_conn + conn_call_sync. On a connection failure before the request was sent it
 * reconnects once. */
int rpc_call(struct rpc *r, uint16_t op, struct wbuf *payload, const struct iovec *bulk,
	     int nbulk, int timeout_ms, struct frame **reply);
const char *rpc_addr(const struct rpc *r);
/* Closes the current connection, if any (calls waiting on it fail with -ENOTCONN); the
 * next call connects again. For a peer known to be gone (meta marked it offline), so
 * that nothing waits on a silent host. */
void rpc_drop(struct rpc *r);

#endif
