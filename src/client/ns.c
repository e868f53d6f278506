/* libweft namespace calls: each encodes one request to meta and decodes its reply. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

static struct weft_str name_of(const char *s)
{
	return proto_str_of(s, strlen(s));
}

/* Names longer than the protocol carries are refused here with the errno Linux gives. */
static int check_name(const char *name)
{
	size_t n = strlen(name);
	if (n > WEFT_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int weft_lookup(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, struct weft_attr *attr)
{
	int err = check_name(name);
	if (err)
		return err;
	/* a directory whose every name this client knows (lease.c): no round trip for a
	 * name it does not have. Meta's search-permission check is skipped: the mount's
	 * kernel made it (default_permissions). "." and ".." are never kept as names. */
	if (strcmp(name, ".") && strcmp(name, "..") && client_cdir_absent(c, parent, name))
		return -ENOENT;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_lookup m = {.cred = *cr, .parent = parent, .name = name_of(name)};
	proto_lookup_encode(&w, &m);
	/* this client's own create or removal of the name comes first; those of other
	 * names need not (rm -rf's lookup of each name whose entry expired waited for every
	 * unlink sent before it) */
	client_acreate_name_scope(c, parent, name);
	struct client_entry_lease l;
	uint64_t amark = client_acreate_attr_mark(c);
	err = client_call_entry_lease(c, WEFT_OP_LOOKUP, &w, attr, NULL, &l);
	/* a directory chmod'ed here, its SETATTR still on its way: asked again once meta has it */
	while (err == 0 && client_acreate_attr_stale(c, attr->ino, amark)) {
		client_acreate_setattr_wait(c, attr->ino);
		wbuf_init(&w);
		proto_lookup_encode(&w, &m);
		amark = client_acreate_attr_mark(c);
		err = client_call_entry_lease(c, WEFT_OP_LOOKUP, &w, attr, NULL, &l);
	}
	client_acreate_scope_end();
	/* the renewal of the parent's lease keeps a complete directory complete */
	if (err == 0 && l.dir_lease) {
		client_cdir_begin(c, parent);
		client_cdir_end(c, parent, name, 0, 0, l.dir_lease, l.gen);
	}
	return err;
}

/* A call that makes name in parent (an ENTRY reply), kept in parent's names if parent
 * is complete (lease.c). */
static int entry_in_dir(struct weft_client *c, uint16_t op, struct wbuf *w, uint64_t parent,
			const char *name, struct weft_attr *attr)
{
	struct client_entry_lease l;
	struct weft_attr a;
	struct weft_layout lay = {0};
	uint64_t agen = atomic_load(&c->attr_gen), dgen = atomic_load(&c->dir_gen);
	client_cdir_begin(c, parent);
	client_emptied_forget(c, parent); /* a name its listing did not show */
	/* a create, mkdir or symlink depends on parent's names, mode and times alone, so
	 * it waits for what this client sent in parent, not for every create sent behind
	 * elsewhere (tar's mkdir of each directory waited for them all); a link also on
	 * its target, which may be such a create */
	bool scoped = op != WEFT_OP_LINK;
	if (scoped)
		client_acreate_dir_scope(c, parent);
	int err = client_call_entry_lease(c, op, w, &a, &lay, &l);
	if (scoped)
		client_acreate_scope_end();
	client_cdir_end(c, parent, name, op == WEFT_OP_MKDIR ? 1 : 2, err, l.dir_lease, l.gen);
	if (err == 0 && op == WEFT_OP_MKDIR) {
		client_cdir_created(c, a.ino, l.lease, l.gen, /* empty, and ours */
				    c->acreate ? &a : NULL, lay.stripe_unit);
		/* the kernel asks for them after the first create in it (dirattr.c) */
		client_dirattr_note(c, &a, l.gen, agen, dgen);
	}
	if (err == 0 && attr)
		*attr = a;
	return err;
}

static int create_like(struct weft_client *c, uint16_t op, const struct weft_cred *cr,
		       uint64_t parent, const char *name, uint32_t mode, uint32_t rdev,
		       uint32_t flags, struct weft_attr *attr)
{
	int err = check_name(name);
	if (err)
		return err;
	struct wbuf w;
	wbuf_init(&w);
	atomic_fetch_add(&c->dir_gen, 1); /* the parent's attributes change (dirattr.c) */
	struct weft_msg_create m = {.cred = *cr, .parent = parent, .name = name_of(name),
				    .mode = mode, .rdev = rdev, .flags = flags};
	proto_create_encode(&w, &m);
	return entry_in_dir(c, op, &w, parent, name, attr);
}

int weft_mknod(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name, uint32_t mode, uint32_t rdev, bool excl, struct weft_attr *attr)
{
	return create_like(c, WEFT_OP_CREATE, cr, parent, name, mode, rdev,
			   excl ? WEFT_CREATE_EXCL : 0, attr);
}

int weft_mkdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name, uint32_t mode, struct weft_attr *attr)
{
	/* in a directory claimed and complete here: answered here, sent behind (acreate.c) */
	if (c->acreate && check_name(name) == 0) {
		int rc = client_acreate_mkdir(c, cr, parent, name, mode, attr);
		if (rc <= 0)
			return rc;
	}
	/* claimed for asynchronous creates (acreate.c) */
	return create_like(c, WEFT_OP_MKDIR, cr, parent, name, (mode & 07777) | S_IFDIR, 0,
			   WEFT_CREATE_EXCL | (c->acreate ? WEFT_CREATE_CLAIM : 0), attr);
}

/* Before an unlink, rmdir or rename: what meta's checks of it read that this client
 * still buffers. A file whose flush is still behind its close (closebehind.c) stays open
 * at meta until that flush is done (its RELEASE follows it), so removing its name only
 * orphans it and its data, size and attributes still land: none of that is waited for
 * (rsync's and sed -i's rename of each file just written, an unlink of a scratch file,
 * waited for every flush behind a close, ~10 ms each). What is: a buffered chown, since
 * meta's sticky-directory check reads the owner (wbattr.c). Then every flush goes, the
 * data and size first, as they were made (a size sent after a buffered utimes would
 * move the mtime it set). Rare: tar, cp -p and rsync give a file the owner it has. */
static void settle_owners(struct weft_client *c)
{
	if (client_wbattr_owner_pending(c)) {
		client_close_flush_all(c, false);
		client_wbattr_flush_all(c, false);
	}
}

/* UNLINK or RMDIR: meta answers with the parent's attributes after it (dirattr.c). */
static int remove_op(struct weft_client *c, uint16_t op, const struct weft_cred *cr,
		     uint64_t parent, const char *name)
{
	int err = check_name(name);
	if (err)
		return err;
	settle_owners(c);
	client_attrs_changed(c); /* the unlinked file's nlink and ctime */
	uint64_t rgen = client_recall_gen(c), agen = atomic_load(&c->attr_gen),
		 dgen = atomic_load(&c->dir_gen);
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_name m = {.cred = *cr, .parent = parent, .name = name_of(name)};
	proto_name_encode(&w, &m);
	struct frame *f = NULL;
	/* An unlink depends on parent's names and mode alone, an rmdir also on what was
	 * sent in the directory it removes: each waits for those jobs, not for every one
	 * sent behind (rm -rf's rmdirs the mount could not answer waited for hundreds of
	 * unlinks elsewhere). A directory the parent's listing did not name is asked of
	 * meta (a LOOKUP waits only for this name's jobs): one round trip, against a wait
	 * for every job sent behind. One it cannot name at all waits for all. */
	uint64_t sub = op == WEFT_OP_RMDIR ? client_emptied_subdir(c, parent, name) : 0;
	struct weft_attr sa;
	if (op == WEFT_OP_RMDIR && !sub && weft_lookup(c, cr, parent, name, &sa) == 0 &&
	    S_ISDIR(sa.mode))
		sub = sa.ino;
	bool scoped = op == WEFT_OP_UNLINK || sub;
	if (scoped)
		client_acreate_dirs_scope(c, parent, sub);
	client_cdir_begin(c, parent);
	err = client_meta_call(c, op, &w, NULL, 0, &f);
	client_cdir_end(c, parent, name, -1, err, 0, 0);
	if (scoped)
		client_acreate_scope_end();
	if (err == 0) /* a name its listing showed, or one made since, which forgot it */
		client_emptied_removed(c, parent);
	else
		client_emptied_forget(c, parent);
	struct weft_msg_attr a;
	if (err == 0 && f && f->h.payload_len &&
	    proto_attr_decode(f->payload, f->h.payload_len, &a, NULL) == 0 && a.attr.ino == parent)
		client_dirattr_note(c, &a.attr, rgen, agen, dgen);
	frame_free(f);
	return err;
}

int weft_unlink(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name)
{
	/* in a directory claimed for it: answered here, sent behind (acreate.c) */
	if (c->acreate && check_name(name) == 0 && client_acreate_unlink(c, cr, parent, name) == 0)
		return 0;
	return remove_op(c, WEFT_OP_UNLINK, cr, parent, name);
}

int weft_rmdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name)
{
	/* a directory emptied here, in a directory claimed: answered here (acreate.c) */
	if (c->acreate && check_name(name) == 0 && client_acreate_rmdir(c, cr, parent, name) == 0)
		return 0;
	return remove_op(c, WEFT_OP_RMDIR, cr, parent, name);
}

int weft_rename(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint64_t newparent, const char *newname, uint32_t flags)
{
	int err = check_name(name);
	if (!err)
		err = check_name(newname);
	if (err)
		return err;
	/* within a directory claimed and complete here, to a name it does not hold:
	 * answered here, sent behind (acreate.c) */
	if (c->acreate && flags == 0 && parent == newparent &&
	    client_acreate_rename(c, cr, parent, name, newname) == 0)
		return 0;
	settle_owners(c); /* a file renamed over is unlinked */
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_rename m = {.cred = *cr, .parent = parent, .name = name_of(name),
				    .newparent = newparent, .newname = name_of(newname),
				    .flags = flags};
	proto_rename_encode(&w, &m);
	client_attrs_changed(c);
	client_cdir_begin(c, parent);
	client_cdir_begin(c, newparent);
	client_emptied_forget(c, parent);
	client_emptied_forget(c, newparent);
	err = client_meta_call(c, WEFT_OP_RENAME, &w, NULL, 0, NULL);
	/* RENAME_EXCHANGE (2) leaves both names in place */
	client_cdir_end(c, parent, name, (flags & 2) ? 0 : -1, err, 0, 0);
	client_cdir_end(c, newparent, newname, 1, err, 0, 0);
	return err;
}

int weft_link(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
	      uint64_t newparent, const char *newname, struct weft_attr *attr)
{
	int err = check_name(newname);
	if (err)
		return err;
	client_settle_ino(c, ino); /* the reply's size and attributes are meta's */
	client_wbattr_flush_all(c, false);
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_link m = {.cred = *cr, .ino = ino, .newparent = newparent,
				  .newname = name_of(newname)};
	proto_link_encode(&w, &m);
	client_attrs_changed(c);
	return entry_in_dir(c, WEFT_OP_LINK, &w, newparent, newname, attr);
}

int weft_symlink(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		 const char *name, const char *target, struct weft_attr *attr)
{
	int err = check_name(name);
	if (err)
		return err;
	if (strlen(target) >= WEFT_PATH_MAX)
		return -ENAMETOOLONG;
	struct wbuf w;
	wbuf_init(&w);
	atomic_fetch_add(&c->dir_gen, 1); /* the parent's attributes change (dirattr.c) */
	struct weft_msg_symlink m = {.cred = *cr, .parent = parent, .name = name_of(name),
				     .target = name_of(target)};
	proto_symlink_encode(&w, &m);
	return entry_in_dir(c, WEFT_OP_SYMLINK, &w, parent, name, attr);
}

int weft_readlink(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, char *buf,
		  size_t cap)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = *cr, .ino = ino};
	proto_ino_encode(&w, &m);
	struct frame *f;
	int err = client_meta_call(c, WEFT_OP_READLINK, &w, NULL, 0, &f);
	if (err == 0) {
		struct weft_msg_path p;
		if (proto_path_decode(f->payload, f->h.payload_len, &p, NULL) < 0)
			err = -EIO;
		else
			err = proto_str_copy(buf, cap, p.path);
	}
	frame_free(f);
	return err;
}

int client_dirents_walk(struct weft_client *c, const uint8_t *bulk, size_t len,
			struct client_dirwalk *dw,
			int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg)
{
	struct rbuf r;
	rbuf_init(&r, bulk, len);
	struct weft_dirent d;
	int rc, stop = 0;
	while (!stop && (rc = proto_dirent_next(&r, &d)) == 0) {
		/* a directory's attributes from before its chmod answered here: none at all
		 * rather than those (the kernel looks it up when it needs them) */
		if (d.has_attr && d.type == DT_DIR && client_acreate_attr_stale(c, d.ino, dw->amark))
			d.has_attr = false;
		bool dots = (d.name.len == 1 && d.name.p[0] == '.') ||
			    (d.name.len == 2 && d.name.p[0] == '.' && d.name.p[1] == '.');
		if (dw->note && d.has_cap)
			client_pf_note(c, &d, dw); /* meta's attributes, as the open will see them */
		if (dw->note && d.lease)
			client_lease_note(c, d.ino, d.lease, dw->gen);
		/* a subdirectory's attributes under its lease, and the directory's own ("."):
		 * kept for the kernel's GETATTR after a change in it (dirattr.c; rm -rf sent
		 * one per directory to meta, each waiting for every removal sent before it) */
		if (dw->note && d.has_attr && d.type == DT_DIR &&
		    (d.lease || (d.name.len == 1 && d.name.p[0] == '.')))
			client_dirattr_note(c, &d.attr, dw->gen, dw->agen, dw->dgen);
		if (!dots && d.type == DT_DIR && dw->nsubs < CLIENT_DIRWALK_SUBS)
			dw->subs[dw->nsubs++] = d.ino;
		if (dw->note && !dots && d.type == DT_DIR && d.lease)
			client_emptied_sub(c, dw->dir, d.name.p, d.name.len, d.ino, d.lease, dw->gen);
		dw->names += !dots;
		if (!dots && (!d.has_attr || d.lease < dw->min_lease))
			dw->min_lease = d.has_attr ? d.lease : 0;
		dw->cookie = d.next_cookie;
		dw->n++;
		if (!fn)
			continue;
		char name[WEFT_NAME_MAX + 1];
		proto_str_copy(name, sizeof(name), d.name);
		if (d.has_attr)
			client_fix_size(c, &d.attr);
		struct weft_dirent_out o = {.name = name, .namelen = d.name.len, .ino = d.ino,
					    .type = d.type, .next_cookie = d.next_cookie,
					    .attr = d.has_attr ? &d.attr : NULL};
		stop = fn(arg, &o);
	}
	return stop ? stop : rc < 0 ? -EIO : 0;
}

int client_readdir_call(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			uint64_t cookie, bool plus, uint32_t max_bytes, struct frame **f,
			struct weft_msg_dirlist *dl)
{
	struct wbuf w;
	wbuf_init(&w);
	/* with leases, the listing's entries are cached as LOOKUP's are */
	uint8_t level = plus ? (c->pf ? WEFT_READDIR_PLUS_CAP : WEFT_READDIR_PLUS) : 0;
	if (level && c->recall)
		level |= WEFT_READDIR_LEASES;
	struct weft_msg_readdir m = {.cred = *cr, .ino = ino, .cookie = cookie,
				     .max_bytes = max_bytes, .plus = level};
	proto_readdir_encode(&w, &m);
	/* this client's own creates and removals in it come first; those elsewhere need not
	 * (rm -rf's listing of the next directory waited for every unlink sent before it) */
	client_acreate_dir_scope(c, ino);
	int err = client_meta_call(c, WEFT_OP_READDIR, &w, NULL, 0, f);
	client_acreate_scope_end();
	if (!err && proto_dirlist_decode((*f)->payload, (*f)->h.payload_len, dl, NULL) < 0)
		err = -EIO;
	if (err) {
		frame_free(*f);
		*f = NULL;
	}
	return err;
}

int weft_readdir(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 uint64_t cookie, bool plus, size_t max_bytes,
		 int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg)
{
	if (cookie == 0 && plus) {
		int rc = client_dirahead_take(c, cr, ino, fn, arg);
		if (rc <= 0)
			return rc;
	}
	/* a listing from its start: its subdirectories are read ahead (dirahead.c) */
	bool from_start = cookie == 0 && plus;
	struct client_dirwalk dw = {.note = true, .cr = cr, .dir = ino, .cookie = cookie,
				    .min_lease = UINT32_MAX};
	for (bool first = true;; first = false) {
		dw.gen = client_recall_gen(c);
		dw.agen = atomic_load(&c->attr_gen);
		dw.dgen = atomic_load(&c->dir_gen);
		dw.amark = client_acreate_attr_mark(c);
		dw.n = 0;
		struct frame *f;
		struct weft_msg_dirlist dl;
		int err = client_readdir_call(c, cr, ino, dw.cookie, plus,
					      (uint32_t)(max_bytes ? max_bytes : 65536), &f, &dl);
		if (err)
			return err;
		int rc = client_dirents_walk(c, f->bulk, f->h.bulk_len, &dw, fn, arg);
		frame_free(f);
		if (rc < 0)
			return rc;
		if (rc || dl.eof || dw.n == 0) {
			/* the whole listing in one reply: what rmdir here needs (emptied.c) */
			if (from_start && first && !rc && dl.eof && dw.min_lease != UINT32_MAX)
				client_emptied_listed(c, ino, dw.names, dw.min_lease, dw.gen);
			if (from_start)
				client_dirahead_queue(c, cr, dw.subs, dw.nsubs);
			return 0;
		}
	}
}

int weft_statfs(struct weft_client *c, struct weft_statfs *st)
{
	struct wbuf w;
	wbuf_init(&w);
	struct frame *f;
	int err = client_meta_call(c, WEFT_OP_STATFS, &w, NULL, 0, &f);
	if (err == 0) {
		struct weft_msg_statfs_reply s;
		if (proto_statfs_reply_decode(f->payload, f->h.payload_len, &s, NULL) < 0) {
			err = -EIO;
		} else {
			*st = (struct weft_statfs){.blocks = s.blocks, .bfree = s.bfree,
						   .bavail = s.bavail, .files = s.files,
						   .ffree = s.ffree, .bsize = s.bsize,
						   .namemax = s.namemax};
		}
	}
	frame_free(f);
	return err;
}

static ssize_t xattr_call(struct weft_client *c, uint16_t op, const struct weft_cred *cr,
			  uint64_t ino, const char *name, const void *value, size_t size,
			  uint32_t flags, void *out, size_t cap)
{
	if (name && strlen(name) > WEFT_XATTR_NAME_MAX)
		return -ERANGE;
	if (value && size > WEFT_XATTR_SIZE_MAX)
		return -E2BIG;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_xattr m = {.cred = *cr, .ino = ino, .name = name_of(name ? name : ""),
				   .flags = flags, .size = (uint32_t)(out ? cap : size)};
	proto_xattr_encode(&w, &m);
	struct iovec v = {(void *)value, size};
	struct frame *f;
	int err = client_meta_call(c, op, &w, value ? &v : NULL, value ? 1 : 0, &f);
	ssize_t rc = err;
	if (err == 0 && out) {
		struct weft_msg_size s;
		if (proto_size_decode(f->payload, f->h.payload_len, &s, NULL) < 0) {
			rc = -EIO;
		} else if (cap == 0) {
			rc = s.size;
		} else if (s.size > cap || f->h.bulk_len != s.size) {
			rc = -ERANGE;
		} else {
			memcpy(out, f->bulk, s.size);
			rc = s.size;
		}
	}
	frame_free(f);
	return rc;
}

int weft_setxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		  const char *name, const void *value, size_t size, uint32_t flags)
{
	static const char empty;
	client_winode_set_nocap(c, ino, false);
	client_attrs_changed(c);
	return (int)xattr_call(c, WEFT_OP_SETXATTR, cr, ino, name, size ? value : &empty, size,
			       flags, NULL, 0);
}

static bool is_cap(const char *name)
{
	return strcmp(name, "security.capability") == 0;
}

ssize_t weft_getxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      const char *name, void *buf, size_t cap)
{
	static char dummy;
	if (is_cap(name) && client_winode_nocap(c, ino))
		return -ENODATA;
	ssize_t n = xattr_call(c, WEFT_OP_GETXATTR, cr, ino, name, NULL, 0, 0, cap ? buf : &dummy, cap);
	if (n == -ENODATA && is_cap(name))
		client_winode_set_nocap(c, ino, true);
	return n;
}

ssize_t weft_listxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		       void *buf, size_t cap)
{
	static char dummy;
	return xattr_call(c, WEFT_OP_LISTXATTR, cr, ino, NULL, NULL, 0, 0, cap ? buf : &dummy, cap);
}

int weft_removexattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		     const char *name)
{
	client_winode_set_nocap(c, ino, false);
	client_attrs_changed(c);
	return (int)xattr_call(c, WEFT_OP_REMOVEXATTR, cr, ino, name, NULL, 0, 0, NULL, 0);
}

int weft_getstripe(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		   struct weft_layout *l, bool *is_default)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = *cr, .ino = ino};
	proto_ino_encode(&w, &m);
	struct frame *f;
	int err = client_meta_call(c, WEFT_OP_GETSTRIPE, &w, NULL, 0, &f);
	if (err == 0) {
		struct weft_msg_layout lm;
		if (proto_layout_decode(f->payload, f->h.payload_len, &lm, NULL) < 0) {
			err = -EIO;
		} else {
			*l = lm.layout;
			if (is_default)
				*is_default = lm.is_default;
		}
	}
	frame_free(f);
	return err;
}

int weft_setstripe(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		   const struct weft_layout *l)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_setstripe m = {.cred = *cr, .ino = ino, .layout = *l};
	proto_setstripe_encode(&w, &m);
	return client_meta_call(c, WEFT_OP_SETSTRIPE, &w, NULL, 0, NULL);
}
