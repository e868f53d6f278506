/* libweft readahead: when a file is read sequentially, the next stripe units are fetched
 * in parallel (one request each, to the stores holding them) while the reader is served.
 * Completions run on the loop thread and only keep the reply frame in the block and wake
 * waiters: the reader's thread checks its checksums and copies from it (the one loop
 * thread receives for every store, so it does no per-byte work beyond the socket). A
 * block that failed, or fails its checksums, is simply read again, synchronously, with
 * replica failover. Prefetched blocks cost pagepool memory and are taken only when the pool has
 * room, so readahead never blocks a writer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/stats.h"

#define RA_INFLIGHT 0
#define RA_READY    1
#define RA_FAILED   2

static void ra_free(struct weft_client *c, struct ra_block *b)
{
	client_pool_give(c, b->cap);
	frame_free(b->reply);
	free(b);
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
	if (b->orphan) {
		pthread_mutex_unlock(&wi->lock); /* wi may go away now; b is ours alone */
		ra_free(c, b);
		return;
	}
	b->state = err || b->gen != wi->wgen ? RA_FAILED : RA_READY;
	pthread_mutex_unlock(&wi->lock);
}

/* Unlinks b; frees it now, or marks it for its completion to free. */
static void ra_unlink(struct weft_client *c, struct winode *wi, struct ra_block **pp)
{
	struct ra_block *b = *pp;
	*pp = b->next;
	wi->nra--;
	if (b->state == RA_INFLIGHT)
		b->orphan = true;
	else
		ra_free(c, b);
}

void ra_drop(struct weft_client *c, struct winode *wi)
{
	while (wi->ra)
		ra_unlink(c, wi, &wi->ra);
}

void ra_quiesce(struct weft_client *c, struct winode *wi)
{
	ra_drop(c, wi);
	while (wi->ra_inflight > 0)
		pthread_cond_wait(&wi->cond, &wi->lock);
}

static struct ra_block *ra_find(struct winode *wi, uint64_t block)
{
	for (struct ra_block *b = wi->ra; b; b = b->next)
		if (b->block == block)
			return b;
	return NULL;
}

bool ra_take(struct weft_client *c, struct winode *wi, uint64_t off, size_t len, uint8_t *dst)
{
	uint64_t su = wi->layout.stripe_unit;
	uint64_t first = off / su, last = (off + len - 1) / su;
	/* every block must be there and ready; a wait lets others drop blocks already
	 * checked, so after one the check starts over */
	for (uint64_t k = first; k <= last;) {
		struct ra_block *b = ra_find(wi, k);
		if (b && b->state == RA_INFLIGHT) {
			pthread_cond_wait(&wi->cond, &wi->lock);
			k = first;
			continue;
		}
		if (!b || b->state != RA_READY || b->gen != wi->wgen)
			return false;
		if (!b->checked && b->reply && data_read_verify(c, b->reply, b->obj_off, b->len) != 0) {
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
	/* A block is done with once all of it was read, or when it lies far behind this
	 * reader. Not merely behind: the kernel sends a sequential reader's requests from
	 * several threads at once, so a block just behind may still be wanted. */
	for (struct ra_block **pp = &wi->ra; *pp;) {
		struct ra_block *b = *pp;
		if (b->state != RA_INFLIGHT &&
		    (b->used >= b->len || b->block + c->readahead_units < first))
			ra_unlink(c, wi, pp);
		else
			pp = &b->next;
	}
	return true;
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

void ra_ahead(struct weft_client *c, struct winode *wi, uint64_t end)
{
	uint64_t su = wi->layout.stripe_unit;
	if (!c->readahead_units || end >= wi->size)
		return;
	struct ra_block *start[64];
	int n = 0;
	uint64_t next = end / su; /* the block holding the next byte to be read */
	uint64_t last_block = (wi->size - 1) / su;
	for (uint64_t k = next; k < next + c->readahead_units && k <= last_block && n < 64; k++) {
		if (ra_find(wi, k) || has_unsent(wi, k))
			continue;
		if (wi->nra >= (int)c->readahead_units * 2 || !pool_try(c, su))
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
		if (data_read_async(c, wi, ino, &l, &p[i], ra_done, start[i]) != 0)
			ra_done(start[i], -EIO, NULL);
	pthread_mutex_lock(&wi->lock);
}
