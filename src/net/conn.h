/* One authenticated weft connection: framing, a send queue flushed with writev, many
 * requests in flight matched by request id, and the handshake (handshake.c, HELLO and
 * AUTH; conn_int.h holds what the two files share).
 *
 * DESIGN: the loop thread owns reading; it parses frames (header, then payload and bulk
 * read straight into one allocation) and hands requests to ops->on_request and replies
 * to the callback of the matching call. Any thread may send: a sender appends to the
 * queue under c->lock and, if the queue was empty, writes at once from its own thread;
 * what the socket does not take is written by the loop on EPOLLOUT. Bulk data is sent
 * from the caller's buffers (iovecs) and never copied; the caller's release callback runs
 * once the kernel has taken it (or the connection died). When more than 64 MiB waits in
 * the queue the loop stops reading requests from that peer until it drains
 * (back-pressure). Until the handshake is done only HELLO and AUTH frames are accepted;
 * anything else closes the connection with a log line naming the peer.
 *
 * Lifetime: a conn is reference-counted; conn_new returns one reference for the caller and
 * the loop holds another until the connection closes. The file descriptor is closed on
 * the last conn_put, so it is never reused while another thread may still write. */
#ifndef WEFT_CONN_H
#define WEFT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "net/auth.h"
#include "common/buf.h"
#include "common/loop.h"
#include "proto/proto.h"

/* A received frame; payload and bulk live in the same allocation. */
struct frame {
	struct weft_hdr h;
	uint8_t *payload;
	uint8_t *bulk;
	uint64_t rx_ns; /* requests: when it arrived (stats_now_ns), for the served latency */
	bool sealed;    /* arrived under a checked tag (wire level integrity or privacy) */
};
void frame_free(struct frame *f);

struct conn;

struct conn_ops {
	/* A request arrived (loop thread). The handler owns f and must frame_free it. */
	void (*on_request)(struct conn *c, struct frame *f);
	/* The handshake completed (loop thread). May be NULL. */
	void (*on_ready)(struct conn *c);
	/* The connection closed, err says why (loop thread, once). May be NULL. */
	void (*on_close)(struct conn *c, int err);
};

struct conn_params {
	struct loop *loop;
	const struct weft_key *key;
	bool is_server;          /* answers the handshake instead of starting it */
	uint8_t role;            /* our role, announced in HELLO or its reply */
	const char *name;        /* our node name, announced in HELLO or its reply; a node
				  * credential announces its own role and name instead */
	auth_verify_fn verify;   /* server side: checks a peer's credential (auth.h) */
	void *verify_arg;
	const struct conn_ops *ops;
	void *ctx;               /* returned by conn_ctx() */
	void *owner;             /* returned by conn_owner(): the server or rpc that made it */
};

/* Takes ownership of connected non-blocking socket fd and starts the handshake (a client
 * sends HELLO at once). Returns NULL on allocation failure (fd closed). */
struct conn *conn_new(int fd, const struct conn_params *p);
void conn_get(struct conn *c);
/* Drops a reference; the last one frees. NULL is a no-op. */
void conn_put(struct conn *c);
/* Closes (idempotent, any thread): pending calls complete with err, queued bulk is
 * released, on_close runs on the loop thread. */
void conn_close(struct conn *c, int err);

void *conn_ctx(const struct conn *c);
void *conn_owner(const struct conn *c);
void conn_set_ctx(struct conn *c, void *ctx);
const char *conn_peer(const struct conn *c);      /* "1.2.3.4:5" */
const char *conn_peer_name(const struct conn *c); /* node name from HELLO ("" if none) */
uint8_t conn_peer_role(const struct conn *c);
/* The serial of the credential the peer proved (0: the cluster secret). */
uint32_t conn_peer_serial(const struct conn *c);
/* The wire protection of this connection (net/wire.h: WIRE_*), and whether it is
 * AES-256-GCM (privacy). */
int conn_wire_level(const struct conn *c, bool *aes);
/* Hides (or reveals) a 32-byte secret sent on this connection, under its proof key and
 * both nonces (auth_wrap), with purpose naming what it is. */
void conn_wrap(const struct conn *c, const char *purpose, uint8_t inout[WEFT_KEY_LEN]);
bool conn_is_ready(const struct conn *c);
bool conn_is_closed(const struct conn *c);
/* Milliseconds since the connection was accepted/connected. */
uint64_t conn_age_ms(const struct conn *c);
/* Waits until the handshake finished: 0, or the error that closed the connection, or
 * -ETIMEDOUT. Not from the loop thread. */
int conn_wait_ready(struct conn *c, int timeout_ms);

typedef void (*conn_release_fn)(void *arg);

/* Sends a reply to request req (any thread). payload (may be NULL) is taken: its buffer
 * moves into the queue and *payload is left empty. bulk buffers must stay valid until
 * release(arg) is called (release may be NULL). Returns 0 or -ENOTCONN/-ENOMEM; on error
 * release has already been called. */
int conn_reply(struct conn *c, const struct frame *req, int status, struct wbuf *payload,
	       const struct iovec *bulk, int nbulk, conn_release_fn release, void *arg);
/* Replies with status and, when detail is given, an ERROR message naming target/detail. */
int conn_reply_error(struct conn *c, const struct frame *req, int status, uint32_t target,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Completion of a call: status is the reply's status, or a local error (-ENOTCONN when
 * the connection died, -ETIMEDOUT) with reply NULL. The callback owns reply. Runs on the
 * loop thread. */
typedef void (*conn_call_fn)(void *arg, int status, struct frame *reply);

/* Sends a request and calls done when its reply arrives. payload/bulk as for conn_reply.
 * Returns 0 (done will be called exactly once) or -errno (done will not be called). */
int conn_call(struct conn *c, uint16_t op, struct wbuf *payload, const struct iovec *bulk,
	      int nbulk, conn_release_fn release, void *release_arg, conn_call_fn done,
	      void *arg);
/* Sends a request and waits for its reply (not from the loop thread). Returns the reply
 * status or a local error; *reply receives the reply frame when one arrived (caller frees;
 * on error replies it may hold an ERROR message). timeout_ms <= 0 waits forever. */
int conn_call_sync(struct conn *c, uint16_t op, struct wbuf *payload, const struct iovec *bulk,
		   int nbulk, int timeout_ms, struct frame **reply);
/* Sends a one-way request (no reply expected). */
int conn_send_oneway(struct conn *c, uint16_t op, struct wbuf *payload);

/* Bytes waiting in the send queue. */
size_t conn_queued(const struct conn *c);
/* Blocks until at most `bytes` wait in the send queue or the connection closed (not from
 * the loop thread). Returns 0 or -ENOTCONN. */
int conn_wait_queue(struct conn *c, size_t bytes);

/* Decodes the ERROR detail of a failed reply into buf ("" if none); returns the target id
 * it names (0 if none). */
uint32_t conn_error_detail(const struct frame *reply, char *buf, size_t cap);

#endif
