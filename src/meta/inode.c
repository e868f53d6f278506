/* Inode records: codec and table access. */
#include "meta/inode.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "meta/pending.h"
#include "meta/super.h"
#include "meta/xattr.h"

/* Record v1 (little-endian), META_INODE_FIXED_LEN bytes then the symlink target:
 *   u8 version, u8 reserved(0), u32 flags, u64 gen, u32 mode, u32 nlink, u32 uid,
 *   u32 gid, u32 rdev, u64 size, u64 blocks, i64 atime_ns, i64 mtime_ns, i64 ctime_ns,
 *   u32 stripe_unit, u32 stripe_count, u32 first_chain, u32 chain_count, u8 replicas,
 *   u64 parent, u64 next_cookie, u16 target_len, target bytes, and for a regular file
 *   whose written-stripes mask is not empty or whose layout generation is not 0: u16
 *   mask_len (may be 0), mask bytes, then when the layout generation is not 0: u32
 *   layout_gen (records without them decode with an empty mask and generation 0) */
size_t meta_inode_encode(const struct meta_inode *in, uint8_t *b)
{
	const struct weft_attr *a = &in->attr;
	const struct weft_layout *l = &in->layout;
	uint8_t *p = b;
	*p++ = META_INODE_VERSION;
	*p++ = 0;
	put_le32(p, in->flags), p += 4;
	put_le64(p, a->gen), p += 8;
	put_le32(p, a->mode), p += 4;
	put_le32(p, a->nlink), p += 4;
	put_le32(p, a->uid), p += 4;
	put_le32(p, a->gid), p += 4;
	put_le32(p, a->rdev), p += 4;
	put_le64(p, a->size), p += 8;
	put_le64(p, a->blocks), p += 8;
	put_le64(p, (uint64_t)a->atime_ns), p += 8;
	put_le64(p, (uint64_t)a->mtime_ns), p += 8;
	put_le64(p, (uint64_t)a->ctime_ns), p += 8;
	put_le32(p, l->stripe_unit), p += 4;
	put_le32(p, l->stripe_count), p += 4;
	put_le32(p, l->first_chain), p += 4;
	put_le32(p, l->chain_count), p += 4;
	*p++ = l->replicas;
	put_le64(p, in->parent), p += 8;
	put_le64(p, in->next_cookie), p += 8;
	uint16_t tl = in->target_len < WEFT_PATH_MAX ? in->target_len : WEFT_PATH_MAX - 1;
	put_le16(p, tl), p += 2;
	memcpy(p, in->target, tl), p += tl;
	uint16_t wl = in->written_len <= META_WRITTEN_MAX ? in->written_len : META_WRITTEN_MAX;
	if (wl || l->gen) {
		put_le16(p, wl), p += 2;
		memcpy(p, in->written, wl), p += wl;
	}
	if (l->gen)
		put_le32(p, l->gen), p += 4;
	return (size_t)(p - b);
}

int meta_inode_decode(uint64_t ino, const void *buf, size_t len, struct meta_inode *out)
{
	const uint8_t *p = buf;
	if (len < META_INODE_FIXED_LEN || p[0] != META_INODE_VERSION)
		return -EIO;
	memset(out, 0, offsetof(struct meta_inode, target));
	struct weft_attr *a = &out->attr;
	struct weft_layout *l = &out->layout;
	a->ino = ino;
	p += 2;
	out->flags = get_le32(p), p += 4;
	a->gen = get_le64(p), p += 8;
	a->mode = get_le32(p), p += 4;
	a->nlink = get_le32(p), p += 4;
	a->uid = get_le32(p), p += 4;
	a->gid = get_le32(p), p += 4;
	a->rdev = get_le32(p), p += 4;
	a->size = get_le64(p), p += 8;
	a->blocks = get_le64(p), p += 8;
	a->atime_ns = (int64_t)get_le64(p), p += 8;
	a->mtime_ns = (int64_t)get_le64(p), p += 8;
	a->ctime_ns = (int64_t)get_le64(p), p += 8;
	l->stripe_unit = get_le32(p), p += 4;
	l->stripe_count = get_le32(p), p += 4;
	l->first_chain = get_le32(p), p += 4;
	l->chain_count = get_le32(p), p += 4;
	l->replicas = *p++;
	out->parent = get_le64(p), p += 8;
	out->next_cookie = get_le64(p), p += 8;
	out->target_len = get_le16(p), p += 2;
	size_t base = (size_t)META_INODE_FIXED_LEN + out->target_len;
	if (out->target_len >= WEFT_PATH_MAX || len < base)
		return -EIO;
	memcpy(out->target, p, out->target_len);
	out->target[out->target_len] = '\0';
	p += out->target_len;
	if (len > base) {
		uint16_t wl = len >= base + 2 ? get_le16(p) : 0;
		size_t end = base + 2 + wl;
		if (len < base + 2 || wl > META_WRITTEN_MAX || (len != end && len != end + 4) ||
		    (wl == 0 && len == end))
			return -EIO;
		memcpy(out->written, p + 2, wl);
		out->written_len = wl;
		if (len == end + 4) {
			l->gen = get_le32(p + 2 + wl);
			if (l->gen == 0 || l->gen > WEFT_LAYOUT_GEN_MAX)
				return -EIO;
		}
	}
	meta_inode_fill_derived(out);
	return 0;
}

void meta_inode_mark_written(struct meta_inode *in, const uint8_t *mask, size_t len)
{
	if (len > META_WRITTEN_MAX)
		len = META_WRITTEN_MAX;
	for (size_t i = 0; i < len; i++)
		in->written[i] |= mask[i];
	if (len > in->written_len)
		in->written_len = (uint16_t)len;
	while (in->written_len && in->written[in->written_len - 1] == 0)
		in->written_len--;
}

void meta_inode_trim_written(struct meta_inode *in, uint64_t size)
{
	uint64_t unit = in->layout.stripe_unit;
	for (uint32_t s = 0; unit && s < (uint32_t)in->written_len * 8; s++)
		if ((uint64_t)s * unit >= size) /* stripe s's first byte is at s * unit */
			in->written[s / 8] &= (uint8_t)~(1u << (s % 8));
	while (in->written_len && in->written[in->written_len - 1] == 0)
		in->written_len--;
}

void meta_inode_fill_derived(struct meta_inode *in)
{
	in->attr.blksize = S_ISREG(in->attr.mode) && in->layout.stripe_unit ?
		in->layout.stripe_unit : 4096;
	if (!S_ISREG(in->attr.mode)) {
		in->attr.blocks = (in->attr.size + 511) / 512;
		return;
	}
	/* a file's blocks are what its writers last measured on the stores (EXTEND), kept
	 * in the record; a truncate that shortens the file frees what lay past the end */
	uint64_t cap = ((in->attr.size + 4095) & ~(uint64_t)4095) / 512;
	if (in->attr.blocks > cap)
		in->attr.blocks = cap;
}

static void ino_key(uint8_t k[8], uint64_t ino) { meta_be64(k, ino); }

int meta_inode_get(struct meta_db *db, MDB_txn *txn, uint64_t ino, struct meta_inode *out)
{
	uint8_t kb[8];
	ino_key(kb, ino);
	MDB_val k = { 8, kb }, v;
	int rc = mdb_get(txn, db->inodes, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	return meta_inode_decode(ino, v.mv_data, v.mv_size, out);
}

int meta_inode_get_ref(struct meta_db *db, MDB_txn *txn, uint64_t ino, uint64_t gen,
		       struct meta_inode *out)
{
	int rc = meta_inode_get(db, txn, ino, out);
	if (rc == -ENOENT)
		return -ESTALE;
	if (rc)
		return rc;
	if (gen && gen != out->attr.gen)
		return -ESTALE;
	return 0;
}

int meta_inode_put(struct meta_db *db, MDB_txn *txn, const struct meta_inode *in)
{
	uint8_t kb[8], vb[META_INODE_MAXLEN];
	ino_key(kb, in->attr.ino);
	MDB_val k = { 8, kb }, v = { meta_inode_encode(in, vb), vb };
	return meta_mdb_err(meta_mdb_put(txn, db->inodes, &k, &v, 0));
}

int meta_inode_destroy(struct meta_db *db, MDB_txn *txn, const struct meta_inode *in)
{
	int rc = meta_xattr_drop_all(db, txn, in->attr.ino);
	if (rc)
		return rc;
	uint8_t kb[8];
	ino_key(kb, in->attr.ino);
	MDB_val k = { 8, kb };
	rc = meta_mdb_del(txn, db->inodes, &k, NULL);
	if (rc)
		return meta_mdb_err(rc);
	if (S_ISREG(in->attr.mode) && in->layout.chain_count)
		return meta_pending_add(db, txn, META_PENDING_DELETE, in->attr.ino, 0, &in->layout);
	return 0;
}

int meta_inode_count(struct meta_db *db, MDB_txn *txn, uint64_t *count)
{
	MDB_stat st;
	int rc = mdb_stat(txn, db->inodes, &st);
	if (rc)
		return meta_mdb_err(rc);
	*count = st.ms_entries;
	return 0;
}

void meta_inode_alloc(struct meta_super *sb, uint64_t *ino, uint64_t *gen)
{
	*ino = sb->next_ino++;
	*gen = sb->epoch;
}
