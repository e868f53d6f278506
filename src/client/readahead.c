/* libweft readahead: when a file is read sequentially, the next stripe units are fetched
 * in parallel (one request each, to the stores holding them) while the reader is served.
 * Completions run on the loop thread and only keep the reply frame in the block and wake
 * waiters: the reader's thread checks its checksums and copies from it (the one loop
 * thread receives for every store, so it does no per-byte work beyond the socket). A
 * block that failed, or fails its checksums, is simply read again, synchronously, with
 * replica failover. Prefetched blocks cost pagepool memory and are taken only when the pool has
 * room, so readahead never blocks a writer.
 *
 * The window (wi->ra_window, in stripe units) starts at the mount's readahead_units and
 * grows by one stripe row each time a reader has to wait for a fetch, up to four rows
 * (every store a file touches has several units in flight). wi->ra_hwm remembers how far
 * fetches already went, so the kernel's requests arriving out of order never fetch a
 * block again that a reader already consumed. A reader that hands the bytes to the
 * kernel itself (ra_pin, weft_file_read_view) pins the blocks instead of copying, and
 * checks their checksums without wi->lock, so several FUSE threads check at once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "net/stats.h"

#define RA_INFLIGHT 0
#define RA_READY    1
#define RA_FAILED   2

static void ra_free(struct weft_client *c, struct ra_block *b)
{
	client_pool_give(c, b->cap);
	frame_free(b->reply);
	free(b);
}

/* The answer held no data: no object, or a hole */
static bool ra_empty(const struct ra_block *b)
{
	return !b->reply || b->reply->h.bulk_len == 0;
}

static void ra_done(void *arg, int err, struct frame *f)
{
	struct ra_block *b = arg;
	struct winode *wi = b->wi;
	struct weft_client *c = wi->c;
	pthread_mutex_lock(&wi->lock);
	wi->ra_inflight--;
	pthread_cond_broadcast(&wi->cond);
	b->reply = f;
	if (b->orphan) { /* an in-flight block is never pinned */
		pthread_mutex_unlock(&wi->lock); /* wi may go away now; b is ours alone */
		ra_free(c, b);
		return;
	}
	b->state = err || b->gen != wi->wgen || (b->need_data && ra_empty(b)) ? RA_FAILED :
									      RA_READY;
	pthread_mutex_unlock(&wi->lock);
}

/* Unlinks b; frees it now, or marks it for its completion to free. */
static void ra_unlink(struct weft_client *c, struct winode *wi, struct ra_block **pp)
{
	struct ra_block *b = *pp;
	*pp = b->next;
	wi->nra--;
	if (b->state == RA_INFLIGHT || b->refs > 0)
		b->orphan = true;
	else
		ra_free(c, b);
}

void client_ra_drop(struct weft_client *c, struct winode *wi)
{
	while (wi->ra)
		ra_unlink(c, wi, &wi->ra);
	wi->ra_hwm = 0;
}

void client_ra_quiesce(struct weft_client *c, struct winode *wi)
{
	client_ra_drop(c, wi);
	while (wi->ra_inflight > 0 || wi->ra_pins > 0)
		pthread_cond_wait(&wi->cond, &wi->lock);
}

/* The most stripe units one file fetches ahead: four rows of its stripes, at least the
 * mount's setting, at most 64 and a quarter of the pagepool. */
static uint32_t ra_window_max(struct weft_client *c, const struct winode *wi)
{
	uint64_t su = wi->layout.stripe_unit;
	uint32_t count = wi->layout.stripe_count ? wi->layout.stripe_count : 1;
	uint64_t w = 4ull * count > c->readahead_units ? 4ull * count : c->readahead_units;
	if (w > 64)
		w = 64;
	if (w > c->pool_max / su / 4)
		w = c->pool_max / su / 4;
	return w > c->readahead_units ? (uint32_t)w : c->readahead_units;
}

/* Waited for a fetch: the reader is ahead of the window, so widen it by a row. */
static void ra_grow(struct weft_client *c, struct winode *wi)
{
	uint32_t count = wi->layout.stripe_count ? wi->layout.stripe_count : 1;
	uint32_t max = ra_window_max(c, wi);
	if (!wi->ra_window)
		wi->ra_window = c->readahead_units;
	wi->ra_window = wi->ra_window + count < max ? wi->ra_window + count : max;
}

/* A block is done with once all of it was read, or when it lies far behind this reader
 * (first: its first block). Not merely behind: the kernel sends a sequential reader's
 * requests from several threads at once, so a block just behind may still be wanted. */
static void ra_trim(struct weft_client *c, struct winode *wi, uint64_t first)
{
	uint32_t win = wi->ra_window ? wi->ra_window : c->readahead_units;
	for (struct ra_block **pp = &wi->ra; *pp;) {
		struct ra_block *b = *pp;
		if (b->state != RA_INFLIGHT && (b->used >= b->len || b->block + win < first))
			ra_unlink(c, wi, pp);
		else
			pp = &b->next;
	}
}

static struct ra_block *ra_find(struct winode *wi, uint64_t block)
{
	for (struct ra_block *b = wi->ra; b; b = b->next)
		if (b->block == block)
			return b;
	return NULL;
}

bool client_ra_take(struct weft_client *c, struct winode *wi, uint64_t off, size_t len, uint8_t *dst)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t first = off / su, last = (off + len - 1) / su;
	/* every block must be there and ready; a wait lets others drop blocks already
	 * checked, so after one the check starts over */
	for (uint64_t k = first; k <= last;) {
		struct ra_block *b = ra_find(wi, k);
		if (b && b->unconfirmed)
			return false;
		if (b && b->state == RA_INFLIGHT) {
			ra_grow(c, wi);
			pthread_cond_wait(&wi->cond, &wi->lock);
			k = first;
			continue;
		}
		if (!b || b->state != RA_READY || b->gen != wi->wgen || b->unconfirmed)
			return false;
		if (!b->checked && b->reply && client_data_read_verify(c, b->reply, b->obj_off, b->len) != 0) {
			b->state = RA_FAILED;
			return false;
		}
		b->checked = true;
		k++;
	}
	for (uint64_t k = first; k <= last; k++) {
		struct ra_block *b = ra_find(wi, k);
		uint64_t bstart = k * su;
		uint64_t from = off > bstart ? off : bstart;
		uint64_t to = off + len < bstart + su ? off + len : bstart + su;
		if (to > bstart + b->len)
			return false; /* the file grew past what was fetched */
		/* the reply holds n bytes; past them a hole or the object's end: zeros */
		uint64_t n = b->reply ? b->reply->h.bulk_len : 0, a = from - bstart, e = to - bstart;
		uint64_t have = e < n ? e : n;
		if (a < have)
			memcpy(dst + (from - off), b->reply->bulk + a, have - a);
		if (have < e)
			memset(dst + (from - off) + (have > a ? have - a : 0), 0, e - (have > a ? have : a));
		b->used += (uint32_t)(to - from);
	}
	stats_add(STATS_READAHEAD_HITS, 1);
	ra_trim(c, wi, first);
	return true;
}

bool client_ra_pin(struct weft_client *c, struct winode *wi, uint64_t off, size_t len,
	    struct ra_block **out, bool *checked, int max)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t first = off / su, last = (off + len - 1) / su;
	if (last - first + 1 > (uint64_t)max)
		return false;
	for (uint64_t k = first; k <= last;) {
		struct ra_block *b = ra_find(wi, k);
		if (b && b->unconfirmed)
			return false;
		if (b && b->state == RA_INFLIGHT) {
			ra_grow(c, wi);
			pthread_cond_wait(&wi->cond, &wi->lock);
			k = first;
			continue;
		}
		uint64_t to = off + len < (k + 1) * su ? off + len : (k + 1) * su;
		if (!b || b->state != RA_READY || b->gen != wi->wgen || to > k * su + b->len)
			return false; /* not there, stale, or the file grew past what was fetched */
		k++;
	}
	int n = 0;
	for (uint64_t k = first; k <= last; k++, n++) {
		struct ra_block *b = ra_find(wi, k);
		uint64_t bstart = k * su;
		uint64_t from = off > bstart ? off : bstart;
		uint64_t to = off + len < bstart + su ? off + len : bstart + su;
		b->refs++;
		b->used += (uint32_t)(to - from);
		out[n] = b;
		checked[n] = b->checked;
	}
	wi->ra_pins += n; /* the caller counts the hit once the blocks check out */
	ra_trim(c, wi, first);
	return true;
}

void client_ra_unpin(struct weft_client *c, struct winode *wi, struct ra_block **bs, int n,
	      const signed char *verdict)
{
	for (int i = 0; i < n; i++) {
		struct ra_block *b = bs[i];
		if (!verdict || verdict[i] > 0)
			b->checked = true;
		else if (verdict[i] < 0)
			b->state = RA_FAILED; /* read again, synchronously, with failover */
		if (--b->refs == 0 && b->orphan)
			ra_free(c, b);
	}
	wi->ra_pins -= n;
	if (wi->ra_pins == 0)
		pthread_cond_broadcast(&wi->cond);
}

/* Takes pagepool room for one block without waiting; false when the pool is full. */
static bool pool_try(struct weft_client *c, uint64_t bytes)
{
	bool ok;
	pthread_mutex_lock(&c->pool_lock);
	ok = c->pool_used + bytes <= c->pool_max;
	if (ok) {
		c->pool_used += bytes;
		stats_set_gauge(STATS_PAGEPOOL_USED_BYTES, c->pool_used);
	}
	pthread_mutex_unlock(&c->pool_lock);
	return ok;
}

/* True if this client holds writes of block k the stores may not have yet: fetching it
 * now would cache the old bytes. */
static bool has_unsent(struct winode *wi, uint64_t k)
{
	struct wblock *lists[3] = {wi->dirty, wi->inflight, wi->retry};
	for (int i = 0; i < 3; i++)
		for (struct wblock *b = lists[i]; b; b = b->next)
			if (b->block == k)
				return true;
	return false;
}

void client_ra_ahead(struct weft_client *c, struct winode *wi, uint64_t end)
{
	uint64_t su = wi->layout.stripe_unit;
	if (!c->readahead_units || end >= wi->size)
		return;
	struct ra_block *start[64];
	int n = 0;
	if (!wi->ra_window)
		wi->ra_window = c->readahead_units;
	uint32_t win = wi->ra_window;
	uint64_t next = end / su; /* the block holding the next byte to be read */
	uint64_t last_block = (wi->size - 1) / su;
	/* fetched already up to ra_hwm: a late request behind the reader fetches nothing */
	uint64_t k = wi->ra_hwm > next ? wi->ra_hwm : next;
	for (; k < next + win && k <= last_block && n < 64; k++) {
		if (ra_find(wi, k) || has_unsent(wi, k))
			continue;
		if (wi->nra >= (int)win * 2 || !pool_try(c, su))
			break;
		struct ra_block *b = calloc(1, sizeof(*b));
		if (!b) {
			client_pool_give(c, su);
			break;
		}
		uint64_t bstart = k * su;
		*b = (struct ra_block){.wi = wi, .block = k, .gen = wi->wgen, .state = RA_INFLIGHT,
				       .cap = (uint32_t)su,
				       .len = (uint32_t)(wi->size - bstart < su ? wi->size - bstart : su)};
		b->next = wi->ra;
		wi->ra = b;
		wi->nra++;
		wi->ra_inflight++;
		start[n++] = b;
	}
	wi->ra_hwm = k;
	if (!n)
		return;
	/* send without the lock: connecting to a store waits for the loop thread, which
	 * may be completing another fetch of this file */
	struct weft_layout l = wi->layout;
	struct stripe_piece p[64];
	for (int i = 0; i < n; i++) {
		stripe_map(&l, start[i]->block * su, start[i]->len, &p[i]);
		start[i]->obj_off = p[i].obj_off;
	}
	uint64_t ino = wi->ino;
	pthread_mutex_unlock(&wi->lock);
	for (int i = 0; i < n; i++)
		if (client_data_read_async(c, wi, ino, &l, &p[i], ra_done, start[i]) != 0)
			ra_done(start[i], -EIO, NULL);
	pthread_mutex_lock(&wi->lock);
}

bool client_ra_first(struct weft_client *c, struct winode *wi)
{
	uint64_t su = wi->layout.stripe_unit;
	if (!wi->size || wi->ra || !pool_try(c, su))
		return false;
	struct ra_block *b = calloc(1, sizeof(*b));
	if (!b) {
		client_pool_give(c, su);
		return false;
	}
	*b = (struct ra_block){.wi = wi, .block = 0, .gen = wi->wgen, .state = RA_INFLIGHT,
			       .cap = (uint32_t)su, .unconfirmed = true,
			       .len = (uint32_t)(wi->size < su ? wi->size : su)};
	b->next = wi->ra;
	wi->ra = b;
	wi->nra++;
	wi->ra_inflight++;
	if (wi->ra_hwm < 1)
		wi->ra_hwm = 1;
	struct weft_layout l = wi->layout;
	struct stripe_piece p;
	stripe_map(&l, 0, b->len, &p);
	b->obj_off = p.obj_off;
	uint64_t ino = wi->ino;
	pthread_mutex_unlock(&wi->lock);
	if (client_data_read_async(c, wi, ino, &l, &p, ra_done, b) != 0)
		ra_done(b, -EIO, NULL);
	pthread_mutex_lock(&wi->lock);
	return true;
}

void client_ra_first_written(struct weft_client *c, struct winode *wi)
{
	(void)c;
	for (struct ra_block *b = wi->ra; b; b = b->next) {
		if (b->block != 0)
			continue;
		b->need_data = true;
		if (b->state == RA_READY && ra_empty(b))
			b->state = RA_FAILED;
	}
}

void client_ra_first_confirm(struct weft_client *c, struct winode *wi)
{
	(void)c;
	for (struct ra_block *b = wi->ra; b; b = b->next)
		if (b->block == 0)
			b->unconfirmed = false;
}
