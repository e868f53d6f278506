/* Layout choice and setstripe/getstripe. */
#include "meta/layout.h"

#include <errno.h>
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
