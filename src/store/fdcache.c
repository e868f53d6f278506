/* Bounded LRU cache of open object files (see fdcache.h).
 *
 * A chained hash table finds entries; a doubly linked list orders them, most recently
 * used first. Files are opened outside the mutex (two threads may race to open the
 * same object under a shared object lock: the loser closes its files and takes the
 * winner's entry). Evicted files are closed outside the mutex too. */
#include "store/fdcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define NBUCKETS 4096u

struct store_fdc {
	pthread_mutex_t mu;
	size_t cap, count;                        /* guarded by mu */
	struct store_fdc_entry *buckets[NBUCKETS]; /* guarded by mu */
	struct store_fdc_entry *head, *tail;       /* LRU, guarded by mu */
	store_fdc_open_fn open_fn;
	void *arg;
};

static unsigned bucket(uint64_t ino, uint32_t stripe)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)stripe * 0xC2B2AE3D27D4EB4FULL);
	return (unsigned)(h >> 40) % NBUCKETS;
}

static void lru_unlink(struct store_fdc *c, struct store_fdc_entry *e)
{
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		c->head = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		c->tail = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void lru_push(struct store_fdc *c, struct store_fdc_entry *e)
{
	e->lprev = NULL;
	e->lnext = c->head;
	if (c->head)
		c->head->lprev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static struct store_fdc_entry *find(struct store_fdc *c, uint64_t ino, uint32_t stripe)
{
	for (struct store_fdc_entry *e = c->buckets[bucket(ino, stripe)]; e; e = e->hnext)
		if (e->ino == ino && e->stripe == stripe)
			return e;
	return NULL;
}

static void hash_remove(struct store_fdc *c, struct store_fdc_entry *e)
{
	struct store_fdc_entry **pp = &c->buckets[bucket(e->ino, e->stripe)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
}

static void close_entry(struct store_fdc_entry *e)
{
	if (e->close_extra)
		e->close_extra(e);
	if (e->fd >= 0)
		close(e->fd);
	if (e->crc_fd >= 0)
		close(e->crc_fd);
	if (e->dfd >= 0)
		close(e->dfd);
	free(e);
}

/* Unlinks unreferenced entries from the LRU tail until count <= cap (or `extra` more
 * than that are gone); returns them as a list through hnext, to close outside mu. */
static struct store_fdc_entry *evict_locked(struct store_fdc *c, size_t extra)
{
	struct store_fdc_entry *victims = NULL, *e = c->tail;
	while (e && (c->count > c->cap || extra > 0)) {
		struct store_fdc_entry *prev = e->lprev;
		if (e->refs == 0) {
			lru_unlink(c, e);
			hash_remove(c, e);
			c->count--;
			e->hnext = victims;
			victims = e;
			if (extra > 0)
				extra--;
		}
		e = prev;
	}
	return victims;
}

static void close_list(struct store_fdc_entry *v)
{
	while (v) {
		struct store_fdc_entry *next = v->hnext;
		close_entry(v);
		v = next;
	}
}

int store_fdc_create(size_t cap, store_fdc_open_fn open_fn, void *arg, struct store_fdc **out)
{
	struct store_fdc *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	c->cap = cap ? cap : 1;
	c->open_fn = open_fn;
	c->arg = arg;
	*out = c;
	return 0;
}

void store_fdc_destroy(struct store_fdc *c)
{
	if (!c)
		return;
	struct store_fdc_entry *e = c->head;
	while (e) {
		struct store_fdc_entry *next = e->lnext;
		close_entry(e);
		e = next;
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int store_fdc_get(struct store_fdc *c, uint64_t ino, uint32_t stripe, bool create,
		  struct store_fdc_entry **out)
{
	pthread_mutex_lock(&c->mu);
	struct store_fdc_entry *e = find(c, ino, stripe);
	if (e) {
		e->refs++;
		lru_unlink(c, e);
		lru_push(c, e);
		pthread_mutex_unlock(&c->mu);
		*out = e;
		return 0;
	}
	pthread_mutex_unlock(&c->mu);

	struct store_fdc_entry *ne = calloc(1, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	ne->ino = ino;
	ne->stripe = stripe;
	ne->fd = ne->crc_fd = ne->dfd = -1;
	int rc = c->open_fn(c->arg, ne, create);
	if (rc == -EMFILE || rc == -ENFILE) {
		/* Out of descriptors: close some idle files and try once more. */
		pthread_mutex_lock(&c->mu);
		struct store_fdc_entry *v = evict_locked(c, 16);
		pthread_mutex_unlock(&c->mu);
		close_list(v);
		ne->fd = ne->crc_fd = ne->dfd = -1;
		rc = c->open_fn(c->arg, ne, create);
	}
	if (rc < 0) {
		close_entry(ne);
		return rc;
	}

	pthread_mutex_lock(&c->mu);
	e = find(c, ino, stripe);
	if (e) { /* lost a race: use the winner's entry */
		e->refs++;
		lru_unlink(c, e);
		lru_push(c, e);
		pthread_mutex_unlock(&c->mu);
		close_entry(ne);
		*out = e;
		return 0;
	}
	unsigned b = bucket(ino, stripe);
	ne->hnext = c->buckets[b];
	c->buckets[b] = ne;
	lru_push(c, ne);
	ne->refs = 1;
	c->count++;
	struct store_fdc_entry *v = evict_locked(c, 0);
	pthread_mutex_unlock(&c->mu);
	close_list(v);
	*out = ne;
	return 0;
}

void store_fdc_put(struct store_fdc *c, struct store_fdc_entry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&c->mu);
	e->refs--;
	struct store_fdc_entry *v = NULL;
	if (c->count > c->cap)
		v = evict_locked(c, 0);
	pthread_mutex_unlock(&c->mu);
	close_list(v);
}

void store_fdc_drop(struct store_fdc *c, uint64_t ino, uint32_t stripe)
{
	pthread_mutex_lock(&c->mu);
	struct store_fdc_entry *e = find(c, ino, stripe);
	if (e && e->refs == 0) {
		lru_unlink(c, e);
		hash_remove(c, e);
		c->count--;
	} else {
		e = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	if (e)
		close_entry(e);
}

size_t store_fdc_count(struct store_fdc *c)
{
	pthread_mutex_lock(&c->mu);
	size_t n = c->count;
	pthread_mutex_unlock(&c->mu);
	return n;
}
