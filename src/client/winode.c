/* libweft's per-inode write state (struct winode, client_int.h): the table of winodes by
 * inode number, sending and draining write-behind blocks, the security.capability cache,
 * and the size this client knows. file.c (open files) and ns.c / attr.c (meta calls)
 * both use it; it calls neither.
 *
 * Locking: wi->lock guards a winode's state and is never held while waiting for the
 * network (replies complete on the loop thread, and their callbacks take wi->lock). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

/* ---- the inode table ---- */

static size_t slot(struct weft_client *c, uint64_t ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 40) % c->inodes_cap;
}

/* Stripe of the file holding block b. */
static uint32_t block_stripe(const struct winode *wi, const struct wblock *b)
{
	uint32_t sc = wi->layout.stripe_count ? wi->layout.stripe_count : 1;
	return (uint32_t)((b->file_off / wi->layout.stripe_unit) % sc);
}

bool client_winode_written(const struct winode *wi, uint32_t s)
{
	return wi && s / 8 < WEFT_WRITTEN_MAX &&
	       (__atomic_load_n(&wi->written[s / 8], __ATOMIC_RELAXED) >> (s % 8)) & 1;
}

struct winode *client_winode_find(struct weft_client *c, uint64_t ino)
{
	pthread_mutex_lock(&c->inodes_lock);
	struct winode *w = c->inodes[slot(c, ino)];
	while (w && w->ino != ino)
		w = w->next;
	if (w)
		w->refs++;
	pthread_mutex_unlock(&c->inodes_lock);
	return w;
}

void client_winode_freeze(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return;
	pthread_mutex_lock(&wi->lock);
	wi->frozen = true;
	int err = client_wb_drain(c, wi);
	if (err && !wi->error)
		wi->error = err; /* reported by the next flush or close, as any write's */
	wi->wgen++;
	client_ra_drop(c, wi);
	pthread_mutex_unlock(&wi->lock);
	client_winode_put(c, wi);
}

/* GETSTRIPE of ino: its layout and whether a migration of it is under way. */
static int layout_fetch(struct weft_client *c, uint64_t ino, struct weft_layout *l,
			bool *migrating)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.ino = ino};
	proto_ino_encode(&w, &m);
	struct frame *f = NULL;
	int err = client_meta_call(c, WEFT_OP_GETSTRIPE, &w, NULL, 0, &f);
	struct weft_msg_layout lm;
	if (err == 0 && proto_layout_decode(f->payload, f->h.payload_len, &lm, NULL) < 0)
		err = -EIO;
	if (err == 0) {
		*l = lm.layout;
		*migrating = lm.migrating;
	}
	frame_free(f);
	return err;
}

/* The migration is over: take layout l (wi->lock held). */
static void thaw(struct weft_client *c, struct winode *wi, const struct weft_layout *l)
{
	wi->frozen = false;
	if (l->gen == wi->layout.gen)
		return; /* given up: the old layout stays */
	wi->layout = *l;
	/* the masks and st_blocks counts were of the old generation's stripes */
	memset(wi->written, 0, sizeof(wi->written));
	memset(wi->sent, 0, sizeof(wi->sent));
	memset(wi->lost, 0, sizeof(wi->lost));
	memset(wi->alloc_known, 0, sizeof(wi->alloc_known));
	free(wi->alloc);
	wi->alloc = NULL;
	wi->wgen++;
	client_ra_drop(c, wi);
}

#define THAW_POLL_MS 20

void client_winode_lock_ready(struct weft_client *c, struct winode *wi)
{
	pthread_mutex_lock(&wi->lock);
	while (wi->frozen) {
		pthread_mutex_unlock(&wi->lock);
		usleep(THAW_POLL_MS * 1000);
		struct weft_layout l;
		bool migrating = true;
		int err = layout_fetch(c, wi->ino, &l, &migrating);
		pthread_mutex_lock(&wi->lock);
		if (!wi->frozen || (err == 0 && migrating))
			continue;
		if (err == 0)
			thaw(c, wi, &l);
		else if (err == -ESTALE || err == -ENOENT)
			wi->frozen = false; /* the file is gone: its I/O fails as it would */
		/* other errors (meta away): ask again */
	}
}

/* Finds or creates the winode of ino, taking a reference. */
struct winode *client_winode_get(struct weft_client *c, const struct weft_attr *a,
				 const struct weft_layout *l)
{
	pthread_mutex_lock(&c->inodes_lock);
	struct winode **pp = &c->inodes[slot(c, a->ino)];
	struct winode *w = *pp;
	while (w && w->ino != a->ino)
		w = w->next;
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w) {
			pthread_mutex_unlock(&c->inodes_lock);
			return NULL;
		}
		w->c = c;
		w->ino = a->ino;
		w->layout = *l;
		w->size = a->size;
		w->mtime_ns = a->mtime_ns;
		pthread_mutex_init(&w->lock, NULL);
		pthread_mutex_init(&w->cap_lock, NULL);
		pthread_mutex_init(&w->wb_lock, NULL);
		pthread_mutex_init(&w->flush_lock, NULL);
		pthread_cond_init(&w->cond, NULL);
		w->next = *pp;
		*pp = w;
	}
	w->refs++;
	pthread_mutex_unlock(&c->inodes_lock);
	return w;
}

void client_winode_hold(struct weft_client *c, struct winode *w)
{
	pthread_mutex_lock(&c->inodes_lock);
	w->refs++;
	pthread_mutex_unlock(&c->inodes_lock);
}

void client_winode_put(struct weft_client *c, struct winode *w)
{
	pthread_mutex_lock(&c->inodes_lock);
	if (--w->refs > 0) {
		pthread_mutex_unlock(&c->inodes_lock);
		return;
	}
	struct winode **pp = &c->inodes[slot(c, w->ino)];
	while (*pp != w)
		pp = &(*pp)->next;
	*pp = w->next;
	pthread_mutex_unlock(&c->inodes_lock);
	pthread_mutex_lock(&w->lock);
	client_ra_quiesce(c, w); /* prefetches in flight point at w */
	client_wb_discard(c, w); /* none unless its data had nowhere to go */
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->cap_lock);
	pthread_mutex_destroy(&w->wb_lock);
	pthread_mutex_destroy(&w->flush_lock);
	pthread_cond_destroy(&w->cond);
	free(w->alloc);
	free(w);
}

/* ---- write-behind: sending and draining blocks ---- */

static void block_free(struct weft_client *c, struct wblock *b)
{
	client_pool_give(c, b->cap);
	free(b->data);
	free(b);
}

/* The head could not be reached: after meta takes it out of the chain, the write can go
 * to the next member. */
static bool head_unreachable(int err)
{
	return err == -ENOTCONN || err == -ECONNRESET || err == -ECONNREFUSED ||
	       err == -EHOSTUNREACH || err == -ECONNABORTED;
}

/* Errors after which a resend may succeed: a stale chain table, a member that failed
 * (meta has been told and will change the chain), a head that cannot be reached. */
static bool retryable(int err)
{
	return err == -WEFT_ESTALECHAIN || err == -WEFT_ETARGETDOWN || err == -WEFT_ENOTSERVING ||
	       err == -ETIMEDOUT || err == -ESHUTDOWN || err == -WEFT_ECAPEXPIRED ||
	       head_unreachable(err);
}

/* Completion of a block's send (loop thread). */
static void block_sent(struct wblock *b)
{
	struct winode *wi = b->wi;
	struct weft_client *c = wi->c;
	uint32_t s = block_stripe(wi, b);
	if (b->status == 0 && s / 8 < WEFT_WRITTEN_MAX) { /* the stores have it: reads may say so */
		__atomic_fetch_or(&wi->written[s / 8], (uint8_t)(1u << (s % 8)), __ATOMIC_RELAXED);
		__atomic_fetch_and(&wi->lost[s / 8], (uint8_t)~(1u << (s % 8)), __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&wi->lock);
	struct wblock **pp = &wi->inflight;
	while (*pp && *pp != b)
		pp = &(*pp)->next;
	if (*pp)
		*pp = b->next;
	wi->ninflight--;
	bool keep = false;
	if (b->status == -WEFT_ECAPEXPIRED)
		client_cap_stale(wi);
	/* A checksum mismatch at the store: the bytes changed on the way (the CRCs are all
	 * that guards it at wire level none), so the buffer is sent again, twice at most:
	 * a mismatch that persists is something else (memory, a broken link) and fails. */
	bool resend_checksum = b->status == -WEFT_ECHECKSUM && b->checksum_retries < 2;
	if (resend_checksum) {
		b->checksum_retries++;
		log_warn("write of ino %llu at %llu: %s; sending it again",
			 (unsigned long long)wi->ino, (unsigned long long)b->file_off,
			 weft_strerror(b->status));
	}
	if (b->status && (retryable(b->status) || resend_checksum)) {
		b->next = wi->retry;
		wi->retry = b;
		keep = true;
	} else if (b->status && !wi->error) {
		log_warn("write of ino %llu at %llu: %s; reported at the next flush or close",
			 (unsigned long long)wi->ino, (unsigned long long)b->file_off,
			 weft_strerror(b->status));
		wi->error = b->status == -WEFT_ECHECKSUM || b->status == -WEFT_ETARGETDOWN ||
				    b->status == -WEFT_ENOTSERVING
			    ? -EIO
			    : b->status;
	}
	pthread_cond_broadcast(&wi->cond);
	pthread_mutex_unlock(&wi->lock);
	if (!keep)
		block_free(c, b);
}

/* Sends block b (already unlinked from the dirty list); wi->lock held on entry and exit,
 * dropped while sending. Waits first for an in-flight block of the same file block, so
 * that overlapping writes reach the store in order. */
void client_wb_submit(struct weft_client *c, struct winode *wi, struct wblock *b)
{
	while (wi->acreate_pending) /* no layout until meta answered the create (acreate.c) */
		pthread_cond_wait(&wi->cond, &wi->lock);
	for (;;) {
		bool busy = false;
		for (struct wblock *x = wi->inflight; x; x = x->next)
			if (x->block == b->block)
				busy = true;
		if (!busy)
			break;
		pthread_cond_wait(&wi->cond, &wi->lock);
	}
	b->next = wi->inflight;
	wi->inflight = b;
	wi->ninflight++;
	if (!wi->alloc) /* NULL (no memory): st_blocks is asked of the stores instead */
		wi->alloc = calloc(wi->layout.stripe_count ? wi->layout.stripe_count : 1,
				   sizeof(*wi->alloc));
	uint32_t s = block_stripe(wi, b);
	if (s / 8 < WEFT_WRITTEN_MAX && !(wi->sent[s / 8] & (1u << (s % 8)))) {
		__atomic_fetch_or(&wi->sent[s / 8], (uint8_t)(1u << (s % 8)), __ATOMIC_RELAXED);
		wi->size_dirty = true; /* EXTEND carries the new bit to meta */
	}
	int cerr = wi->acreate_err;
	pthread_mutex_unlock(&wi->lock);
	int err = cerr ? cerr : client_data_write_block(c, &wi->layout, b, block_sent);
	if (err) {
		b->status = err;
		block_sent(b);
	}
	pthread_mutex_lock(&wi->lock);
}

void client_wb_discard(struct weft_client *c, struct winode *wi)
{
	for (struct wblock **l = &wi->dirty; l; l = l == &wi->dirty ? &wi->retry : NULL)
		while (*l) {
			struct wblock *b = *l;
			*l = b->next;
			block_free(c, b);
		}
}

/* Sends every gathered block; wi->lock held. */
void client_wb_submit_dirty(struct weft_client *c, struct winode *wi)
{
	while (wi->dirty) {
		struct wblock *b = wi->dirty;
		wi->dirty = b->next;
		client_wb_submit(c, wi, b);
	}
}

/* Sends everything and waits until nothing is in flight, resending blocks that failed
 * for a retryable reason (a stale chain table, a dropped connection, a member being
 * taken out) for up to WRITE_RETRY_MS, pausing 100 ms more each round (at most 1 s)
 * and fetching the chain table before each resend. The bound is above meta's default
 * detection time of a silent target (its 10 s heartbeat timeout), so a failover
 * completes within it; a head only this client cannot reach (meta's probe finds it
 * alive) makes the write wait that long, then fail with EIO.
 * wi->lock held. Returns the first error, which it clears. */
#define WRITE_RETRY_MS 60000
int client_wb_drain(struct weft_client *c, struct winode *wi)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int round = 0;; round++) {
		client_wb_submit_dirty(c, wi);
		while (wi->ninflight > 0)
			pthread_cond_wait(&wi->cond, &wi->lock);
		if (!wi->retry)
			break;
		struct wblock *r = wi->retry;
		wi->retry = NULL;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t spent = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= WRITE_RETRY_MS) {
			log_warn("ino %llu: writes still failing after %d s (%s): EIO",
				 (unsigned long long)wi->ino, WRITE_RETRY_MS / 1000,
				 weft_strerror(r->status));
			while (r) {
				struct wblock *next = r->next;
				if (!wi->error)
					wi->error = -EIO;
				block_free(c, r);
				r = next;
			}
			break;
		}
		/* report unreachable heads (once each), give meta a moment, refresh, resend */
		uint32_t reported[8];
		int nrep = 0;
		for (struct wblock *x = r; x; x = x->next) {
			if (!head_unreachable(x->status))
				continue;
			bool seen = false;
			for (int i = 0; i < nrep; i++)
				seen |= reported[i] == x->target;
			if (seen || nrep == 8)
				continue;
			reported[nrep++] = x->target;
			pthread_mutex_unlock(&wi->lock);
			client_report_failed(c, x->target, x->chain, wi->layout.replicas);
			pthread_mutex_lock(&wi->lock);
		}
		pthread_mutex_unlock(&wi->lock);
		uint64_t seen = chaincache_gen(c->cc);
		long ms = 100L * (round + 1) > 1000 ? 1000 : 100L * (round + 1);
		struct timespec pause = {0, ms * 1000000L};
		nanosleep(&pause, NULL);
		chaincache_refresh(c->cc, seen); /* unless another file's resend just did */
		pthread_mutex_lock(&wi->lock);
		while (r) {
			struct wblock *next = r->next;
			r->next = wi->dirty;
			wi->dirty = r;
			r = next;
		}
	}
	int err = wi->error;
	wi->error = 0;
	return err;
}

/* Sends and waits for blocks overlapping [off, off+len) so a read sees this client's
 * writes. wi->lock held. */
void client_wb_drain_range(struct weft_client *c, struct winode *wi, uint64_t off, uint64_t len)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t first = off / su, last = (off + len - 1) / su;
	bool overlap = false;
	for (struct wblock *b = wi->dirty; b; b = b->next)
		overlap |= b->block >= first && b->block <= last;
	for (struct wblock *b = wi->inflight; b; b = b->next)
		overlap |= b->block >= first && b->block <= last;
	if (overlap || wi->retry) {
		int err = client_wb_drain(c, wi);
		if (err && !wi->error)
			wi->error = err; /* keep it for flush/close */
	}
}

/* ---- security.capability cache ---- */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool client_winode_nocap(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return false;
	pthread_mutex_lock(&wi->lock);
	bool absent = mono_ns() < wi->nocap_until;
	pthread_mutex_unlock(&wi->lock);
	client_winode_put(c, wi);
	return absent;
}

void client_winode_mark_nocap(struct weft_client *c, struct winode *wi, bool absent)
{
	pthread_mutex_lock(&wi->lock);
	wi->nocap_until = absent ? mono_ns() + c->attr_timeout_ns : 0;
	pthread_mutex_unlock(&wi->lock);
}

void client_winode_set_nocap(struct weft_client *c, uint64_t ino, bool absent)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return;
	client_winode_mark_nocap(c, wi, absent);
	client_winode_put(c, wi);
}

/* ---- size ---- */

int client_truncate_local(struct weft_client *c, uint64_t ino, uint64_t size)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return 0;
	pthread_mutex_lock(&wi->lock);
	int err = client_wb_drain(c, wi);
	wi->size = size;
	wi->wgen++;
	for (uint32_t i = 0; i < WEFT_WRITTEN_MAX; i++) /* st_blocks: ask the stores next */
		__atomic_store_n(&wi->alloc_known[i], 0, __ATOMIC_RELAXED);
	uint32_t sc = wi->layout.stripe_count ? wi->layout.stripe_count : 1;
	for (uint32_t i = 0; wi->alloc && i < sc; i++)
		__atomic_store_n(&wi->alloc[i], 0, __ATOMIC_RELAXED);
	client_ra_drop(c, wi);
	pthread_mutex_unlock(&wi->lock);
	client_winode_put(c, wi);
	return err;
}

/* client_fix_size on a winode the caller holds. */
void client_winode_fix_size(struct winode *wi, struct weft_attr *a)
{
	pthread_mutex_lock(&wi->lock);
	bool local = wi->size_dirty || wi->dirty || wi->inflight || wi->flushing;
	if (!local && wi->size_refresh) { /* changed elsewhere (a recall): meta knows */
		wi->size = a->size;
		wi->size_refresh = false;
	}
	if (local) {
		a->size = wi->size;
		if (wi->mtime_ns > a->mtime_ns)
			a->mtime_ns = wi->mtime_ns;
	}
	/* while writes are on their way, count them as allocated (meta learns the stores'
	 * figure at the next flush) */
	bool writing = wi->blocks_dirty;
	client_wbattr_overlay(wi, a); /* chmod, chown, utimes not yet at meta (wbattr.c) */
	pthread_mutex_unlock(&wi->lock);
	if (writing && a->size / 512 > a->blocks)
		a->blocks = (a->size + 511) / 512;
}

void client_fix_size(struct weft_client *c, struct weft_attr *a)
{
	struct winode *wi = client_winode_find(c, a->ino);
	if (!wi)
		return;
	client_winode_fix_size(wi, a);
	client_winode_put(c, wi);
}
