/* Directories emptied here: what lets the mount answer an rmdir itself (acreate.c).
 *
 * DESIGN: rm -rf lists a directory, unlinks what the listing showed (answered here, sent
 * behind: acreate.c), then removes it. A synchronous RMDIR waited for every unlink sent
 * before it and then for meta: 4 ms per directory, two thirds of rm -rf of the kernel
 * tree (docs/PERFORMANCE.md). It may be answered here when this client knows the
 * directory is empty at meta once what it sent there is applied:
 *  - its listing came whole in one reply (cookie 0 to the end) under leases, so meta
 *    recalls them before another session changes a name in it; that many names
 *    (`left`) were there;
 *  - every one of them was since unlinked or removed here, asynchronously (each such
 *    unlink counts `left` down);
 *  - nothing else changed its names here since: a create here, or a synchronous
 *    namespace change in it, forgets it (each directory's generation, `gens`);
 *  - no recall of it came since the listing, whose shortest lease still runs.
 * Which directory the kernel's RMDIR (parent, name) names is known the same way: the
 * parent's listing showed name as a directory with that inode number, under the same
 * conditions (the parent's lease, no recall of it, no change of its names here since
 * but asynchronous removals).
 *
 * Both tables are small and 4-way set-associative (a set's oldest record gives way): a
 * record lost all the same only sends that rmdir the synchronous way. Direct-mapped,
 * they lost a subdirectory's record to a collision a few times in every rm -rf of a few
 * hundred directories, and each such rmdir waited for its whole subtree's removals.
 *
 * Threads: any; one lock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "common/loop.h"

#define EMPTIED_DIRS 4096  /* directories' records */
#define EMPTIED_GENS 65536 /* directories' generations (hashed: a collision forgets more) */
#define EMPTIED_SUBS 8192  /* (parent, name) -> subdirectory */
#define EMPTIED_WAYS 4     /* records a key may be in, side by side */

struct em_dir {
	uint64_t dir;          /* 0: free */
	uint64_t rgen, gen;    /* recall generation before the listing; the dir's gens[] */
	uint64_t until_ms;     /* the listing's shortest lease, less a margin */
	int64_t left;          /* names listed and not yet removed here */
};

struct em_sub {
	uint64_t parent, child; /* parent 0: free */
	uint64_t rgen, gen, until_ms; /* gen: the parent's gens[] */
	char *name;
};

struct client_emptied {
	pthread_mutex_t lock;
	uint64_t gens[EMPTIED_GENS]; /* by directory (hashed): moves on at each forget */
	struct em_dir dirs[EMPTIED_DIRS];
	struct em_sub subs[EMPTIED_SUBS];
};

static size_t hash64(uint64_t x)
{
	return (size_t)((x * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The first of the EMPTIED_WAYS records of dir's set. */
static struct em_dir *dir_set(struct client_emptied *e, uint64_t dir)
{
	return &e->dirs[hash64(dir) % (EMPTIED_DIRS / EMPTIED_WAYS) * EMPTIED_WAYS];
}

/* dir's record in its set, or NULL. */
static struct em_dir *dir_find(struct client_emptied *e, uint64_t dir)
{
	struct em_dir *set = dir_set(e, dir);
	for (int i = 0; i < EMPTIED_WAYS; i++)
		if (set[i].dir == dir)
			return &set[i];
	return NULL;
}

/* Where a record of dir goes: its own, a free one, else the one lapsing first. */
static struct em_dir *dir_place(struct client_emptied *e, uint64_t dir)
{
	struct em_dir *set = dir_set(e, dir), *best = dir_find(e, dir);
	for (int i = 0; i < EMPTIED_WAYS && !best; i++)
		if (!set[i].dir)
			best = &set[i];
	if (!best) /* none free: the one lapsing first */
		for (int i = 0; i < EMPTIED_WAYS; i++)
			if (!best || set[i].until_ms < best->until_ms)
				best = &set[i];
	return best;
}

static uint64_t *gen_of(struct client_emptied *e, uint64_t dir)
{
	return &e->gens[hash64(dir ^ 0x5bd1e995u) % EMPTIED_GENS];
}

/* The first of the EMPTIED_WAYS records of (parent, name)'s set. */
static struct em_sub *sub_set(struct client_emptied *e, uint64_t parent, const char *name,
			      size_t len)
{
	uint64_t h = 1469598103934665603ull ^ parent;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
	return &e->subs[hash64(h) % (EMPTIED_SUBS / EMPTIED_WAYS) * EMPTIED_WAYS];
}

static bool sub_is(const struct em_sub *s, uint64_t parent, const char *name, size_t len)
{
	return s->parent == parent && s->name && strncmp(s->name, name, len) == 0 &&
	       s->name[len] == '\0';
}

/* (parent, name)'s record in its set, or NULL. */
static struct em_sub *sub_find(struct client_emptied *e, uint64_t parent, const char *name,
			       size_t len)
{
	struct em_sub *set = sub_set(e, parent, name, len);
	for (int i = 0; i < EMPTIED_WAYS; i++)
		if (sub_is(&set[i], parent, name, len))
			return &set[i];
	return NULL;
}

int client_emptied_init(struct weft_client *c)
{
	struct client_emptied *e = calloc(1, sizeof(*e));
	if (!e)
		return -1;
	pthread_mutex_init(&e->lock, NULL);
	c->emptied = e;
	return 0;
}

void client_emptied_free(struct weft_client *c)
{
	struct client_emptied *e = c->emptied;
	if (!e)
		return;
	for (size_t i = 0; i < EMPTIED_SUBS; i++)
		free(e->subs[i].name);
	pthread_mutex_destroy(&e->lock);
	free(e);
	c->emptied = NULL;
}

static uint64_t until_of(uint32_t lease_ms)
{
	return loop_now_ms() + lease_ms - lease_ms / 10;
}

void client_emptied_sub(struct weft_client *c, uint64_t parent, const char *name, size_t len,
			uint64_t child, uint32_t lease_ms, uint64_t rgen)
{
	struct client_emptied *e = c->emptied;
	if (!e || !parent || !lease_ms)
		return;
	char *copy = strndup(name, len);
	if (!copy)
		return;
	pthread_mutex_lock(&e->lock);
	struct em_sub *set = sub_set(e, parent, name, len), *s = sub_find(e, parent, name, len);
	for (int i = 0; i < EMPTIED_WAYS && !s; i++)
		if (!set[i].parent)
			s = &set[i];
	if (!s) /* none free: the one lapsing first */
		for (int i = 0; i < EMPTIED_WAYS; i++)
			if (!s || set[i].until_ms < s->until_ms)
				s = &set[i];
	free(s->name);
	*s = (struct em_sub){.parent = parent, .child = child, .rgen = rgen, .gen = *gen_of(e, parent),
			     .until_ms = until_of(lease_ms), .name = copy};
	pthread_mutex_unlock(&e->lock);
}

void client_emptied_listed(struct weft_client *c, uint64_t dir, uint32_t names,
			   uint32_t min_lease_ms, uint64_t rgen)
{
	struct client_emptied *e = c->emptied;
	if (!e || !names || !min_lease_ms)
		return; /* an empty listing does not show that the directory's lease was granted */
	pthread_mutex_lock(&e->lock);
	*dir_place(e, dir) =
		(struct em_dir){.dir = dir, .rgen = rgen, .gen = *gen_of(e, dir),
				.until_ms = until_of(min_lease_ms), .left = names};
	pthread_mutex_unlock(&e->lock);
}

/* dir's record, if it still holds (lock held), else NULL. */
static struct em_dir *record(struct weft_client *c, struct client_emptied *e, uint64_t dir)
{
	struct em_dir *d = dir_find(e, dir);
	if (!d)
		return NULL;
	if (d->gen != *gen_of(e, dir) || loop_now_ms() >= d->until_ms ||
	    client_recalled_since(c, dir, d->rgen)) {
		d->dir = 0;
		return NULL;
	}
	return d;
}

void client_emptied_removed(struct weft_client *c, uint64_t dir)
{
	struct client_emptied *e = c->emptied;
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	struct em_dir *d = record(c, e, dir);
	if (d && --d->left < 0)
		d->dir = 0; /* removed more than the listing showed: something is off */
	pthread_mutex_unlock(&e->lock);
}

void client_emptied_forget(struct weft_client *c, uint64_t dir)
{
	struct client_emptied *e = c->emptied;
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	(*gen_of(e, dir))++; /* its record, and what its listing said of its subdirectories */
	pthread_mutex_unlock(&e->lock);
}

void client_emptied_drop(struct weft_client *c, uint64_t dir)
{
	struct client_emptied *e = c->emptied;
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	struct em_dir *d = dir_find(e, dir);
	if (d)
		d->dir = 0;
	pthread_mutex_unlock(&e->lock);
}

void client_emptied_renewed(struct weft_client *c, uint64_t dir, uint32_t lease_ms)
{
	struct client_emptied *e = c->emptied;
	if (!e || !lease_ms)
		return;
	uint64_t until = until_of(lease_ms);
	pthread_mutex_lock(&e->lock);
	struct em_dir *d = record(c, e, dir);
	if (d && d->until_ms < until)
		d->until_ms = until;
	for (size_t i = 0; i < EMPTIED_SUBS; i++) {
		struct em_sub *s = &e->subs[i];
		if (s->parent == dir && s->gen == *gen_of(e, dir) && loop_now_ms() < s->until_ms &&
		    s->until_ms < until)
			s->until_ms = until;
	}
	pthread_mutex_unlock(&e->lock);
}

/* The subdirectory (parent, name) names, when its record holds (lock held), or 0. */
static uint64_t subdir_locked(struct weft_client *c, struct client_emptied *e,
			      uint64_t parent, const char *name)
{
	struct em_sub *s = sub_find(e, parent, name, strlen(name));
	if (s && s->gen == *gen_of(e, parent) && loop_now_ms() < s->until_ms &&
	    !client_recalled_since(c, parent, s->rgen) &&
	    !client_recalled_since(c, s->child, s->rgen))
		return s->child;
	return 0;
}

/* The subdirectory (parent, name) names, when its record holds; with empty, only
 * if every name its listing showed was removed here since. 0 otherwise. */
static uint64_t subdir(struct weft_client *c, uint64_t parent, const char *name, bool empty)
{
	struct client_emptied *e = c->emptied;
	if (!e)
		return 0;
	pthread_mutex_lock(&e->lock);
	uint64_t child = subdir_locked(c, e, parent, name);
	if (child && empty) {
		struct em_dir *d = record(c, e, child);
		if (!d || d->left != 0)
			child = 0;
	}
	pthread_mutex_unlock(&e->lock);
	return child;
}

uint64_t client_emptied_child(struct weft_client *c, uint64_t parent, const char *name)
{
	return subdir(c, parent, name, true);
}

uint64_t client_emptied_subdir(struct weft_client *c, uint64_t parent, const char *name)
{
	return subdir(c, parent, name, false);
}

