/* Directory read-ahead: the listings of subdirectories, fetched before they are asked.
 *
 * DESIGN: a traversal (du, find, rm -rf, ls -R, tar c) lists each directory in turn and
 * waits for one READDIRPLUS round trip per directory, with the machine otherwise idle
 * (docs/PERFORMANCE.md). When a listing starting at cookie 0 shows subdirectories,
 * up to CLIENT_DIRWALK_SUBS of them are queued, and DA_THREADS threads fetch their first
 * batch of entries (READDIRPLUS with leases, DA_MAX_BYTES) for the same credential; a
 * listing that ended in that batch is kept. The next weft_readdir of such a directory
 * at cookie 0, by the same credential, is answered from it once (and queues its own
 * subdirectories in turn) instead of asking meta.
 *
 * A kept listing is what meta showed under a lease: meta granted the session a lease
 * on the directory (its names) and on each entry, and recalls them before any other
 * session changes them. So it is used only while nothing could have changed it unseen:
 * no recall reached this client since the fetch (recall generation), this client made
 * no namespace change since (attr_gen, dir_gen, create_gen), and the shortest lease the
 * listing carried has not run out (less the margin client_lease_note takes). A listing whose
 * entries came without leases (meta found the directory busy, or this session gets
 * none) is not kept, nor is an empty one (no entry to show that the directory's lease
 * was granted).
 *
 * Threads: weft_readdir's callers and the DA_THREADS fetchers; everything under da->lock
 * but the fetch itself. */
#include "client/client_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/loop.h"
#include "net/stats.h"

#define DA_SLOTS 128
#define DA_QUEUE 256
#define DA_THREADS 2
#define DA_MAX_BYTES 65536
#define DA_WAIT_MS 100 /* the longest a listing waits for its fetch under way */

struct da_listing {
	uint64_t ino;             /* 0: free */
	struct weft_cred cred;
	uint64_t rgen, agen, dgen, cgen;
	uint64_t amark;           /* client_acreate_attr_mark before the fetch */
	uint64_t until_ms;        /* CLOCK_MONOTONIC: the shortest lease, less a margin */
	uint64_t stamp;           /* insertion order, for eviction */
	uint8_t *bulk;
	size_t len;
};

struct da_job {
	uint64_t ino;
	struct weft_cred cred;
};

struct client_dirahead {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t done;       /* a fetch ended */
	struct da_job q[DA_QUEUE];
	size_t qhead, qn;
	uint64_t busy[DA_THREADS]; /* directories being fetched */
	struct da_listing slots[DA_SLOTS];
	uint64_t stamp;
	bool stopping;
	pthread_t th[DA_THREADS];
	struct da_arg {
		struct weft_client *c;
		int me;
	} args[DA_THREADS];
	int nth;
};

static bool same_cred(const struct weft_cred *a, const struct weft_cred *b)
{
	if (a->uid != b->uid || a->gid != b->gid || a->ngroups != b->ngroups ||
	    a->more_groups != b->more_groups)
		return false;
	for (uint32_t i = 0; i < a->ngroups && i < WEFT_GROUPS_MAX; i++)
		if (a->groups[i] != b->groups[i])
			return false;
	return true;
}

static void slot_free(struct da_listing *l)
{
	free(l->bulk);
	memset(l, 0, sizeof(*l));
}

/* The kept listing of ino, or NULL (da->lock held). */
static struct da_listing *find(struct client_dirahead *da, uint64_t ino)
{
	for (size_t i = 0; i < DA_SLOTS; i++)
		if (da->slots[i].ino == ino)
			return &da->slots[i];
	return NULL;
}

static bool busy(const struct client_dirahead *da, uint64_t ino)
{
	for (int i = 0; i < DA_THREADS; i++)
		if (da->busy[i] == ino)
			return true;
	return false;
}

static bool listing_valid(struct weft_client *c, const struct da_listing *l)
{
	return l->rgen == client_recall_gen(c) && l->agen == atomic_load(&c->attr_gen) &&
	       l->dgen == atomic_load(&c->dir_gen) && l->cgen == atomic_load(&c->create_gen) &&
	       loop_now_ms() < l->until_ms;
}

void client_dirahead_queue(struct weft_client *c, const struct weft_cred *cr,
			   const uint64_t *dirs, size_t n)
{
	struct client_dirahead *da = c->dirahead;
	if (!da || n == 0)
		return;
	pthread_mutex_lock(&da->lock);
	/* pushed in reverse, taken newest first: a depth-first traversal lists the first
	 * subdirectory of what it just listed next; when full, the oldest is dropped */
	for (size_t i = n; i-- > 0;) {
		struct da_listing *l = find(da, dirs[i]);
		if (l && listing_valid(c, l))
			continue;
		if (da->qn == DA_QUEUE) {
			da->qhead = (da->qhead + 1) % DA_QUEUE;
			da->qn--;
		}
		struct da_job *j = &da->q[(da->qhead + da->qn++) % DA_QUEUE];
		j->ino = dirs[i];
		j->cred = *cr;
	}
	pthread_cond_broadcast(&da->cond);
	pthread_mutex_unlock(&da->lock);
}

int client_dirahead_take(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			 int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg)
{
	struct client_dirahead *da = c->dirahead;
	if (!da)
		return 1;
	pthread_mutex_lock(&da->lock);
	/* a fetch of it under way is waited for, not sent again: a depth-first walk comes
	 * to the subdirectory it listed last while its fetch is in flight */
	struct timespec until = loop_deadline_ms(DA_WAIT_MS);
	while (!find(da, ino) && busy(da, ino))
		if (pthread_cond_timedwait(&da->done, &da->lock, &until) == ETIMEDOUT)
			break;
	struct da_listing *l = find(da, ino);
	if (!l || !same_cred(&l->cred, cr) || !listing_valid(c, l)) {
		if (l && !listing_valid(c, l))
			slot_free(l);
		pthread_mutex_unlock(&da->lock);
		return 1;
	}
	uint8_t *bulk = l->bulk;
	size_t len = l->len;
	uint64_t amark = l->amark;
	l->bulk = NULL;
	slot_free(l); /* once: the kernel keeps what it was given */
	pthread_mutex_unlock(&da->lock);
	stats_add(STATS_DIR_AHEAD_HITS, 1);
	struct client_dirwalk dw = {.amark = amark}; /* noted when fetched */
	int rc = client_dirents_walk(c, bulk, len, &dw, fn, arg);
	free(bulk);
	if (rc >= 0)
		client_dirahead_queue(c, cr, dw.subs, dw.nsubs);
	return rc < 0 ? rc : 0;
}

/* Fetches the first batch of ino's listing for cred and keeps it if it ended there and
 * came with leases. */
static void fetch(struct weft_client *c, uint64_t ino, const struct weft_cred *cr)
{
	uint64_t rgen = client_recall_gen(c), agen = atomic_load(&c->attr_gen),
		 dgen = atomic_load(&c->dir_gen), cgen = atomic_load(&c->create_gen);
	uint64_t amark = client_acreate_attr_mark(c);
	struct frame *f;
	struct weft_msg_dirlist dl;
	if (client_readdir_call(c, cr, ino, 0, true, DA_MAX_BYTES, &f, &dl))
		return;
	/* the entries' leases and prefetch capabilities noted, as for any listing */
	struct client_dirwalk dw = {.note = true, .cr = cr, .dir = ino, .gen = rgen, .agen = agen,
				    .dgen = dgen, .amark = amark, .min_lease = UINT32_MAX};
	int rc = client_dirents_walk(c, f->bulk, f->h.bulk_len, &dw, NULL, NULL);
	if (rc == 0 && dl.eof && dw.min_lease != UINT32_MAX)
		client_emptied_listed(c, ino, dw.names, dw.min_lease, rgen);
	uint8_t *bulk = NULL;
	size_t len = f->h.bulk_len;
	if (rc == 0 && dl.eof && dw.min_lease != UINT32_MAX && dw.min_lease > 0 &&
	    (bulk = malloc(len + 1)))
		memcpy(bulk, f->bulk, len);
	frame_free(f);
	if (!bulk)
		return;
	uint32_t min_lease = dw.min_lease;
	stats_add(STATS_DIR_AHEAD_FETCHED, 1);
	struct client_dirahead *da = c->dirahead;
	pthread_mutex_lock(&da->lock);
	struct da_listing *l = find(da, ino);
	if (!l)
		l = find(da, 0); /* a free slot */
	if (!l) { /* else the oldest */
		l = &da->slots[0];
		for (size_t i = 1; i < DA_SLOTS; i++)
			if (da->slots[i].stamp < l->stamp)
				l = &da->slots[i];
	}
	slot_free(l);
	*l = (struct da_listing){.ino = ino, .cred = *cr, .rgen = rgen, .agen = agen,
				 .dgen = dgen, .cgen = cgen, .amark = amark, .stamp = ++da->stamp,
				 .bulk = bulk, .len = len,
				 .until_ms = loop_now_ms() + min_lease - min_lease / 10};
	pthread_mutex_unlock(&da->lock);
}

static void *fetcher(void *arg)
{
	struct da_arg *a = arg;
	struct weft_client *c = a->c;
	struct client_dirahead *da = c->dirahead;
	int me = a->me;
	pthread_mutex_lock(&da->lock);
	for (;;) {
		while (!da->stopping && da->qn == 0)
			pthread_cond_wait(&da->cond, &da->lock);
		if (da->stopping)
			break;
		struct da_job j = da->q[(da->qhead + --da->qn) % DA_QUEUE]; /* the newest */
		struct da_listing *l = find(da, j.ino);
		if (busy(da, j.ino) || (l && listing_valid(c, l)))
			continue;
		da->busy[me] = j.ino;
		pthread_mutex_unlock(&da->lock);
		fetch(c, j.ino, &j.cred);
		pthread_mutex_lock(&da->lock);
		da->busy[me] = 0;
		pthread_cond_broadcast(&da->done);
	}
	pthread_mutex_unlock(&da->lock);
	return NULL;
}

int client_dirahead_start(struct weft_client *c)
{
	struct client_dirahead *da = calloc(1, sizeof(*da));
	if (!da)
		return -ENOMEM;
	pthread_mutex_init(&da->lock, NULL);
	pthread_cond_init(&da->cond, NULL);
	pthread_cond_init(&da->done, NULL);
	c->dirahead = da;
	for (int i = 0; i < DA_THREADS; i++) {
		da->args[i] = (struct da_arg){c, i};
		int err = pthread_create(&da->th[i], NULL, fetcher, &da->args[i]);
		if (err) {
			client_dirahead_stop(c);
			return -err;
		}
		pthread_setname_np(da->th[i], "weft-dirahead");
		da->nth++;
	}
	return 0;
}

void client_dirahead_stop(struct weft_client *c)
{
	struct client_dirahead *da = c->dirahead;
	if (!da)
		return;
	pthread_mutex_lock(&da->lock);
	da->stopping = true;
	int n = da->nth;
	pthread_cond_broadcast(&da->cond);
	pthread_mutex_unlock(&da->lock);
	for (int i = 0; i < n; i++)
		pthread_join(da->th[i], NULL);
	for (size_t i = 0; i < DA_SLOTS; i++)
		slot_free(&da->slots[i]);
	pthread_cond_destroy(&da->cond);
	pthread_cond_destroy(&da->done);
	pthread_mutex_destroy(&da->lock);
	free(da);
	c->dirahead = NULL;
}
