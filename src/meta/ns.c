/* Namespace operations: lookup, attributes, creating nodes, links, access, statfs. */
#include "meta/ns.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "meta/dentry.h"
#include "meta/layout.h"
#include "meta/pending.h"
#include "meta/perm.h"
#include "meta/super.h"
#include "proto/attrs.h"

#define META_INODES_MAX (1ULL << 48) /* what statfs reports as the inode space */

int meta_ns_check_name(const char *name, size_t len)
{
	if (len == 0)
		return -ENOENT;
	if (len > WEFT_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

static bool is_dot(const char *name, size_t len) { return len == 1 && name[0] == '.'; }
static bool is_dotdot(const char *name, size_t len)
{
	return len == 2 && name[0] == '.' && name[1] == '.';
}

int64_t meta_ns_now(const struct meta_ctx *c)
{
	return c->now_ns ? c->now_ns : meta_now_ns();
}

void meta_ns_dir_changed(const struct meta_ctx *c, struct weft_attr *dir, int64_t now)
{
	if (c->now_ns && now < dir->ctime_ns)
		return;
	dir->mtime_ns = dir->ctime_ns = now;
}

int meta_ns_get_dir(const struct meta_ctx *c, struct meta_ref ref, uint32_t mask,
		    struct meta_inode *dir)
{
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, dir);
	if (rc)
		return rc;
	if (!S_ISDIR(dir->attr.mode))
		return -ENOTDIR;
	return meta_perm_check(c->cred, &dir->attr, mask);
}

int meta_ns_lookup(const struct meta_ctx *c, struct meta_ref dref, const char *name,
		   size_t len, struct weft_attr *out)
{
	struct meta_inode dir, in;
	struct meta_dentry_val de;
	int rc = meta_ns_check_name(name, len);
	if (rc)
		return rc;
	if ((rc = meta_ns_get_dir(c, dref, META_MAY_EXEC, &dir)))
		return rc;
	if (is_dot(name, len)) {
		in = dir;
	} else {
		uint64_t ino;
		if (is_dotdot(name, len)) {
			ino = dir.parent;
		} else {
			if ((rc = meta_dentry_get(c->db, c->txn, dir.attr.ino, name, len, &de)))
				return rc;
			ino = de.ino;
		}
		if ((rc = meta_inode_get(c->db, c->txn, ino, &in)))
			return rc == -ENOENT ? -EIO : rc; /* entry without inode */
	}
	if (out)
		*out = in.attr;
	return 0;
}

int meta_ns_getattr(const struct meta_ctx *c, struct meta_ref ref, struct weft_attr *out)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc == 0 && out)
		*out = in.attr;
	return rc;
}

int meta_ns_getlayout_written0(const struct meta_ctx *c, struct meta_ref ref,
			       struct weft_layout *out, uint8_t *written0)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if (!S_ISREG(in.attr.mode) && !S_ISDIR(in.attr.mode))
		return -ENODATA;
	*out = in.layout;
	*written0 = in.written_len ? in.written[0] : 0;
	return 0;
}

int meta_ns_getlayout(const struct meta_ctx *c, struct meta_ref ref, struct weft_layout *out)
{
	uint8_t w0;
	return meta_ns_getlayout_written0(c, ref, out, &w0);
}

#define SET_ALL (META_SET_MODE | META_SET_UID | META_SET_GID | META_SET_SIZE | \
		 META_SET_ATIME | META_SET_MTIME | META_SET_ATIME_NOW | META_SET_MTIME_NOW | \
		 META_SET_CTIME | META_SET_HANDLE | META_SET_KILL_PRIV)

/* Permission part of setattr (setattr_prepare). */
static int setattr_check(const struct meta_ctx *c, const struct meta_inode *in,
			 const struct meta_setattr *sa)
{
	const struct weft_cred *cr = c->cred;
	const struct weft_attr *a = &in->attr;
	uint32_t v = sa->valid;
	bool root = cr->uid == 0;
	if ((v & META_SET_UID) && !root && !(cr->uid == a->uid && sa->uid == a->uid))
		return -EPERM;
	if ((v & META_SET_GID) && !root &&
	    !(cr->uid == a->uid && (sa->gid == a->gid || meta_perm_in_group(cr, sa->gid))))
		return -EPERM;
	if ((v & META_SET_MODE) && !meta_perm_owner(cr, a))
		return -EPERM;
	if ((v & (META_SET_ATIME | META_SET_MTIME | META_SET_CTIME)) && !meta_perm_owner(cr, a))
		return -EPERM;
	if ((v & (META_SET_ATIME_NOW | META_SET_MTIME_NOW)) && !meta_perm_owner(cr, a) &&
	    meta_perm_check(cr, a, META_MAY_WRITE))
		return -EACCES;
	if (v & META_SET_SIZE) {
		if (S_ISDIR(a->mode))
			return -EISDIR;
		if (!S_ISREG(a->mode))
			return -EINVAL;
		if (sa->size > (uint64_t)WEFT_FILE_SIZE_MAX)
			return -EFBIG;
		if (!(v & META_SET_HANDLE) && meta_perm_check(cr, a, META_MAY_WRITE))
			return -EACCES;
	}
	if (v & META_SET_KILL_PRIV) {
		if (!S_ISREG(a->mode))
			return -EINVAL;
		if (!(v & META_SET_HANDLE) && meta_perm_check(cr, a, META_MAY_WRITE))
			return -EACCES;
	}
	return 0;
}

int meta_ns_setattr(const struct meta_ctx *c, struct meta_ref ref,
		    const struct meta_setattr *sa, struct weft_attr *out)
{
	struct meta_inode in;
	uint32_t v = sa->valid;
	int64_t now = meta_ns_now(c);
	int rc;
	if (v & ~SET_ALL)
		return -EINVAL;
	if ((rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in)))
		return rc;
	if ((rc = setattr_check(c, &in, sa)))
		return rc;
	struct weft_attr *a = &in.attr;
	bool root = c->cred->uid == 0;

	if ((v & (META_SET_SIZE | META_SET_KILL_PRIV)) && !root)
		proto_attr_kill_suid(a);
	if (v & META_SET_SIZE) {
		a->size = sa->size;
		meta_inode_trim_written(&in, sa->size);
		if (!(v & (META_SET_MTIME | META_SET_MTIME_NOW)))
			a->mtime_ns = now;
	}
	if (v & META_SET_UID)
		a->uid = sa->uid;
	if (v & META_SET_GID)
		a->gid = sa->gid;
	if ((v & (META_SET_UID | META_SET_GID)) && !S_ISDIR(a->mode))
		proto_attr_kill_suid(a);
	if (v & META_SET_MODE) {
		uint32_t mode = sa->mode & 07777;
		if (!root && !meta_perm_in_group(c->cred, a->gid))
			mode &= ~(uint32_t)S_ISGID;
		a->mode = (a->mode & S_IFMT) | mode;
	}
	if (v & META_SET_ATIME)
		a->atime_ns = sa->atime_ns;
	else if (v & META_SET_ATIME_NOW)
		a->atime_ns = now;
	if (v & META_SET_MTIME)
		a->mtime_ns = sa->mtime_ns;
	else if (v & META_SET_MTIME_NOW)
		a->mtime_ns = now;
	a->ctime_ns = (v & META_SET_CTIME) ? sa->ctime_ns : now;
	meta_inode_fill_derived(&in);
	if ((rc = meta_inode_put(c->db, c->txn, &in)))
		return rc;
	if (out)
		*out = in.attr;
	return 0;
}

/* Shared body of create, mknod, mkdir, symlink. mode carries the type. */
static int make_node(const struct meta_ctx *c, struct meta_ref dref, const char *name,
		     size_t len, uint32_t mode, uint32_t rdev, const char *target,
		     size_t target_len, uint32_t flags, struct meta_inode *in, bool *created)
{
	struct meta_inode dir;
	struct meta_dentry_val de;
	int64_t now = meta_ns_now(c);
	int rc;
	if (created)
		*created = false;
	if ((rc = meta_ns_check_name(name, len)))
		return rc;
	if (is_dot(name, len) || is_dotdot(name, len))
		return -EEXIST;
	if ((rc = meta_ns_get_dir(c, dref, META_MAY_EXEC, &dir)))
		return rc;
	rc = meta_dentry_get(c->db, c->txn, dir.attr.ino, name, len, &de);
	if (rc == 0) {
		if (!S_ISREG(mode) || (flags & META_CREATE_EXCL))
			return -EEXIST;
		if ((rc = meta_inode_get(c->db, c->txn, de.ino, in)))
			return rc == -ENOENT ? -EIO : rc;
		return S_ISDIR(in->attr.mode) ? -EISDIR : 0;
	}
	if (rc != -ENOENT)
		return rc;
	if (dir.attr.nlink == 0)
		return -ENOENT;
	if ((rc = meta_perm_check(c->cred, &dir.attr, META_MAY_WRITE | META_MAY_EXEC)))
		return rc;
	if (S_ISDIR(mode) && dir.attr.nlink >= META_LINK_MAX)
		return -EMLINK;

	memset(in, 0, offsetof(struct meta_inode, target));
	struct weft_attr *a = &in->attr;
	struct meta_super sb; /* read and written once: layout cursor and inode number */
	if ((rc = meta_super_get(c->db, c->txn, &sb)))
		return rc;
	if (S_ISREG(mode) && (rc = meta_layout_pick(c->db, c->txn, &sb, &dir.layout, &in->layout)))
		return rc;
	if (c->impose_ino) {
		struct meta_inode old;
		if (meta_inode_get(c->db, c->txn, c->impose_ino, &old) == 0)
			return -EEXIST; /* that number was given again: the replay cannot apply */
		a->ino = c->impose_ino;
		a->gen = c->impose_gen;
		if (sb.next_ino <= a->ino && !(a->ino & WEFT_INO_CLIENT))
			sb.next_ino = a->ino + 1;
	} else {
		meta_inode_alloc(&sb, &a->ino, &a->gen);
	}
	if ((rc = meta_super_put(c->db, c->txn, &sb)))
		return rc;
	if (!S_ISLNK(mode))
		mode = (mode & S_IFMT) | (mode & 07777 & ~c->cred->umask);
	meta_perm_new_owner(c->cred, &dir.attr, &mode, &a->uid, &a->gid);
	a->mode = mode;
	a->nlink = 1;
	a->rdev = rdev;
	a->atime_ns = a->mtime_ns = a->ctime_ns = now;
	if (S_ISDIR(mode)) {
		a->nlink = 2;
		in->layout = dir.layout;
		in->parent = dir.attr.ino;
		in->next_cookie = META_COOKIE_FIRST;
		dir.attr.nlink++;
	} else if (S_ISLNK(mode)) {
		memcpy(in->target, target, target_len);
		in->target[target_len] = '\0';
		in->target_len = (uint16_t)target_len;
		a->size = target_len;
	}
	meta_inode_fill_derived(in);
	rc = meta_dentry_add(c->db, c->txn, &dir, name, len, a->ino, meta_dentry_type(mode));
	if (rc)
		return rc;
	meta_ns_dir_changed(c, &dir.attr, now);
	if ((rc = meta_inode_put(c->db, c->txn, &dir)) || (rc = meta_inode_put(c->db, c->txn, in)))
		return rc;
	if (created)
		*created = true;
	return 0;
}

int meta_ns_create(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		   size_t len, uint32_t mode, uint32_t flags, struct weft_attr *out,
		   struct weft_layout *layout, bool *created)
{
	struct meta_inode in;
	bool made;
	int rc = make_node(c, dir, name, len, S_IFREG | (mode & 07777), 0, NULL, 0, flags,
			   &in, &made);
	if (rc)
		return rc;
	if (out)
		*out = in.attr;
	if (layout)
		*layout = in.layout;
	if (created)
		*created = made;
	return 0;
}

int meta_ns_mknod(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		  size_t len, uint32_t mode, uint32_t rdev, struct weft_attr *out)
{
	struct meta_inode in;
	uint32_t type = mode & S_IFMT;
	switch (type) {
	case 0:
		type = S_IFREG;
		/* fallthrough */
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		rdev = 0;
		break;
	case S_IFCHR:
	case S_IFBLK:
		if (c->cred->uid != 0)
			return -EPERM;
		break;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
	int rc = make_node(c, dir, name, len, type | (mode & 07777), rdev, NULL, 0,
			   META_CREATE_EXCL, &in, NULL);
	if (rc == 0 && out)
		*out = in.attr;
	return rc;
}

int meta_ns_mkdir(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		  size_t len, uint32_t mode, struct weft_attr *out)
{
	struct meta_inode in;
	int rc = make_node(c, dir, name, len, S_IFDIR | (mode & 07777), 0, NULL, 0,
			   META_CREATE_EXCL, &in, NULL);
	if (rc == 0 && out)
		*out = in.attr;
	return rc;
}

int meta_ns_symlink(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		    size_t len, const char *target, size_t target_len, struct weft_attr *out)
{
	struct meta_inode in;
	if (target_len == 0)
		return -ENOENT;
	if (target_len >= WEFT_PATH_MAX)
		return -ENAMETOOLONG;
	if (memchr(target, '\0', target_len))
		return -EINVAL;
	int rc = make_node(c, dir, name, len, S_IFLNK | 0777, 0, target, target_len,
			   META_CREATE_EXCL, &in, NULL);
	if (rc == 0 && out)
		*out = in.attr;
	return rc;
}

int meta_ns_readlink(const struct meta_ctx *c, struct meta_ref ref, char *buf, size_t size,
		     size_t *len)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if (!S_ISLNK(in.attr.mode))
		return -EINVAL;
	memcpy(buf, in.target, size < in.target_len ? size : in.target_len);
	*len = in.target_len;
	return 0;
}

int meta_ns_link(const struct meta_ctx *c, struct meta_ref ref, struct meta_ref dref,
		 const char *name, size_t len, struct weft_attr *out)
{
	struct meta_inode in, dir;
	struct meta_dentry_val de;
	int64_t now = meta_ns_now(c);
	int rc;
	if ((rc = meta_ns_check_name(name, len)))
		return rc;
	if ((rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in)))
		return rc;
	if (is_dot(name, len) || is_dotdot(name, len))
		return -EEXIST;
	if ((rc = meta_ns_get_dir(c, dref, META_MAY_EXEC, &dir)))
		return rc;
	rc = meta_dentry_get(c->db, c->txn, dir.attr.ino, name, len, &de);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	if (dir.attr.nlink == 0)
		return -ENOENT;
	if ((rc = meta_perm_check(c->cred, &dir.attr, META_MAY_WRITE | META_MAY_EXEC)))
		return rc;
	if (S_ISDIR(in.attr.mode))
		return -EPERM;
	if (in.attr.nlink == 0)
		return -ENOENT;
	if (in.attr.nlink >= META_LINK_MAX)
		return -EMLINK;
	rc = meta_dentry_add(c->db, c->txn, &dir, name, len, in.attr.ino,
			     meta_dentry_type(in.attr.mode));
	if (rc)
		return rc;
	in.attr.nlink++;
	in.attr.ctime_ns = now;
	dir.attr.mtime_ns = dir.attr.ctime_ns = now;
	if ((rc = meta_inode_put(c->db, c->txn, &dir)) || (rc = meta_inode_put(c->db, c->txn, &in)))
		return rc;
	if (out)
		*out = in.attr;
	return 0;
}

int meta_ns_access(const struct meta_ctx *c, struct meta_ref ref, uint32_t mask)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if (mask == 0)
		return 0;
	return meta_perm_check(c->cred, &in.attr, mask);
}

int meta_ns_extend(const struct meta_ctx *c, struct meta_ref ref, uint64_t new_size,
		   int64_t mtime_ns, const uint64_t *blocks, struct weft_attr *out)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if (!S_ISREG(in.attr.mode))
		return -EINVAL;
	if (new_size > (uint64_t)WEFT_FILE_SIZE_MAX)
		return -EFBIG;
	if (new_size > in.attr.size)
		in.attr.size = new_size;
	if (blocks)
		in.attr.blocks = *blocks;
	in.attr.mtime_ns = in.attr.ctime_ns = mtime_ns ? mtime_ns : meta_ns_now(c);
	if (c->cred->uid != 0)
		proto_attr_kill_suid(&in.attr);
	meta_inode_fill_derived(&in);
	if ((rc = meta_inode_put(c->db, c->txn, &in)))
		return rc;
	if (out)
		*out = in.attr;
	return 0;
}

int meta_ns_mark_written(const struct meta_ctx *c, struct meta_ref ref, const uint8_t *mask,
			 size_t len)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	if (!S_ISREG(in.attr.mode))
		return -EINVAL;
	uint16_t before = in.written_len;
	uint8_t old[META_WRITTEN_MAX];
	memcpy(old, in.written, before);
	meta_inode_mark_written(&in, mask, len);
	if (in.written_len == before && memcmp(old, in.written, before) == 0)
		return 0; /* nothing new: no write */
	return meta_inode_put(c->db, c->txn, &in);
}

int meta_ns_written(const struct meta_ctx *c, struct meta_ref ref, uint8_t *out, uint16_t *len)
{
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, ref.ino, ref.gen, &in);
	if (rc)
		return rc;
	memcpy(out, in.written, in.written_len);
	*len = in.written_len;
	return 0;
}

int meta_ns_statfs(const struct meta_ctx *c, uint64_t total_bytes, uint64_t free_bytes,
		   struct meta_statfs *st)
{
	uint64_t files;
	int rc = meta_inode_count(c->db, c->txn, &files);
	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	st->bsize = 4096;
	st->blocks = total_bytes / st->bsize;
	st->bfree = st->bavail = free_bytes / st->bsize;
	st->files = META_INODES_MAX; /* f_files is the total, as statfs(2) */
	st->ffree = META_INODES_MAX > files ? META_INODES_MAX - files : 0;
	st->namemax = WEFT_NAME_MAX;
	return 0;
}
