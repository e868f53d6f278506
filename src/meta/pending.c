/* Pending object work queue (deletes and truncates for the stores). */
#include "meta/pending.h"

#include <errno.h>
#include <string.h>

#include "common/buf.h"

/* Value v1 (little-endian), 43 bytes: u8 version, u8 kind, u64 ino, u64 size,
 * u32 stripe_unit, u32 stripe_count, u32 first_chain, u32 chain_count, u8 replicas,
 * 8 bytes unused (zero; rows written before they were zeroed may hold anything); then
 * u32 layout_gen when it is not 0 (47 bytes). */
#define PENDING_VERSION 1
#define PENDING_LEN 43
#define PENDING_LEN_GEN 47

int meta_pending_add(struct meta_db *db, MDB_txn *txn, uint8_t kind, uint64_t ino,
		     uint64_t size, const struct weft_layout *l)
{
	if (kind != META_PENDING_DELETE && kind != META_PENDING_TRUNCATE &&
	    kind != META_PENDING_DROP)
		return -EINVAL;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, db->pending, &cur);
	if (rc)
		return meta_mdb_err(rc);
	MDB_val k, v;
	uint64_t seq = 1;
	rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 8)
		seq = meta_get_be64(k.mv_data) + 1;
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		return meta_mdb_err(rc);

	uint8_t kb[8], vb[PENDING_LEN_GEN] = {0}, *p = vb;
	meta_be64(kb, seq);
	*p++ = PENDING_VERSION;
	*p++ = kind;
	put_le64(p, ino), p += 8;
	put_le64(p, size), p += 8;
	put_le32(p, l->stripe_unit), p += 4;
	put_le32(p, l->stripe_count), p += 4;
	put_le32(p, l->first_chain), p += 4;
	put_le32(p, l->chain_count), p += 4;
	*p++ = l->replicas;
	if (l->gen)
		put_le32(vb + PENDING_LEN, l->gen);
	k = (MDB_val){ 8, kb };
	v = (MDB_val){ l->gen ? PENDING_LEN_GEN : PENDING_LEN, vb };
	return meta_mdb_err(meta_mdb_put(txn, db->pending, &k, &v, MDB_APPEND));
}

static int decode(const MDB_val *k, const MDB_val *v, struct meta_pending *o)
{
	const uint8_t *p = v->mv_data;
	if (k->mv_size != 8 || (v->mv_size != PENDING_LEN && v->mv_size != PENDING_LEN_GEN) ||
	    p[0] != PENDING_VERSION)
		return -EIO;
	o->seq = meta_get_be64(k->mv_data);
	o->kind = p[1];
	p += 2;
	o->ino = get_le64(p), p += 8;
	o->size = get_le64(p), p += 8;
	o->layout.stripe_unit = get_le32(p), p += 4;
	o->layout.stripe_count = get_le32(p), p += 4;
	o->layout.first_chain = get_le32(p), p += 4;
	o->layout.chain_count = get_le32(p), p += 4;
	o->layout.replicas = *p;
	o->layout.gen = v->mv_size == PENDING_LEN_GEN ?
			get_le32((const uint8_t *)v->mv_data + PENDING_LEN) : 0;
	return 0;
}

int meta_pending_list(struct meta_db *db, MDB_txn *txn, uint64_t after,
		      struct meta_pending *out, size_t max, size_t *n)
{
	*n = 0;
	if (max == 0)
		return 0;
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, db->pending, &cur);
	if (rc)
		return meta_mdb_err(rc);
	uint8_t kb[8];
	meta_be64(kb, after + 1);
	MDB_val k = { 8, kb }, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && *n < max) {
		int err = decode(&k, &v, &out[*n]);
		if (err) {
			mdb_cursor_close(cur);
			return err;
		}
		(*n)++;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : meta_mdb_err(rc);
}

int meta_pending_done(struct meta_db *db, MDB_txn *txn, uint64_t seq)
{
	uint8_t kb[8];
	meta_be64(kb, seq);
	MDB_val k = { 8, kb };
	return meta_mdb_err(meta_mdb_del(txn, db->pending, &k, NULL));
}
