/* Reconnecting client endpoint. */
#include "net/rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/log.h"
#include "net/stats.h"
#include "weft/err.h"

struct rpc {
	struct rpc_params p;
	struct weft_key key;
	char addr[WEFT_ADDR_MAX + 1];
	char name[WEFT_NODE_MAX + 1];
	struct weft_addr sa;
	pthread_mutex_t lock; /* guards conn; serializes connecting */
	struct conn *conn;
	bool connected_once;  /* a later connect is a reconnect (counted in stats) */
};

int rpc_new(const struct rpc_params *p, struct rpc **out)
{
	struct rpc *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->p = *p;
	if (p->key)
		r->key = *p->key;
	r->p.key = &r->key;
	snprintf(r->addr, sizeof(r->addr), "%s", p->addr);
	snprintf(r->name, sizeof(r->name), "%s", p->name ? p->name : "");
	r->p.addr = r->addr;
	r->p.name = r->name;
	if (!r->p.connect_timeout_ms)
		r->p.connect_timeout_ms = 5000;
	int err = addr_parse(r->addr, p->default_port, &r->sa);
	if (err) {
		free(r);
		return -EINVAL;
	}
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return 0;
}

void rpc_free(struct rpc *r)
{
	if (!r)
		return;
	if (r->conn) {
		conn_close(r->conn, -ESHUTDOWN);
		conn_put(r->conn);
	}
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void rpc_drop(struct rpc *r)
{
	pthread_mutex_lock(&r->lock);
	struct conn *c = r->conn;
	r->conn = NULL;
	pthread_mutex_unlock(&r->lock);
	if (c) {
		conn_close(c, -ENOTCONN);
		conn_put(c);
	}
}

const char *rpc_addr(const struct rpc *r)
{
	return r->addr;
}

int rpc_conn(struct rpc *r, struct conn **out)
{
	pthread_mutex_lock(&r->lock);
	if (r->conn && conn_is_closed(r->conn)) {
		conn_put(r->conn);
		r->conn = NULL;
	}
	if (!r->conn) {
		int fd = addr_connect(&r->sa, r->p.connect_timeout_ms);
		if (fd < 0) {
			pthread_mutex_unlock(&r->lock);
			return fd;
		}
		struct conn_params cp = {.loop = r->p.loop, .key = &r->key, .is_server = false,
					 .role = r->p.role, .name = r->name, .ops = r->p.ops,
					 .ctx = r->p.ctx, .owner = r};
		struct conn *c = conn_new(fd, &cp);
		if (!c) {
			pthread_mutex_unlock(&r->lock);
			return -ENOMEM;
		}
		int err = conn_wait_ready(c, r->p.connect_timeout_ms);
		if (err) {
			conn_close(c, err);
			conn_put(c);
			pthread_mutex_unlock(&r->lock);
			return err;
		}
		if (r->connected_once)
			stats_add(STATS_RECONNECTS, 1);
		r->connected_once = true;
		r->conn = c;
	}
	conn_get(r->conn);
	*out = r->conn;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int rpc_call(struct rpc *r, uint16_t op, struct wbuf *payload, const struct iovec *bulk,
	     int nbulk, int timeout_ms, struct frame **reply)
{
	struct conn *c;
	int err = rpc_conn(r, &c);
	if (err) {
		if (payload)
			wbuf_free(payload);
		if (reply)
			*reply = NULL;
		return err;
	}
	err = conn_call_sync(c, op, payload, bulk, nbulk, timeout_ms, reply);
	conn_put(c);
	return err;
}
