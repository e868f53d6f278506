/* libweft attribute write-back: chmod, chown and utimes of a file this client created,
 * kept here while it is open and sent to meta as one SETATTR.
 *
 * DESIGN: tar sets a file's times, owner and mode through the open descriptor and then
 * closes it; sent one by one, each is a durable commit at meta. With c->wb_attrs, a
 * setattr of a file whose winode says this client created it (wb_created) is merged
 * into the winode's pending SETATTR (wi->wb) instead, and the mount answers the kernel
 * with the attributes as they will be. The pending SETATTR goes to meta, with the
 * credential of its callers, at the file's flush (every close) and fsync, at a recall of
 * the inode (which also ends buffering for it) or of any name (lease.c flushes before it
 * answers; meta recalls the inode too before another session's GETATTR or LOOKUP of a
 * file created with WEFT_CREATE_WB is answered; for a name, a file another thread has been sending for WB_RECALL_LOCK_MS is
 * left to that thread), before this client's link, before its unlink, rmdir and rename
 * while one changes a file's owner (meta's sticky-directory check reads it: ns.c,
 * settle_owners), and when the client closes. This client's own getattr,
 * lookup and readdir replies show the pending attributes (client_winode_fix_size).
 *
 * What is merged must equal what the calls in turn would do at meta (ns.c,
 * meta_ns_setattr): only mode, owner and explicit times are buffered (never a size, a
 * kill-priv or a "now" time); one credential per pending SETATTR (another caller's
 * setattr sends the pending one first); an owner change after a mode change is not
 * merged (meta applies the owner first and clears set-id bits, the calls in turn would
 * keep the mode's); a write after a buffered mtime wins (it is dropped). A setattr that
 * meta would refuse by the attributes this client knows is not buffered but sent, so its
 * caller gets the error. One meta refuses anyway (its view differs: root squash, a
 * node's policy) is reported by the next flush or fsync of the file, as a failed
 * write-behind is, and logged; the kernel's cached attributes then stay wrong until
 * their lease runs out.
 *
 * Threads: any. Locks: wi->wb_lock (held across the SETATTR), then wi->lock;
 * c->wb_list_lock alone. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/client_int.h"
#include "common/log.h"
#include "proto/attrs.h"
#include "weft/err.h"

#define WB_BUFFERABLE (WEFT_SET_MODE | WEFT_SET_UID | WEFT_SET_GID | WEFT_SET_ATIME | \
		       WEFT_SET_MTIME | WEFT_SET_CTIME)

/* p applied to a as meta_ns_setattr would (its order: owner, set-id bits, mode, times). */
static void apply(const struct wb_pend *p, bool mtime, bool ctime, struct weft_attr *a)
{
	uint32_t v = p->valid;
	bool root = p->cred.uid == 0;
	if (v & WEFT_SET_UID)
		a->uid = p->uid;
	if (v & WEFT_SET_GID)
		a->gid = p->gid;
	if ((v & (WEFT_SET_UID | WEFT_SET_GID)) && !S_ISDIR(a->mode))
		proto_attr_kill_suid(a);
	if (v & WEFT_SET_MODE) {
		uint32_t mode = p->mode & 07777;
		if (!root && !proto_cred_in_group(&p->cred, a->gid))
			mode &= ~(uint32_t)S_ISGID;
		a->mode = (a->mode & S_IFMT) | mode;
	}
	if (v & WEFT_SET_ATIME)
		a->atime_ns = p->atime_ns;
	if ((v & WEFT_SET_MTIME) && mtime)
		a->mtime_ns = p->mtime_ns;
	if (ctime)
		a->ctime_ns = p->ctime_ns;
}

void client_wbattr_overlay(const struct winode *wi, struct weft_attr *a)
{
	/* what meta has applied stays overlaid until another change to the file may follow
	 * it (a recall, or a setattr this client sends at once) */
	if (wi->wb_sent.valid)
		apply(&wi->wb_sent, wi->wb_sent.mtime_wgen == wi->wgen, false, a);
	if (wi->wb.valid)
		apply(&wi->wb, wi->wb.mtime_wgen == wi->wgen, true, a);
}

bool client_setattr_allowed(const struct weft_cred *cr, const struct weft_attr *a, uint32_t valid,
			    const struct weft_attr *in)
{
	bool root = cr->uid == 0, owner = root || cr->uid == a->uid;
	if ((valid & WEFT_SET_UID) && !root && !(cr->uid == a->uid && in->uid == a->uid))
		return false;
	if ((valid & WEFT_SET_GID) && !root &&
	    !(cr->uid == a->uid && (in->gid == a->gid || proto_cred_in_group(cr, in->gid))))
		return false;
	if ((valid & (WEFT_SET_MODE | WEFT_SET_ATIME | WEFT_SET_MTIME | WEFT_SET_CTIME)) &&
	    !owner)
		return false;
	return !cr->more_groups || root || !(valid & WEFT_SET_GID);
}

void client_wbattr_created(struct weft_client *c, struct winode *wi, const struct weft_attr *a)
{
	if (!c->wb_attrs)
		return;
	pthread_mutex_lock(&wi->wb_lock);
	pthread_mutex_lock(&wi->lock);
	if (!wi->wb.valid) {
		wi->wb_created = true;
		wi->wb_agen = atomic_load(&c->attr_gen);
		wi->wb_base = *a;
	}
	pthread_mutex_unlock(&wi->lock);
	pthread_mutex_unlock(&wi->wb_lock);
}

bool client_wbattr_getattr(struct weft_client *c, uint64_t ino, struct weft_attr *a)
{
	if (!c->wb_attrs)
		return false;
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return false;
	pthread_mutex_lock(&wi->lock);
	/* only while something is not at meta yet: once all is flushed, meta's answer is
	 * exact (st_blocks measured by the stores), libweft's a guess */
	bool unsent = wi->size_dirty || wi->blocks_dirty || wi->dirty || wi->inflight ||
		      wi->flushing || wi->wb.valid;
	bool known = unsent && wi->wb_created && wi->wb_agen == atomic_load(&c->attr_gen);
	if (known) {
		*a = wi->wb_base;
		a->size = wi->size; /* it wrote the file: it knows */
		if (wi->mtime_ns > a->mtime_ns)
			a->mtime_ns = wi->mtime_ns;
	}
	pthread_mutex_unlock(&wi->lock);
	if (known) {
		client_winode_fix_size(wi, a); /* what is buffered; st_blocks while writing */
		if (a->mtime_ns > a->ctime_ns)
			a->ctime_ns = a->mtime_ns; /* a write changes both */
		if (a->blocks < (a->size + 511) / 512)
			a->blocks = (a->size + 511) / 512;
	}
	client_winode_put(c, wi);
	return known;
}

/* wi->lock held: whether wi->wb changes the owner meta has, counted for unlink and rename
 * (client_wbattr_owner_pending). */
static void owner_mark(struct weft_client *c, struct winode *wi)
{
	bool owner = (wi->wb.valid & WEFT_SET_UID) && wi->wb.uid != wi->wb_base.uid;
	if (owner != wi->wb_owner) {
		wi->wb_owner = owner;
		atomic_fetch_add(&c->wb_owners, owner ? 1 : -1);
	}
}

bool client_wbattr_owner_pending(struct weft_client *c)
{
	return atomic_load(&c->wb_owners) > 0;
}

static void unlist(struct weft_client *c, struct winode *wi)
{
	pthread_mutex_lock(&c->wb_list_lock);
	bool listed = wi->wb_listed;
	if (listed) {
		struct winode **pp = &c->wb_list;
		while (*pp != wi)
			pp = &(*pp)->wb_next;
		*pp = wi->wb_next;
		wi->wb_listed = false;
	}
	pthread_mutex_unlock(&c->wb_list_lock);
	if (listed)
		client_winode_put(c, wi); /* the caller holds another reference */
}

/* wb_lock held. */
static int flush_locked(struct weft_client *c, struct winode *wi, bool drop, bool behind)
{
	pthread_mutex_lock(&wi->lock);
	struct wb_pend p = wi->wb;
	bool mtime = p.mtime_wgen == wi->wgen;
	pthread_mutex_unlock(&wi->lock);
	if (!p.valid)
		return 0;
	int err = 0;
	struct weft_msg_attr a;
	if (drop) {
		err = -EIO;
		goto out;
	}
	uint32_t valid = p.valid & (mtime ? ~0u : ~(uint32_t)WEFT_SET_MTIME);
	/* the ctime the kernel was told; durable with meta's next sync, as the size at
	 * close is (fsync sends FSYNC after this) */
	valid |= WEFT_SET_CTIME | WEFT_SET_DEFERRED | (behind ? WEFT_SET_BEHIND : 0);
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_setattr m = {.cred = p.cred, .ino = wi->ino, .valid = valid,
				     .mode = p.mode, .uid = p.uid, .gid = p.gid,
				     .atime_ns = p.atime_ns, .mtime_ns = p.mtime_ns,
				     .ctime_ns = p.ctime_ns};
	proto_setattr_encode(&w, &m);
	struct frame *f = NULL;
	err = client_meta_call(c, WEFT_OP_SETATTR, &w, NULL, 0, &f);
	if (err == 0 && proto_attr_decode(f->payload, f->h.payload_len, &a, NULL) < 0)
		err = -EIO;
	frame_free(f);
	if (err)
		log_warn("setattr of inode %llu (buffered chmod/chown/utimes, valid %#x, uid %u): "
			 "%s; reported at the file's next close or fsync",
			 (unsigned long long)wi->ino, valid, p.cred.uid, weft_strerror(err));
out:
	pthread_mutex_lock(&wi->lock);
	if (err == 0) {
		wi->wb_base = a.attr;
		wi->wb_sent = p;
		/* the size still to come (EXTEND) carries the file's mtime: the one just set,
		 * unless written since (a utimes between write and close sent ahead of the
		 * write's EXTEND was undone by it) */
		if ((p.valid & WEFT_SET_MTIME) && p.mtime_wgen == wi->wgen)
			wi->mtime_ns = p.mtime_ns;
	} else if (!wi->wb_err) {
		wi->wb_err = err;
	}
	memset(&wi->wb, 0, sizeof(wi->wb));
	owner_mark(c, wi);
	pthread_mutex_unlock(&wi->lock);
	unlist(c, wi);
	return err;
}

int client_wbattr_flush(struct weft_client *c, struct winode *wi, bool drop, bool behind)
{
	pthread_mutex_lock(&wi->wb_lock);
	int err = flush_locked(c, wi, drop, behind);
	pthread_mutex_unlock(&wi->wb_lock);
	return err;
}

int client_wbattr_take_err(struct winode *wi)
{
	pthread_mutex_lock(&wi->lock);
	int err = wi->wb_err;
	wi->wb_err = 0;
	pthread_mutex_unlock(&wi->lock);
	return err;
}

int client_wbattr_try(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      uint32_t valid, const struct weft_attr *in, struct weft_attr *out)
{
	if (!c->wb_attrs)
		return 0;
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return 0;
	int done = 0;
	pthread_mutex_lock(&wi->wb_lock);
	pthread_mutex_lock(&wi->lock);
	struct weft_attr cur = wi->wb_base;
	client_wbattr_overlay(wi, &cur);
	bool same = !wi->wb.valid || memcmp(&wi->wb.cred, cr, sizeof(*cr)) == 0;
	bool order = !((wi->wb.valid & WEFT_SET_MODE) && (valid & (WEFT_SET_UID | WEFT_SET_GID)));
	bool ok = wi->wb_created && valid && !(valid & ~(uint32_t)WB_BUFFERABLE) &&
		  client_setattr_allowed(cr, &cur, valid, in);
	pthread_mutex_unlock(&wi->lock);
	if (!ok || !same || !order)
		flush_locked(c, wi, false, false); /* its error waits for the file's next flush */
	if (!ok) { /* sent at once by the caller: meta's answer is what counts */
		pthread_mutex_lock(&wi->lock);
		memset(&wi->wb_sent, 0, sizeof(wi->wb_sent));
		pthread_mutex_unlock(&wi->lock);
	}
	if (ok) {
		pthread_mutex_lock(&wi->lock);
		struct wb_pend *p = &wi->wb;
		bool first = !p->valid;
		p->cred = *cr;
		p->valid |= valid;
		if (valid & WEFT_SET_MODE)
			p->mode = in->mode;
		if (valid & WEFT_SET_UID)
			p->uid = in->uid;
		if (valid & WEFT_SET_GID)
			p->gid = in->gid;
		if (valid & WEFT_SET_ATIME)
			p->atime_ns = in->atime_ns;
		if (valid & WEFT_SET_MTIME) {
			p->mtime_ns = in->mtime_ns;
			p->mtime_wgen = wi->wgen;
		}
		p->ctime_ns = (valid & WEFT_SET_CTIME) ? in->ctime_ns : loop_wall_ns();
		owner_mark(c, wi);
		pthread_mutex_unlock(&wi->lock);
		if (first) {
			struct winode *ref = client_winode_find(c, ino); /* the list's */
			pthread_mutex_lock(&c->wb_list_lock);
			if (ref && !wi->wb_listed) {
				wi->wb_listed = true;
				wi->wb_next = c->wb_list;
				c->wb_list = wi;
				ref = NULL;
			}
			pthread_mutex_unlock(&c->wb_list_lock);
			if (ref)
				client_winode_put(c, ref);
		}
		done = 1;
	}
	struct winode *hold = wi;
	pthread_mutex_unlock(&hold->wb_lock);
	if (done && out) {
		pthread_mutex_lock(&hold->lock);
		*out = hold->wb_base;
		out->size = hold->size; /* the file is open here: this client knows its size */
		if (hold->mtime_ns > out->mtime_ns)
			out->mtime_ns = hold->mtime_ns;
		pthread_mutex_unlock(&hold->lock);
		client_winode_fix_size(hold, out); /* size, and the overlay */
	}
	client_winode_put(c, hold);
	return done;
}

void client_wbattr_end(struct weft_client *c, struct winode *wi)
{
	(void)c;
	pthread_mutex_lock(&wi->wb_lock);
	pthread_mutex_lock(&wi->lock);
	wi->wb_created = false; /* what is buffered still goes with the next flush */
	pthread_mutex_unlock(&wi->lock);
	pthread_mutex_unlock(&wi->wb_lock);
}

void client_wbattr_recall(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return;
	pthread_mutex_lock(&wi->wb_lock);
	flush_locked(c, wi, false, false);
	pthread_mutex_lock(&wi->lock);
	wi->wb_created = false; /* another client is interested: no more buffering */
	memset(&wi->wb_sent, 0, sizeof(wi->wb_sent));
	pthread_mutex_unlock(&wi->lock);
	pthread_mutex_unlock(&wi->wb_lock);
	client_winode_put(c, wi);
}

/* How long the recall thread waits for a winode's wb_lock before it answers without
 * that winode: a holder that keeps it longer is sending the SETATTR already, and may be
 * parked at meta behind a recall to a mount whose recall thread waits the same way. */
#define WB_RECALL_LOCK_MS 100

void client_wbattr_flush_all(struct weft_client *c, bool recall)
{
	for (;;) {
		pthread_mutex_lock(&c->wb_list_lock);
		struct winode *wi = c->wb_list;
		if (wi) { /* take the list's reference */
			c->wb_list = wi->wb_next;
			wi->wb_listed = false;
		}
		pthread_mutex_unlock(&c->wb_list_lock);
		if (!wi)
			return;
		if (recall) {
			struct timespec until = loop_deadline_ms(WB_RECALL_LOCK_MS);
			if (pthread_mutex_timedlock(&wi->wb_lock, &until) == 0) {
				flush_locked(c, wi, false, false);
				pthread_mutex_unlock(&wi->wb_lock);
			}
		} else {
			client_wbattr_flush(c, wi, false, false);
		}
		client_winode_put(c, wi);
	}
}
