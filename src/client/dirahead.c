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
 * no recall reached this client since the fetch (recall generation), none of this
 * client's own changes since touched it, and the shortest lease the listing carried has
 * not run out (less the margin client_lease_note takes).
 *
 * This client's own changes are told by client_dirahead_changed(ino): the directory
 * ino's names or attributes changed (a create, unlink, mkdir, rmdir or setattr in or of
 * it), CLIENT_DA_LINKED (a file lost a name: listings that show a file with several may
 * show its old link count) or CLIENT_DA_ALL (anything else: every listing goes). A change
 * drops the kept listings of ino and those that show ino as an entry; rm -rf's unlinks
 * in one directory so leave the listings of its subdirectories, fetched ahead, valid (a
 * generation moved by every change dropped them all: 191 hits for 2,692 fetches). A
 * change is told once it is visible to a listing's request (an asynchronous one posted,
 * so that the READDIR's scope waits for it; a synchronous one answered), and each is
 * remembered in a ring, so that a fetch under way when it came is dropped too. A listing whose
 * entries came without leases (meta found the directory busy, or this session gets
 * none) is not kept, nor is an empty one (no entry to show that the directory's lease
 * was granted).
 *
 * Threads: weft_readdir's callers and the DA_THREADS fetchers; everything under da->lock
 * but the fetch itself. */
#include "client/client_int.h"

#include <dirent.h>
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
#define DA_RING 1024    /* changes remembered for the fetches under way */

struct da_listing {
	uint64_t ino;             /* 0: free */
	struct weft_cred cred;
	uint64_t rgen;            /* the recall generation before the fetch */
	uint64_t until_ms;        /* CLOCK_MONOTONIC: the shortest lease, less a margin */
	uint64_t stamp;           /* insertion order, for eviction */
	uint8_t *bulk;
	size_t len;
	uint64_t *inos;           /* its entries but . and .., sorted */
	uint32_t ninos;
	bool linked;              /* an entry is a file with more than one name */
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
	uint64_t changes[DA_RING]; /* client_dirahead_changed's, the last DA_RING */
	uint64_t nchanges;
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
	free(l->inos);
	memset(l, 0, sizeof(*l));
}

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Whether a change of ino (or a CLIENT_DA_ constant) may make l wrong. */
static bool touches(const struct da_listing *l, uint64_t ino)
{
	if (ino == CLIENT_DA_ALL || l->ino == ino)
		return true;
	if (ino == CLIENT_DA_LINKED)
		return l->linked;
	return bsearch(&ino, l->inos, l->ninos, sizeof(ino), cmp_ino) != NULL;
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
	return l->rgen == client_recall_gen(c) && loop_now_ms() < l->until_ms;
}

void client_dirahead_changed(struct weft_client *c, uint64_t ino)
{
	struct client_dirahead *da = c->dirahead;
	if (!da)
		return;
	pthread_mutex_lock(&da->lock);
	da->changes[da->nchanges++ % DA_RING] = ino;
	for (size_t i = 0; i < DA_SLOTS; i++)
		if (da->slots[i].ino && touches(&da->slots[i], ino))
			slot_free(&da->slots[i]);
	pthread_mutex_unlock(&da->lock);
}

/* Whether a change since the fetch of l began (nchanges was from) touches it (da->lock
 * held); too many to know: yes. */
static bool changed_since(const struct client_dirahead *da, const struct da_listing *l,
			  uint64_t from)
{
	if (da->nchanges - from > DA_RING)
		return true;
	for (uint64_t i = from; i < da->nchanges; i++)
		if (touches(l, da->changes[i % DA_RING]))
			return true;
	return false;
}

static bool is_dots(const struct weft_dirent_out *d)
{
	return (d->namelen == 1 && d->name[0] == '.') ||
	       (d->namelen == 2 && d->name[0] == '.' && d->name[1] == '.');
}

/* Collects a listing's entries (but . and ..) for touches(). */
struct entries {
	uint64_t *inos;
	uint32_t n, cap;
	bool linked, nomem;
};

static int note_entry(void *arg, const struct weft_dirent_out *d)
{
	struct entries *e = arg;
	if (is_dots(d))
		return 0; /* the kernel takes nothing from a listing's . and .. */
	if (d->attr && d->type != DT_DIR && d->attr->nlink > 1)
		e->linked = true;
	if (e->n == e->cap) {
		uint32_t nc = e->cap ? e->cap * 2 : 64;
		uint64_t *v = realloc(e->inos, nc * sizeof(*v));
		if (!v) {
			e->nomem = true;
			return 1;
		}
		e->inos = v;
		e->cap = nc;
	}
	e->inos[e->n++] = d->ino;
	return 0;
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

/* Passes a kept listing's entries after cookie to the caller's fn, and notes the
 * subdirectories among them. */
struct resume {
	uint64_t cookie;
	bool started;
	uint32_t emitted;
	uint64_t subs[CLIENT_DIRWALK_SUBS];
	size_t nsubs;
	int (*fn)(void *arg, const struct weft_dirent_out *d);
	void *arg;
};

static int resume_entry(void *arg, const struct weft_dirent_out *d)
{
	struct resume *r = arg;
	if (!r->started) {
		r->started = d->next_cookie == r->cookie;
		return 0;
	}
	r->emitted++;
	if (!is_dots(d) && d->type == DT_DIR && r->nsubs < CLIENT_DIRWALK_SUBS)
		r->subs[r->nsubs++] = d->ino;
	return r->fn(r->arg, d);
}

int client_dirahead_take(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			 uint64_t cookie,
			 int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg)
{
	struct client_dirahead *da = c->dirahead;
	if (!da)
		return 1;
	pthread_mutex_lock(&da->lock);
	/* a fetch of it under way is waited for, not sent again: a depth-first walk comes
	 * to the subdirectory it listed last while its fetch is in flight */
	struct timespec until = loop_deadline_ms(DA_WAIT_MS);
	while (cookie == 0 && !find(da, ino) && busy(da, ino))
		if (pthread_cond_timedwait(&da->done, &da->lock, &until) == ETIMEDOUT)
			break;
	struct da_listing *l = find(da, ino);
	if (!l || !same_cred(&l->cred, cr) || !listing_valid(c, l)) {
		if (l && !listing_valid(c, l))
			slot_free(l);
		pthread_mutex_unlock(&da->lock);
		return 1;
	}
	/* taken out while the caller's fn runs; back after it unless a change came */
	struct da_listing mine = *l;
	memset(l, 0, sizeof(*l));
	uint64_t from = da->nchanges;
	pthread_mutex_unlock(&da->lock);
	if (cookie == 0)
		stats_add(STATS_DIR_AHEAD_HITS, 1);
	struct resume r = {.cookie = cookie, .started = cookie == 0, .fn = fn, .arg = arg};
	struct client_dirwalk dw = {0}; /* noted when fetched */
	int rc = client_dirents_walk(c, mine.bulk, mine.len, &dw, resume_entry, &r);
	if (rc >= 0)
		client_dirahead_queue(c, cr, r.subs, r.nsubs);
	/* kept while valid: a directory listed again (rm -rf opens each one twice) or read
	 * on from one of its cookies is answered from it too; one asked past its end goes */
	bool done = rc < 0 || !r.started || (rc == 0 && r.emitted == 0);
	pthread_mutex_lock(&da->lock);
	if (!done && !changed_since(da, &mine, from) && !find(da, ino) && (l = find(da, 0))) {
		*l = mine;
		mine.bulk = NULL;
		mine.inos = NULL;
	}
	pthread_mutex_unlock(&da->lock);
	slot_free(&mine);
	if (!r.started)
		return 1; /* not a cookie of this listing */
	return rc < 0 ? rc : 0;
}

/* Fetches the first batch of ino's listing for cred and keeps it if it ended there and
 * came with leases. */
static void fetch(struct weft_client *c, uint64_t ino, const struct weft_cred *cr)
{
	struct client_dirahead *da = c->dirahead;
	pthread_mutex_lock(&da->lock);
	uint64_t from = da->nchanges;
	pthread_mutex_unlock(&da->lock);
	uint64_t rgen = client_recall_gen(c), agen = atomic_load(&c->attr_gen),
		 dgen = atomic_load(&c->dir_gen);
	struct frame *f;
	struct weft_msg_dirlist dl;
	if (client_readdir_call(c, cr, ino, 0, true, DA_MAX_BYTES, &f, &dl))
		return;
	/* the entries' leases and prefetch capabilities noted, as for any listing */
	struct client_dirwalk dw = {.note = true, .cr = cr, .dir = ino, .gen = rgen, .agen = agen,
				    .dgen = dgen, .min_lease = UINT32_MAX};
	struct entries e = {0};
	int rc = client_dirents_walk(c, f->bulk, f->h.bulk_len, &dw, note_entry, &e);
	if (rc == 0 && dl.eof && dw.min_lease != UINT32_MAX)
		client_emptied_listed(c, ino, dw.names, dw.min_lease, rgen);
	uint8_t *bulk = NULL;
	size_t len = f->h.bulk_len;
	if (rc == 0 && dl.eof && dw.min_lease != UINT32_MAX && dw.min_lease > 0 &&
	    (bulk = malloc(len + 1)))
		memcpy(bulk, f->bulk, len);
	frame_free(f);
	if (!bulk) {
		free(e.inos);
		return;
	}
	qsort(e.inos, e.n, sizeof(*e.inos), cmp_ino);
	uint32_t min_lease = dw.min_lease;
	stats_add(STATS_DIR_AHEAD_FETCHED, 1);
	struct da_listing fetched = {.ino = ino, .cred = *cr, .rgen = rgen, .bulk = bulk,
				     .len = len, .inos = e.inos, .ninos = e.n, .linked = e.linked,
				     .until_ms = loop_now_ms() + min_lease - min_lease / 10};
	pthread_mutex_lock(&da->lock);
	if (changed_since(da, &fetched, from)) { /* it may predate a change of ours */
		pthread_mutex_unlock(&da->lock);
		slot_free(&fetched);
		return;
	}
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
	*l = fetched;
	l->stamp = ++da->stamp;
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
