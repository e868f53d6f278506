/* Directory entries and their cookie index. */
#include "meta/dentry.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"

/* dirents value v1: u8 version, u8 type, u64 ino LE, u64 cookie LE (18 bytes). */
#define DIRENT_VERSION 1
#define DIRENT_LEN 18

static size_t dkey(uint8_t *k, uint64_t parent, const char *name, size_t len)
{
	meta_be64(k, parent);
	memcpy(k + 8, name, len);
	return 8 + len;
}

static void ckey(uint8_t *k, uint64_t parent, uint64_t cookie)
{
	meta_be64(k, parent);
	meta_be64(k + 8, cookie);
}

static int dval_decode(const MDB_val *v, struct meta_dentry_val *o)
{
	const uint8_t *p = v->mv_data;
	if (v->mv_size != DIRENT_LEN || p[0] != DIRENT_VERSION)
		return -EIO;
	o->type = p[1];
	o->ino = get_le64(p + 2);
	o->cookie = get_le64(p + 10);
	return 0;
}

static void dval_encode(uint8_t *p, const struct meta_dentry_val *o)
{
	p[0] = DIRENT_VERSION;
	p[1] = o->type;
	put_le64(p + 2, o->ino);
	put_le64(p + 10, o->cookie);
}

uint8_t meta_dentry_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return DT_REG;
	case S_IFDIR: return DT_DIR;
	case S_IFLNK: return DT_LNK;
	case S_IFIFO: return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	case S_IFCHR: return DT_CHR;
	case S_IFBLK: return DT_BLK;
	default: return DT_UNKNOWN;
	}
}

int meta_dentry_get(struct meta_db *db, MDB_txn *txn, uint64_t parent, const char *name,
		    size_t len, struct meta_dentry_val *out)
{
	uint8_t kb[8 + WEFT_NAME_MAX];
	MDB_val k = { dkey(kb, parent, name, len), kb }, v;
	int rc = mdb_get(txn, db->dirents, &k, &v);
	if (rc)
		return meta_mdb_err(rc);
	return dval_decode(&v, out);
}

int meta_dentry_add(struct meta_db *db, MDB_txn *txn, struct meta_inode *dir,
		    const char *name, size_t len, uint64_t ino, uint8_t type)
{
	uint8_t kb[8 + WEFT_NAME_MAX], ck[16], vb[DIRENT_LEN];
	struct meta_dentry_val val = { ino, dir->next_cookie, type };
	MDB_val k = { dkey(kb, dir->attr.ino, name, len), kb }, v = { DIRENT_LEN, vb };
	dval_encode(vb, &val);
	int rc = meta_mdb_put(txn, db->dirents, &k, &v, MDB_NOOVERWRITE);
	if (rc)
		return meta_mdb_err(rc);
	ckey(ck, dir->attr.ino, val.cookie);
	k = (MDB_val){ 16, ck };
	v = (MDB_val){ len, (void *)name };
	rc = meta_mdb_put(txn, db->cookies, &k, &v, MDB_NOOVERWRITE);
	if (rc)
		return meta_mdb_err(rc);
	dir->next_cookie++;
	return 0;
}

int meta_dentry_set(struct meta_db *db, MDB_txn *txn, uint64_t parent, const char *name,
		    size_t len, const struct meta_dentry_val *val)
{
	uint8_t kb[8 + WEFT_NAME_MAX], vb[DIRENT_LEN];
	MDB_val k = { dkey(kb, parent, name, len), kb }, v = { DIRENT_LEN, vb };
	dval_encode(vb, val);
	return meta_mdb_err(meta_mdb_put(txn, db->dirents, &k, &v, 0));
}

int meta_dentry_del(struct meta_db *db, MDB_txn *txn, uint64_t parent, const char *name,
		    size_t len)
{
	struct meta_dentry_val val;
	int rc = meta_dentry_get(db, txn, parent, name, len, &val);
	if (rc)
		return rc;
	uint8_t kb[8 + WEFT_NAME_MAX], ck[16];
	MDB_val k = { dkey(kb, parent, name, len), kb };
	if ((rc = meta_mdb_del(txn, db->dirents, &k, NULL)))
		return meta_mdb_err(rc);
	ckey(ck, parent, val.cookie);
	k = (MDB_val){ 16, ck };
	return meta_mdb_err(meta_mdb_del(txn, db->cookies, &k, NULL));
}

int meta_dentry_empty(struct meta_db *db, MDB_txn *txn, uint64_t parent)
{
	MDB_cursor *cur;
	int rc = mdb_cursor_open(txn, db->cookies, &cur);
	if (rc)
		return meta_mdb_err(rc);
	uint8_t ck[16];
	ckey(ck, parent, 0);
	MDB_val k = { 16, ck }, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return 1;
	if (rc)
		return meta_mdb_err(rc);
	return k.mv_size == 16 && meta_get_be64(k.mv_data) == parent ? 0 : 1;
}

int meta_dentry_next(struct meta_db *db, MDB_txn *txn, uint64_t parent, uint64_t after,
		     char *name, size_t *len, struct meta_dentry_val *out)
{
	MDB_cursor *cur;
	if (after == UINT64_MAX)
		return -ENOENT;
	int rc = mdb_cursor_open(txn, db->cookies, &cur);
	if (rc)
		return meta_mdb_err(rc);
	uint8_t ck[16];
	ckey(ck, parent, after + 1);
	MDB_val k = { 16, ck }, v;
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	mdb_cursor_close(cur);
	if (rc)
		return meta_mdb_err(rc);
	if (k.mv_size != 16 || meta_get_be64(k.mv_data) != parent)
		return -ENOENT;
	if (v.mv_size == 0 || v.mv_size > WEFT_NAME_MAX)
		return -EIO;
	memcpy(name, v.mv_data, v.mv_size);
	name[v.mv_size] = '\0';
	*len = v.mv_size;
	rc = meta_dentry_get(db, txn, parent, name, *len, out);
	if (rc == -ENOENT)
		return -EIO; /* index without entry */
	return rc;
}
