/* weft mount: FUSE low-level operations mapped onto libweft.
 *
 * DESIGN: libfuse's multithreaded loop calls these handlers from its worker threads; each
 * handler makes blocking libweft calls (libweft's own loop thread carries the network).
 * FUSE inode numbers are weft inode numbers (the root is 1 in both), so no table is
 * kept here and forget is a no-op. Attributes and entries may be cached by the kernel
 * for attr_timeout seconds; file data is cached by the kernel's page cache, and kept
 * across opens (keep_cache) only while meta's answer to the open shows the file
 * unchanged (mtime, ctime, size) since the previous open here; otherwise dropped at open,
 * which gives close-to-open consistency between mounts. Permissions: the kernel checks them first (default_permissions, with
 * the caller's exact credentials), then meta with the uid, gid, umask and groups each
 * request carries (docs/ARCHITECTURE.md, "Permissions and trust"). */
#define FUSE_USE_VERSION 312

#include "mount/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/changes.h"
#include "common/log.h"
#include "net/metrics.h"
#include "net/stats.h"
#include "mount/layout_xattr.h"
#include "mount/statsfile.h"
#include "mount/workq.h"
#include "weft/client.h"
#include "weft/err.h"

static struct weft_client *wc;
static double attr_timeout = 1.0;
/* The inodes whose attributes changed here (a setattr answered, a recall; struct dirh). */
static pthread_mutex_t changed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct changes attrs_changed;

static void attrs_change(uint64_t ino)
{
	pthread_mutex_lock(&changed_lock);
	changes_add(&attrs_changed, ino);
	pthread_mutex_unlock(&changed_lock);
}

static uint64_t attrs_changes(void)
{
	pthread_mutex_lock(&changed_lock);
	uint64_t n = attrs_changed.n;
	pthread_mutex_unlock(&changed_lock);
	return n;
}

/* ino's attributes may have changed since attrs_changes() said at */
static bool attrs_changed_since(uint64_t at, uint64_t ino)
{
	pthread_mutex_lock(&changed_lock);
	bool changed = changes_since(&attrs_changed, at, ino);
	pthread_mutex_unlock(&changed_lock);
	return changed;
}
static struct fuse_session *g_se; /* for notifications (blocks_changed) */
static bool read_only;
static char mount_real[PATH_MAX];  /* the mount point, resolved before mounting */
static uint32_t readahead_kb;

/* Workers that run RELEASEs (workq.h): each waits milliseconds for stores and meta. */
#define RELEASE_WORKERS 64
/* the kernel's background requests in flight (op_init) */
#define MAX_BACKGROUND 128

/* ---- credentials ---- */

/* Supplementary groups cost a read of /proc/PID/task/TID/status per request, so they are
 * cached for up to a second, keyed by (pid, uid, gid): a process that changes its uid or
 * gid (login, su, a setuid program) misses, and so does a reused pid unless the new
 * process has the same uid and gid. What an entry can still get wrong (a setgroups()
 * within the second, a pid reused by a process of the same ids) errs only within what
 * the kernel already allowed: the mount uses default_permissions, so the kernel checks
 * every path component, open and attribute change with the caller's exact credentials
 * first, and meta's check with these groups comes second. More groups than a request
 * carries set more_groups, and meta then fails closed. */
#define GCACHE 64
static struct {
	pid_t pid;
	uint32_t uid, gid;
	time_t at;
	uint32_t n;
	uint8_t more;
	uint32_t groups[WEFT_GROUPS_MAX];
} gcache[GCACHE];
static pthread_mutex_t gcache_lock = PTHREAD_MUTEX_INITIALIZER;
static bool root_squash;

static void cred_of(fuse_req_t req, struct weft_cred *cr)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	memset(cr, 0, sizeof(*cr));
	cr->uid = ctx->uid;
	cr->gid = ctx->gid;
	cr->umask = ctx->umask;
	if (root_squash) {
		/* root of this client is nobody at meta; its groups are not sent */
		if (cr->gid == 0)
			cr->gid = WEFT_NOBODY;
		if (cr->uid == 0) {
			cr->uid = WEFT_NOBODY;
			return;
		}
	}
	if (cr->uid == 0)
		return;
	time_t now = time(NULL);
	unsigned slot = (unsigned)ctx->pid % GCACHE;
	pthread_mutex_lock(&gcache_lock);
	if (gcache[slot].pid == ctx->pid && gcache[slot].uid == ctx->uid &&
	    gcache[slot].gid == ctx->gid && gcache[slot].at == now) {
		cr->ngroups = gcache[slot].n;
		cr->more_groups = gcache[slot].more;
		memcpy(cr->groups, gcache[slot].groups, sizeof(cr->groups));
		pthread_mutex_unlock(&gcache_lock);
		return;
	}
	pthread_mutex_unlock(&gcache_lock);
	gid_t g[WEFT_GROUPS_MAX];
	int n = fuse_req_getgroups(req, WEFT_GROUPS_MAX, g);
	if (n > WEFT_GROUPS_MAX) {
		cr->more_groups = 1; /* the first WEFT_GROUPS_MAX are in g */
		n = WEFT_GROUPS_MAX;
	}
	for (int i = 0; i < n; i++)
		cr->groups[i] = root_squash && g[i] == 0 ? WEFT_NOBODY : g[i];
	cr->ngroups = n > 0 ? (uint32_t)n : 0;
	if (n < 0)
		cr->more_groups = 1; /* groups unknown: meta fails closed */
	pthread_mutex_lock(&gcache_lock);
	gcache[slot].pid = ctx->pid;
	gcache[slot].uid = ctx->uid;
	gcache[slot].gid = ctx->gid;
	gcache[slot].at = now;
	gcache[slot].n = cr->ngroups;
	gcache[slot].more = cr->more_groups;
	memcpy(gcache[slot].groups, cr->groups, sizeof(cr->groups));
	pthread_mutex_unlock(&gcache_lock);
}

/* Meta refused the request: if the caller's groups changed since they were cached (a
 * setgroups() within the second), take the current ones. Returns true when they
 * differ, and the request is then asked again: a refused request changed nothing. */
static bool cred_refresh(fuse_req_t req, struct weft_cred *cr)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (cr->uid == 0 || (root_squash && ctx->uid == 0))
		return false;
	gid_t g[WEFT_GROUPS_MAX];
	int n = fuse_req_getgroups(req, WEFT_GROUPS_MAX, g);
	if (n < 0)
		return false;
	uint8_t more = n > WEFT_GROUPS_MAX;
	if (more)
		n = WEFT_GROUPS_MAX;
	uint32_t groups[WEFT_GROUPS_MAX] = {0};
	for (int i = 0; i < n; i++)
		groups[i] = root_squash && g[i] == 0 ? WEFT_NOBODY : g[i];
	if ((uint32_t)n == cr->ngroups && more == cr->more_groups &&
	    memcmp(groups, cr->groups, (size_t)n * sizeof(groups[0])) == 0)
		return false;
	cr->ngroups = (uint32_t)n;
	cr->more_groups = more;
	memcpy(cr->groups, groups, sizeof(groups));
	unsigned slot = (unsigned)ctx->pid % GCACHE;
	pthread_mutex_lock(&gcache_lock);
	gcache[slot].pid = ctx->pid;
	gcache[slot].uid = ctx->uid;
	gcache[slot].gid = ctx->gid;
	gcache[slot].at = time(NULL);
	gcache[slot].n = cr->ngroups;
	gcache[slot].more = cr->more_groups;
	memcpy(gcache[slot].groups, cr->groups, sizeof(cr->groups));
	pthread_mutex_unlock(&gcache_lock);
	return true;
}

/* A caller in more groups than a request carries, refused: the next WEFT_GROUPS_MAX of
 * its groups (up to GROUPS_SCAN in all), window *k + 1. Meta grants only on a group it
 * sees or on what group and other bits both allow, so a grant through any window is
 * the right answer, and trying the others turns no refusal into a wrong grant. */
#define GROUPS_SCAN 256
static bool cred_next_window(fuse_req_t req, struct weft_cred *cr, int *k)
{
	gid_t g[GROUPS_SCAN];
	int n = fuse_req_getgroups(req, GROUPS_SCAN, g);
	if (n > GROUPS_SCAN)
		n = GROUPS_SCAN;
	int start = (*k + 1) * WEFT_GROUPS_MAX;
	if (n <= start)
		return false;
	(*k)++;
	int m = n - start < WEFT_GROUPS_MAX ? n - start : WEFT_GROUPS_MAX;
	for (int i = 0; i < m; i++)
		cr->groups[i] = root_squash && g[start + i] == 0 ? WEFT_NOBODY : g[start + i];
	cr->ngroups = (uint32_t)m;
	cr->more_groups = 1;
	return true;
}

static bool denied(long err)
{
	return err == -EACCES || err == -EPERM;
}

/* err = call, asked again with fresh groups when meta refused on cached ones, and
 * with each further window of groups of a caller in more than a request carries */
#define ASK(req, cr, err, call) \
	do { \
		err = (call); \
		if (denied(err) && cred_refresh(req, &(cr))) \
			err = (call); \
		for (int k_ = 0; denied(err) && (cr).more_groups && \
				 cred_next_window(req, &(cr), &k_);) \
			err = (call); \
	} while (0)

/* ---- conversions ---- */

static void to_stat(const struct weft_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blksize = a->blksize ? a->blksize : 1 << 20;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_atim.tv_sec = a->atime_ns / 1000000000;
	st->st_atim.tv_nsec = a->atime_ns % 1000000000;
	st->st_mtim.tv_sec = a->mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = a->mtime_ns % 1000000000;
	st->st_ctim.tv_sec = a->ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = a->ctime_ns % 1000000000;
}

/* How long the kernel may cache ino's attributes (and a directory's names): what is left
 * of this mount's lease on it (meta recalls it before anyone changes them); 0 with
 * attr_timeout=0 (the kernel asks every time). */
static double cache_timeout(uint64_t ino)
{
	if (attr_timeout <= 0)
		return 0;
	return weft_lease_left_ms(wc, ino) / 1000.0;
}

/* Cache counters (net/stats.h): whether a reply let the kernel cache what it carries. */
static void count_grant(double timeout, enum stats_counter granted, enum stats_counter not)
{
	stats_add(timeout > 0 ? granted : not, 1);
}

static void fill_entry(const struct weft_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = a->gen;
	e->attr_timeout = cache_timeout(a->ino);
	e->entry_timeout = e->attr_timeout;
	to_stat(a, &e->attr);
}

/* fill_entry for an entry that goes to the kernel now: counts the attributes' grant. */
static void fill_entry_counted(const struct weft_attr *a, struct fuse_entry_param *e)
{
	fill_entry(a, e);
	count_grant(e->attr_timeout, STATS_CACHE_ATTR_GRANTS, STATS_CACHE_ATTR_NOGRANTS);
}

/* weft errors become the errno an application understands */
static int sys_err(int err)
{
	if (err >= 0)
		return 0;
	if (-err >= WEFT_ERR_BASE)
		return EIO;
	return -err;
}

static void reply_entry(fuse_req_t req, int err, const struct weft_attr *a)
{
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	struct fuse_entry_param e;
	fill_entry_counted(a, &e);
	fuse_reply_entry(req, &e);
}

#define CHECK_RW(req) \
	do { \
		if (read_only) { \
			fuse_reply_err(req, EROFS); \
			return; \
		} \
	} while (0)

/* ---- operations ---- */

static void *readahead_thread(void *arg);

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	pthread_t t;
	if (readahead_kb && mount_real[0] && pthread_create(&t, NULL, readahead_thread, NULL) == 0)
		pthread_detach(t);
	/* 1 MiB requests both ways: libfuse asks for max_pages from max_write. The kernel
	 * offers the bdi's read-ahead of the moment (128 KiB) as max_readahead and takes the
	 * smaller of it and ours, so asking for more here changes nothing; the sysfs write
	 * (readahead_thread) is what raises it, and is logged */
	unsigned offered_ra = conn->max_readahead;
	conn->max_write = 1u << 20;
	if (readahead_kb)
		conn->max_readahead = readahead_kb * 1024u;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* READDIRPLUS for every piece of a listing, not only the first: libweft fetched
	 * the whole batch with attributes anyway (do_readdir), and a name the kernel got
	 * without them costs a LOOKUP round trip at its open or stat (find | xargs cat: one
	 * file in five) */
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
	/* the kernel clears setuid/setgid itself (see kill_priv_of), whatever this says:
	 * not asking keeps that one path on every kernel */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	/* RELEASE, READ of read-ahead and asynchronous direct I/O are the kernel's background
	 * requests, 12 in flight by default. A RELEASE is answered once the flush a close
	 * left behind is done (data, EXTEND, buffered attributes: a meta commit each), so
	 * with 12 and a slow metadata disk (10 ms a commit) tar's files drained at 12 per
	 * ~45 ms, 270 a second, however many release workers waited */
	conn->max_background = MAX_BACKGROUND;
	conn->congestion_threshold = MAX_BACKGROUND * 3 / 4;
	log_info("FUSE: protocol %u.%u, max_write %u, max_read %u, max_readahead %u (kernel offered %u), "
		 "max_background %u, capable %#x want %#x", conn->proto_major, conn->proto_minor,
		 conn->max_write, conn->max_read, conn->max_readahead, offered_ra,
		 conn->max_background, conn->capable, conn->want);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct weft_cred cr;
	struct weft_attr a;
	cred_of(req, &cr);
	int err;
	stats_add(STATS_CACHE_NAME_MISSES, 1); /* the kernel's dentry cache did not have it */
	ASK(req, cr, err, weft_lookup(wc, &cr, parent, name, &a));
	if (err == -ENOENT) {
		/* a negative entry the kernel may cache under the directory's lease */
		struct fuse_entry_param e = {.ino = 0, .entry_timeout = cache_timeout(parent)};
		count_grant(e.entry_timeout, STATS_CACHE_NEGNAME_GRANTS, STATS_CACHE_NAME_NOGRANTS);
		fuse_reply_entry(req, &e);
		return;
	}
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	struct fuse_entry_param e;
	fill_entry_counted(&a, &e);
	count_grant(e.entry_timeout, STATS_CACHE_NAME_GRANTS, STATS_CACHE_NAME_NOGRANTS);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct weft_cred cr;
	struct weft_attr a;
	cred_of(req, &cr);
	stats_add(STATS_CACHE_ATTR_MISSES, 1); /* the kernel's attributes were out of date */
	int err = weft_getattr(wc, &cr, ino, &a);
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	struct stat st;
	to_stat(&a, &st);
	double timeout = cache_timeout(ino);
	count_grant(timeout, STATS_CACHE_ATTR_GRANTS, STATS_CACHE_ATTR_NOGRANTS);
	fuse_reply_attr(req, &st, timeout);
}

/* The kernel clears setuid/setgid itself before a write, truncate or chown by a caller
 * without CAP_FSETID: it sends a mode change "forced" past its own owner check, which
 * the FUSE protocol cannot mark (FUSE_HANDLE_KILLPRIV_V2, which would, is beyond
 * libfuse 3.14). A genuine chmod by a non-owner never gets here: default_permissions
 * refuses it in the kernel. So a mode change from a non-owner that only removes the
 * bits a write removes is sent as KILL_PRIV, which meta grants to a caller that may
 * write the file (or holds it open for writing here) and which can only take bits
 * away. Anything else stays a chmod, for meta to refuse. Returns valid, changed so
 * when that applies (one GETATTR: called only once meta refused the chmod, or before
 * a truncate). Never for root, nor a squashed root (which has CAP_FSETID). */
static uint32_t kill_priv_of(fuse_ino_t ino, const struct weft_cred *cr, uint32_t valid,
			     const struct weft_attr *in)
{
	struct weft_attr cur;
	if (weft_getattr(wc, cr, ino, &cur) || cur.uid == cr->uid || !S_ISREG(cur.mode))
		return valid;
	uint32_t killable = S_ISUID | ((cur.mode & S_IXGRP) ? S_ISGID : 0);
	uint32_t was = cur.mode & 07777, want = in->mode & 07777;
	uint32_t removed = was & ~want;
	if ((want & ~was) || !removed || (removed & ~killable))
		return valid;
	valid = (valid & ~WEFT_SET_MODE) | WEFT_SET_KILL_PRIV;
	if (weft_open_for_write(wc, ino))
		valid |= WEFT_SET_HANDLE;
	return valid;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *st, int to_set,
		       struct fuse_file_info *fi)
{
	CHECK_RW(req);
	struct weft_cred cr;
	cred_of(req, &cr);
	uint32_t valid = 0;
	struct weft_attr in = {0}, out;
	if (to_set & FUSE_SET_ATTR_MODE) {
		valid |= WEFT_SET_MODE;
		in.mode = st->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		valid |= WEFT_SET_UID;
		in.uid = st->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		valid |= WEFT_SET_GID;
		in.gid = st->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		valid |= WEFT_SET_SIZE;
		in.size = (uint64_t)st->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		valid |= WEFT_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) {
		valid |= WEFT_SET_ATIME;
		in.atime_ns = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		valid |= WEFT_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) {
		valid |= WEFT_SET_MTIME;
		in.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		valid |= WEFT_SET_CTIME;
		in.ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	}
	/* ftruncate, or open(O_TRUNC): the kernel passes the file; its write access was
	 * granted at open and counts now, whatever the mode says since (open(O_CREAT|O_RDWR,
	 * 0) then ftruncate, as on a local file system) */
	if (fi && fi->fh && (valid & WEFT_SET_SIZE) &&
	    weft_file_writable((struct weft_file *)(uintptr_t)fi->fh))
		valid |= WEFT_SET_HANDLE;
	/* with a size change, decide before libweft cuts any object; a mode change alone
	 * is tried as a chmod first, so an owner's chmod costs no extra round trip */
	bool squashed_root = root_squash && fuse_req_ctx(req)->uid == 0;
	if ((valid & WEFT_SET_MODE) && (valid & WEFT_SET_SIZE) && cr.uid != 0 && !squashed_root)
		valid = kill_priv_of(ino, &cr, valid, &in);
	int err;
	ASK(req, cr, err, weft_setattr(wc, &cr, ino, valid, &in, &out));
	if (err == -EPERM && (valid & WEFT_SET_MODE) && cr.uid != 0 && !squashed_root) {
		uint32_t v = kill_priv_of(ino, &cr, valid, &in);
		if (v != valid) {
			valid = v;
			err = weft_setattr(wc, &cr, ino, valid, &in, &out);
		}
	}
	log_debug("setattr %llu to_set %#x valid %#x uid %u: %d", (unsigned long long)ino, to_set,
		  valid, cr.uid, err);
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	attrs_change(ino);
	struct stat o;
	to_stat(&out, &o);
	double timeout = cache_timeout(ino);
	count_grant(timeout, STATS_CACHE_ATTR_GRANTS, STATS_CACHE_ATTR_NOGRANTS);
	fuse_reply_attr(req, &o, timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct weft_cred cr;
	char buf[WEFT_PATH_MAX];
	cred_of(req, &cr);
	int err = weft_readlink(wc, &cr, ino, buf, sizeof(buf));
	if (err)
		fuse_reply_err(req, sys_err(err));
	else
		fuse_reply_readlink(req, buf);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	CHECK_RW(req);
	struct weft_cred cr;
	struct weft_attr a;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_mknod(wc, &cr, parent, name, mode, (uint32_t)rdev, true, &a));
	reply_entry(req, err, &a);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	CHECK_RW(req);
	struct weft_cred cr;
	struct weft_attr a;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_mkdir(wc, &cr, parent, name, mode, &a));
	reply_entry(req, err, &a);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	CHECK_RW(req);
	struct weft_cred cr;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_unlink(wc, &cr, parent, name));
	fuse_reply_err(req, sys_err(err));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	CHECK_RW(req);
	struct weft_cred cr;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_rmdir(wc, &cr, parent, name));
	fuse_reply_err(req, sys_err(err));
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	CHECK_RW(req);
	struct weft_cred cr;
	struct weft_attr a;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_symlink(wc, &cr, parent, name, link, &a));
	reply_entry(req, err, &a);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	CHECK_RW(req);
	struct weft_cred cr;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_rename(wc, &cr, parent, name, newparent, newname, flags));
	fuse_reply_err(req, sys_err(err));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	CHECK_RW(req);
	struct weft_cred cr;
	struct weft_attr a;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_link(wc, &cr, ino, newparent, newname, &a));
	reply_entry(req, err, &a);
}

/* What meta said about a file at its last open here (a direct-mapped table: a slot
 * taken by another inode only costs that file its cached pages). */
#define KC_SLOTS 16384
static struct kc_slot {
	uint64_t ino;
	int64_t mtime_ns, ctime_ns;
	uint64_t size;
} kc[KC_SLOTS];
static pthread_mutex_t kc_lock = PTHREAD_MUTEX_INITIALIZER;

/* True if the kernel's cached pages of a->ino are still the file's: meta's attributes
 * are those of the last open here. Records a for the next open. */
static bool kc_unchanged(const struct weft_attr *a)
{
	pthread_mutex_lock(&kc_lock);
	struct kc_slot *k = &kc[a->ino % KC_SLOTS];
	bool same = k->ino == a->ino && k->mtime_ns == a->mtime_ns &&
		    k->ctime_ns == a->ctime_ns && k->size == a->size;
	*k = (struct kc_slot){a->ino, a->mtime_ns, a->ctime_ns, a->size};
	pthread_mutex_unlock(&kc_lock);
	return same;
}

/* The kernel may hold ino's pages as they were at its last open here: then libweft
 * need not read the file's first stripe unit with the OPEN (weft_prefetch_cached). */
static void kc_hint(fuse_ino_t ino)
{
	pthread_mutex_lock(&kc_lock);
	struct kc_slot k = kc[ino % KC_SLOTS];
	pthread_mutex_unlock(&kc_lock);
	if (k.ino != ino)
		return;
	struct weft_attr was = {.ino = ino, .size = k.size, .mtime_ns = k.mtime_ns,
				.ctime_ns = k.ctime_ns};
	weft_prefetch_cached(wc, &was);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (read_only && (fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	struct weft_cred cr;
	struct weft_file *f;
	struct weft_attr a;
	cred_of(req, &cr);
	int err;
	kc_hint(ino);
	ASK(req, cr, err, weft_file_open(wc, &cr, ino, fi->flags, &f, &a));
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	/* close-to-open: another mount may have changed the file; if meta shows it as it
	 * was at the last open here, the pages read since are still good */
	fi->keep_cache = kc_unchanged(&a) && !(fi->flags & O_TRUNC);
	stats_add(fi->keep_cache ? STATS_CACHE_OPEN_KEPT : STATS_CACHE_OPEN_DROPPED, 1);
	if (fuse_reply_open(req, fi) == -ENOENT)
		weft_file_release(f); /* the opener was interrupted */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	CHECK_RW(req);
	struct weft_cred cr;
	struct weft_attr a;
	struct weft_file *f;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_create(wc, &cr, parent, name, mode, fi->flags,
				      (fi->flags & O_EXCL) != 0, &f, &a));
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)f;
	struct fuse_entry_param e;
	fill_entry_counted(&a, &e);
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		weft_file_release(f);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	/* the reply goes to the kernel straight from libweft's readahead buffers (one
	 * writev to /dev/fuse), with no copy in between */
	struct weft_read_view v;
	ssize_t n = weft_file_read_view(f, size, (uint64_t)off, &v);
	if (n < 0) {
		fuse_reply_err(req, sys_err((int)n));
	} else {
		stats_add(STATS_FUSE_READ_OPS, 1);
		stats_add(STATS_FUSE_READ_BYTES, (uint64_t)n);
		fuse_reply_iov(req, v.iov, v.niov);
	}
	weft_read_view_release(f, &v);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	ssize_t n = weft_file_write(f, buf, size, (uint64_t)off);
	if (n < 0) {
		fuse_reply_err(req, sys_err((int)n));
	} else {
		stats_add(STATS_FUSE_WRITE_OPS, 1);
		stats_add(STATS_FUSE_WRITE_BYTES, (uint64_t)n);
		fuse_reply_write(req, (size_t)n);
	}
}

/* The kernel keeps a file's attributes for attr_timeout: after a close that measured
 * st_blocks anew, the ones it holds (from before, or estimated while writing) are
 * dropped, so that `du` right after a write sees what the stores hold. Attributes only
 * (offset -1): no pages, no locks the flush could wait on. */
static void blocks_changed(fuse_ino_t ino, struct weft_file *f)
{
	if (weft_file_blocks_changed(f) && g_se)
		fuse_lowlevel_notify_inval_inode(g_se, ino, -1, 0);
}

/* Meta recalled a lease (libweft's notifier thread, never a request handler: a notify
 * from inside one deadlocks): the kernel drops what it cached. A name drops its entry
 * and the directory's attributes (mtime, nlink); DATA drops the pages too. */
static void on_recall(void *arg, uint64_t ino, uint32_t what, const char *name, size_t len)
{
	(void)arg;
	attrs_change(ino);
	if (!g_se)
		return;
	if (what & WEFT_RECALL_NAME)
		fuse_lowlevel_notify_inval_entry(g_se, ino, name, len);
	fuse_lowlevel_notify_inval_inode(g_se, ino, (what & WEFT_RECALL_DATA) ? 0 : -1, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	int err = weft_file_close(f);
	blocks_changed(ino, f);
	fuse_reply_err(req, sys_err(err));
}

/* RELEASE: the flush a close left behind (weft_file_close) and meta's RELEASE run on a
 * worker of the mount (workq.h), so the FUSE thread goes back to the kernel at once; the
 * kernel does not wait for RELEASE, so the answer after the work, and a notify from the
 * worker, are safe. */
struct release_job {
	struct workq_job job;
	fuse_req_t req;
	fuse_ino_t ino;
	struct weft_file *f;
};

static void release_now(fuse_req_t req, fuse_ino_t ino, struct weft_file *f)
{
	int err = weft_file_flush(f);
	blocks_changed(ino, f);
	int e2 = weft_file_release(f);
	err = err ? err : e2;
	if (err)
		log_warn("release of inode %llu: %s (reported at close)", (unsigned long long)ino,
			 weft_strerror(err));
	fuse_reply_err(req, sys_err(err));
}

static void release_run(struct workq_job *job)
{
	struct release_job *r = (struct release_job *)job;
	release_now(r->req, r->ino, r->f);
	free(r);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	struct release_job *r = malloc(sizeof(*r));
	if (!r) {
		release_now(req, ino, f);
		return;
	}
	*r = (struct release_job){.job.run = release_run, .req = req, .ino = ino, .f = f};
	workq_push(&r->job);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	int err = weft_file_fsync(f);
	blocks_changed(ino, f);
	fuse_reply_err(req, sys_err(err));
}

/* SEEK_DATA and SEEK_HOLE from the stores; the kernel answers SEEK_SET/CUR/END itself. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	if ((whence != SEEK_DATA && whence != SEEK_HOLE) || off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	uint64_t out;
	int err = weft_file_seek(f, (uint64_t)off, whence == SEEK_DATA, &out);
	blocks_changed(ino, f); /* the seek flushed the handle's writes */
	if (err)
		fuse_reply_err(req, sys_err(err));
	else
		fuse_reply_lseek(req, (off_t)out);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	CHECK_RW(req);
	if (mode & ~FALLOC_FL_KEEP_SIZE) {
		fuse_reply_err(req, EOPNOTSUPP); /* no hole punching or zero ranges */
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct weft_file *f = (struct weft_file *)(uintptr_t)fi->fh;
	uint64_t end = (uint64_t)off + (uint64_t)len;
	if (end > (uint64_t)WEFT_FILE_SIZE_MAX) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	int err = 0;
	/* space is not reserved ahead (objects grow as they are written); without
	 * KEEP_SIZE the file grows, as posix_fallocate promises */
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > weft_file_size(f)) {
		struct weft_cred cr;
		cred_of(req, &cr);
		struct weft_attr in = {.size = end}, out;
		err = weft_setattr(wc, &cr, ino, WEFT_SET_SIZE, &in, &out);
	}
	fuse_reply_err(req, sys_err(err));
}

/* Directory handles keep the last batch of entries fetched from meta, so successive
 * readdir calls of one listing cost one round trip per 64 KiB of entries. An entry's
 * attributes go to the kernel only if no chmod or recall of it came since the batch
 * was fetched (attrs_changed_since): a later READDIRPLUS would put back a mode from
 * before the chmod, which the kernel takes (its attribute version is the request's). */
struct dent {
	char *name;
	uint64_t ino, next;
	uint8_t type;
	bool has_attr;
	struct weft_attr attr;
};

struct dirh {
	pthread_mutex_t lock;
	struct dent *ents;
	size_t n, cap;
	uint64_t from;     /* cookie the batch started at */
	uint64_t attrs_at; /* attrs_changes() before the batch was fetched */
	bool eof;
	bool plus;
};

static void dirh_clear(struct dirh *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	d->n = 0;
}

static int collect(void *arg, const struct weft_dirent_out *o)
{
	struct dirh *d = arg;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct dent *n = realloc(d->ents, cap * sizeof(*n));
		if (!n)
			return 1;
		d->ents = n;
		d->cap = cap;
	}
	struct dent *e = &d->ents[d->n];
	e->name = strndup(o->name, o->namelen);
	if (!e->name)
		return 1;
	e->ino = o->ino;
	e->next = o->next_cookie;
	e->type = o->type;
	e->has_attr = o->attr != NULL;
	if (o->attr)
		e->attr = *o->attr;
	d->n++;
	return d->n >= 512; /* one batch */
}

/* The kernel sends OPENDIR only for a directory, after checking the caller's read
 * permission itself (default_permissions, on attributes valid under a lease or fetched
 * first), and meta checks read permission again at every READDIR: asking meta here too
 * cost two round trips per directory (du, find). Only a root this mount squashes has
 * more rights in the kernel than at meta: its open is checked with meta, so that it
 * fails at opendir as it would on a local file system. */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (root_squash && fuse_req_ctx(req)->uid == 0) {
		struct weft_cred cr;
		struct weft_attr a;
		cred_of(req, &cr);
		int err = weft_getattr(wc, &cr, ino, &a);
		if (!err && !S_ISDIR(a.mode))
			err = -ENOTDIR;
		if (!err)
			ASK(req, cr, err, weft_access(wc, &cr, ino, R_OK));
		if (err) {
			fuse_reply_err(req, sys_err(err));
			return;
		}
	}
	struct dirh *d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->from = UINT64_MAX;
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	struct weft_cred cr;
	cred_of(req, &cr);
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	pthread_mutex_lock(&d->lock);
	uint64_t cookie = (uint64_t)off;
	for (;;) {
		/* find cookie in the cached batch: at its start or after one of its entries */
		size_t i = SIZE_MAX;
		/* a batch with attributes also serves a listing without (the kernel asks
		 * READDIRPLUS first and plain READDIR to go on) */
		if ((d->plus == plus || d->plus) && d->from != UINT64_MAX) {
			if (cookie == d->from)
				i = 0;
			for (size_t k = 0; k < d->n && i == SIZE_MAX; k++)
				if (d->ents[k].next == cookie)
					i = k + 1;
		}
		if (i == SIZE_MAX || (i == d->n && !d->eof)) {
			dirh_clear(d);
			d->from = cookie;
			d->plus = plus;
			d->eof = false;
			d->attrs_at = attrs_changes();
			int err = weft_readdir(wc, &cr, ino, cookie, plus, 65536, collect, d);
			if (err) {
				d->from = UINT64_MAX;
				pthread_mutex_unlock(&d->lock);
				free(buf);
				fuse_reply_err(req, sys_err(err));
				return;
			}
			d->eof = d->n < 512;
			i = 0;
		}
		bool full = false;
		bool attrs_moved = d->attrs_at != attrs_changes();
		for (; i < d->n; i++) {
			struct dent *e = &d->ents[i];
			size_t need;
			double attr_timeout_given = -1; /* an entry without attributes: none */
			if (plus) {
				struct fuse_entry_param ep;
				if (e->has_attr &&
				    !(attrs_moved && attrs_changed_since(d->attrs_at, e->ino))) {
					fill_entry(&e->attr, &ep);
					attr_timeout_given = ep.attr_timeout;
				} else {
					memset(&ep, 0, sizeof(ep));
					ep.attr.st_ino = e->ino;
					ep.attr.st_mode = (mode_t)e->type << 12;
				}
				need = fuse_add_direntry_plus(req, buf + used, size - used, e->name, &ep,
							      (off_t)e->next);
			} else {
				struct stat st = {.st_ino = e->ino, .st_mode = (mode_t)e->type << 12};
				need = fuse_add_direntry(req, buf + used, size - used, e->name, &st,
							 (off_t)e->next);
			}
			if (need > size - used) {
				full = true;
				break;
			}
			if (attr_timeout_given >= 0)
				count_grant(attr_timeout_given, STATS_CACHE_ATTR_GRANTS,
					    STATS_CACHE_ATTR_NOGRANTS);
			used += need;
			cookie = e->next;
		}
		if (full || d->eof || d->n == 0)
			break;
	}
	pthread_mutex_unlock(&d->lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	dirh_clear(d);
	free(d->ents);
	pthread_mutex_destroy(&d->lock);
	free(d);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	/* a directory's fsync (and `weft sync MOUNTPOINT`, which fsyncs the root): what
	 * this mount buffers goes to meta, and meta syncs; namespace changes are durable
	 * at meta before their reply, but EXTEND and buffered attributes are answered
	 * once committed (ARCHITECTURE.md, "Metadata durability") */
	struct weft_cred cr;
	cred_of(req, &cr);
	fuse_reply_err(req, sys_err(weft_sync(wc, &cr, ino)));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct weft_statfs s;
	int err = weft_statfs(wc, &s);
	if (err) {
		fuse_reply_err(req, sys_err(err));
		return;
	}
	struct statvfs st = {.f_bsize = s.bsize, .f_frsize = s.bsize, .f_blocks = s.blocks,
			     .f_bfree = s.bfree, .f_bavail = s.bavail, .f_files = s.files,
			     .f_ffree = s.ffree, .f_favail = s.ffree, .f_namemax = s.namemax};
	fuse_reply_statfs(req, &st);
}

/* "weft.layout": the layout as text (layout_xattr.h), read and set at meta with the
 * caller's credentials (meta checks that the caller owns what it changes). */
static int layout_get(const struct weft_cred *cr, fuse_ino_t ino, char *buf, size_t cap)
{
	struct weft_layout l;
	bool def = false;
	int err = weft_getstripe(wc, cr, ino, &l, &def);
	if (err)
		return err;
	struct weft_attr a;
	err = weft_getattr(wc, cr, ino, &a);
	if (err)
		return err;
	return (int)layout_xattr_format(&l, S_ISDIR(a.mode), def, buf, cap);
}

static int layout_set(const struct weft_cred *cr, fuse_ino_t ino, const char *value,
		      size_t size)
{
	struct weft_layout l;
	bool def = false;
	int err = weft_getstripe(wc, cr, ino, &l, &def);
	if (err)
		return err;
	if (layout_xattr_parse(value, size, &l, NULL))
		return -EINVAL;
	return weft_setstripe(wc, cr, ino, &l);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	CHECK_RW(req);
	struct weft_cred cr;
	cred_of(req, &cr);
	int err;
	if (strcmp(name, WEFT_LAYOUT_XATTR) == 0)
		ASK(req, cr, err, layout_set(&cr, ino, value, size));
	else
		ASK(req, cr, err, weft_setxattr(wc, &cr, ino, name, value, size, (uint32_t)flags));
	fuse_reply_err(req, sys_err(err));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct weft_cred cr;
	cred_of(req, &cr);
	ssize_t n;
	if (strcmp(name, WEFT_LAYOUT_XATTR) == 0) {
		char text[256];
		ASK(req, cr, n, layout_get(&cr, ino, text, sizeof(text)));
		if (n < 0)
			fuse_reply_err(req, sys_err((int)n));
		else if (size == 0)
			fuse_reply_xattr(req, (size_t)n);
		else if ((size_t)n > size)
			fuse_reply_err(req, ERANGE);
		else
			fuse_reply_buf(req, text, (size_t)n);
		return;
	}
	char *buf = size ? malloc(size) : NULL;
	ASK(req, cr, n, weft_getxattr(wc, &cr, ino, name, buf, size));
	if (n < 0)
		fuse_reply_err(req, sys_err((int)n));
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct weft_cred cr;
	cred_of(req, &cr);
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;
	ASK(req, cr, n, weft_listxattr(wc, &cr, ino, buf, size));
	if (n < 0)
		fuse_reply_err(req, sys_err((int)n));
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	CHECK_RW(req);
	struct weft_cred cr;
	cred_of(req, &cr);
	int err;
	ASK(req, cr, err, weft_removexattr(wc, &cr, ino, name));
	fuse_reply_err(req, sys_err(err));
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	if (read_only && (mask & W_OK)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	struct weft_cred cr;
	cred_of(req, &cr);
	int err;
	stats_add(STATS_CACHE_ATTR_MISSES, 1);
	ASK(req, cr, err, weft_access(wc, &cr, ino, (uint32_t)mask));
	fuse_reply_err(req, sys_err(err));
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.access = op_access,
	.create = op_create,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
};

/* The kernel's read-ahead for this mount is raised through sysfs once FUSE's INIT is
 * answered (the INIT reply can only lower it). The bdi is named by the mount's device
 * number, read from /proc/self/mountinfo: a stat() of the mount point would ask this very
 * process, which may not be serving requests yet. */
static void *readahead_thread(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 200000000};
	nanosleep(&ts, NULL);
	char line[4096], dev[32] = "";
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	if (!mi)
		return NULL;
	while (fgets(line, sizeof(line), mi)) {
		char mm[32], root[PATH_MAX], point[PATH_MAX];
		if (sscanf(line, "%*d %*d %31s %4095s %4095s", mm, root, point) == 3 &&
		    strcmp(point, mount_real) == 0)
			snprintf(dev, sizeof(dev), "%s", mm); /* the last match is the newest mount */
	}
	fclose(mi);
	if (!dev[0])
		return NULL;
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	FILE *f = fopen(path, "w");
	if (!f) {
		log_debug("cannot set %s: %s", path, strerror(errno));
		return NULL;
	}
	fprintf(f, "%u\n", readahead_kb);
	if (fclose(f) == 0)
		log_info("kernel read-ahead of the mount set to %u KiB", readahead_kb);
	return NULL;
}

int mount_run(const struct mount_opts *o, void (*ready)(int status))
{
	char err[512];
	attr_timeout = o->attr_timeout;
	read_only = o->read_only;
	struct weft_client_opts co = {.meta_addr = o->meta, .key_file = o->key_file,
				      .node_name = o->node_name, .pagepool = o->pagepool,
				      .checksums_off = o->checksums_off,
				      .wb_attrs = o->wb_attrs,
				      .sync_close = o->sync_close,
				      .readahead_units = o->readahead_units,
				      .open_prefetch_off = o->open_prefetch_off,
				      .complete_dirs_off = o->complete_dirs_off,
				      .dir_ahead_off = o->dir_ahead_off,
				      .async_create_off = o->async_create_off,
				      .local_open_off = o->local_open_off,
				      .attr_timeout_ms = (uint32_t)(o->attr_timeout * 1000)};
	int rc = weft_client_open(&co, &wc, err, sizeof(err));
	if (rc) {
		log_error("mount %s: %s", o->mountpoint, err);
		ready(1);
		return 1;
	}
	if (o->metrics && metrics_start(o->metrics, err, sizeof(err))) {
		log_error("mount %s: %s", o->mountpoint, err);
		weft_client_close(wc);
		ready(1);
		return 1;
	}
	readahead_kb = o->readahead_kb;
	if (!realpath(o->mountpoint, mount_real))
		mount_real[0] = '\0';
	char fsname[128], opts[1024];
	snprintf(fsname, sizeof(fsname), "-ofsname=weft:%s,subtype=weft", o->meta);
	root_squash = o->root_squash;
	/* default_permissions: the kernel checks search permission on every path component
	 * and every open and attribute change against the attributes it holds (fresh from
	 * this mount's own replies, at most attr_timeout old for other mounts' changes),
	 * with the caller's exact credentials; meta checks again on what it is asked */
	snprintf(opts, sizeof(opts), "-o%s,default_permissions%s%s%s", o->read_only ? "ro" : "rw",
		 o->allow_other ? ",allow_other" : "", o->fuse_opts ? "," : "",
		 o->fuse_opts ? o->fuse_opts : "");
	char *argv[] = {"weft", fsname, opts, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	g_se = se;
	weft_client_on_recall(wc, on_recall, NULL);
	if (!se) {
		log_error("mount %s: cannot create FUSE session (options %s)", o->mountpoint, opts + 2);
		fuse_opt_free_args(&args);
		weft_client_close(wc);
		ready(1);
		return 1;
	}
	if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, o->mountpoint) != 0) {
		log_error("mount %s: FUSE mount failed (is it a directory? is /dev/fuse there?)",
			  o->mountpoint);
		fuse_session_destroy(se);
		fuse_opt_free_args(&args);
		weft_client_close(wc);
		ready(1);
		return 1;
	}
	log_info("mounted weft from %s at %s%s", o->meta, o->mountpoint,
		 root_squash ? " (root_squash: root of this node is nobody)" : "");
	stats_set_identity("mount", o->node_name);
	statsfile_start(mount_real[0] ? mount_real : o->mountpoint);
	ready(0);
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, 64);
	/* Idle FUSE threads kept: the kernel wakes waiting readers of /dev/fuse in turn, so
	 * every idle thread kept is one more cold thread a request may land on. 16 on two
	 * cores made a cold find | xargs cat of 5,000 small files 1.6 s against 0.8-1.0 s
	 * with 4; 2 made libfuse start and end threads all the time (1.4 s). Two per core. */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int idle = ncpu < 2 ? 4 : ncpu > 8 ? 16 : (int)ncpu * 2;
	fuse_loop_cfg_set_idle_threads(cfg, (unsigned)idle);
	workq_start(RELEASE_WORKERS);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	workq_stop(); /* releases still queued run now: their flushes, meta's RELEASEs */
	statsfile_stop();
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args); /* libfuse may have copied them while parsing */
	weft_client_close(wc);
	log_info("unmounted %s", o->mountpoint);
	return rc ? 1 : 0;
}
