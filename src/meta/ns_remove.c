/* Namespace operations that remove names: unlink, rmdir, and the last-link rule. */
#include "meta/ns.h"

#include <errno.h>
#include <sys/stat.h>

#include "meta/dentry.h"
#include "meta/perm.h"
#include "meta/session.h"

int meta_ns_drop_link(const struct meta_ctx *c, struct meta_inode *in)
{
	if (in->attr.nlink > 0)
		in->attr.nlink--;
	in->attr.ctime_ns = meta_ns_now(c);
	if (in->attr.nlink > 0)
		return meta_inode_put(c->db, c->txn, in);
	int open = meta_session_unlinked(c->db, c->txn, in->attr.ino);
	if (open < 0)
		return open;
	if (open) {
		in->flags |= META_INODE_ORPHAN;
		return meta_inode_put(c->db, c->txn, in);
	}
	return meta_inode_destroy(c->db, c->txn, in);
}

/* Looks up the victim of unlink/rmdir: dir with w+x, entry, inode, sticky rule. */
static int victim(const struct meta_ctx *c, struct meta_ref dref, const char *name,
		  size_t len, struct meta_inode *dir, struct meta_inode *in)
{
	struct meta_dentry_val de;
	int rc = meta_ns_get_dir(c, dref, META_MAY_EXEC, dir);
	if (rc)
		return rc;
	if ((rc = meta_dentry_get(c->db, c->txn, dir->attr.ino, name, len, &de)))
		return rc;
	if ((rc = meta_perm_check(c->cred, &dir->attr, META_MAY_WRITE | META_MAY_EXEC)))
		return rc;
	if ((rc = meta_inode_get(c->db, c->txn, de.ino, in)))
		return rc == -ENOENT ? -EIO : rc;
	return meta_perm_sticky(c->cred, &dir->attr, &in->attr);
}

int meta_ns_unlink(const struct meta_ctx *c, struct meta_ref dref, const char *name,
		   size_t len)
{
	struct meta_inode dir, in;
	int rc = meta_ns_check_name(name, len);
	if (rc)
		return rc;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return -EISDIR;
	if ((rc = victim(c, dref, name, len, &dir, &in)))
		return rc;
	if (S_ISDIR(in.attr.mode))
		return -EISDIR;
	if ((rc = meta_dentry_del(c->db, c->txn, dir.attr.ino, name, len)))
		return rc;
	meta_ns_dir_changed(c, &dir.attr, meta_ns_now(c));
	if ((rc = meta_inode_put(c->db, c->txn, &dir)))
		return rc;
	return meta_ns_drop_link(c, &in);
}

int meta_ns_rmdir(const struct meta_ctx *c, struct meta_ref dref, const char *name,
		  size_t len)
{
	struct meta_inode dir, in;
	int rc = meta_ns_check_name(name, len);
	if (rc)
		return rc;
	if (len == 1 && name[0] == '.')
		return -EINVAL;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return -ENOTEMPTY;
	if ((rc = victim(c, dref, name, len, &dir, &in)))
		return rc;
	if (!S_ISDIR(in.attr.mode))
		return -ENOTDIR;
	if ((rc = meta_dentry_empty(c->db, c->txn, in.attr.ino)) <= 0)
		return rc < 0 ? rc : -ENOTEMPTY;
	if ((rc = meta_dentry_del(c->db, c->txn, dir.attr.ino, name, len)))
		return rc;
	dir.attr.nlink--;
	meta_ns_dir_changed(c, &dir.attr, meta_ns_now(c));
	if ((rc = meta_inode_put(c->db, c->txn, &dir)))
		return rc;
	return meta_inode_destroy(c->db, c->txn, &in);
}
