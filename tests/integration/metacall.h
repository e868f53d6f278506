/* A minimal synchronous weft meta client for tests and benchmarks: an rpc endpoint and
 * typed calls built from proto.h alone (no libweft). Header-only; each function is
 * static so test programs and bench/bench_meta.c include it directly. */
#ifndef WEFT_TEST_METACALL_H
#define WEFT_TEST_METACALL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "net/rpc.h"
#include "proto/proto.h"
#include "proto/roles.h"
#include "weft/err.h"

struct mc {
	struct loop *loop;
	bool own_loop;
	struct rpc *rpc;             /* as a client */
	struct rpc *as[WEFT_ROLE_META + 1]; /* as another role, for what clients may not send */
	struct weft_key key;
	char addr[128];
	char detail[256]; /* ERROR detail of the last failed call */
};

static inline struct weft_cred mc_cred(uint32_t uid, uint32_t gid)
{
	struct weft_cred c = {.uid = uid, .gid = gid};
	return c;
}

/* loop may be NULL: the client gets its own loop thread. */
static inline int mc_open(struct mc *m, struct loop *loop, const struct weft_key *key,
			  const char *addr)
{
	memset(m, 0, sizeof(*m));
	int rc;
	if (!loop) {
		if ((rc = loop_new(&m->loop)) || (rc = loop_start(m->loop)))
			return rc;
		m->own_loop = true;
	} else {
		m->loop = loop;
	}
	struct rpc_params p = {.loop = m->loop, .key = key, .addr = addr, .role = WEFT_ROLE_CLIENT,
			       .name = "metatest", .default_port = 7070};
	if ((rc = rpc_new(&p, &m->rpc)))
		return rc;
	m->key = *key;
	snprintf(m->addr, sizeof(m->addr), "%s", addr);
	struct conn *c;
	if ((rc = rpc_conn(m->rpc, &c)))
		return rc;
	conn_put(c);
	return 0;
}

static inline void mc_close(struct mc *m)
{
	rpc_free(m->rpc);
	for (int r = 0; r <= WEFT_ROLE_META; r++)
		rpc_free(m->as[r]);
	if (m->own_loop)
		loop_free(m->loop);
}

/* The rpc to send op on: the cluster key speaks as any role, so as a store or an admin
 * where a client may not send it. NULL when out of memory. */
static __attribute__((noinline, unused)) struct rpc *mc_rpc_for(struct mc *m, uint16_t op)
{
	uint8_t role = WEFT_ROLE_CLIENT;
	if (!proto_op_allowed(op, WEFT_ROLE_META, role))
		role = proto_op_allowed(op, WEFT_ROLE_META, WEFT_ROLE_STORE) ? WEFT_ROLE_STORE :
		       proto_op_allowed(op, WEFT_ROLE_META, WEFT_ROLE_ADMIN) ? WEFT_ROLE_ADMIN :
		       WEFT_ROLE_CLIENT;
	if (role == WEFT_ROLE_CLIENT)
		return m->rpc;
	if (!m->as[role]) {
		struct rpc_params p = {.loop = m->loop, .key = &m->key, .addr = m->addr,
				       .role = role, .name = "metatest", .default_port = 7070};
		if (rpc_new(&p, &m->as[role]))
			return NULL;
	}
	return m->as[role];
}

/* Sends payload w (taken) and bulk, returns the status; *rep (may be NULL) gets the reply
 * frame, m->detail an error reply's detail. */
static inline int mc_send(struct mc *m, uint16_t op, struct wbuf *w, const void *bulk,
			  size_t bulklen, struct frame **rep)
{
	struct iovec v = {(void *)bulk, bulklen};
	struct frame *f = NULL;
	struct rpc *r = mc_rpc_for(m, op);
	if (!r) {
		wbuf_free(w);
		return -ENOMEM;
	}
	/* after an unclean restart meta takes replays first (WEFT_ERECOVERING, nothing
	 * applied): ask again, as libweft does */
	struct wbuf again;
	wbuf_init(&again);
	if (w->len)
		wbuf_put(&again, w->data, w->len);
	int rc = rpc_call(r, op, w, bulk ? &v : NULL, bulk ? 1 : 0, 20000, &f);
	for (int i = 0; rc == -WEFT_ERECOVERING && i < 400; i++) {
		frame_free(f);
		f = NULL;
		usleep(50 * 1000);
		struct wbuf w2;
		wbuf_init(&w2);
		if (again.len)
			wbuf_put(&w2, again.data, again.len);
		rc = rpc_call(r, op, &w2, bulk ? &v : NULL, bulk ? 1 : 0, 20000, &f);
	}
	wbuf_free(&again);
	m->detail[0] = '\0';
	if (rc && f)
		conn_error_detail(f, m->detail, sizeof(m->detail));
	if (rep)
		*rep = f;
	else
		frame_free(f);
	return rc;
}

/* Encodes msg of the opcode's request type, calls, returns the status; *rep (may be NULL)
 * gets the reply frame. */
static inline int mc_call(struct mc *m, uint16_t op, const void *msg, const void *bulk,
			  size_t bulklen, struct frame **rep)
{
	struct wbuf w;
	wbuf_init(&w);
	if (msg && proto_msg_encode_any((enum weft_msg_type)proto_op_req_type(op), &w, msg)) {
		wbuf_free(&w);
		return -EINVAL;
	}
	return mc_send(m, op, &w, bulk, bulklen, rep);
}

/* Sends a raw payload (no encoding): for malformed requests. */
static inline int mc_call_raw(struct mc *m, uint16_t op, const void *p, size_t len,
			      struct frame **rep)
{
	struct wbuf w;
	wbuf_init(&w);
	wbuf_put(&w, p, len);
	return mc_send(m, op, &w, NULL, 0, rep);
}

static inline int mc_entry(struct mc *m, uint16_t op, const void *msg, struct weft_attr *a,
			   struct weft_layout *l)
{
	struct frame *f = NULL;
	int rc = mc_call(m, op, msg, NULL, 0, &f);
	if (rc == 0) {
		struct weft_msg_entry e;
		if (proto_entry_decode(f->payload, f->h.payload_len, &e, NULL))
			rc = -EIO;
		else {
			if (a)
				*a = e.attr;
			if (l)
				*l = e.layout;
		}
	}
	frame_free(f);
	return rc;
}

#define MC_STR(s) proto_str_of((s), strlen(s))

static inline int mc_lookup(struct mc *m, const struct weft_cred *cr, uint64_t parent,
			    const char *name, struct weft_attr *a)
{
	struct weft_msg_lookup q = {.cred = *cr, .parent = parent, .name = MC_STR(name)};
	return mc_entry(m, WEFT_OP_LOOKUP, &q, a, NULL);
}

static inline int mc_getattr(struct mc *m, const struct weft_cred *cr, uint64_t ino,
			     uint64_t gen, struct weft_attr *a)
{
	struct weft_msg_ino q = {.cred = *cr, .ino = ino, .gen = gen};
	return mc_entry(m, WEFT_OP_GETATTR, &q, a, NULL);
}

static inline int mc_create(struct mc *m, const struct weft_cred *cr, uint64_t parent,
			    const char *name, uint32_t mode, uint32_t flags, struct weft_attr *a)
{
	struct weft_msg_create q = {.cred = *cr, .parent = parent, .name = MC_STR(name),
				    .mode = mode, .flags = flags};
	return mc_entry(m, S_ISDIR(mode) ? WEFT_OP_MKDIR : WEFT_OP_CREATE, &q, a, NULL);
}

static inline int mc_name_op(struct mc *m, uint16_t op, const struct weft_cred *cr,
			     uint64_t parent, const char *name)
{
	struct weft_msg_name q = {.cred = *cr, .parent = parent, .name = MC_STR(name)};
	return mc_call(m, op, &q, NULL, 0, NULL);
}

static inline int mc_rename(struct mc *m, const struct weft_cred *cr, uint64_t p,
			    const char *name, uint64_t np, const char *newname, uint32_t flags)
{
	struct weft_msg_rename q = {.cred = *cr, .parent = p, .name = MC_STR(name),
				    .newparent = np, .newname = MC_STR(newname), .flags = flags};
	return mc_call(m, WEFT_OP_RENAME, &q, NULL, 0, NULL);
}

/* Registers a fake target so that regular files can be created. */
static inline int mc_register(struct mc *m, uint8_t tag, const char *node, const char *addr,
			      uint32_t *id)
{
	struct weft_msg_target_register q = {.node = MC_STR(node), .addr = MC_STR(addr),
					     .capacity = 1ULL << 40, .free = 1ULL << 39};
	memset(q.uuid, tag, 16);
	struct frame *f = NULL;
	int rc = mc_call(m, WEFT_OP_TARGET_REGISTER, &q, NULL, 0, &f);
	if (rc == 0) {
		struct weft_msg_target_registered r;
		if (proto_target_registered_decode(f->payload, f->h.payload_len, &r, NULL))
			rc = -EIO;
		else if (id)
			*id = r.target;
	}
	frame_free(f);
	return rc;
}

#endif
