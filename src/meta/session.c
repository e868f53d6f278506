/* Client sessions and open counts. */
#include "meta/session.h"

#include <errno.h>
#include <string.h>

#include "common/buf.h"
#include "meta/inode.h"
#include "meta/super.h"

/* sessions value v1 (LE): u8 version, i64 created_ns, i64 last_seen_ns, u16 len + node.
 * opens / sess_opens value: u32 LE count (> 0; the key is deleted at 0). */
#define SESSION_VERSION 1

static int session_put(struct meta_db *db, MDB_txn *txn, const struct meta_session *s)
{
	uint8_t kb[8], vb[1 + 8 + 8 + 2 + WEFT_NODE_MAX];
	size_t nl = strlen(s->node);
	meta_be64(kb, s->id);
	vb[0] = SESSION_VERSION;
	put_le64(vb + 1, (uint64_t)s->created_ns);
	put_le64(vb + 9, (uint64_t)s->last_seen_ns);
	put_le16(vb + 17, (uint16_t)nl);
	memcpy(vb + 19, s->node, nl);
	MDB_val k = { 8, kb }, v = { 19 + nl, vb };
	return meta_mdb_err(meta_mdb_put(txn, db->sessions, &k, &v, 0));
}

static int session_decode(const MDB_val *k, const MDB_val *v, struct meta_session *s)
{
	const uint8_t *p = v->mv_data;
	if (k->mv_size != 8 || v->mv_size < 19 || p[0] != SESSION_VERSION)
		return -EIO;
	size_t nl = get_le16(p + 17);
	if (nl > WEFT_NODE_MAX || v->mv_size != 19 + nl)
		return -EIO;
	s->id = meta_get_be64(k->mv_data);
	s->created_ns = (int64_t)get_le64(p + 1);
	s->last_seen_ns = (int64_t)get_le64(p + 9);
	memcpy(s->node, p + 19, nl);
	s->node[nl] = '\0';
	return 0;
}

int meta_session_get(struct meta_db *db, MDB_txn *txn, uint64_t id, struct meta_session *out)
{
	uint8_t kb[8];
	meta_be64(kb, id);
	MDB_val k = { 8, kb }, v;
	int rc = mdb_get(txn, db->sessions, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	return session_decode(&k, &v, out);
}

int meta_session_create(struct meta_db *db, MDB_txn *txn, const char *node, int64_t now_ns,
			uint64_t *id)
{
	struct meta_super sb;
	struct meta_session s;
	size_t nl = strlen(node);
	int rc;
	if (nl == 0 || nl > WEFT_NODE_MAX)
		return -EINVAL;
	if ((rc = meta_super_get(db, txn, &sb)))
		return rc;
	s.id = sb.next_session++;
	if ((rc = meta_super_put(db, txn, &sb)))
		return rc;
	memcpy(s.node, node, nl + 1);
	s.created_ns = s.last_seen_ns = now_ns;
	*id = s.id;
	return session_put(db, txn, &s);
}

int meta_session_heartbeat(struct meta_db *db, MDB_txn *txn, uint64_t id, int64_t now_ns)
{
	struct meta_session s;
	int rc = meta_session_get(db, txn, id, &s);
	if (rc)
		return rc;
	s.last_seen_ns = now_ns;
	return session_put(db, txn, &s);
}

static void okey(uint8_t k[16], uint64_t a, uint64_t b)
{
	meta_be64(k, a);
	meta_be64(k + 8, b);
}

/* Adds delta to the count under key k in dbi; deletes the key at 0. *left = new count. */
static int count_add(MDB_txn *txn, MDB_dbi dbi, uint8_t k16[16], int delta, uint32_t *left)
{
	MDB_val k = { 16, k16 }, v;
	uint32_t n = 0;
	int rc = mdb_get(txn, dbi, &k, &v);
	if (rc == 0 && v.mv_size == 4)
		n = get_le32(v.mv_data);
	else if (rc == 0)
		return -EIO;
	else if (rc != MDB_NOTFOUND)
		return meta_mdb_err(rc);
	if (delta < 0 && n == 0)
		return -ENOENT;
	n = (uint32_t)((int64_t)n + delta);
	*left = n;
	if (n == 0)
		return meta_mdb_err(meta_mdb_del(txn, dbi, &k, NULL));
	uint8_t vb[4];
	put_le32(vb, n);
	v = (MDB_val){ 4, vb };
	return meta_mdb_err(meta_mdb_put(txn, dbi, &k, &v, 0));
}

int meta_session_open(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino)
{
	struct meta_session s;
	struct meta_inode in;
	uint8_t k[16];
	uint32_t left;
	int rc = meta_session_get(db, txn, id, &s);
	if (rc)
		return rc;
	if ((rc = meta_inode_get(db, txn, ino, &in)))
		return rc == -ENOENT ? -ESTALE : rc;
	okey(k, ino, id);
	if ((rc = count_add(txn, db->opens, k, 1, &left)))
		return rc;
	okey(k, id, ino);
	return count_add(txn, db->sess_opens, k, 1, &left);
}

int meta_session_ino_open(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	MDB_cursor *cur;
	uint8_t kb[8];
	int rc = mdb_cursor_open(txn, db->opens, &cur);
	if (rc)
		return meta_mdb_err(rc);
	meta_be64(kb, ino);
	MDB_val k = { 8, kb }, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return meta_mdb_err(rc);
	return k.mv_size == 16 && meta_get_be64(k.mv_data) == ino;
}

/* Removes n opens of ino by session id; frees an orphan whose last open this was. */
static int release_n(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino, int n)
{
	uint8_t k[16];
	uint32_t left;
	okey(k, ino, id);
	int rc = count_add(txn, db->opens, k, -n, &left);
	if (rc)
		return rc;
	okey(k, id, ino);
	if ((rc = count_add(txn, db->sess_opens, k, -n, &left)))
		return rc == -ENOENT ? -EIO : rc;
	if ((rc = meta_session_ino_open(db, txn, ino)) != 0)
		return rc < 0 ? rc : 0;
	struct meta_inode in;
	rc = meta_inode_get(db, txn, ino, &in);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (in.attr.nlink == 0 && (in.flags & META_INODE_ORPHAN))
		return meta_inode_destroy(db, txn, &in);
	return 0;
}

int meta_session_release(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino)
{
	return release_n(db, txn, id, ino, 1);
}

int meta_session_close(struct meta_db *db, MDB_txn *txn, uint64_t id)
{
	MDB_cursor *cur;
	uint8_t kb[8], sk[8];
	int rc = mdb_cursor_open(txn, db->sess_opens, &cur);
	if (rc)
		return meta_mdb_err(rc);
	meta_be64(kb, id);
	for (;;) {
		MDB_val k = { 8, kb }, v;
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc == MDB_NOTFOUND || (rc == 0 && (k.mv_size != 16 ||
						       meta_get_be64(k.mv_data) != id))) {
			rc = 0;
			break;
		}
		if (rc) {
			rc = meta_mdb_err(rc);
			break;
		}
		if (v.mv_size != 4) {
			rc = -EIO;
			break;
		}
		uint64_t ino = meta_get_be64((uint8_t *)k.mv_data + 8);
		int n = (int)get_le32(v.mv_data);
		if ((rc = release_n(db, txn, id, ino, n)))
			break;
	}
	mdb_cursor_close(cur);
	if (rc)
		return rc;
	meta_be64(sk, id);
	MDB_val k = { 8, sk };
	return meta_mdb_err(meta_mdb_del(txn, db->sessions, &k, NULL));
}

int meta_session_expire(struct meta_db *db, MDB_txn *txn, int64_t now_ns, int64_t timeout_ns,
			unsigned *n)
{
	MDB_cursor *cur;
	uint64_t stale[64];
	int rc;
	*n = 0;
	/* collect a batch of stale ids, close them, repeat until none is left */
	for (;;) {
		size_t ns = 0;
		if ((rc = mdb_cursor_open(txn, db->sessions, &cur)))
			return meta_mdb_err(rc);
		MDB_val k, v;
		int err = 0;
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && ns < 64;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			struct meta_session s;
			if ((err = session_decode(&k, &v, &s)))
				break;
			if (now_ns - s.last_seen_ns > timeout_ns)
				stale[ns++] = s.id;
		}
		mdb_cursor_close(cur);
		if (err)
			return err;
		if (rc && rc != MDB_NOTFOUND)
			return meta_mdb_err(rc);
		for (size_t i = 0; i < ns; i++) {
			if ((rc = meta_session_close(db, txn, stale[i])))
				return rc;
			(*n)++;
		}
		if (ns < 64)
			return 0;
	}
}
