/* rename and renameat2 (RENAME_NOREPLACE, RENAME_EXCHANGE). */
#include "meta/ns.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "meta/dentry.h"
#include "meta/perm.h"

#define DEPTH_MAX (1u << 20) /* guard against a parent cycle in a corrupt table */

static bool dotname(const char *n, size_t len)
{
	return (len == 1 && n[0] == '.') || (len == 2 && n[0] == '.' && n[1] == '.');
}

/* 1 when anc is dir or one of its ancestors, 0 when not, or -errno. */
static int is_ancestor(const struct meta_ctx *c, uint64_t anc, const struct meta_inode *dir)
{
	uint64_t p = dir->attr.ino, parent = dir->parent;
	struct meta_inode in;
	for (unsigned i = 0; i < DEPTH_MAX; i++) {
		if (p == anc)
			return 1;
		if (p == WEFT_ROOT_INO)
			return 0;
		p = parent;
		int rc = meta_inode_get(c->db, c->txn, p, &in);
		if (rc)
			return rc == -ENOENT ? -EIO : rc;
		parent = in.parent;
	}
	return -EIO;
}

struct side {
	struct meta_inode *dir;
	const char *name;
	size_t len;
	struct meta_dentry_val de;
};

/* Checks and loads everything; fills s (source), t (target, if *have_t). */
static int prepare(const struct meta_ctx *c, struct side *o, struct side *n, uint32_t flags,
		   struct meta_inode *s, struct meta_inode *t, bool *have_t)
{
	bool xchg = flags & RENAME_EXCHANGE;
	bool moved = o->dir != n->dir;
	int rc;
	if ((rc = meta_dentry_get(c->db, c->txn, o->dir->attr.ino, o->name, o->len, &o->de)))
		return rc;
	if ((rc = meta_inode_get(c->db, c->txn, o->de.ino, s)))
		return rc == -ENOENT ? -EIO : rc;
	if (S_ISDIR(s->attr.mode) && moved && (rc = is_ancestor(c, s->attr.ino, n->dir)))
		return rc < 0 ? rc : -EINVAL;
	rc = meta_dentry_get(c->db, c->txn, n->dir->attr.ino, n->name, n->len, &n->de);
	if (rc && rc != -ENOENT)
		return rc;
	*have_t = rc == 0;
	if ((flags & RENAME_NOREPLACE) && *have_t)
		return -EEXIST;
	if (xchg && !*have_t)
		return -ENOENT;
	if (*have_t) {
		if ((rc = meta_inode_get(c->db, c->txn, n->de.ino, t)))
			return rc == -ENOENT ? -EIO : rc;
		if (S_ISDIR(t->attr.mode) && moved && (rc = is_ancestor(c, t->attr.ino, o->dir)))
			return rc < 0 ? rc : xchg ? -EINVAL : -ENOTEMPTY;
		if (t->attr.ino == s->attr.ino)
			return 1; /* same inode: nothing to do */
	}
	if ((rc = meta_perm_check(c->cred, &o->dir->attr, META_MAY_WRITE | META_MAY_EXEC)) ||
	    (rc = meta_perm_check(c->cred, &n->dir->attr, META_MAY_WRITE | META_MAY_EXEC)))
		return rc;
	if ((rc = meta_perm_sticky(c->cred, &o->dir->attr, &s->attr)))
		return rc;
	if (*have_t && (rc = meta_perm_sticky(c->cred, &n->dir->attr, &t->attr)))
		return rc;
	bool sdir = S_ISDIR(s->attr.mode), tdir = *have_t && S_ISDIR(t->attr.mode);
	if (*have_t && !xchg) {
		if (sdir && !tdir)
			return -ENOTDIR;
		if (!sdir && tdir)
			return -EISDIR;
	}
	if (moved && sdir && (rc = meta_perm_check(c->cred, &s->attr, META_MAY_WRITE)))
		return rc;
	if (moved && xchg && tdir && (rc = meta_perm_check(c->cred, &t->attr, META_MAY_WRITE)))
		return rc;
	if (tdir && !xchg) {
		if ((rc = meta_dentry_empty(c->db, c->txn, t->attr.ino)) <= 0)
			return rc < 0 ? rc : -ENOTEMPTY;
	}
	if (moved && sdir && !tdir && n->dir->attr.nlink >= META_LINK_MAX)
		return -EMLINK;
	if (moved && xchg && tdir && !sdir && o->dir->attr.nlink >= META_LINK_MAX)
		return -EMLINK;
	return 0;
}

static int apply_exchange(const struct meta_ctx *c, struct side *o, struct side *n,
			  struct meta_inode *s, struct meta_inode *t, int64_t now)
{
	struct meta_dentry_val ov = { t->attr.ino, o->de.cookie, meta_dentry_type(t->attr.mode) };
	struct meta_dentry_val nv = { s->attr.ino, n->de.cookie, meta_dentry_type(s->attr.mode) };
	int rc;
	if ((rc = meta_dentry_set(c->db, c->txn, o->dir->attr.ino, o->name, o->len, &ov)) ||
	    (rc = meta_dentry_set(c->db, c->txn, n->dir->attr.ino, n->name, n->len, &nv)))
		return rc;
	if (o->dir != n->dir) {
		if (S_ISDIR(s->attr.mode)) {
			s->parent = n->dir->attr.ino;
			n->dir->attr.nlink++;
			o->dir->attr.nlink--;
		}
		if (S_ISDIR(t->attr.mode)) {
			t->parent = o->dir->attr.ino;
			o->dir->attr.nlink++;
			n->dir->attr.nlink--;
		}
	}
	s->attr.ctime_ns = t->attr.ctime_ns = now;
	if ((rc = meta_inode_put(c->db, c->txn, s)))
		return rc;
	return meta_inode_put(c->db, c->txn, t);
}

static int apply_move(const struct meta_ctx *c, struct side *o, struct side *n,
		      struct meta_inode *s, struct meta_inode *t, bool have_t, int64_t now)
{
	int rc;
	if (have_t) {
		if ((rc = meta_dentry_del(c->db, c->txn, n->dir->attr.ino, n->name, n->len)))
			return rc;
		if (S_ISDIR(t->attr.mode)) {
			n->dir->attr.nlink--;
			rc = meta_inode_destroy(c->db, c->txn, t);
		} else {
			rc = meta_ns_drop_link(c, t);
		}
		if (rc)
			return rc;
	}
	if ((rc = meta_dentry_del(c->db, c->txn, o->dir->attr.ino, o->name, o->len)))
		return rc;
	rc = meta_dentry_add(c->db, c->txn, n->dir, n->name, n->len, s->attr.ino,
			     meta_dentry_type(s->attr.mode));
	if (rc)
		return rc;
	if (S_ISDIR(s->attr.mode) && o->dir != n->dir) {
		s->parent = n->dir->attr.ino;
		o->dir->attr.nlink--;
		n->dir->attr.nlink++;
	}
	s->attr.ctime_ns = now;
	return meta_inode_put(c->db, c->txn, s);
}

int meta_ns_rename(const struct meta_ctx *c, struct meta_ref odref, const char *oldname,
		   size_t oldlen, struct meta_ref ndref, const char *newname, size_t newlen,
		   uint32_t flags)
{
	struct meta_inode dirs[2], s, t;
	bool have_t = false;
	int rc;
	if (flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if ((rc = meta_ns_check_name(oldname, oldlen)) || (rc = meta_ns_check_name(newname, newlen)))
		return rc;
	if (dotname(oldname, oldlen))
		return -EBUSY;
	if (dotname(newname, newlen))
		return (flags & RENAME_NOREPLACE) ? -EEXIST : -EBUSY;

	struct side o = { &dirs[0], oldname, oldlen, { 0, 0, 0 } };
	struct side n = { &dirs[1], newname, newlen, { 0, 0, 0 } };
	if ((rc = meta_ns_get_dir(c, odref, META_MAY_EXEC, o.dir)))
		return rc;
	if (ndref.ino == odref.ino) {
		if (ndref.gen && ndref.gen != o.dir->attr.gen)
			return -ESTALE;
		n.dir = o.dir;
	} else if ((rc = meta_ns_get_dir(c, ndref, META_MAY_EXEC, n.dir))) {
		return rc;
	}
	rc = prepare(c, &o, &n, flags, &s, &t, &have_t);
	if (rc)
		return rc > 0 ? 0 : rc;

	int64_t now = meta_ns_now(c);
	if (flags & RENAME_EXCHANGE)
		rc = apply_exchange(c, &o, &n, &s, &t, now);
	else
		rc = apply_move(c, &o, &n, &s, &t, have_t, now);
	if (rc)
		return rc;
	meta_ns_dir_changed(c, &o.dir->attr, now);
	meta_ns_dir_changed(c, &n.dir->attr, now);
	if ((rc = meta_inode_put(c->db, c->txn, o.dir)))
		return rc;
	return n.dir == o.dir ? 0 : meta_inode_put(c->db, c->txn, n.dir);
}
