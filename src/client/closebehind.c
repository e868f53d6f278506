/* libweft close-behind: a close that returns before its flush.
 *
 * DESIGN: tar's close of each small file it extracted waited for the file's data to
 * reach the stores and its size to reach meta (two round trips one after the other, ~1.6
 * ms a file here), while nothing else went on. A file this client created with
 * attribute write-back (wb_attrs: CREATE_OPEN with WEFT_CREATE_WB) is one no other
 * client has seen: meta holds any other session's GETATTR or LOOKUP of it, and every
 * change to it, until this client answers a RECALL of the inode (the write-back claim,
 * docs/ARCHITECTURE.md "Coherence"). So its flush can wait: weft_file_close marks the
 * winode cb_pending and returns; the flush runs
 *  - at the release (FUSE sends RELEASE after FLUSH and close(2) does not wait for it),
 *  - at a recall of the inode: the recall thread flushes before it answers, so another
 *    client's stat or open sees the data and size, as it did after a close that waited,
 *  - at weft_sync (a directory's fsync, `weft sync`, the end of the client), which also
 *    returns the first error such a flush met since the last weft_sync (the kernel drops
 *    RELEASEs it has not delivered when the file system is unmounted: the list finds them).
 * After the first recall of the inode (cb_off) its closes flush again before returning,
 * and so do all closes while the file system has little space free (space_to_spare).
 * A flush's error cannot reach the close that returned already: it is logged and kept
 * for weft_sync, as a local file system reports write-back errors at syncfs.
 *
 * Locks: wi->flush_lock, then c->cb_lock, then c->inodes_lock (client_winode_find). */
#include <errno.h>
#include <stdlib.h>

#include "client/client_int.h"
#include "common/log.h"
#include "common/loop.h"
#include "weft/err.h"

/* How long the recall thread waits for a flush another thread has under way. Such a
 * flush waits only for stores and for meta's commit of its EXTEND and SETATTR, which
 * no recall holds up (no other session may lease a file under the claim), so this is a
 * bound for a sick store, not a deadlock breaker. */
#define CB_RECALL_LOCK_MS 2000

/* Space the file system must have free for closes to go behind: a flush that meets a
 * full store cannot give ENOSPC to the close that returned already. Lustre's clients
 * hold space grants for what they buffer; this is the coarse form of it: free space
 * (meta's statfs, asked at most every CB_SPACE_CHECK_MS) above the larger of
 * CB_SPACE_MIN and four pagepools, else closes wait for their flush and report. */
#define CB_SPACE_MIN (1ull << 30)
/* and, for creates answered before meta has them (acreate.c), inodes meta can still
 * make: statfs's ffree, what meta's disk has room for (0 once it is full). Between two
 * looks a tar makes a few thousand: a margin of 32 MiB of metadata. */
#define CB_INODES_MIN 65536
#define CB_SPACE_CHECK_MS 1000

bool client_space_to_spare(struct weft_client *c, bool inodes)
{
	int64_t now = (int64_t)loop_now_ms();
	pthread_mutex_lock(&c->cb_lock);
	bool ok = c->cb_space_ok, iok = c->cb_inodes_ok;
	bool fresh = now - c->cb_space_at < CB_SPACE_CHECK_MS;
	if (!fresh)
		c->cb_space_at = now; /* one asker at a time; the others use the last answer */
	pthread_mutex_unlock(&c->cb_lock);
	if (fresh)
		return ok && (!inodes || iok);
	struct weft_statfs st;
	uint64_t need = c->pool_max * 4 > CB_SPACE_MIN ? c->pool_max * 4 : CB_SPACE_MIN;
	int err = weft_statfs(c, &st);
	ok = err == 0 && st.bavail * st.bsize > need;
	iok = err == 0 && st.ffree > CB_INODES_MIN; /* 0 once meta's disk is full */
	pthread_mutex_lock(&c->cb_lock);
	c->cb_space_ok = ok;
	c->cb_inodes_ok = iok;
	pthread_mutex_unlock(&c->cb_lock);
	return ok && (!inodes || iok);
}

bool client_close_defer(struct weft_file *f)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	if (!c->close_behind || !weft_file_writable(f) ||
	    f->session <= atomic_load(&c->fenced_upto) || !client_space_to_spare(c, false))
		return false;
	pthread_mutex_lock(&wi->lock);
	bool created = wi->wb_created, failed = wi->error != 0;
	pthread_mutex_unlock(&wi->lock);
	if (!created || failed) /* a write-behind error already known goes to this close */
		return false;
	pthread_mutex_lock(&c->cb_lock);
	bool deferred = !wi->cb_off;
	if (deferred) {
		wi->cb_cred = f->cred;
		wi->cb_session = f->session;
		if (!wi->cb_pending) {
			client_winode_hold(c, wi); /* the list's ref */
			wi->cb_pending = true;
			wi->cb_next = c->cb_list;
			c->cb_list = wi;
		}
	}
	pthread_mutex_unlock(&c->cb_lock);
	return deferred;
}

/* Takes wi off c->cb_list (cb_lock held; it is there). */
static void unlist(struct weft_client *c, struct winode *wi)
{
	struct winode **pp = &c->cb_list;
	while (*pp != wi)
		pp = &(*pp)->cb_next;
	*pp = wi->cb_next;
	wi->cb_next = NULL;
}

bool client_close_begin(struct weft_client *c, struct winode *wi)
{
	pthread_mutex_lock(&c->cb_lock);
	bool was = wi->cb_pending;
	if (was) {
		wi->cb_pending = false;
		unlist(c, wi);
		c->cb_running++;
	}
	pthread_mutex_unlock(&c->cb_lock);
	if (was)
		client_winode_put(c, wi); /* the list's: the flusher holds another */
	return was;
}

void client_close_settled(struct weft_client *c, int err)
{
	pthread_mutex_lock(&c->cb_lock);
	if (err && !c->cb_err)
		c->cb_err = err;
	if (--c->cb_running == 0)
		pthread_cond_broadcast(&c->cb_cond);
	pthread_mutex_unlock(&c->cb_lock);
}

/* Runs wi's pending flush, if it still has one (flush_lock held). */
static void flush_pending(struct weft_client *c, struct winode *wi)
{
	pthread_mutex_lock(&c->cb_lock);
	bool pending = wi->cb_pending;
	struct weft_cred cred = wi->cb_cred;
	uint64_t session = wi->cb_session;
	pthread_mutex_unlock(&c->cb_lock);
	if (!pending)
		return;
	int err = client_winode_flush_locked(c, wi, &cred, session, NULL);
	if (err)
		log_warn("flush behind the close of inode %llu: %s (reported by the next sync)",
			 (unsigned long long)wi->ino, weft_strerror(err));
}

void client_close_recall(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return;
	pthread_mutex_lock(&c->cb_lock);
	wi->cb_off = true; /* another client is interested: closes flush again */
	pthread_mutex_unlock(&c->cb_lock);
	struct timespec until = loop_deadline_ms(CB_RECALL_LOCK_MS);
	if (pthread_mutex_timedlock(&wi->flush_lock, &until) == 0) {
		flush_pending(c, wi);
		pthread_mutex_unlock(&wi->flush_lock);
	} else {
		log_warn("recall of inode %llu: its flush has been under way for %d ms; "
			 "answered without waiting for it", (unsigned long long)ino,
			 CB_RECALL_LOCK_MS);
	}
	client_winode_put(c, wi);
}

void client_settle_ino(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return;
	pthread_mutex_lock(&wi->flush_lock);
	flush_pending(c, wi);
	pthread_mutex_unlock(&wi->flush_lock);
	client_wbattr_flush(c, wi, false, false); /* its error waits for the next flush */
	client_winode_put(c, wi);
}

int client_close_flush_all(struct weft_client *c, bool take_err)
{
	for (;;) {
		pthread_mutex_lock(&c->cb_lock);
		struct winode *wi = c->cb_list;
		if (wi)
			client_winode_hold(c, wi);
		pthread_mutex_unlock(&c->cb_lock);
		if (!wi)
			break;
		pthread_mutex_lock(&wi->flush_lock);
		flush_pending(c, wi);
		pthread_mutex_unlock(&wi->flush_lock);
		client_winode_put(c, wi);
	}
	pthread_mutex_lock(&c->cb_lock);
	while (c->cb_running)
		pthread_cond_wait(&c->cb_cond, &c->cb_lock);
	int err = c->cb_err;
	if (take_err)
		c->cb_err = 0;
	pthread_mutex_unlock(&c->cb_lock);
	return err;
}
