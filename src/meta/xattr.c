/* Extended attributes. */
#include "meta/xattr.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/xattr.h>

#include "meta/perm.h"

enum xns { XNS_USER, XNS_TRUSTED, XNS_SECURITY, XNS_OTHER };

static enum xns xattr_ns(const char *name)
{
	if (strncmp(name, "user.", 5) == 0)
		return XNS_USER;
	if (strncmp(name, "trusted.", 8) == 0)
		return XNS_TRUSTED;
	if (strncmp(name, "security.", 9) == 0)
		return XNS_SECURITY;
	return XNS_OTHER;
}

/* Linux xattr_permission + cap_inode_setxattr, roughly. */
static int xperm(const struct meta_ctx *c, const struct weft_attr *a, const char *name,
		 bool write)
{
	bool root = c->cred->uid == 0;
	switch (xattr_ns(name)) {
	case XNS_TRUSTED:
		return root ? 0 : write ? -EPERM : -ENODATA;
	case XNS_SECURITY:
		return !write || root ? 0 : -EPERM;
	case XNS_USER:
		if (!S_ISREG(a->mode) && !S_ISDIR(a->mode))
			return write ? -EPERM : -ENODATA;
		if (write && S_ISDIR(a->mode) && (a->mode & S_ISVTX) && !meta_perm_owner(c->cred, a))
			return -EPERM;
		return meta_perm_check(c->cred, a, write ? META_MAY_WRITE : META_MAY_READ);
	default:
		return -EOPNOTSUPP;
	}
}

static int xkey(uint8_t *k, uint64_t ino, const char *name, size_t *klen)
{
	size_t n = strlen(name);
	if (n == 0 || n > WEFT_XATTR_NAME_MAX)
		return -ERANGE;
	meta_be64(k, ino);
	memcpy(k + 8, name, n);
	*klen = 8 + n;
	return 0;
}

static int load(const struct meta_ctx *c, struct meta_ref ref, const char *name, bool write,
		struct meta_inode *in, uint8_t *k, size_t *klen)
{
	int rc = xkey(k, ref.ino, name, klen);
	if (rc)
		return rc;
	if ((rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, in)))
		return rc;
	return xperm(c, &in->attr, name, write);
}

static int touch(const struct meta_ctx *c, struct meta_inode *in)
{
	in->attr.ctime_ns = meta_ns_now(c);
	return meta_inode_put(c->db, c->txn, in);
}

int meta_xattr_set(const struct meta_ctx *c, struct meta_ref ref, const char *name,
		   const void *value, size_t size, uint32_t flags)
{
	struct meta_inode in;
	uint8_t kb[8 + WEFT_XATTR_NAME_MAX];
	size_t klen;
	if (flags & ~(uint32_t)(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	if (size > WEFT_XATTR_SIZE_MAX)
		return -E2BIG;
	int rc = load(c, ref, name, true, &in, kb, &klen);
	if (rc)
		return rc;
	MDB_val k = { klen, kb }, v;
	rc = mdb_get(c->txn, c->db->xattrs, &k, &v);
	if (rc && rc != MDB_NOTFOUND)
		return meta_mdb_err(rc);
	if (rc == 0 && (flags & XATTR_CREATE))
		return -EEXIST;
	if (rc == MDB_NOTFOUND && (flags & XATTR_REPLACE))
		return -ENODATA;
	v = (MDB_val){ size, (void *)value };
	if ((rc = meta_mdb_put(c->txn, c->db->xattrs, &k, &v, 0)))
		return meta_mdb_err(rc);
	return touch(c, &in);
}

int meta_xattr_get(const struct meta_ctx *c, struct meta_ref ref, const char *name,
		   void *buf, size_t size, size_t *len)
{
	struct meta_inode in;
	uint8_t kb[8 + WEFT_XATTR_NAME_MAX];
	size_t klen;
	int rc = load(c, ref, name, false, &in, kb, &klen);
	if (rc)
		return rc;
	MDB_val k = { klen, kb }, v;
	rc = mdb_get(c->txn, c->db->xattrs, &k, &v);
	if (rc == MDB_NOTFOUND)
		return -ENODATA;
	if (rc)
		return meta_mdb_err(rc);
	*len = v.mv_size;
	if (size == 0)
		return 0;
	if (size < v.mv_size)
		return -ERANGE;
	memcpy(buf, v.mv_data, v.mv_size);
	return 0;
}

int meta_xattr_list(const struct meta_ctx *c, struct meta_ref ref, char *buf, size_t size,
		    size_t *len)
{
	struct meta_inode in;
	MDB_cursor *cur;
	uint8_t kb[8];
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if ((rc = mdb_cursor_open(c->txn, c->db->xattrs, &cur)))
		return meta_mdb_err(rc);
	meta_be64(kb, ref.ino);
	MDB_val k = { 8, kb }, v;
	size_t total = 0;
	bool range = false;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size <= 8 || meta_get_be64(k.mv_data) != ref.ino)
			break;
		size_t n = k.mv_size - 8;
		const char *nm = (const char *)k.mv_data + 8;
		if (n >= 8 && memcmp(nm, "trusted.", 8) == 0 && c->cred->uid != 0)
			continue;
		if (size && total + n + 1 <= size) {
			memcpy(buf + total, nm, n);
			buf[total + n] = '\0';
		} else if (size) {
			range = true;
		}
		total += n + 1;
	}
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		return meta_mdb_err(rc);
	*len = total;
	return range ? -ERANGE : 0;
}

int meta_xattr_remove(const struct meta_ctx *c, struct meta_ref ref, const char *name)
{
	struct meta_inode in;
	uint8_t kb[8 + WEFT_XATTR_NAME_MAX];
	size_t klen;
	int rc = load(c, ref, name, true, &in, kb, &klen);
	if (rc)
		return rc;
	MDB_val k = { klen, kb };
	rc = meta_mdb_del(c->txn, c->db->xattrs, &k, NULL);
	if (rc == MDB_NOTFOUND)
		return -ENODATA;
	if (rc)
		return meta_mdb_err(rc);
	return touch(c, &in);
}

int meta_xattr_drop_all(struct meta_db *db, MDB_txn *txn, uint64_t ino)
{
	MDB_cursor *cur;
	uint8_t kb[8];
	int rc = mdb_cursor_open(txn, db->xattrs, &cur);
	if (rc)
		return meta_mdb_err(rc);
	meta_be64(kb, ino);
	for (;;) {
		MDB_val k = { 8, kb }, v;
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc || k.mv_size < 8 || meta_get_be64(k.mv_data) != ino)
			break;
		if ((rc = meta_mdb_cursor_del(cur, 0)))
			break;
	}
	mdb_cursor_close(cur);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : meta_mdb_err(rc);
}
