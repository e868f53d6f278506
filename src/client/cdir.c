/* Complete directories and their names: see cdir.h. */
#include "client/cdir.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct cname {
	struct cname *next;
	uint64_t hash;
	size_t len;
	bool file;      /* known not to be a directory */
	char name[];
};

struct centry {
	struct centry *next;          /* bucket chain */
	struct centry *older, *newer; /* insertion order: the oldest goes first */
	uint64_t ino;
	uint64_t until_ms;            /* the lease it is complete under (the caller's clock) */
	int pending;                  /* mutations of this client in flight in it */
	bool claimed;                 /* claimed at meta for asynchronous creates */
	uint32_t mode;                /* its mode when claimed */
	uint32_t stripe_unit;         /* its files' stripe unit (its default layout's) */
	size_t n, nb;                 /* names, name buckets (a power of two) */
	struct cname **b;
};

struct cdir {
	size_t max_dirs, max_names;
	size_t n, nb;                 /* directories, buckets (a power of two) */
	struct centry **b;
	struct centry *oldest, *newest;
};

static uint64_t hash_ino(uint64_t ino)
{
	return ino * 0x9e3779b97f4a7c15ull;
}

/* FNV-1a */
static uint64_t hash_name(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

struct cdir *cdir_new(size_t max_dirs, size_t max_names)
{
	struct cdir *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->max_dirs = max_dirs ? max_dirs : 1;
	t->max_names = max_names;
	t->nb = 16;
	while (t->nb < 2 * t->max_dirs)
		t->nb *= 2;
	if (!(t->b = calloc(t->nb, sizeof(*t->b)))) {
		free(t);
		return NULL;
	}
	return t;
}

static void entry_free(struct centry *e)
{
	for (size_t i = 0; i < e->nb; i++)
		while (e->b[i]) {
			struct cname *n = e->b[i];
			e->b[i] = n->next;
			free(n);
		}
	free(e->b);
	free(e);
}

static struct centry **slot_of(const struct cdir *t, uint64_t ino)
{
	struct centry **p = &t->b[(hash_ino(ino) >> 32) & (t->nb - 1)];
	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

static struct centry *find(const struct cdir *t, uint64_t ino)
{
	return *slot_of(t, ino);
}

static void unlink_entry(struct cdir *t, struct centry **p)
{
	struct centry *e = *p;
	*p = e->next;
	if (e->older)
		e->older->newer = e->newer;
	else
		t->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		t->newest = e->older;
	t->n--;
	entry_free(e);
}

void cdir_drop(struct cdir *t, uint64_t dir)
{
	struct centry **p = slot_of(t, dir);
	if (*p)
		unlink_entry(t, p);
}

void cdir_clear(struct cdir *t)
{
	while (t->oldest)
		cdir_drop(t, t->oldest->ino);
}

void cdir_free(struct cdir *t)
{
	if (!t)
		return;
	cdir_clear(t);
	free(t->b);
	free(t);
}

int cdir_add_dir(struct cdir *t, uint64_t dir, uint64_t until_ms)
{
	cdir_drop(t, dir);
	while (t->n >= t->max_dirs)
		cdir_drop(t, t->oldest->ino);
	struct centry *e = calloc(1, sizeof(*e));
	if (!e || !(e->b = calloc(8, sizeof(*e->b)))) {
		free(e);
		return -ENOMEM;
	}
	e->nb = 8;
	e->ino = dir;
	e->until_ms = until_ms;
	struct centry **p = slot_of(t, dir);
	*p = e;
	e->older = t->newest;
	if (t->newest)
		t->newest->newer = e;
	else
		t->oldest = e;
	t->newest = e;
	t->n++;
	return 0;
}

int cdir_has(const struct cdir *t, uint64_t dir)
{
	return find(t, dir) != NULL;
}

uint64_t cdir_until(const struct cdir *t, uint64_t dir)
{
	const struct centry *e = find(t, dir);
	return e ? e->until_ms : 0;
}

void cdir_set_until(struct cdir *t, uint64_t dir, uint64_t until_ms)
{
	struct centry *e = find(t, dir);
	if (e)
		e->until_ms = until_ms;
}

size_t cdir_count(const struct cdir *t)
{
	return t->n;
}

static struct cname **name_slot(const struct centry *e, uint64_t h, const char *name, size_t len)
{
	struct cname **p = &e->b[(h >> 32) & (e->nb - 1)];
	while (*p && !((*p)->hash == h && (*p)->len == len && memcmp((*p)->name, name, len) == 0))
		p = &(*p)->next;
	return p;
}

/* Doubles e's buckets; false when out of memory. */
static bool grow(struct centry *e)
{
	size_t nb = e->nb * 2;
	struct cname **b = calloc(nb, sizeof(*b));
	if (!b)
		return false;
	for (size_t i = 0; i < e->nb; i++)
		while (e->b[i]) {
			struct cname *n = e->b[i];
			e->b[i] = n->next;
			size_t k = (n->hash >> 32) & (nb - 1);
			n->next = b[k];
			b[k] = n;
		}
	free(e->b);
	e->b = b;
	e->nb = nb;
	return true;
}

void cdir_name_add(struct cdir *t, uint64_t dir, const char *name, size_t len)
{
	cdir_name_add_kind(t, dir, name, len, false);
}

void cdir_name_add_kind(struct cdir *t, uint64_t dir, const char *name, size_t len, bool file)
{
	struct centry **p = slot_of(t, dir);
	struct centry *e = *p;
	if (!e)
		return;
	uint64_t h = hash_name(name, len);
	struct cname *have = *name_slot(e, h, name, len);
	if (have) {
		have->file = file;
		return;
	}
	if (e->n >= t->max_names || (e->n >= e->nb && !grow(e))) {
		unlink_entry(t, p); /* cannot keep it complete */
		return;
	}
	struct cname *n = malloc(sizeof(*n) + len);
	if (!n) {
		unlink_entry(t, p);
		return;
	}
	n->hash = h;
	n->len = len;
	n->file = file;
	memcpy(n->name, name, len);
	struct cname **np = name_slot(e, h, name, len); /* the end of the chain */
	n->next = NULL;
	*np = n;
	e->n++;
}

void cdir_name_del(struct cdir *t, uint64_t dir, const char *name, size_t len)
{
	struct centry *e = find(t, dir);
	if (!e)
		return;
	struct cname **np = name_slot(e, hash_name(name, len), name, len);
	struct cname *n = *np;
	if (!n)
		return;
	*np = n->next;
	free(n);
	e->n--;
}

void cdir_pending(struct cdir *t, uint64_t dir, int delta)
{
	struct centry *e = find(t, dir);
	if (!e)
		return;
	e->pending += delta;
	if (e->pending < 0)
		e->pending = 0;
}

enum cdir_answer cdir_lookup(const struct cdir *t, uint64_t dir, const char *name, size_t len)
{
	const struct centry *e = find(t, dir);
	if (!e || e->pending)
		return CDIR_UNKNOWN;
	return *name_slot(e, hash_name(name, len), name, len) ? CDIR_PRESENT : CDIR_ABSENT;
}

bool cdir_name_file(const struct cdir *t, uint64_t dir, const char *name, size_t len)
{
	const struct centry *e = find(t, dir);
	if (!e || e->pending)
		return false;
	const struct cname *n = *name_slot(e, hash_name(name, len), name, len);
	return n && n->file;
}

void cdir_claim(struct cdir *t, uint64_t dir, uint32_t mode, uint32_t stripe_unit)
{
	struct centry *e = find(t, dir);
	if (e && stripe_unit) {
		e->claimed = true;
		e->mode = mode;
		e->stripe_unit = stripe_unit;
	}
}

bool cdir_claimed(const struct cdir *t, uint64_t dir, uint32_t *mode, uint32_t *stripe_unit)
{
	const struct centry *e = find(t, dir);
	if (!e || !e->claimed || e->pending)
		return false;
	*mode = e->mode;
	*stripe_unit = e->stripe_unit;
	return true;
}
