/* Namespace request handlers (opcodes 0x01xx): decode -> meta_ns_* -> reply.
 *
 * Each handler says what it may reply and what it changes. Writes run in the write txn
 * of a group-commit batch (a failing op changes nothing, commit.h; a handler may run
 * twice, so it sets its result fields afresh), reads in a read txn on the loop thread. Replies by type: ENTRY (attr, layout: a regular file's layout, zeroes for
 * other types), ATTR, EMPTY, or the handler's own reply function. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/loop.h"
#include "net/auth.h"
#include "weft/err.h"
#include "meta/chains.h"
#include "meta/layout.h"
#include "meta/lease.h"
#include "meta/migrate.h"
#include "meta/perm.h"
#include "meta/server_int.h"
#include "meta/session.h"
#include "meta/space.h"
#include "meta/xattr.h"
#include "weft/err.h"

#define MSG(type) ((const struct weft_msg_##type *)(const void *)r->msg)
#define NAME(s) (s).p, (s).len

static struct meta_ref ref_of(uint64_t ino, uint64_t gen)
{
	return (struct meta_ref){ino, gen};
}

/* Fills r->layout for a regular file (ENTRY replies). */
static int fill_layout(struct mreq *r, const struct meta_ctx *c)
{
	memset(&r->layout, 0, sizeof(r->layout));
	if (!S_ISREG(r->attr.mode))
		return 0;
	int rc = meta_ns_getlayout(c, ref_of(r->attr.ino, 0), &r->layout);
	return rc == -ENODATA ? 0 : rc;
}

/* LOOKUP {cred, parent, name} -> ENTRY. Errors: ENOENT, ENOTDIR, EACCES, ESTALE,
 * EINVAL/ENAMETOOLONG bad name. Changes nothing. */
static int h_lookup(struct mreq *r, const struct meta_ctx *c)
{
	int rc = meta_ns_lookup(c, ref_of(MSG(lookup)->parent, 0), NAME(MSG(lookup)->name),
				&r->attr);
	return rc ? rc : fill_layout(r, c);
}

/* GETATTR {cred, ino, gen} -> ENTRY. Errors: ESTALE. */
static int h_getattr(struct mreq *r, const struct meta_ctx *c)
{
	int rc = meta_ns_getattr(c, ref_of(MSG(ino)->ino, MSG(ino)->gen), &r->attr);
	return rc ? rc : fill_layout(r, c);
}

/* SETATTR -> ATTR (the new attributes). Size changes only record the size: the client
 * has already trimmed the objects, so nothing is queued for the stores. */
static int h_setattr(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_setattr *m = MSG(setattr);
	/* a truncate cuts the objects of the layout it saw: not while they are copied */
	if ((m->valid & WEFT_SET_DEFERRED) && (m->valid & WEFT_SET_SIZE))
		return -EINVAL;
	if ((m->valid & WEFT_SET_BEHIND) && !(m->valid & WEFT_SET_DEFERRED))
		return -EINVAL;
	if ((m->valid & WEFT_SET_SIZE) && meta_migrate_busy(r->s, m->ino))
		return -WEFT_EMIGRATING;
	if ((m->valid & WEFT_SET_MODE) && r->s->test_refuse_mode &&
	    (m->mode & 07777) == r->s->test_refuse_mode)
		return -EIO; /* test hook (WEFT_META_TEST_REFUSE_MODE): as a disk error */
	static const struct {
		uint32_t wire, meta;
	} bits[] = {
		{WEFT_SET_MODE, META_SET_MODE}, {WEFT_SET_UID, META_SET_UID},
		{WEFT_SET_GID, META_SET_GID}, {WEFT_SET_SIZE, META_SET_SIZE},
		{WEFT_SET_ATIME, META_SET_ATIME}, {WEFT_SET_MTIME, META_SET_MTIME},
		{WEFT_SET_ATIME_NOW, META_SET_ATIME_NOW}, {WEFT_SET_MTIME_NOW, META_SET_MTIME_NOW},
		{WEFT_SET_CTIME, META_SET_CTIME}, {WEFT_SET_HANDLE, META_SET_HANDLE},
		{WEFT_SET_KILL_PRIV, META_SET_KILL_PRIV},
		{WEFT_SET_DEFERRED, 0}, /* only when it is answered (server.c) */
		{WEFT_SET_BEHIND, 0},
	};
	struct meta_setattr sa = {.mode = m->mode, .uid = m->uid, .gid = m->gid,
				  .size = m->size, .atime_ns = m->atime_ns,
				  .mtime_ns = m->mtime_ns, .ctime_ns = m->ctime_ns};
	uint32_t v = m->valid;
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (v & bits[i].wire) {
			sa.valid |= bits[i].meta;
			v &= ~bits[i].wire;
		}
	if (v)
		return -EINVAL;
	return meta_ns_setattr(c, ref_of(m->ino, m->gen), &sa, &r->attr);
}

/* CREATE {cred, parent, name, mode, rdev, flags} -> ENTRY. A regular file (type 0 or
 * S_IFREG) without WEFT_CREATE_EXCL returns an existing file (its open checks access);
 * fifos, sockets, devices (root only) are mknod. Creates an inode and an entry. */
static int h_create(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_create *m = MSG(create);
	uint32_t type = m->mode & S_IFMT;
	struct meta_ref dir = ref_of(m->parent, 0);
	if (m->ino)
		return -EINVAL; /* numbers are given by the client for MKDIR only */
	if (type == 0 || type == S_IFREG) {
		if (m->flags & ~WEFT_CREATE_EXCL)
			return -EINVAL;
		return meta_ns_create(c, dir, NAME(m->name), m->mode,
				      (m->flags & WEFT_CREATE_EXCL) ? META_CREATE_EXCL : 0,
				      &r->attr, &r->layout, &r->flag);
	}
	int rc = meta_ns_mknod(c, dir, NAME(m->name), m->mode, m->rdev, &r->attr);
	return rc ? rc : fill_layout(r, c);
}

/* A test hook (server_int.h) refuses name: it starts with prefix. */
static bool test_refused(const char *prefix, const struct weft_str *name)
{
	size_t n = prefix ? strlen(prefix) : 0;
	return n && name->len >= n && memcmp(name->p, prefix, n) == 0;
}

/* MKDIR {cred, parent, name, mode, flags, ino, time_ns} -> ENTRY. */
static int h_mkdir(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_create *m = MSG(create);
	/* a mkdir the client answered itself names a number of its session's, or of an
	 * earlier session of the client's, lost to a meta restart before it was sent again
	 * (mut_apply imposes it; a number already used gets EEXIST) */
	uint64_t num_sess = (m->ino & ~WEFT_INO_CLIENT) >> WEFT_INO_SESSION_SHIFT;
	if (m->ino && !r->replay &&
	    (!(m->ino & WEFT_INO_CLIENT) || num_sess == 0 ||
	     num_sess > meta_conn_session(r->s, r->c) || !(m->flags & WEFT_CREATE_EXCL))) {
		snprintf(r->detail, sizeof(r->detail), "MKDIR: inode %llx is not one of this session's",
			 (unsigned long long)m->ino);
		return -EINVAL;
	}
	if (test_refused(r->s->test_refuse_create, &m->name))
		return -ENOSPC; /* test hook: as a full disk */
	int rc = meta_ns_mkdir(c, ref_of(m->parent, 0), NAME(m->name), m->mode, &r->attr);
	if (rc || !(m->flags & WEFT_CREATE_CLAIM))
		return rc;
	/* claimed before it is committed: nobody sees the directory unclaimed (lease.h);
	 * its files' layout (the claimant gathers their writes by its stripe unit) */
	meta_leases_claim(r->s->leases, meta_conn_session(r->s, r->c), r->attr.ino,
			  loop_now_ms());
	return meta_ns_getlayout(c, ref_of(r->attr.ino, 0), &r->layout);
}

/* UNLINK {cred, parent, name} -> ATTR (the parent's, after: a client with a lease on
 * it answers the kernel's next GETATTR of it with them). The last link frees the inode
 * (or leaves an orphan while open) and queues its objects for deletion. */
static int h_unlink(struct mreq *r, const struct meta_ctx *c)
{
	if (test_refused(r->s->test_refuse_unlink, &MSG(name)->name))
		return -EIO; /* test hook: as a disk error */
	int rc = meta_ns_unlink(c, ref_of(MSG(name)->parent, 0), NAME(MSG(name)->name));
	return rc ? rc : meta_ns_getattr(c, ref_of(MSG(name)->parent, 0), &r->attr);
}

/* RMDIR {cred, parent, name} -> ATTR (the parent's, after). */
static int h_rmdir(struct mreq *r, const struct meta_ctx *c)
{
	if (test_refused(r->s->test_refuse_unlink, &MSG(name)->name))
		return -EIO; /* test hook (WEFT_META_TEST_REFUSE_UNLINK): as a disk error */
	int rc = meta_ns_rmdir(c, ref_of(MSG(name)->parent, 0), NAME(MSG(name)->name));
	return rc ? rc : meta_ns_getattr(c, ref_of(MSG(name)->parent, 0), &r->attr);
}

/* RENAME {cred, parent, name, newparent, newname, flags} -> EMPTY. */
static int h_rename(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_rename *m = MSG(rename);
	if (test_refused(r->s->test_refuse_unlink, &m->newname))
		return -EIO; /* test hook (WEFT_META_TEST_REFUSE_UNLINK): as a disk error */
	return meta_ns_rename(c, ref_of(m->parent, 0), NAME(m->name), ref_of(m->newparent, 0),
			      NAME(m->newname), m->flags);
}

/* LINK {cred, ino, newparent, newname} -> ENTRY of the inode. */
static int h_link(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_link *m = MSG(link);
	int rc = meta_ns_link(c, ref_of(m->ino, 0), ref_of(m->newparent, 0), NAME(m->newname),
			      &r->attr);
	return rc ? rc : fill_layout(r, c);
}

/* SYMLINK {cred, parent, name, target} -> ENTRY. */
static int h_symlink(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_symlink *m = MSG(symlink);
	return meta_ns_symlink(c, ref_of(m->parent, 0), NAME(m->name), NAME(m->target),
			       &r->attr);
}

/* READLINK {cred, ino} -> PATH. Errors: EINVAL not a symlink, ESTALE. */
static int h_readlink(struct mreq *r, const struct meta_ctx *c)
{
	if (wbuf_reserve(&r->bulk, WEFT_PATH_MAX))
		return -ENOMEM;
	size_t len;
	int rc = meta_ns_readlink(c, ref_of(MSG(ino)->ino, MSG(ino)->gen),
				  (char *)r->bulk.data, WEFT_PATH_MAX, &len);
	if (rc)
		return rc;
	r->u64 = len < WEFT_PATH_MAX ? len : WEFT_PATH_MAX - 1;
	return 0;
}

static void rep_readlink(struct mreq *r, struct wbuf *w)
{
	/* the target travels in the payload: the bulk buffer only held it */
	struct weft_msg_path m = {.path = proto_str_of((const char *)r->bulk.data, r->u64)};
	proto_path_encode(w, &m);
	wbuf_free(&r->bulk);
	wbuf_init(&r->bulk);
}

/* READDIR {cred, ino, cookie, max_bytes, plus} -> DIRLIST {count, eof} with entries in
 * bulk, never more than max(max_bytes, 4096) bytes (nor WEFT_BULK_MAX). With
 * WEFT_READDIR_PLUS_CAP, a regular file the caller may read (as an open for reading
 * checks it: mode bits, not while migrating) comes with its layout and a read capability
 * for the session of this connection, living META_PREFETCH_CAP_MS: libweft reads the
 * file's first stripe unit at the same time as its OPEN, and uses the bytes only if the
 * OPEN succeeds and shows the file unchanged. No session (or an evicted one): no
 * capability. With WEFT_READDIR_LEASES, each entry with attributes other than "." and
 * ".." gets a lease for the session as LOOKUP's reply does: granted here, on the loop
 * thread in the same turn as the read snapshot (so a mutation is either seen by the
 * snapshot or still busy: no lease), and only if the directory's lease was granted too
 * (the kernel caches the name with the child). Changes nothing in the database. */
#define META_PREFETCH_CAP_MS 30000u

struct rd_state {
	struct mreq *r;
	const struct meta_ctx *c;
	size_t max;
	uint32_t count;
	unsigned plus;            /* 0, WEFT_READDIR_PLUS or WEFT_READDIR_PLUS_CAP */
	bool leases;              /* WEFT_READDIR_LEASES asked and the directory's granted */
	bool full;
	uint64_t session;         /* the connection's, for capabilities and leases (0: none) */
	uint64_t now;
};

static int rd_entry(void *arg, const struct meta_ns_dirent *e)
{
	struct rd_state *st = arg;
	unsigned asked = st->plus | (st->leases ? WEFT_READDIR_LEASES : 0);
	if (st->r->bulk.len + proto_dirent_size(e->len, asked) > st->max) {
		st->full = true;
		return 1;
	}
	struct weft_dirent d = {.name = proto_str_of(e->name, e->len), .ino = e->ino,
				.next_cookie = e->cookie, .type = e->type,
				.has_attr = st->plus && e->attr};
	if (d.has_attr)
		d.attr = *e->attr;
	if (d.has_attr && st->plus == WEFT_READDIR_PLUS_CAP && st->session &&
	    S_ISREG(d.attr.mode) && d.attr.size > 0 &&
	    meta_perm_check(st->c->cred, &d.attr, META_MAY_READ) == 0 &&
	    !meta_migrate_busy(st->r->s, d.ino) &&
	    meta_ns_getlayout_written0(st->c, ref_of(d.ino, 0), &d.layout, &d.written0) == 0) {
		meta_cap_mint_ms(st->r->s, st->r->c, d.ino, st->session, WEFT_CAP_READ,
				 META_PREFETCH_CAP_MS, d.cap);
		d.has_cap = true;
	}
	bool dots = e->name[0] == '.' && (e->len == 1 || (e->len == 2 && e->name[1] == '.'));
	if (d.has_attr && st->leases && !dots)
		d.lease = meta_leases_grant(st->r->s->leases, st->session, d.ino, false, st->now);
	proto_dirent_encode(&st->r->bulk, &d);
	st->count++;
	return 0;
}

static int h_readdir(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_readdir *m = MSG(readdir);
	size_t max = m->max_bytes < 4096 ? 4096 : m->max_bytes;
	if (max > WEFT_BULK_MAX)
		max = WEFT_BULK_MAX;
	unsigned level = m->plus & (unsigned)~WEFT_READDIR_LEASES;
	struct rd_state st = {.r = r, .c = c, .max = max, .now = loop_now_ms(),
			      .plus = level > WEFT_READDIR_PLUS_CAP ? WEFT_READDIR_PLUS : level};
	bool leases = st.plus && (m->plus & WEFT_READDIR_LEASES);
	if (st.plus == WEFT_READDIR_PLUS_CAP || leases) {
		st.session = meta_conn_session(r->s, r->c);
		if (st.session && meta_leases_evicted(r->s->leases, st.session))
			st.session = 0;
	}
	st.leases = leases && st.session &&
		    meta_leases_grant(r->s->leases, st.session, m->ino, false, st.now);
	int rc = meta_ns_readdir(c, ref_of(m->ino, 0), m->cookie, st.plus != 0, rd_entry, &st);
	if (rc)
		return rc;
	if (r->bulk.err)
		return -ENOMEM;
	r->u32 = st.count;
	r->flag = !st.full;
	return 0;
}

static void rep_readdir(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_dirlist m = {.count = r->u32, .eof = r->flag};
	proto_dirlist_encode(w, &m);
}

/* STATFS {} -> STATFS_REPLY: capacity of the targets that are up, inodes. */
/* DIR_CLAIM {cred, ino} -> ENTRY: the directory's attributes, and in lease the length of
 * the claim (lease.h, meta_leases_claim) the caller now holds on it, with a lease; 0: not
 * claimed (another session holds a lease or claim on it, or a mutation is under way).
 * dir_lease: the same length when the caller's lease on it was still live and is renewed
 * (no other session changed it unseen since), 0 when granted anew. The caller unlinks
 * there without waiting (libweft's acreate.c). Needs write and search permission on it
 * (no claims for readers). ENOTDIR. */
static int h_dir_claim(struct mreq *r, const struct meta_ctx *c)
{
	struct meta_inode dir;
	/* with its files' layout: a claimant that lists it creates there (by its stripe unit) */
	return meta_ns_get_dir(c, ref_of(MSG(ino)->ino, 0), META_MAY_WRITE | META_MAY_EXEC, &dir) ?:
	       meta_ns_getattr(c, ref_of(MSG(ino)->ino, 0), &r->attr) ?:
	       meta_ns_getlayout(c, ref_of(MSG(ino)->ino, 0), &r->layout);
}

static void rep_dir_claim(struct mreq *r, struct wbuf *w)
{
	uint64_t sess = meta_conn_session(r->s, r->c), now = loop_now_ms(), other;
	uint32_t lease = 0, renewed = 0;
	if (meta_leases_holders(r->s->leases, r->attr.ino, sess, now, &other, 1) == 0) {
		renewed = meta_leases_renew(r->s->leases, sess, r->attr.ino, now);
		lease = renewed ?: meta_leases_grant(r->s->leases, sess, r->attr.ino, false, now);
		if (lease)
			meta_leases_claim(r->s->leases, sess, r->attr.ino, now);
	}
	struct weft_msg_entry m = {.attr = r->attr, .layout = r->layout, .lease = lease,
				   .dir_lease = renewed};
	proto_entry_encode(w, &m);
}

static int h_statfs(struct mreq *r, const struct meta_ctx *c)
{
	uint64_t total, free_b;
	int rc = meta_chains_capacity(c->db, c->txn, &total, &free_b);
	struct meta_statfs st;
	if (rc || (rc = meta_ns_statfs(c, total, free_b, &st)))
		return rc;
	/* free inodes are what meta's disk has room for (about 512 bytes each in LMDB),
	 * 0 once growing ops are refused (space.h) */
	if (r->s->space) {
		struct meta_space_info si;
		meta_space_get(r->s->space, &si);
		uint64_t room = si.low || si.room_bytes < si.low_water ? 0 :
				(si.room_bytes - si.low_water) / 512;
		if (room < st.ffree)
			st.ffree = room;
	}
	struct weft_msg_statfs_reply *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	*o = (struct weft_msg_statfs_reply){.blocks = st.blocks, .bfree = st.bfree,
					    .bavail = st.bavail, .files = st.files,
					    .ffree = st.ffree, .bsize = (uint32_t)st.bsize,
					    .namemax = st.namemax};
	wbuf_put(&r->bulk, o, sizeof(*o)); /* parked here until the reply is encoded */
	free(o);
	return r->bulk.err;
}

static void rep_statfs(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_statfs_reply o;
	memcpy(&o, r->bulk.data, sizeof(o));
	proto_statfs_reply_encode(w, &o);
	wbuf_free(&r->bulk);
	wbuf_init(&r->bulk);
}

/* xattr names arrive as counted strings; meta wants C strings without NUL inside. */
static int xname(const struct weft_str *s, char *out)
{
	if (memchr(s->p, '\0', s->len))
		return -EINVAL;
	if (s->len == 0 || s->len > WEFT_XATTR_NAME_MAX)
		return -ERANGE;
	memcpy(out, s->p, s->len);
	out[s->len] = '\0';
	return 0;
}

/* SETXATTR {cred, ino, name, flags} + value in bulk -> EMPTY. Sets ctime. */
static int h_setxattr(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_xattr *m = MSG(xattr);
	char name[WEFT_XATTR_NAME_MAX + 1];
	int rc = xname(&m->name, name);
	if (rc)
		return rc;
	if (r->f->h.bulk_len > WEFT_XATTR_SIZE_MAX)
		return -E2BIG;
	return meta_xattr_set(c, ref_of(m->ino, 0), name, r->f->bulk, r->f->h.bulk_len,
			      m->flags);
}

/* GETXATTR {cred, ino, name, size} -> SIZE {size}, value in bulk when size > 0.
 * Errors: ENODATA, ERANGE (size too small), EACCES, ESTALE. */
static int h_getxattr(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_xattr *m = MSG(xattr);
	char name[WEFT_XATTR_NAME_MAX + 1];
	int rc = xname(&m->name, name);
	if (rc)
		return rc;
	size_t cap = m->size > WEFT_XATTR_SIZE_MAX ? WEFT_XATTR_SIZE_MAX : m->size;
	if (cap && wbuf_reserve(&r->bulk, cap))
		return -ENOMEM;
	size_t len;
	rc = meta_xattr_get(c, ref_of(m->ino, 0), name, cap ? r->bulk.data : NULL, cap, &len);
	if (rc)
		return rc;
	r->u32 = (uint32_t)len;
	r->bulk.len = cap ? len : 0;
	return 0;
}

static void rep_size(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_size m = {.size = r->u32};
	proto_size_encode(w, &m);
}

/* LISTXATTR {cred, ino, size} -> SIZE {size}, NUL-terminated names in bulk. */
static int h_listxattr(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_xattr *m = MSG(xattr);
	size_t cap = m->size > (1u << 20) ? (1u << 20) : m->size;
	if (cap && wbuf_reserve(&r->bulk, cap))
		return -ENOMEM;
	size_t len;
	int rc = meta_xattr_list(c, ref_of(m->ino, 0), cap ? (char *)r->bulk.data : NULL, cap,
				 &len);
	if (rc)
		return rc;
	r->u32 = (uint32_t)len;
	r->bulk.len = cap ? len : 0;
	return 0;
}

/* REMOVEXATTR {cred, ino, name} -> EMPTY. */
static int h_removexattr(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_xattr *m = MSG(xattr);
	char name[WEFT_XATTR_NAME_MAX + 1];
	int rc = xname(&m->name, name);
	return rc ? rc : meta_xattr_remove(c, ref_of(m->ino, 0), name);
}

/* ACCESS {cred, ino, mask} -> EMPTY or EACCES. */
static int h_access(struct mreq *r, const struct meta_ctx *c)
{
	if (MSG(access)->mask & ~7u)
		return -EINVAL;
	return meta_ns_access(c, ref_of(MSG(access)->ino, 0), MSG(access)->mask);
}

/* OPEN {cred, ino, flags, session} -> OPENED {attr, layout, handle, lease}. A read (loop
 * thread, nothing written to disk). Checks access for the open mode (O_TRUNC needs write;
 * a directory opened for writing is EISDIR) and counts the open in the session's memory
 * (session 0: not recorded), so an unlinked file keeps its data until its last release.
 * Errors: EACCES, EISDIR, ESTALE, ENOENT
 * (unknown session), EINVAL (bad access mode). */
/* The access an open(2) with these flags needs (4 read, 2 write), or -EINVAL. */
static int open_mask(uint32_t flags)
{
	int mask;
	switch (flags & O_ACCMODE) {
	case O_RDONLY: mask = 4; break;
	case O_WRONLY: mask = 2; break;
	case O_RDWR: mask = 6; break;
	default: return -EINVAL;
	}
	return flags & O_TRUNC ? mask | 2 : mask;
}

static int h_open(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_open *m = MSG(open);
	int rc = meta_ns_getattr(c, ref_of(m->ino, 0), &r->attr);
	if (rc)
		return rc;
	int mask = open_mask(m->flags);
	if (mask < 0)
		return mask;
	if (S_ISDIR(r->attr.mode) && (mask & 2))
		return -EISDIR;
	if ((rc = meta_ns_access(c, ref_of(m->ino, 0), (uint32_t)mask)))
		return rc;
	if (S_ISREG(r->attr.mode) && meta_migrate_busy(r->s, m->ino))
		return -WEFT_EMIGRATING; /* libweft asks again once the switch is done */
	if (S_ISREG(r->attr.mode) &&
	    (rc = meta_ns_written(c, ref_of(m->ino, 0), r->written, &r->written_len)))
		return rc;
	if ((rc = fill_layout(r, c)))
		return rc;
	/* last: nothing fails after it, so there is nothing to take back */
	if (m->session && (rc = meta_session_open_found(c->db, c->txn, m->session, m->ino)))
		return rc;
	r->u64 = atomic_fetch_add(&r->s->next_handle, 1);
	return 0;
}

/* CREATE_OPEN {cred, parent, name, mode, flags, open_flags, session} -> OPENED. CREATE of
 * a regular file, then OPEN's bookkeeping in the same transaction. A file it created is
 * not checked against its own new mode (open("f", O_CREAT|O_WRONLY, 0444) succeeds, as on
 * Linux); an existing file (no WEFT_CREATE_EXCL) gets OPEN's access check. */
static int h_create_open(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_create_open *m = MSG(create_open);
	uint32_t type = m->mode & S_IFMT;
	if ((type != 0 && type != S_IFREG) || (m->flags & ~(WEFT_CREATE_EXCL | WEFT_CREATE_WB)))
		return -EINVAL;
	int mask = open_mask(m->open_flags);
	if (mask < 0)
		return mask;
	/* an asynchronous create names a number of its session's (types.h), or of an
	 * earlier session of the client's, lost to a meta restart before it was sent again
	 * (a number already used gets EEXIST) */
	uint64_t num_sess = (m->ino & ~WEFT_INO_CLIENT) >> WEFT_INO_SESSION_SHIFT;
	if (m->ino && (!(m->ino & WEFT_INO_CLIENT) || num_sess == 0 || num_sess > m->session ||
		       !(m->flags & WEFT_CREATE_EXCL))) {
		snprintf(r->detail, sizeof(r->detail),
			 "CREATE_OPEN: inode %llx is not one of session %llu's", (unsigned long long)m->ino,
			 (unsigned long long)m->session);
		return -EINVAL;
	}
	if (test_refused(r->s->test_refuse_create, &m->name))
		return -ENOSPC; /* test hook: as a full disk */
	int rc = meta_ns_create(c, ref_of(m->parent, 0), NAME(m->name), m->mode,
				(m->flags & WEFT_CREATE_EXCL) ? META_CREATE_EXCL : 0, &r->attr,
				&r->layout, &r->flag);
	if (rc)
		return rc;
	memset(&r->pattr, 0, sizeof(r->pattr));
	if (r->flag && (rc = meta_ns_getattr(c, ref_of(m->parent, 0), &r->pattr)))
		return rc;
	if (!r->flag && (rc = meta_ns_access(c, ref_of(r->attr.ino, 0), (uint32_t)mask)))
		return rc;
	if (!r->flag && meta_migrate_busy(r->s, r->attr.ino))
		return -WEFT_EMIGRATING;
	if (!r->flag &&
	    (rc = meta_ns_written(c, ref_of(r->attr.ino, 0), r->written, &r->written_len)))
		return rc;
	/* the open is counted in memory, once: a second run of this op (commit.h) takes
	 * back the first run's count; mut_done takes it back if the batch fails */
	if (r->opened_ino) {
		meta_session_release(c->db, NULL, m->session, r->opened_ino);
		r->opened_ino = 0;
	}
	/* a replay re-creates the file only: the client reclaims its opens with REOPEN */
	uint64_t session = r->replay ? 0 : m->session;
	if (session && (rc = meta_session_open_found(c->db, c->txn, session, r->attr.ino)))
		return rc;
	r->opened_ino = session ? r->attr.ino : 0;
	r->u64 = atomic_fetch_add(&r->s->next_handle, 1);
	return 0;
}

void meta_cap_mint(struct meta_server *s, struct conn *c, uint64_t ino, uint64_t session,
		   uint8_t rights, uint8_t out[WEFT_CAP_LEN])
{
	meta_cap_mint_ms(s, c, ino, session, rights, s->cap_ms, out);
}

void meta_cap_mint_ms(struct meta_server *s, struct conn *c, uint64_t ino, uint64_t session,
		      uint8_t rights, uint32_t ms, uint8_t out[WEFT_CAP_LEN])
{
	uint64_t now = auth_realtime_ms();
	if (ms > s->cap_ms)
		ms = s->cap_ms;
	struct weft_cap cap = {.ino = ino, .session = session, .expiry_ms = now + ms,
			       .period = auth_cap_period(now), .rights = rights};
	uint8_t k[WEFT_KEY_LEN];
	auth_cap_key(s->key.svc, cap.period, k);
	auth_cap_mint(k, &cap, conn_peer_name(c), out);
}

static void rep_open(struct mreq *r, struct wbuf *w)
{
	/* the open pins a lease on the file until its release (lease.h) */
	uint64_t sess = r->h->op == WEFT_OP_OPEN ? MSG(open)->session : MSG(create_open)->session;
	uint32_t lease = meta_leases_grant(r->s->leases, sess, r->attr.ino, sess != 0,
					   loop_now_ms());
	if (r->h->op == WEFT_OP_CREATE_OPEN && r->flag && (MSG(create_open)->flags & WEFT_CREATE_WB))
		meta_leases_wb_claim(r->s->leases, sess, r->attr.ino);
	struct weft_msg_opened m = {.attr = r->attr, .layout = r->layout, .handle = r->u64,
				    .lease = lease, .created = r->flag,
				    .written = {(const char *)r->written, r->written_len}};
	if (r->h->op == WEFT_OP_CREATE_OPEN && r->flag)
		m.pattr = r->pattr;
	/* the creator's lease on the directory, renewed if it never lapsed (proto.h) */
	if (r->h->op == WEFT_OP_CREATE_OPEN)
		m.dir_lease = meta_leases_renew(r->s->leases, sess, MSG(create_open)->parent,
						loop_now_ms());
	/* an open the client answered itself does not read the reply */
	bool behind = r->h->op == WEFT_OP_OPEN && MSG(open)->behind;
	if (S_ISREG(r->attr.mode) && !behind) {
		uint32_t fl = r->h->op == WEFT_OP_OPEN ? MSG(open)->flags : MSG(create_open)->open_flags;
		meta_cap_mint(r->s, r->c, r->attr.ino, sess,
			      (fl & O_ACCMODE) == O_RDONLY && !(fl & O_TRUNC) ? WEFT_CAP_READ :
			      WEFT_CAP_READ | WEFT_CAP_WRITE, m.cap);
	}
	proto_opened_encode(w, &m);
}

/* RELEASE {ino, handle, session} -> EMPTY. Memory only (loop thread); r->flag is set
 * when an orphan's last open went: the server then frees it in a mutation (the reaper)
 * before it replies. Clients do not wait for the reply. Errors: ENOENT the session does
 * not hold ino open. */
static int h_release(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_release *m = MSG(release);
	r->flag = false;
	if (m->session == 0)
		return 0; /* opens without a session were not recorded */
	int rc = meta_session_release(c->db, NULL, m->session, m->ino);
	if (rc < 0)
		return rc;
	meta_leases_unpin(r->s->leases, m->session, m->ino);
	r->flag = rc == 1;
	return 0;
}

/* REOPEN {ino, count, session} -> EMPTY. A client whose session meta lost (a restart)
 * takes back the opens it holds, in its new session: no access check. Errors: ENOENT
 * unknown session, ESTALE the inode is gone, EINVAL count 0. */
static int h_reopen(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_reopen *m = MSG(reopen);
	int rc = meta_session_reopen(c->db, c->txn, m->session, m->ino, m->count);
	for (uint32_t i = 0; rc == 0 && i < m->count; i++)
		meta_leases_grant(r->s->leases, m->session, m->ino, true, loop_now_ms());
	return rc;
}

/* FSYNC {cred, ino} -> EMPTY. Writes nothing, but goes through the group commit as a
 * durable op: its reply waits for a sync, which makes what lazy ops (EXTEND) committed
 * before it durable too. ESTALE if gone. */
static int h_fsync(struct mreq *r, const struct meta_ctx *c)
{
	return meta_ns_getattr(c, ref_of(MSG(ino)->ino, MSG(ino)->gen), &r->attr);
}

/* EXTEND {cred, ino, size, mtime, written, blocks} -> ATTR: size = max(size, new), mtime
 * set, blocks kept when reported, the written-stripes mask ORed into the inode's. Lazy: the
 * reply does not wait for the sync (a close does not promise durability; fsync sends
 * FSYNC after its EXTEND). */
static int h_extend(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_extend *m = MSG(extend);
	int rc = m->written.len ? meta_ns_mark_written(c, ref_of(m->ino, 0),
						       (const uint8_t *)m->written.p,
						       m->written.len) : 0;
	return rc ? rc : meta_ns_extend(c, ref_of(m->ino, 0), m->size, m->mtime_ns,
					m->has_blocks ? &m->blocks : NULL, &r->attr);
}

/* SETSTRIPE {cred, ino, layout} -> EMPTY. A directory's default, or an empty file's
 * layout. Errors: EPERM not owner, EINVAL (detail says why), EBUSY file has data,
 * ENOTSUP other types. */
static int h_setstripe(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_setstripe *m = MSG(setstripe);
	int rc = meta_layout_setstripe(c, ref_of(m->ino, 0), &m->layout, &r->layout);
	if (rc == -EINVAL) {
		uint32_t n = 0;
		const struct weft_layout *l = &m->layout;
		if (l->replicas < 1 || l->replicas > WEFT_REPLICAS_MAX)
			snprintf(r->detail, sizeof(r->detail), "replicas %u: must be 1..%d",
				 l->replicas, WEFT_REPLICAS_MAX);
		else if (meta_chains_count(c->db, c->txn, l->replicas, &n) == 0 && n == 0)
			snprintf(r->detail, sizeof(r->detail),
				 "replicas %u: fewer than %u storage nodes have registered",
				 l->replicas, l->replicas);
		else
			snprintf(r->detail, sizeof(r->detail),
				 "stripe unit %u: must be a power of two in 64K..16M",
				 l->stripe_unit);
	}
	return rc;
}

/* GETSTRIPE {cred, ino} -> LAYOUT {layout, is_default (a directory's default),
 * migrating (a weft migrate of the file is between BEGIN and SWITCH)}. */
static int h_getstripe(struct mreq *r, const struct meta_ctx *c)
{
	struct meta_ref ref = ref_of(MSG(ino)->ino, MSG(ino)->gen);
	int rc = meta_ns_getattr(c, ref, &r->attr);
	/* in the recovery window after an unclean stop a create a client has yet to replay
	 * is not here: a store's sweep must not take its objects for a deleted file's */
	if ((rc == -ENOENT || rc == -ESTALE) && r->s->recover_until_ms &&
	    loop_now_ms() < r->s->recover_until_ms)
		return -WEFT_ERECOVERING;
	if (rc)
		return rc;
	r->flag = S_ISDIR(r->attr.mode);
	r->u32 = meta_migrate_busy(r->s, ref.ino);
	return meta_layout_getstripe(c, ref, &r->layout);
}

static void rep_layout(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_layout m = {.layout = r->layout, .is_default = r->flag,
				    .migrating = r->u32 != 0};
	proto_layout_encode(w, &m);
}

/* MIGRATE {cred, ino, step, layout, written} -> MIGRATE_REPLY {from, to}: meta's side
 * of weft migrate (migrate.h): BEGIN (after every other holder of the file flushed and
 * froze its I/O: WEFT_RECALL_LAYOUT) chooses the new layout; SWITCH makes it the file's
 * and queues the old objects' deletion; ABORT gives up. Errors: migrate.h. */
static int h_migrate(struct mreq *r, const struct meta_ctx *c)
{
	return meta_migrate_apply(r, c);
}

static void rep_migrate(struct mreq *r, struct wbuf *w)
{
	struct weft_msg_migrate_reply m = {.from = r->layout2, .to = r->layout};
	proto_migrate_reply_encode(w, &m);
}

/* CAP_GET {cred, ino, session, rights, has_old, old} -> CAP {cap}. A read (loop thread,
 * memory only). With has_old, a renewal: old must carry a MAC meta made for this node and
 * name ino, and the session must hold ino open (the open checked access; a renewal keeps
 * its rights, as an open file descriptor keeps them after a chmod). Without, the access
 * an open with those rights needs is checked for cred (a truncate by path). Errors:
 * EACCES (access, a forged or foreign capability, an open not held), EEVICTED (the
 * session), EINVAL (not a regular file, rights unknown), ENOENT (no such session, or
 * inode), ESTALE. */
static int h_cap_get(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_cap_get *m = MSG(cap_get);
	if (m->session && meta_leases_evicted(r->s->leases, m->session))
		return -WEFT_EEVICTED;
	struct meta_session ms;
	if (m->session && meta_session_get(c->db, NULL, m->session, &ms) == -ENOENT)
		return -ENOENT; /* meta restarted: the client opens a new session, reopens */
	if (m->has_old) {
		struct weft_cap old;
		auth_cap_parse(m->old, &old);
		uint8_t k[WEFT_KEY_LEN];
		auth_cap_key(r->s->key.svc, old.period, k);
		if (old.period > auth_cap_period(auth_realtime_ms()) + 1 || old.ino != m->ino ||
		    !auth_cap_mac_ok(k, m->old, conn_peer_name(r->c))) {
			snprintf(r->detail, sizeof(r->detail),
				 "CAP_GET: not a capability for ino %llu of node %s",
				 (unsigned long long)m->ino, conn_peer_name(r->c));
			return -EACCES;
		}
		/* an evicted session's rights end with it (its opens are fenced) */
		if (old.session && meta_leases_evicted(r->s->leases, old.session))
			return -WEFT_EEVICTED;
		if (!m->session || !meta_session_holds(c->db, m->session, m->ino)) {
			snprintf(r->detail, sizeof(r->detail),
				 "CAP_GET: session %llu does not hold ino %llu open",
				 (unsigned long long)m->session, (unsigned long long)m->ino);
			return -EACCES;
		}
		r->u32 = old.rights & (WEFT_CAP_READ | WEFT_CAP_WRITE);
		return 0;
	}
	if (m->rights != WEFT_CAP_READ && m->rights != (WEFT_CAP_READ | WEFT_CAP_WRITE))
		return -EINVAL;
	int rc = meta_ns_getattr(c, ref_of(m->ino, 0), &r->attr);
	if (rc)
		return rc;
	if (!S_ISREG(r->attr.mode))
		return -EINVAL;
	if ((rc = meta_ns_access(c, ref_of(m->ino, 0), m->rights & WEFT_CAP_WRITE ? 2 : 4)))
		return rc;
	r->u32 = m->rights;
	return 0;
}

static void rep_cap(struct mreq *r, struct wbuf *w)
{
	const struct weft_msg_cap_get *q = MSG(cap_get);
	struct weft_msg_cap m;
	meta_cap_mint(r->s, r->c, q->ino, q->session, (uint8_t)r->u32, m.cap);
	proto_cap_encode(w, &m);
}

#define RD(op, fn, rep) {WEFT_OP_##op, false, true, false, true, fn, rep}
#define WR(op, fn, rep, del) {WEFT_OP_##op, true, true, del, true, fn, rep}

const struct meta_handler meta_ns_handlers[] = {
	RD(LOOKUP, h_lookup, NULL),
	RD(GETATTR, h_getattr, NULL),
	WR(SETATTR, h_setattr, NULL, false),
	WR(CREATE, h_create, NULL, false),
	WR(MKDIR, h_mkdir, NULL, false),
	WR(UNLINK, h_unlink, NULL, true),
	WR(RMDIR, h_rmdir, NULL, false),
	WR(RENAME, h_rename, NULL, true),
	WR(LINK, h_link, NULL, false),
	WR(SYMLINK, h_symlink, NULL, false),
	RD(READLINK, h_readlink, rep_readlink),
	RD(READDIR, h_readdir, rep_readdir),
	RD(DIR_CLAIM, h_dir_claim, rep_dir_claim),
	{WEFT_OP_STATFS, false, false, false, false, h_statfs, rep_statfs},
	WR(SETXATTR, h_setxattr, NULL, false),
	RD(GETXATTR, h_getxattr, rep_size),
	RD(LISTXATTR, h_listxattr, rep_size),
	WR(REMOVEXATTR, h_removexattr, NULL, false),
	RD(ACCESS, h_access, NULL),
	RD(OPEN, h_open, rep_open),
	RD(CAP_GET, h_cap_get, rep_cap),
	WR(CREATE_OPEN, h_create_open, rep_open, false),
	{WEFT_OP_RELEASE, false, false, false, false, h_release, NULL},
	{WEFT_OP_REOPEN, false, false, false, false, h_reopen, NULL},
	WR(FSYNC, h_fsync, NULL, false),
	WR(EXTEND, h_extend, NULL, false),
	WR(SETSTRIPE, h_setstripe, NULL, false),
	RD(GETSTRIPE, h_getstripe, rep_layout),
	WR(MIGRATE, h_migrate, rep_migrate, true),
	{0},
};
