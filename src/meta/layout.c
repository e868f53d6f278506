/* Layout choice and setstripe/getstripe. */
#include "meta/layout.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "meta/chains.h"
#include "meta/perm.h"
#include "meta/super.h"

bool meta_layout_valid(const struct weft_layout *l)
{
	uint32_t u = l->stripe_unit;
	return u >= WEFT_STRIPE_UNIT_MIN && u <= WEFT_STRIPE_UNIT_MAX && (u & (u - 1)) == 0 &&
	       l->replicas >= 1 && l->replicas <= WEFT_REPLICAS_MAX;
}

/* Chains whose room differs by less than this share of the roomiest are treated as
 * equal: files then go round-robin, evenly by count (Lustre's qos_threshold_rr). */
#define ROOM_EVEN_PCT 20

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* First chain of a file striped over sc of n chains, by free space: a window of sc
 * chains is as roomy as its fullest chain; when the windows' room is uneven, one is
 * drawn with probability proportional to its room (the draw seeded by the round-robin
 * cursor, so that it is reproducible and moves with every file); when it is even,
 * *first is left as round-robin chose it. */
static void pick_by_room(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t n,
			 uint32_t sc, uint64_t seed, uint32_t *first)
{
	uint64_t *room = calloc(n, sizeof(*room)), *win = calloc(n, sizeof(*win));
	if (!room || !win || meta_chains_room(db, txn, replicas, n, room))
		goto out;
	uint64_t max = 0, min = UINT64_MAX, total = 0;
	for (uint32_t f = 0; f < n; f++) {
		uint64_t w = UINT64_MAX;
		for (uint32_t k = 0; k < sc; k++)
			if (room[(f + k) % n] < w)
				w = room[(f + k) % n];
		win[f] = w >> 20; /* MiB: the sum below cannot overflow */
		max = win[f] > max ? win[f] : max;
		min = win[f] < min ? win[f] : min;
		total += win[f];
	}
	if (max == 0 || (max - min) * 100 < max * ROOM_EVEN_PCT)
		goto out;
	uint64_t x = mix64(seed) % total;
	for (uint32_t f = 0; f < n; f++) {
		if (x < win[f]) {
			*first = f;
			break;
		}
		x -= win[f];
	}
out:
	free(room);
	free(win);
}

int meta_layout_pick(struct meta_db *db, MDB_txn *txn, struct meta_super *sb,
		     const struct weft_layout *dflt, struct weft_layout *out)
{
	uint32_t n;
	int rc;
	if (!meta_layout_valid(dflt))
		return -EINVAL;
	if ((rc = meta_chains_count(db, txn, dflt->replicas, &n)))
		return rc;
	if (n == 0)
		return -EINVAL;
	uint32_t *rr = &sb->rr[dflt->replicas - 1];
	out->stripe_unit = dflt->stripe_unit;
	out->replicas = dflt->replicas;
	out->chain_count = n;
	out->stripe_count = dflt->stripe_count == 0 || dflt->stripe_count > n ? n : dflt->stripe_count;
	out->first_chain = *rr % n;
	out->gen = 0; /* a new file; weft migrate sets the next generation itself */
	/* a file on fewer chains than there are goes where there is room (one on all of
	 * them has no choice) */
	if (out->stripe_count < n)
		pick_by_room(db, txn, dflt->replicas, n, out->stripe_count,
			     (uint64_t)*rr << 32 ^ sb->next_ino, &out->first_chain);
	*rr = (*rr % n + 1) % n;
	if (sb->used[dflt->replicas - 1] < n)
		sb->used[dflt->replicas - 1] = n;
	return 0;
}

int meta_layout_choose(struct meta_db *db, MDB_txn *txn, const struct weft_layout *dflt,
		       struct weft_layout *out)
{
	struct meta_super sb;
	int rc = meta_super_get(db, txn, &sb);
	if (rc || (rc = meta_layout_pick(db, txn, &sb, dflt, out)))
		return rc;
	return meta_super_put(db, txn, &sb);
}

int meta_layout_setstripe(const struct meta_ctx *c, struct meta_ref ref,
			  const struct weft_layout *req, struct weft_layout *out)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if (!meta_perm_owner(c->cred, &in.attr))
		return -EPERM;
	if (!meta_layout_valid(req))
		return -EINVAL;
	if (S_ISDIR(in.attr.mode)) {
		uint32_t n;
		if ((rc = meta_chains_count(c->db, c->txn, req->replicas, &n)))
			return rc;
		if (n == 0)
			return -EINVAL;
		in.layout = (struct weft_layout){ .stripe_unit = req->stripe_unit,
			.stripe_count = req->stripe_count, .replicas = req->replicas };
	} else if (S_ISREG(in.attr.mode)) {
		if (in.attr.size != 0)
			return -EBUSY;
		if ((rc = meta_layout_choose(c->db, c->txn, req, &in.layout)))
			return rc;
	} else {
		return -ENOTSUP;
	}
	in.attr.ctime_ns = meta_ns_now(c);
	meta_inode_fill_derived(&in);
	if ((rc = meta_inode_put(c->db, c->txn, &in)))
		return rc;
	if (out)
		*out = in.layout;
	return 0;
}

int meta_layout_getstripe(const struct meta_ctx *c, struct meta_ref ref, struct weft_layout *out)
{
	return meta_ns_getlayout(c, ref, out);
}
