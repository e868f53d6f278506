/* libweft open files: write-behind in stripe-unit blocks bounded by the pagepool,
 * readahead windows for sequential readers, size tracking, flush, fsync, release.
 *
 * Locking: wi->lock guards a winode's state and is never held while waiting for the
 * network (replies complete on the loop thread, and their callbacks take wi->lock). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

#define DIRTY_BLOCKS_MAX 4   /* unsent blocks gathered per inode before the oldest is sent */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

/* Finds or creates the winode of ino, taking a reference. */
static struct winode *winode_get(struct weft_client *c, const struct weft_attr *a,
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
		pthread_cond_init(&w->cond, NULL);
		w->next = *pp;
		*pp = w;
	}
	w->refs++;
	pthread_mutex_unlock(&c->inodes_lock);
	return w;
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
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->alloc);
	free(w);
}

/* ---- write-behind ---- */

/* Buffer size for `need` bytes of a block that has `room` bytes left from its start:
 * whole 64 KiB units, never past the block's end. */
static uint32_t gather_cap(uint32_t need, uint32_t room)
{
	uint32_t cap = (need + 65535u) & ~65535u;
	return cap < room ? cap : room;
}

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
	       err == -ETIMEDOUT || err == -ESHUTDOWN || head_unreachable(err);
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
	if (b->status && retryable(b->status)) {
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
static void block_submit(struct weft_client *c, struct winode *wi, struct wblock *b)
{
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
	pthread_mutex_unlock(&wi->lock);
	int err = client_data_write_block(c, &wi->layout, b, block_sent);
	if (err) {
		b->status = err;
		block_sent(b);
	}
	pthread_mutex_lock(&wi->lock);
}

/* Sends every gathered block; wi->lock held. */
static void submit_dirty(struct weft_client *c, struct winode *wi)
{
	while (wi->dirty) {
		struct wblock *b = wi->dirty;
		wi->dirty = b->next;
		block_submit(c, wi, b);
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
static int drain(struct weft_client *c, struct winode *wi)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int round = 0;; round++) {
		submit_dirty(c, wi);
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
static void drain_range(struct weft_client *c, struct winode *wi, uint64_t off, uint64_t len)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t first = off / su, last = (off + len - 1) / su;
	bool overlap = false;
	for (struct wblock *b = wi->dirty; b; b = b->next)
		overlap |= b->block >= first && b->block <= last;
	for (struct wblock *b = wi->inflight; b; b = b->next)
		overlap |= b->block >= first && b->block <= last;
	if (overlap || wi->retry) {
		int err = drain(c, wi);
		if (err && !wi->error)
			wi->error = err; /* keep it for flush/close */
	}
}

ssize_t weft_file_write(struct weft_file *f, const void *buf, size_t len, uint64_t off)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	if (len == 0)
		return 0;
	if (off > (uint64_t)WEFT_FILE_SIZE_MAX || len > (uint64_t)WEFT_FILE_SIZE_MAX - off)
		return -EFBIG;
	if (client_file_fenced(f))
		return -EIO; /* opened in a session meta evicted: nothing more of it lands */
	const uint8_t *src = buf;
	uint64_t su = wi->layout.stripe_unit;
	pthread_mutex_lock(&wi->lock);
	if (wi->retry && !wi->error)
		wi->error = drain(c, wi); /* resend failed blocks before they pile up */
	if (wi->error) {
		int err = wi->error; /* kept: flush and close report it too */
		pthread_mutex_unlock(&wi->lock);
		return err;
	}
	wi->wgen++; /* fetches under way may hold the old bytes: they are not kept */
	if (wi->ra)
		client_ra_drop(c, wi);
	size_t done = 0;
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t block = pos / su, bstart = block * su;
		uint32_t n = (uint32_t)(su - (pos - bstart));
		if (n > len - done)
			n = (uint32_t)(len - done);
		/* the gathering block of this file block, if the write continues it */
		struct wblock **pp = &wi->dirty, *b = NULL;
		int ndirty = 0;
		for (; *pp; pp = &(*pp)->next, ndirty++) {
			if ((*pp)->block == block) {
				b = *pp;
				break;
			}
		}
		if (b && !(pos >= b->file_off && pos <= b->file_off + b->len)) {
			*pp = b->next; /* not contiguous: send what it has, start anew */
			block_submit(c, wi, b);
			b = NULL;
		}
		uint64_t end = pos + n;
		if (!b) {
			if (ndirty >= DIRTY_BLOCKS_MAX) {
				struct wblock *old = wi->dirty;
				wi->dirty = old->next;
				block_submit(c, wi, old);
			}
			/* the buffer starts where the write does and grows as it continues, so a
			 * small file costs a small buffer, not a stripe unit */
			uint32_t cap = gather_cap(n, (uint32_t)(bstart + su - pos));
			pthread_mutex_unlock(&wi->lock);
			client_pool_take(c, cap);
			b = calloc(1, sizeof(*b));
			uint8_t *data = b ? malloc(cap) : NULL;
			pthread_mutex_lock(&wi->lock);
			if (!data) {
				free(b);
				client_pool_give(c, cap);
				pthread_mutex_unlock(&wi->lock);
				return done ? (ssize_t)done : -ENOMEM;
			}
			*b = (struct wblock){.wi = wi, .file_off = pos, .len = 0, .cap = cap,
					     .block = block, .data = data};
			b->next = wi->dirty;
			wi->dirty = b;
		} else if (end - b->file_off > b->cap) {
			uint32_t cap = gather_cap((uint32_t)(end - b->file_off),
						  (uint32_t)(bstart + su - b->file_off));
			if (cap < 2 * b->cap && 2 * b->cap <= bstart + su - b->file_off)
				cap = 2 * b->cap;
			uint8_t *data = realloc(b->data, cap);
			if (!data) {
				pthread_mutex_unlock(&wi->lock);
				return done ? (ssize_t)done : -ENOMEM;
			}
			client_pool_grow(c, cap - b->cap);
			b->data = data;
			b->cap = cap;
		}
		memcpy(b->data + (pos - b->file_off), src + done, n);
		if (end > b->file_off + b->len)
			b->len = (uint32_t)(end - b->file_off);
		if (b->file_off + b->len == bstart + su) {
			/* the block is complete: send it now */
			struct wblock **q = &wi->dirty;
			while (*q != b)
				q = &(*q)->next;
			*q = b->next;
			block_submit(c, wi, b);
		}
		done += n;
	}
	if (off + len > wi->size)
		wi->size = off + len;
	wi->size_dirty = wi->blocks_dirty = true;
	wi->mtime_ns = now_ns();
	pthread_mutex_unlock(&wi->lock);
	return (ssize_t)len;
}

/* ---- reads ---- */

/* A reader that continues where it stopped (or its kernel read-ahead, which may arrive
 * out of order, up to a window behind) gets the next stripe units fetched in parallel.
 * A read elsewhere is remembered (ra_alt_end); a second read continuing it starts a new
 * run from there (a reader that went back to the start). A reader that only ever follows
 * another one through the same file does not take the run over from it, as its reads
 * are not consecutive. wi->lock held. */
static bool read_sequential(struct weft_client *c, struct winode *wi, uint64_t off, size_t len)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t b = off / su, at = wi->ra_next / su;
	uint64_t back = wi->ra_window > c->readahead_units ? wi->ra_window : c->readahead_units;
	if (b <= at + 1 && b + back >= at) {
		if (off + len > wi->ra_next)
			wi->ra_next = off + len;
		wi->ra_alt_end = 0;
		return true;
	}
	if (wi->ra_alt_end && (off == wi->ra_alt_end || b == wi->ra_alt_end / su)) {
		wi->ra_next = off + len;
		wi->ra_hwm = 0;
		wi->ra_alt_end = 0;
		return true;
	}
	wi->ra_alt_end = off + len;
	return false;
}

/* Start of a read: takes wi->lock, cuts *len at the file's size, waits for this file's
 * buffered writes in the range, and notes whether the read continues a sequential run.
 * False (lock released) when there is nothing to read. */
static bool read_begin(struct weft_client *c, struct winode *wi, uint64_t off, size_t *len,
		       bool *sequential)
{
	pthread_mutex_lock(&wi->lock);
	if (off >= wi->size || *len == 0) {
		pthread_mutex_unlock(&wi->lock);
		return false;
	}
	if (*len > wi->size - off)
		*len = (size_t)(wi->size - off);
	drain_range(c, wi, off, *len);
	*sequential = read_sequential(c, wi, off, *len);
	return true;
}

ssize_t weft_file_read(struct weft_file *f, void *buf, size_t len, uint64_t off)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	bool sequential;
	if (!read_begin(c, wi, off, &len, &sequential))
		return 0;
	if (client_ra_take(c, wi, off, len, buf)) {
		if (sequential)
			client_ra_ahead(c, wi, off + len);
		pthread_mutex_unlock(&wi->lock);
		return (ssize_t)len;
	}
	if (sequential)
		client_ra_ahead(c, wi, off + len);
	pthread_mutex_unlock(&wi->lock);
	int err = client_data_read_range(c, wi, wi->ino, &wi->layout, off, len, buf);
	return err ? err : (ssize_t)len;
}

/* Pins the readahead blocks holding the range and points v at their bytes; their
 * checksums are checked here, outside wi->lock, so the kernel's requests handled by
 * several threads are checked at once. Anything else (a range readahead does not hold,
 * a hole or short object to fill with zeros, a bad checksum) takes the copying path,
 * which reads again with replica failover. */
ssize_t weft_file_read_view(struct weft_file *f, size_t len, uint64_t off,
			    struct weft_read_view *v)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	struct ra_block *bs[WEFT_VIEW_IOV];
	bool checked[WEFT_VIEW_IOV];
	v->niov = 0;
	v->npins = 0;
	v->buf = NULL;
	bool sequential;
	if (!read_begin(c, wi, off, &len, &sequential))
		return 0;
	uint64_t su = wi->layout.stripe_unit;
	bool pinned = client_ra_pin(c, wi, off, len, bs, checked, WEFT_VIEW_IOV);
	if (sequential)
		client_ra_ahead(c, wi, off + len); /* pinned blocks stay while it drops the lock */
	pthread_mutex_unlock(&wi->lock);
	if (pinned) {
		int n = (int)((off + len - 1) / su - off / su + 1);
		signed char verdict[WEFT_VIEW_IOV] = {0};
		bool all = true;
		for (int i = 0; i < n && all; i++) {
			struct ra_block *b = bs[i];
			uint64_t bstart = b->block * su;
			uint64_t from = off > bstart ? off : bstart;
			uint64_t to = off + len < bstart + su ? off + len : bstart + su;
			if (!b->reply || to - bstart > b->reply->h.bulk_len) {
				all = false; /* zeros to fill in: the copying path */
				break;
			}
			verdict[i] = checked[i] ||
				     client_data_read_verify(c, b->reply, b->obj_off, b->len) == 0 ? 1 : -1;
			all = verdict[i] > 0;
			v->iov[i] = (struct iovec){b->reply->bulk + (from - bstart), to - from};
		}
		if (all) {
			v->niov = n;
			v->npins = n;
			memcpy(v->pins, bs, sizeof(bs[0]) * (size_t)n);
			return (ssize_t)len;
		}
		pthread_mutex_lock(&wi->lock);
		client_ra_unpin(c, wi, bs, n, verdict); /* only what was checked counts as checked */
		pthread_mutex_unlock(&wi->lock);
	}
	v->buf = malloc(len);
	if (!v->buf)
		return -ENOMEM;
	ssize_t got = weft_file_read(f, v->buf, len, off);
	if (got > 0) {
		v->iov[0] = (struct iovec){v->buf, (size_t)got};
		v->niov = 1;
	}
	return got;
}

void weft_read_view_release(struct weft_file *f, struct weft_read_view *v)
{
	if (v->npins) {
		struct winode *wi = f->wi;
		pthread_mutex_lock(&wi->lock);
		client_ra_unpin(f->c, wi, (struct ra_block **)v->pins, v->npins, NULL);
		pthread_mutex_unlock(&wi->lock);
		v->npins = 0;
	}
	free(v->buf);
	v->buf = NULL;
	v->niov = 0;
}

/* ---- open, flush, fsync, release ---- */

int weft_file_flush(struct weft_file *f)
{
	struct weft_client *c = f->c;
	struct winode *wi = f->wi;
	/* the data goes to the stores and the new size to meta at the same time: both are
	 * done before close returns, which is what another client's open relies on */
	pthread_mutex_lock(&wi->lock);
	submit_dirty(c, wi);
	/* after writes, the report waits for the data: st_blocks is what the stores hold
	 * once it is there (their write replies, or OBJ_EXTENT: sparse_allocated) */
	bool blocks = wi->blocks_dirty;
	bool report = wi->size_dirty || blocks;
	bool fenced = f->session <= atomic_load(&c->fenced_upto);
	if (fenced)
		report = blocks = false; /* an evicted session's size never reaches meta */
	uint8_t mask[WEFT_WRITTEN_MAX];
	uint32_t ml = 0;
	for (uint32_t i = 0; i < WEFT_WRITTEN_MAX; i++)
		if ((mask[i] = __atomic_load_n(&wi->written[i], __ATOMIC_RELAXED) |
			       __atomic_load_n(&wi->sent[i], __ATOMIC_RELAXED)) != 0)
			ml = i + 1;
	struct weft_msg_extend m = {.cred = f->cred, .ino = wi->ino, .size = wi->size,
				    .mtime_ns = wi->mtime_ns, .written = {(const char *)mask, ml}};
	wi->size_dirty = wi->blocks_dirty = false;
	pthread_mutex_unlock(&wi->lock);
	struct meta_wait mw;
	if (report && !blocks) {
		struct wbuf w;
		wbuf_init(&w);
		weft_extend_encode(&w, &m);
		client_meta_start(c, WEFT_OP_EXTEND, &w, &mw);
	}
	pthread_mutex_lock(&wi->lock);
	int err = drain(c, wi);
	pthread_mutex_unlock(&wi->lock);
	bool measured = false;
	if (report && blocks) {
		uint64_t bytes;
		if (!err && client_sparse_allocated(c, wi, mask, ml, &bytes) == 0) {
			m.has_blocks = 1;
			m.blocks = bytes / 512;
			measured = true;
		}
		struct wbuf w;
		wbuf_init(&w);
		weft_extend_encode(&w, &m);
		client_meta_start(c, WEFT_OP_EXTEND, &w, &mw);
	}
	if (report) {
		int e2 = client_meta_wait(&mw);
		if (!e2 && measured)
			f->blocks_reported = true;
		if (e2 || (blocks && !measured)) {
			pthread_mutex_lock(&wi->lock);
			wi->size_dirty = e2 || wi->size_dirty; /* report it again next time */
			wi->blocks_dirty = true;
			pthread_mutex_unlock(&wi->lock);
			if (!err)
				err = e2;
		}
	}
	return fenced ? -EIO : err;
}

int weft_file_fsync(struct weft_file *f)
{
	int err = weft_file_flush(f);
	if (err)
		return err;
	err = client_data_fsync(f->c, f->wi->ino, &f->wi->layout);
	if (err)
		return err;
	/* the size the flush reported is durable at meta only after a sync there */
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = f->cred, .ino = f->wi->ino};
	weft_ino_encode(&w, &m);
	return client_meta_call(f->c, WEFT_OP_FSYNC, &w, NULL, 0, NULL);
}

int weft_file_release(struct weft_file *f)
{
	int err = weft_file_flush(f);
	struct weft_client *c = f->c;
	/* not waited for: meta only drops a count in memory, and the request goes on the
	 * same connection as (so before) any later request about the file. A release lost
	 * with the connection to a restarting meta is not needed: the renewed session
	 * reclaims only the opens still counted here. */
	pthread_rwlock_rdlock(&c->sess_lock);
	if (f->session > atomic_load(&c->fenced_upto)) { /* else the open went with it */
		pthread_mutex_lock(&c->inodes_lock);
		f->wi->opens--;
		pthread_mutex_unlock(&c->inodes_lock);
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_release m = {.ino = f->wi->ino, .handle = 0,
					     .session = c->session};
		weft_release_encode(&w, &m);
		client_meta_post(c, WEFT_OP_RELEASE, &w);
	}
	pthread_rwlock_unlock(&c->sess_lock);
	if (weft_file_writable(f)) {
		pthread_mutex_lock(&f->wi->lock);
		f->wi->writers--;
		pthread_mutex_unlock(&f->wi->lock);
	}
	client_winode_put(f->c, f->wi);
	free(f);
	return err;
}

bool weft_file_blocks_changed(struct weft_file *f)
{
	bool r = f->blocks_reported;
	f->blocks_reported = false;
	return r;
}

uint64_t weft_file_size(struct weft_file *f)
{
	pthread_mutex_lock(&f->wi->lock);
	uint64_t s = f->wi->size;
	pthread_mutex_unlock(&f->wi->lock);
	return s;
}

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

static void wi_set_nocap(struct weft_client *c, struct winode *wi, bool absent)
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
	wi_set_nocap(c, wi, absent);
	client_winode_put(c, wi);
}

/* Encodes an OPEN or CREATE_OPEN request (msg) for session sid. */
typedef void (*open_enc_fn)(struct wbuf *w, void *msg, uint64_t sid);

static void enc_open(struct wbuf *w, void *msg, uint64_t sid)
{
	struct weft_msg_open *m = msg;
	m->session = sid;
	weft_open_encode(w, m);
}

static void enc_create_open(struct wbuf *w, void *msg, uint64_t sid)
{
	struct weft_msg_create_open *m = msg;
	m->session = sid;
	weft_create_open_encode(w, m);
}

/* Sends OPEN or CREATE_OPEN (msg, encoded by enc) and makes the open file from the OPENED
 * reply. The open is counted at meta in our session and in the winode (sess_lock held
 * for reading across both, so that a session renewal reclaims exactly what meta
 * counted). ENOENT from a session meta no longer knows (a restart): renew and retry. */
static int open_call(struct weft_client *c, const struct weft_cred *cr, uint16_t op,
		     open_enc_fn enc, void *msg, int flags, struct weft_file **out,
		     struct weft_msg_opened *o)
{
	struct frame *fr;
	int err;
	uint64_t gen = client_recall_gen(c), sid = 0;
	for (int attempt = 0;; attempt++) {
		pthread_rwlock_rdlock(&c->sess_lock);
		sid = c->session;
		struct wbuf w;
		wbuf_init(&w);
		enc(&w, msg, sid);
		err = client_meta_call(c, op, &w, NULL, 0, &fr);
		if (err == -ENOENT && attempt == 0) {
			pthread_rwlock_unlock(&c->sess_lock);
			if (client_session_lost(c, sid) && client_session_renew(c, sid) == 0) {
				frame_free(fr);
				continue;
			}
			pthread_rwlock_rdlock(&c->sess_lock);
		}
		break;
	}
	if (!err && weft_opened_decode(fr->payload, fr->h.payload_len, o, NULL) < 0)
		err = -EIO;
	if (!err)
		client_lease_note(c, o->attr.ino, o->lease, gen);
	/* o->written borrows from the frame: keep a copy */
	uint8_t written[WEFT_WRITTEN_MAX];
	uint32_t wlen = err ? 0 : o->written.len;
	if (wlen)
		memcpy(written, o->written.p, wlen);
	o->written = (struct weft_str){NULL, 0};
	frame_free(fr);
	struct weft_file *f = NULL;
	if (!err && !(f = calloc(1, sizeof(*f))))
		err = -ENOMEM;
	if (!err && o->layout.stripe_unit == 0)
		o->layout.stripe_unit = WEFT_STRIPE_UNIT_DEFAULT;
	if (!err && !(f->wi = winode_get(c, &o->attr, &o->layout)))
		err = -ENOMEM;
	if (err) {
		pthread_rwlock_unlock(&c->sess_lock);
		free(f);
		/* an open meta counted but we cannot use: give it back */
		if (err == -ENOMEM) {
			struct wbuf w;
			wbuf_init(&w);
			struct weft_msg_release m = {.ino = o->attr.ino, .session = c->session};
			weft_release_encode(&w, &m);
			client_meta_post(c, WEFT_OP_RELEASE, &w);
		}
		return err;
	}
	pthread_mutex_lock(&c->inodes_lock);
	f->wi->opens++;
	pthread_mutex_unlock(&c->inodes_lock);
	pthread_rwlock_unlock(&c->sess_lock);
	f->c = c;
	f->cred = *cr;
	f->flags = flags;
	f->session = sid;
	if ((flags & O_ACCMODE) != O_RDONLY) {
		pthread_mutex_lock(&f->wi->lock);
		f->wi->writers++;
		pthread_mutex_unlock(&f->wi->lock);
	}
	for (uint32_t i = 0; i < wlen; i++)
		__atomic_fetch_or(&f->wi->written[i], written[i], __ATOMIC_RELAXED);
	*out = f;
	return 0;
}

static void wi_fix_size(struct winode *wi, struct weft_attr *a);

int weft_create(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint32_t mode, int flags, bool excl, struct weft_file **out,
		struct weft_attr *attr)
{
	flags &= ~(O_TRUNC | O_CREAT | O_EXCL);
	struct weft_msg_create_open m = {.cred = *cr, .parent = parent,
					 .name = weft_str_of(name, strlen(name)),
					 .mode = (mode & 07777) | S_IFREG,
					 .flags = excl ? WEFT_CREATE_EXCL : 0,
					 .open_flags = (uint32_t)flags};
	struct weft_msg_opened o;
	int err = open_call(c, cr, WEFT_OP_CREATE_OPEN, enc_create_open, &m, flags, out, &o);
	if (err)
		return err;
	/* the open holds the winode: one lookup per create (open_call's) */
	if (o.created)
		wi_set_nocap(c, (*out)->wi, true); /* a new inode has no xattrs */
	wi_fix_size((*out)->wi, &o.attr);
	if (attr)
		*attr = o.attr;
	return 0;
}

int weft_file_open(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, int flags,
		   struct weft_file **out, struct weft_attr *attr)
{
	struct weft_msg_open m = {.cred = *cr, .ino = ino, .flags = (uint32_t)flags};
	struct weft_msg_opened o;
	struct weft_file *f;
	int err = open_call(c, cr, WEFT_OP_OPEN, enc_open, &m, flags, &f, &o);
	if (err)
		return err;
	if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && S_ISREG(o.attr.mode)) {
		struct weft_attr in = {.size = 0};
		err = weft_setattr(c, cr, ino, WEFT_SET_SIZE, &in, &o.attr);
		if (err) {
			weft_file_release(f);
			return err;
		}
	}
	client_fix_size(c, &o.attr);
	if (attr)
		*attr = o.attr;
	*out = f;
	return 0;
}

bool weft_open_for_write(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return false;
	pthread_mutex_lock(&wi->lock);
	bool r = wi->writers > 0;
	pthread_mutex_unlock(&wi->lock);
	client_winode_put(c, wi);
	return r;
}

bool weft_file_writable(struct weft_file *f)
{
	return (f->flags & O_ACCMODE) != O_RDONLY;
}

int client_truncate_local(struct weft_client *c, uint64_t ino, uint64_t size)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return 0;
	pthread_mutex_lock(&wi->lock);
	int err = drain(c, wi);
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
static void wi_fix_size(struct winode *wi, struct weft_attr *a)
{
	pthread_mutex_lock(&wi->lock);
	bool local = wi->size_dirty || wi->dirty || wi->inflight;
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
	pthread_mutex_unlock(&wi->lock);
	if (writing && a->size / 512 > a->blocks)
		a->blocks = (a->size + 511) / 512;
}

void client_fix_size(struct weft_client *c, struct weft_attr *a)
{
	struct winode *wi = client_winode_find(c, a->ino);
	if (!wi)
		return;
	wi_fix_size(wi, a);
	client_winode_put(c, wi);
}
