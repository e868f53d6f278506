/* Superblock record codec and access. */
#include "meta/super.h"

#include <errno.h>
#include <string.h>

#include "common/buf.h"

static const char sb_key[] = "sb";

/* Layout (all little-endian), META_SUPER_LEN bytes:
 *   u32 format, u8[16] uuid, u32 options, u64 next_ino, u64 epoch, u64 next_session,
 *   u32 next_target, u32 rr[3], u64 chains_epoch, u32 used[3], i64 created_ns,
 *   u32 stripe_unit, u32 stripe_count, u8 replicas */
void meta_super_encode(const struct meta_super *sb, uint8_t *b)
{
	uint8_t *p = b;
	put_le32(p, sb->format), p += 4;
	memcpy(p, sb->uuid, 16), p += 16;
	put_le32(p, sb->options), p += 4;
	put_le64(p, sb->next_ino), p += 8;
	put_le64(p, sb->epoch), p += 8;
	put_le64(p, sb->next_session), p += 8;
	put_le32(p, sb->next_target), p += 4;
	for (int i = 0; i < WEFT_REPLICAS_MAX; i++)
		put_le32(p, sb->rr[i]), p += 4;
	put_le64(p, sb->chains_epoch), p += 8;
	for (int i = 0; i < WEFT_REPLICAS_MAX; i++)
		put_le32(p, sb->used[i]), p += 4;
	put_le64(p, (uint64_t)sb->created_ns), p += 8;
	put_le32(p, sb->layout.stripe_unit), p += 4;
	put_le32(p, sb->layout.stripe_count), p += 4;
	*p++ = sb->layout.replicas;
}

int meta_super_decode(const void *buf, size_t len, struct meta_super *sb)
{
	const uint8_t *p = buf;
	if (len != META_SUPER_LEN)
		return -EIO;
	memset(sb, 0, sizeof(*sb));
	sb->format = get_le32(p), p += 4;
	if (sb->format != META_FORMAT_VERSION)
		return -EIO;
	memcpy(sb->uuid, p, 16), p += 16;
	sb->options = get_le32(p), p += 4;
	sb->next_ino = get_le64(p), p += 8;
	sb->epoch = get_le64(p), p += 8;
	sb->next_session = get_le64(p), p += 8;
	sb->next_target = get_le32(p), p += 4;
	for (int i = 0; i < WEFT_REPLICAS_MAX; i++)
		sb->rr[i] = get_le32(p), p += 4;
	sb->chains_epoch = get_le64(p), p += 8;
	for (int i = 0; i < WEFT_REPLICAS_MAX; i++)
		sb->used[i] = get_le32(p), p += 4;
	sb->created_ns = (int64_t)get_le64(p), p += 8;
	sb->layout.stripe_unit = get_le32(p), p += 4;
	sb->layout.stripe_count = get_le32(p), p += 4;
	sb->layout.replicas = *p++;
	return 0;
}

int meta_super_get(struct meta_db *db, MDB_txn *txn, struct meta_super *sb)
{
	MDB_val k = { sizeof(sb_key) - 1, (void *)sb_key }, v;
	int rc = mdb_get(txn, db->super, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	return meta_super_decode(v.mv_data, v.mv_size, sb);
}

int meta_super_put(struct meta_db *db, MDB_txn *txn, const struct meta_super *sb)
{
	uint8_t b[META_SUPER_LEN];
	meta_super_encode(sb, b);
	MDB_val k = { sizeof(sb_key) - 1, (void *)sb_key }, v = { sizeof(b), b };
	return meta_mdb_err(meta_mdb_put(txn, db->super, &k, &v, 0));
}
