/* libweft readahead: when a file is read sequentially, the next stripe units are fetched
 * in parallel (one request each, to the stores holding them) while the reader is served.
 * Completions run on the loop thread and only copy the reply into the block and wake
 * waiters; a block that failed is simply read again, synchronously, with replica
 * failover. Prefetched blocks cost pagepool memory and are taken only when the pool has
 * room, so readahead never blocks a writer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"

#define RA_INFLIGHT 0
#define RA_READY    1
#define RA_FAILED   2

static void ra_free(struct weft_client *c, struct ra_block *b)
{
	client_pool_give(c, b->cap);
	free(b->data);
	free(b);
}

static void ra_done(void *arg, int err, const uint8_t *data, uint32_t n)
{
	struct ra_block *b = arg;
	struct winode *wi = b->wi;
	struct weft_client *c = wi->c;
	pthread_mutex_lock(&wi->lock);
	wi->ra_inflight--;
	pthread_cond_broadcast(&wi->cond);
	if (b->orphan) {
		pthread_mutex_unlock(&wi->lock); /* wi may go away now; b is ours alone */
		ra_free(c, b);
		return;
	}
	if (err || b->gen != wi->wgen) {
		b->state = RA_FAILED;
	} else {
		if (n > b->len)
			n = b->len;
		memcpy(b->data, data, n);
		memset(b->data + n, 0, b->len - n); /* hole or past the object's end */
		b->state = RA_READY;
	}
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
		k++;
	}
	for (uint64_t k = first; k <= last; k++) {
		struct ra_block *b = ra_find(wi, k);
		uint64_t bstart = k * su;
		uint64_t from = off > bstart ? off : bstart;
		uint64_t to = off + len < bstart + su ? off + len : bstart + su;
		if (to > bstart + b->len)
			return false; /* the file grew past what was fetched */
		memcpy(dst + (from - off), b->data + (from - bstart), to - from);
	}
	/* blocks behind the reader are done with */
	for (struct ra_block **pp = &wi->ra; *pp;) {
		if ((*pp)->block < last && (*pp)->state != RA_INFLIGHT)
			ra_unlink(c, wi, pp);
		else
			pp = &(*pp)->next;
	}
	return true;
}

/* Takes pagepool room for one block without waiting; false when the pool is full. */
static bool pool_try(struct weft_client *c, uint64_t bytes)
{
	bool ok;
	pthread_mutex_lock(&c->pool_lock);
	ok = c->pool_used + bytes <= c->pool_max;
	if (ok)
		c->pool_used += bytes;
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
		uint8_t *data = b ? malloc(su) : NULL;
		if (!data) {
			free(b);
			client_pool_give(c, su);
			break;
		}
		uint64_t bstart = k * su;
		*b = (struct ra_block){.wi = wi, .block = k, .gen = wi->wgen, .state = RA_INFLIGHT,
				       .data = data, .cap = (uint32_t)su,
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
	for (int i = 0; i < n; i++)
		stripe_map(&l, start[i]->block * su, start[i]->len, &p[i]);
	uint64_t ino = wi->ino;
	pthread_mutex_unlock(&wi->lock);
	for (int i = 0; i < n; i++)
		if (data_read_async(c, ino, &l, &p[i], ra_done, start[i]) != 0)
			ra_done(start[i], -EIO, NULL, 0);
	pthread_mutex_lock(&wi->lock);
}
