/* The handshake of a connection: HELLO (versions, roles, nonces), then AUTH (a MAC of
 * both nonces under the cluster key, each way). See handshake.h. */
#include "net/handshake.h"
#include "net/conn_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "weft/err.h"

/* Lines a stranger can provoke, at most 10 per 10 s per process (a flood costs no disk). */
static struct log_limit stranger_lines = LOG_LIMIT_INIT;

bool handshake_log_ok(unsigned *dropped)
{
	return log_limit_ok(&stranger_lines, 10, 10000, dropped);
}

static void hs_fail(struct conn *c, const char *why)
{
	unsigned dropped;
	if (handshake_log_ok(&dropped)) {
		char more[64] = "";
		if (dropped)
			snprintf(more, sizeof(more), " (and %u more not logged)", dropped);
		if (c->hs == HS_SERVER_WAIT_HELLO || c->hs == HS_SERVER_WAIT_AUTH)
			log_error("authentication failed from %s: %s%s", c->peer, why, more);
		else
			log_error("authentication failed to %s: %s%s", c->peer, why, more);
	}
	conn_close(c, -WEFT_EAUTH);
}

void handshake_start(struct conn *c)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_hello m = {.ver_min = WEFT_PROTO_MIN, .ver_max = WEFT_PROTO_MAX, .role = c->role};
	auth_random(c->nonce_c, WEFT_NONCE_LEN);
	memcpy(m.nonce, c->nonce_c, WEFT_NONCE_LEN);
	m.name = proto_str_of(c->peer_name, strlen(c->peer_name));
	proto_hello_encode(&w, &m);
	c->peer_name[0] = '\0';
	c->hs = HS_CLIENT_WAIT_HELLO;
	conn_send_handshake(c, WEFT_OP_HELLO, 0, 0, 0, &w);
}

void handshake_frame(struct conn *c, struct frame *f)
{
	const char *why = NULL;
	struct wbuf w;
	wbuf_init(&w);
	bool reply = f->h.flags & WEFT_F_REPLY;
	const char *opname = proto_op_name(f->h.opcode);
	char msg[160];

	switch (c->hs) {
	case HS_SERVER_WAIT_HELLO: {
		struct weft_msg_hello m;
		if (reply || f->h.opcode != WEFT_OP_HELLO) {
			snprintf(msg, sizeof(msg), "expected HELLO, got %s (no key?)", opname);
			hs_fail(c, msg);
			break;
		}
		if (proto_hello_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
			snprintf(msg, sizeof(msg), "malformed HELLO: %s", why);
			hs_fail(c, msg);
			break;
		}
		uint16_t lo = m.ver_min > WEFT_PROTO_MIN ? m.ver_min : WEFT_PROTO_MIN;
		uint16_t hi = m.ver_max < WEFT_PROTO_MAX ? m.ver_max : WEFT_PROTO_MAX;
		if (lo > hi) {
			log_error("connection from %s: no common protocol version (peer %u..%u, ours %u..%u)",
				  c->peer, m.ver_min, m.ver_max, WEFT_PROTO_MIN, WEFT_PROTO_MAX);
			conn_close(c, -WEFT_EVERSION);
			break;
		}
		c->version = hi;
		c->peer_role = m.role;
		proto_str_copy(c->peer_name, sizeof(c->peer_name), m.name);
		memcpy(c->nonce_c, m.nonce, WEFT_NONCE_LEN);
		auth_random(c->nonce_s, WEFT_NONCE_LEN);
		struct weft_msg_hello_reply r = {.version = c->version};
		memcpy(r.nonce, c->nonce_s, WEFT_NONCE_LEN);
		proto_hello_reply_encode(&w, &r);
		c->hs = HS_SERVER_WAIT_AUTH;
		conn_send_handshake(c, WEFT_OP_HELLO, WEFT_F_REPLY, 0, f->h.reqid, &w);
		break;
	}
	case HS_SERVER_WAIT_AUTH: {
		struct weft_msg_auth m;
		uint8_t want[32];
		if (reply || f->h.opcode != WEFT_OP_AUTH) {
			snprintf(msg, sizeof(msg), "expected AUTH, got %s", opname);
			hs_fail(c, msg);
			break;
		}
		if (proto_auth_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
			snprintf(msg, sizeof(msg), "malformed AUTH: %s", why);
			hs_fail(c, msg);
			break;
		}
		auth_mac(&c->key, "weft-client", c->nonce_c, c->nonce_s, c->version, want);
		if (auth_mac_verify(want, m.mac) != 0) {
			log_error("authentication failed from %s: wrong cluster key", c->peer);
			pthread_mutex_lock(&c->lock);
			c->close_after_flush = true;
			pthread_mutex_unlock(&c->lock);
			conn_send_handshake(c, WEFT_OP_AUTH, WEFT_F_REPLY, -WEFT_EAUTH, f->h.reqid, &w);
			break;
		}
		struct weft_msg_auth r;
		auth_mac(&c->key, "weft-server", c->nonce_c, c->nonce_s, c->version, r.mac);
		proto_auth_encode(&w, &r);
		conn_send_handshake(c, WEFT_OP_AUTH, WEFT_F_REPLY, 0, f->h.reqid, &w);
		conn_become_ready(c);
		break;
	}
	case HS_CLIENT_WAIT_HELLO: {
		struct weft_msg_hello_reply m;
		if (!reply || f->h.opcode != WEFT_OP_HELLO || f->h.status) {
			snprintf(msg, sizeof(msg), "server refused HELLO (%s)",
				 f->h.status ? weft_strerror(f->h.status) : "unexpected frame");
			hs_fail(c, msg);
			break;
		}
		if (proto_hello_reply_decode(f->payload, f->h.payload_len, &m, &why) < 0 ||
		    m.version < WEFT_PROTO_MIN || m.version > WEFT_PROTO_MAX) {
			snprintf(msg, sizeof(msg), "bad HELLO reply: %s", why ? why : "version");
			hs_fail(c, msg);
			break;
		}
		c->version = m.version;
		memcpy(c->nonce_s, m.nonce, WEFT_NONCE_LEN);
		struct weft_msg_auth a;
		auth_mac(&c->key, "weft-client", c->nonce_c, c->nonce_s, c->version, a.mac);
		proto_auth_encode(&w, &a);
		c->hs = HS_CLIENT_WAIT_AUTH;
		conn_send_handshake(c, WEFT_OP_AUTH, 0, 0, 0, &w);
		break;
	}
	case HS_CLIENT_WAIT_AUTH: {
		struct weft_msg_auth m;
		uint8_t want[32];
		if (!reply || f->h.opcode != WEFT_OP_AUTH) {
			hs_fail(c, "unexpected frame during handshake");
			break;
		}
		if (f->h.status == -WEFT_EAUTH) {
			hs_fail(c, "server refused our cluster key (wrong cluster key)");
			break;
		}
		if (f->h.status || proto_auth_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
			hs_fail(c, "malformed AUTH reply");
			break;
		}
		auth_mac(&c->key, "weft-server", c->nonce_c, c->nonce_s, c->version, want);
		if (auth_mac_verify(want, m.mac) != 0) {
			hs_fail(c, "server does not hold our cluster key (wrong cluster key)");
			break;
		}
		conn_become_ready(c);
		break;
	}
	case HS_READY:
		break;
	}
	wbuf_free(&w);
	frame_free(f);
}
