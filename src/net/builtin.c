/* PING, ECHO, SINK and STATS_GET handlers shared by every daemon. */
#include "net/builtin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/auth.h"
#include "proto/roles.h"

#include "net/stats.h"
#include "weft/err.h"

static void release_frame(void *arg)
{
	frame_free(arg);
}

bool builtin_handle(struct conn *c, struct frame *f)
{
	if (f->h.opcode == WEFT_OP_PING) {
		struct weft_msg_ping m;
		const char *why;
		if (proto_ping_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
			conn_reply_error(c, f, -WEFT_EPROTO, 0, "PING: %s", why);
		} else {
			struct wbuf w;
			wbuf_init(&w);
			proto_ping_encode(&w, &m);
			conn_reply(c, f, 0, &w, NULL, 0, NULL, NULL);
		}
		frame_free(f);
		return true;
	}
	if (f->h.opcode == WEFT_OP_ECHO) {
		/* the reply sends the request's own bulk buffer: no copy */
		struct iovec v = {f->bulk, f->h.bulk_len};
		conn_reply(c, f, 0, NULL, &v, 1, release_frame, f);
		return true;
	}
	if (f->h.opcode == WEFT_OP_STATS_GET) {
		char *json = stats_json();
		if (!json) {
			conn_reply_error(c, f, -ENOMEM, 0, "STATS_GET: out of memory");
		} else {
			struct iovec v = {json, strlen(json)};
			conn_reply(c, f, 0, NULL, &v, 1, free, json);
		}
		frame_free(f);
		return true;
	}
	if (f->h.opcode == WEFT_OP_SINK) {
		conn_reply(c, f, 0, NULL, NULL, 0, NULL, NULL);
		frame_free(f);
		return true;
	}
	return false;
}

static struct log_limit refused_lines = LOG_LIMIT_INIT;

bool builtin_refuse_role(struct conn *c, struct frame *f, uint8_t server_role)
{
	uint16_t op = f->h.opcode;
	uint8_t role = conn_peer_role(c);
	if (proto_op_allowed(op, server_role, role))
		return false;
	const char *name = proto_op_name(op) ? proto_op_name(op) : "unknown opcode";
	const char *rn = auth_role_name(role) ? auth_role_name(role) : "unknown";
	unsigned dropped;
	if (log_limit_ok(&refused_lines, 10, 10000, &dropped))
		log_warn("refused %s from %s (%s \"%s\"): only %s may send it%s", name, conn_peer(c),
			 rn, conn_peer_name(c), proto_op_roles(op, server_role),
			 dropped ? " (and more not logged)" : "");
	conn_reply_error(c, f, -EACCES, 0, "%s: a %s may not send it (only %s)", name, rn,
			 proto_op_roles(op, server_role));
	frame_free(f);
	return true;
}
