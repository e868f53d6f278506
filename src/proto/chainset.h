/* Chain tables as data, and their wire encoding: meta encodes the whole set of targets
 * and chain tables, clients and stores decode it. Owned by src/proto: no LMDB and no
 * networking here; the blocking fetch from meta is net/chainfetch.h.
 *
 * Encoding v1 (little-endian, struct wbuf/rbuf conventions):
 *   u8  version (1)
 *   u64 epoch                 bumped on any change of any chain
 *   u32 ntargets  (<= META_TARGETS_MAX), then per target:
 *       u32 id, u8 state (enum weft_member_state; SERVING = up, OFFLINE = down),
 *       u16 len + node bytes (<= WEFT_NODE_MAX), u16 len + addr bytes (<= WEFT_ADDR_MAX)
 *   then for replicas = 1, 2, 3:
 *       u32 nchains (<= META_CHAINS_MAX), then per chain, in id order 0..nchains-1:
 *           u32 id (== its index), u64 version, u8 nmembers (replicas, or replicas + 1
 *           while a membership moves: the newcomer rebuilds behind the others),
 *           per member: u32 target id, u8 state (enum weft_member_state)
 *
 * Threads: pure functions; a set is owned by whoever filled it. */
#ifndef WEFT_PROTO_CHAINSET_H
#define WEFT_PROTO_CHAINSET_H

#include <stdint.h>

#include "common/buf.h"
#include "weft/types.h"

#define META_CHAINSET_VERSION 1
#define META_TARGETS_MAX 4096u
#define META_CHAINS_MAX 65536u
/* a chain's members: its replicas, and one more while a membership moves */
#define WEFT_CHAIN_MEMBERS_MAX (WEFT_REPLICAS_MAX + 1)

struct weft_chain_member {
	uint32_t target;
	uint8_t state; /* enum weft_member_state */
	/* meta only, not on the wire: went offline before it finished rebuilding (it must
	 * rebuild, not just sync, when it returns) */
	bool rebuild_pending;
	/* meta only: the member a move takes out once the extra member serves */
	bool leaving;
};

/* One chain: members in order, head first. Reads go to any SERVING member, writes to
 * the first SERVING member, which forwards down the rest. */
struct weft_chain {
	uint32_t id;      /* index in the table of its replica count; never changes meaning */
	uint8_t replicas; /* table it belongs to (1..3) */
	uint8_t nmembers; /* replicas, or replicas + 1 while a membership moves (drain,
			   * rebalance): the extra member rebuilds, then the leaving one is
			   * dropped at meta in one step */
	uint32_t owner;   /* target the chain was built around (not encoded on the wire) */
	uint64_t version; /* bumped on any change of members or their states */
	struct weft_chain_member members[WEFT_CHAIN_MEMBERS_MAX];
};

struct weft_chain_target {
	uint32_t id;
	uint8_t state; /* WEFT_MEMBER_SERVING (up) or WEFT_MEMBER_OFFLINE (down) */
	char node[WEFT_NODE_MAX + 1];
	char addr[WEFT_ADDR_MAX + 1];
};

struct weft_chain_set {
	uint64_t epoch;
	uint32_t ntargets;
	struct weft_chain_target *targets;           /* malloc'd, ntargets */
	uint32_t nchains[WEFT_REPLICAS_MAX];
	struct weft_chain *chains[WEFT_REPLICAS_MAX]; /* malloc'd, chains[r-1][id] */
};

/* Frees the arrays and zeroes the set; NULL-safe and idempotent. */
void proto_chain_set_free(struct weft_chain_set *s);
/* Appends the encoding to w; check w->err afterwards (-ENOMEM). */
void proto_chain_set_encode(const struct weft_chain_set *s, struct wbuf *w);
/* Decodes a set from r into *out (arrays malloc'd; free with proto_chain_set_free).
 * Every count and length is checked against its limit and the bytes left before
 * anything is allocated. Errors: -WEFT_EPROTO malformed (r->why says why), -ENOMEM.
 * On error *out holds nothing. */
int proto_chain_set_decode(struct rbuf *r, struct weft_chain_set *out);
/* Chain id of table replicas, or NULL when out of range. */
const struct weft_chain *proto_chain_set_get(const struct weft_chain_set *s, uint8_t replicas,
					    uint32_t id);

#endif
