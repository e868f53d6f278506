/* Encoding and decoding of the chain table set (see chainset.h for the format). */
#include "proto/chainset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "weft/err.h"

void proto_chain_set_free(struct weft_chain_set *s)
{
	if (!s)
		return;
	free(s->targets);
	for (int i = 0; i < WEFT_REPLICAS_MAX; i++)
		free(s->chains[i]);
	memset(s, 0, sizeof(*s));
}

void proto_chain_set_encode(const struct weft_chain_set *s, struct wbuf *w)
{
	wbuf_u8(w, META_CHAINSET_VERSION);
	wbuf_u64(w, s->epoch);
	wbuf_u32(w, s->ntargets);
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct weft_chain_target *t = &s->targets[i];
		wbuf_u32(w, t->id);
		wbuf_u8(w, t->state);
		wbuf_str(w, t->node, strnlen(t->node, WEFT_NODE_MAX));
		wbuf_str(w, t->addr, strnlen(t->addr, WEFT_ADDR_MAX));
	}
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++) {
		wbuf_u32(w, s->nchains[r]);
		for (uint32_t i = 0; i < s->nchains[r]; i++) {
			const struct weft_chain *c = &s->chains[r][i];
			wbuf_u32(w, c->id);
			wbuf_u64(w, c->version);
			wbuf_u8(w, c->nmembers);
			for (int m = 0; m < c->nmembers && m < WEFT_CHAIN_MEMBERS_MAX; m++) {
				wbuf_u32(w, c->members[m].target);
				wbuf_u8(w, c->members[m].state);
			}
		}
	}
}

static void get_str(struct rbuf *r, char *out, size_t max, const char *why)
{
	uint16_t n = rbuf_u16(r);
	if (n > max) {
		rbuf_fail(r, why);
		n = 0;
	}
	rbuf_get(r, out, n);
	out[n] = '\0';
	if (memchr(out, '\0', n))
		rbuf_fail(r, why);
}

#define TARGET_MIN_LEN (4 + 1 + 2 + 2)

static int decode(struct rbuf *r, struct weft_chain_set *s)
{
	if (rbuf_u8(r) != META_CHAINSET_VERSION) {
		rbuf_fail(r, "chain set: unknown version");
		return -WEFT_EPROTO;
	}
	s->epoch = rbuf_u64(r);
	s->ntargets = rbuf_u32(r);
	if (!rbuf_ok(r))
		return -WEFT_EPROTO;
	if (s->ntargets > META_TARGETS_MAX || s->ntargets > rbuf_left(r) / TARGET_MIN_LEN) {
		rbuf_fail(r, "chain set: too many targets");
		return -WEFT_EPROTO;
	}
	if (s->ntargets && !(s->targets = calloc(s->ntargets, sizeof(*s->targets))))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->ntargets; i++) {
		struct weft_chain_target *t = &s->targets[i];
		t->id = rbuf_u32(r);
		t->state = rbuf_u8(r);
		if (t->state > WEFT_MEMBER_OFFLINE)
			rbuf_fail(r, "chain set: bad target state");
		get_str(r, t->node, WEFT_NODE_MAX, "chain set: bad node name");
		get_str(r, t->addr, WEFT_ADDR_MAX, "chain set: bad address");
	}
	for (int k = 0; k < WEFT_REPLICAS_MAX && rbuf_ok(r); k++) {
		uint8_t reps = (uint8_t)(k + 1);
		size_t clen = 4 + 8 + 1 + (size_t)reps * 5;
		uint32_t n = rbuf_u32(r);
		if (!rbuf_ok(r))
			break;
		if (n > META_CHAINS_MAX || n > rbuf_left(r) / clen) {
			rbuf_fail(r, "chain set: too many chains");
			break;
		}
		s->nchains[k] = n;
		if (n && !(s->chains[k] = calloc(n, sizeof(struct weft_chain))))
			return -ENOMEM;
		for (uint32_t i = 0; i < n && rbuf_ok(r); i++) {
			struct weft_chain *c = &s->chains[k][i];
			c->id = rbuf_u32(r);
			c->replicas = reps;
			c->version = rbuf_u64(r);
			c->nmembers = rbuf_u8(r);
			if (c->id != i || (c->nmembers != reps && c->nmembers != reps + 1)) {
				rbuf_fail(r, "chain set: bad chain id or member count");
				break;
			}
			for (int m = 0; m < c->nmembers; m++) {
				c->members[m].target = rbuf_u32(r);
				c->members[m].state = rbuf_u8(r);
				if (c->members[m].state > WEFT_MEMBER_REBUILDING)
					rbuf_fail(r, "chain set: bad member state");
			}
		}
	}
	return rbuf_ok(r) ? 0 : -WEFT_EPROTO;
}

int proto_chain_set_decode(struct rbuf *r, struct weft_chain_set *out)
{
	memset(out, 0, sizeof(*out));
	int rc = decode(r, out);
	if (rc)
		proto_chain_set_free(out);
	return rc;
}

const struct weft_chain *proto_chain_set_get(const struct weft_chain_set *s, uint8_t replicas,
					    uint32_t id)
{
	if (replicas < 1 || replicas > WEFT_REPLICAS_MAX || id >= s->nchains[replicas - 1])
		return NULL;
	return &s->chains[replicas - 1][id];
}
