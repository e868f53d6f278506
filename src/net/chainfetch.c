/* The blocking CHAINS_GET call: ask meta for the chain-set and decode it. */
#include "net/chainfetch.h"

#include "common/log.h"
#include "weft/err.h"

int chain_set_fetch(struct rpc *r, int timeout_ms, struct weft_chain_set *out)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_chains_get m = {.known_version = 0};
	proto_chains_get_encode(&w, &m);
	struct frame *f = NULL;
	int err = rpc_call(r, WEFT_OP_CHAINS_GET, &w, NULL, 0, timeout_ms, &f);
	if (err == 0) {
		struct rbuf rb;
		rbuf_init(&rb, f->bulk, f->h.bulk_len);
		err = proto_chain_set_decode(&rb, out);
		if (err)
			log_warn("chain tables from meta %s: %s", rpc_addr(r),
				 rb.why ? rb.why : weft_strerror(err));
	}
	frame_free(f);
	return err;
}
