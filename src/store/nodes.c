/* The store's side of node credentials: it checks its peers' proofs with the service key
 * and the copy of meta's node registry that meta sends it (NODES_CHANGED), and closes the
 * connections of a node meta revoked as soon as it hears of it. */
#include "store/server_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "net/nodetab.h"
#include "net/server.h"
#include "weft/err.h"

int store_verify_peer(void *arg, uint8_t role, const char *name, uint32_t serial,
		      uint8_t out[WEFT_KEY_LEN], char *why, size_t whylen)
{
	struct store_server *s = arg;
	if (serial && !nodetab_allows(s->nodes, false, role, name, serial, why, whylen))
		return -WEFT_EAUTH;
	auth_store_key(s->key.svc, role, name, serial, out);
	return 0;
}

/* NODES_CHANGED from meta (loop thread): the registry as meta has it now. */
static void on_meta_request(struct conn *c, struct frame *f)
{
	struct store_server *s = conn_ctx(c);
	if (f->h.opcode == WEFT_OP_NODES_CHANGED) {
		struct weft_msg_nodes m;
		const char *why = NULL;
		if (proto_nodes_decode(f->payload, f->h.payload_len, &m, &why) == 0 &&
		    nodetab_parse(s->nodes, m.text.p, m.text.len) == 0) {
			nodetab_cut_off(s->nodes, s->srv);
			store_caps_fenced(s, m.fenced.p, m.fenced.len);
		}
		else
			log_warn("NODES_CHANGED from meta: %s", why ? why : "malformed list");
	}
	frame_free(f);
}

const struct conn_ops store_meta_conn_ops = {.on_request = on_meta_request};
