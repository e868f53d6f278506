/* Internals of a connection shared by conn.c (framing, send queue, calls) and handshake.c
 * (HELLO, AUTH). Nothing outside src/net/conn.c and src/net/handshake.c includes this. */
#ifndef WEFT_CONN_INT_H
#define WEFT_CONN_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "net/conn.h"
#include "net/wire.h"

#define PENDING_HASH  256

/* The largest HELLO or AUTH payload (a node name of WEFT_NODE_MAX and fixed fields fit). */
#define HS_PAYLOAD_MAX 1024

enum hs_state {
	HS_SERVER_WAIT_HELLO,
	HS_SERVER_WAIT_AUTH,
	HS_CLIENT_WAIT_HELLO,
	HS_CLIENT_WAIT_AUTH,
	HS_READY,
};

struct send_entry;
struct call;

struct conn {
	atomic_int refs;
	struct loop *loop;
	struct loop_watch watch;
	const struct conn_ops *ops;
	void *ctx, *owner;
	struct weft_key key;
	char peer[64];
	char name[WEFT_NODE_MAX + 1];      /* ours, as announced in HELLO or its reply */
	char peer_name[WEFT_NODE_MAX + 1];
	uint8_t role, peer_role;
	uint32_t serial, peer_serial;      /* credential serials (0: the cluster secret) */
	auth_verify_fn verify;             /* server side: checks a peer's credential */
	void *verify_arg;
	uint8_t proof[WEFT_KEY_LEN];       /* the key both proofs of this handshake use */
	uint16_t version;
	uint64_t born_ms;
	uint8_t wire_c, wire_s;            /* the wire bytes of HELLO and its reply */
	struct wire wire;                  /* set before ready; tx under seal_lock, rx loop */
	pthread_mutex_t seal_lock;         /* a frame's counter and its place in the queue */

	/* loop thread only */
	enum hs_state hs;
	uint8_t nonce_c[WEFT_NONCE_LEN], nonce_s[WEFT_NONCE_LEN];
	uint8_t *rx;               /* RX_BUF_SIZE */
	size_t rx_len, rx_off;
	struct frame *cur;         /* frame whose body is being read */
	size_t cur_got, cur_need;  /* body and, after the handshake, its tag */
	uint8_t cur_hdr[WEFT_HDR_SIZE]; /* the header of cur as received (the tag covers it) */
	bool read_paused;
	bool rx_bulky;             /* the last frame had a large body: read its successor's
				    * header alone, so the body lands in the frame directly */

	pthread_mutex_t lock;      /* guards everything below */
	pthread_cond_t cond;       /* ready, closed, queue drained, sync calls */
	struct send_entry *q_head, *q_tail;
	size_t queued;
	bool closed, close_posted, close_after_flush;
	int close_err;
	bool ready;

	pthread_mutex_t plock;     /* guards the calls in flight, apart from the send queue */
	uint64_t next_reqid;
	struct call *pending[PENDING_HASH];
};

/* Sends a handshake frame (loop thread); w is taken. */
void conn_send_handshake(struct conn *c, uint16_t op, uint32_t flags, int status, uint64_t reqid,
			 struct wbuf *w);
/* The handshake succeeded: wakes conn_wait_ready and runs on_ready (loop thread). */
void conn_become_ready(struct conn *c);

#endif
