/* readdir and readdirplus over the per-directory cookie index. */
#include "meta/ns.h"

#include <dirent.h>
#include <errno.h>

#include "meta/dentry.h"
#include "meta/perm.h"

static int emit(meta_ns_readdir_cb cb, void *arg, const char *name, size_t len,
		const struct meta_inode *in, uint8_t type, uint64_t cookie, bool plus)
{
	struct meta_ns_dirent e = {
		.name = name, .len = len, .ino = in->attr.ino, .type = type, .cookie = cookie,
		.attr = plus ? &in->attr : NULL,
	};
	return cb(arg, &e);
}

int meta_ns_readdir(const struct meta_ctx *c, struct meta_ref dref, uint64_t after, bool plus,
		    meta_ns_readdir_cb cb, void *arg)
{
	struct meta_inode dir, in;
	int rc = meta_ns_get_dir(c, dref, META_MAY_READ, &dir);
	if (rc)
		return rc;
	if (after < META_COOKIE_DOT) {
		if (emit(cb, arg, ".", 1, &dir, DT_DIR, META_COOKIE_DOT, plus))
			return 0;
		after = META_COOKIE_DOT;
	}
	if (after < META_COOKIE_DOTDOT) {
		if ((rc = meta_inode_get(c->db, c->txn, dir.parent, &in)))
			return rc == -ENOENT ? -EIO : rc;
		if (emit(cb, arg, "..", 2, &in, DT_DIR, META_COOKIE_DOTDOT, plus))
			return 0;
		after = META_COOKIE_DOTDOT;
	}
	for (;;) {
		char name[WEFT_NAME_MAX + 1];
		size_t len;
		struct meta_dentry_val de;
		rc = meta_dentry_next(c->db, c->txn, dir.attr.ino, after, name, &len, &de);
		if (rc == -ENOENT)
			return 0;
		if (rc)
			return rc;
		if (plus) {
			if ((rc = meta_inode_get(c->db, c->txn, de.ino, &in)))
				return rc == -ENOENT ? -EIO : rc;
		} else {
			in.attr.ino = de.ino;
		}
		if (emit(cb, arg, name, len, &in, de.type, de.cookie, plus))
			return 0;
		after = de.cookie;
	}
}
