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

/* One rate-limited line naming the peer and why its handshake failed. */
static void hs_log(struct conn *c, const char *why)
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
}

static void hs_fail(struct conn *c, const char *why)
{
	hs_log(c, why);
	conn_close(c, -WEFT_EAUTH);
}

void handshake_start(struct conn *c)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_hello m = {.ver_min = WEFT_PROTO_MIN, .ver_max = WEFT_PROTO_MAX,
				   .role = c->role, .serial = c->serial};
	auth_random(c->nonce_c, WEFT_NONCE_LEN);
	memcpy(m.nonce, c->nonce_c, WEFT_NONCE_LEN);
	c->wire_c = (uint8_t)(wire_floor() | (wire_aes_ok() ? WIRE_AES : 0));
	m.wire = c->wire_c;
	m.name = proto_str_of(c->name, strlen(c->name));
	proto_hello_encode(&w, &m);
	c->hs = HS_CLIENT_WAIT_HELLO;
	conn_send_handshake(c, WEFT_OP_HELLO, 0, 0, 0, &w);
}

/* What this connection's MACs cover (auth.h). */
static struct auth_bind bind_of(const struct conn *c, bool server)
{
	struct auth_bind b = {.version = c->version, .nonce_c = c->nonce_c, .nonce_s = c->nonce_s};
	b.client_role = server ? c->peer_role : c->role;
	b.client_name = server ? c->peer_name : c->name;
	b.serial = server ? c->peer_serial : c->serial;
	b.server_role = server ? c->role : c->peer_role;
	b.server_name = server ? c->name : c->peer_name;
	b.wire_c = c->wire_c;
	b.wire_s = c->wire_s;
	return b;
}

static const char *role_str(uint8_t role)
{
	const char *n = auth_role_name(role);
	return n ? n : "unknown role";
}

void handshake_frame(struct conn *c, struct frame *f)
{
	const char *why = NULL;
	struct wbuf w;
	wbuf_init(&w);
	bool reply = f->h.flags & WEFT_F_REPLY;
	const char *opname = proto_op_name(f->h.opcode);
	char msg[200];

	switch (c->hs) {
	case HS_SERVER_WAIT_HELLO: {
		struct weft_msg_hello m;
		if (reply || f->h.opcode != WEFT_OP_HELLO) {
			snprintf(msg, sizeof(msg), "expected HELLO, got %s (no key?)", opname);
			hs_fail(c, msg);
			break;
		}
		if (proto_hello_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
			snprintf(msg, sizeof(msg), "malformed HELLO: %s (an older weft?)", why);
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
		c->peer_serial = m.serial;
		proto_str_copy(c->peer_name, sizeof(c->peer_name), m.name);
		memcpy(c->nonce_c, m.nonce, WEFT_NONCE_LEN);
		c->wire_c = m.wire;
		char vwhy[160] = "";
		if (!auth_role_name(m.role) ||
		    c->verify(c->verify_arg, m.role, c->peer_name, m.serial, c->proof, vwhy,
			      sizeof(vwhy)) != 0) {
			snprintf(msg, sizeof(msg), "%s \"%s\" (serial %u) refused: %s",
				 role_str(m.role), c->peer_name, m.serial,
				 vwhy[0] ? vwhy : "no such role");
			/* the refusal is said to the peer, so that it can tell the operator */
			pthread_mutex_lock(&c->lock);
			c->close_after_flush = true;
			pthread_mutex_unlock(&c->lock);
			hs_log(c, msg);
			conn_send_handshake(c, WEFT_OP_HELLO, WEFT_F_REPLY, -WEFT_EAUTH, f->h.reqid, &w);
			break;
		}
		auth_random(c->nonce_s, WEFT_NONCE_LEN);
		/* the stronger of what the client asks and our floor; AES-GCM if both have it */
		int lv = (int)(m.wire & WIRE_LEVEL_MASK);
		if (lv > WIRE_PRIVACY)
			lv = WIRE_PRIVACY;
		if (lv < wire_floor())
			lv = wire_floor();
		c->wire_s = (uint8_t)(lv | ((m.wire & WIRE_AES) && wire_aes_ok() ? WIRE_AES : 0));
		struct weft_msg_hello_reply r = {.version = c->version, .role = c->role,
						 .wire = c->wire_s};
		memcpy(r.nonce, c->nonce_s, WEFT_NONCE_LEN);
		r.name = proto_str_of(c->name, strlen(c->name));
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
		struct auth_bind b = bind_of(c, true);
		auth_mac(c->proof, "weft-client", &b, want);
		if (auth_mac_verify(want, m.mac) != 0) {
			log_error("authentication failed from %s: wrong cluster key or credential (%s \"%s\", serial %u)",
				  c->peer, role_str(c->peer_role), c->peer_name, c->peer_serial);
			pthread_mutex_lock(&c->lock);
			c->close_after_flush = true;
			pthread_mutex_unlock(&c->lock);
			conn_send_handshake(c, WEFT_OP_AUTH, WEFT_F_REPLY, -WEFT_EAUTH, f->h.reqid, &w);
			break;
		}
		struct weft_msg_auth r;
		auth_mac(c->proof, "weft-server", &b, r.mac);
		proto_auth_encode(&w, &r);
		conn_send_handshake(c, WEFT_OP_AUTH, WEFT_F_REPLY, 0, f->h.reqid, &w);
		/* every frame after this reply is protected */
		if (wire_setup(&c->wire, c->proof, &b, true, c->wire_s & WIRE_LEVEL_MASK,
			       (c->wire_s & WIRE_AES) != 0)) {
			hs_fail(c, "out of memory for the wire's keys");
			break;
		}
		conn_become_ready(c);
		break;
	}
	case HS_CLIENT_WAIT_HELLO: {
		struct weft_msg_hello_reply m;
		if (!reply || f->h.opcode != WEFT_OP_HELLO || f->h.status) {
			snprintf(msg, sizeof(msg), "server refused HELLO (%s)",
				 f->h.status == -WEFT_EAUTH ?
				 "our credential is unknown, revoked or of another role" :
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
		c->peer_role = m.role;
		proto_str_copy(c->peer_name, sizeof(c->peer_name), m.name);
		memcpy(c->nonce_s, m.nonce, WEFT_NONCE_LEN);
		c->wire_s = m.wire;
		int lv = (int)(m.wire & WIRE_LEVEL_MASK);
		if (lv > WIRE_PRIVACY || (m.wire & ~(WIRE_LEVEL_MASK | WIRE_AES)) ||
		    ((m.wire & WIRE_AES) && !(c->wire_c & WIRE_AES))) {
			hs_fail(c, "server chose a wire protection we do not know");
			break;
		}
		if (lv < (int)(c->wire_c & WIRE_LEVEL_MASK)) {
			snprintf(msg, sizeof(msg), "server offers wire level %s, below this file "
				 "system's %s (a downgrade?)", wire_level_name(lv),
				 wire_level_name(c->wire_c & WIRE_LEVEL_MASK));
			hs_fail(c, msg);
			break;
		}
		if (auth_client_key(&c->key, m.role, c->role, c->name, c->proof) != 0) {
			snprintf(msg, sizeof(msg), "this credential cannot authenticate to a %s",
				 role_str(m.role));
			hs_fail(c, msg);
			break;
		}
		struct weft_msg_auth a;
		struct auth_bind b = bind_of(c, false);
		auth_mac(c->proof, "weft-client", &b, a.mac);
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
			hs_fail(c, "server refused our proof (wrong cluster key or credential)");
			break;
		}
		if (f->h.status || proto_auth_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
			hs_fail(c, "malformed AUTH reply");
			break;
		}
		struct auth_bind b = bind_of(c, false);
		auth_mac(c->proof, "weft-server", &b, want);
		if (auth_mac_verify(want, m.mac) != 0) {
			hs_fail(c, "server does not hold our cluster key (wrong cluster key)");
			break;
		}
		if (wire_setup(&c->wire, c->proof, &b, false, c->wire_s & WIRE_LEVEL_MASK,
			       (c->wire_s & WIRE_AES) != 0)) {
			hs_fail(c, "out of memory for the wire's keys");
			break;
		}
		/* meta says which level the file system has: this process asks for it from now on
		 * (a mount toward stores, a store toward its clients) */
		if (c->peer_role == WEFT_ROLE_META)
			wire_floor_raise(c->wire_s & WIRE_LEVEL_MASK);
		conn_become_ready(c);
		break;
	}
	case HS_READY:
		break;
	}
	wbuf_free(&w);
	frame_free(f);
}
