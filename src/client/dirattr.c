/* libweft: a directory's attributes as this client's own creates left them.
 *
 * DESIGN: creating a file changes its directory's mtime and ctime, so the kernel drops
 * the directory's cached attributes, and its permission check before the next create in
 * it (default_permissions) asks for them again: one GETATTR round trip per file tar
 * extracts. CREATE_OPEN's reply carries the parent's attributes after the create
 * (pattr), and libweft keeps them here. They answer the kernel's GETATTR of the
 * directory while they are still what meta would say: this client holds a lease on the
 * directory (so meta recalls it before another client changes it), no recall reached it
 * since the request left (the recall generation), and this client sent nothing since
 * that could have changed the directory otherwise (attr_gen and dir_gen: any namespace
 * change but a CREATE_OPEN, a setattr, an xattr). Of two replies, the one with the later
 * ctime wins (two threads creating in one directory).
 *
 * Threads: any; c->dirattr_lock guards the table. */
#include <stdlib.h>

#include "client/client_int.h"

struct dirattr_slot {
	uint64_t ino;
	uint64_t rgen, agen, dgen; /* recall, attr and dir generations it was valid at */
	struct weft_attr a;
};

#define DIRATTR_SLOTS 1024 /* a power of two */
/* The last steps of attr_gen that touch() made, by generation modulo the ring: which
 * directory each was for. A reply noted at a generation from before its request is
 * kept at the current one when every step since was another directory's
 * (client_dirattr_note). */
#define DIRATTR_STEPS 256

struct dirattr_table {
	struct dirattr_slot slot[DIRATTR_SLOTS];
	struct {
		uint64_t gen, ino;
	} step[DIRATTR_STEPS];
};

static size_t slot_of(uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (DIRATTR_SLOTS - 1);
}

int client_dirattr_init(struct weft_client *c)
{
	pthread_mutex_init(&c->dirattr_lock, NULL);
	c->dirattr = calloc(1, sizeof(*c->dirattr));
	return c->dirattr ? 0 : -1;
}

void client_dirattr_note(struct weft_client *c, const struct weft_attr *pa, uint64_t rgen,
			 uint64_t agen, uint64_t dgen)
{
	if (!pa->ino || !c->dirattr || rgen != client_recall_gen(c))
		return;
	pthread_mutex_lock(&c->dirattr_lock);
	/* other directories' asynchronous removals while the request was out (16 processes
	 * removing files in their own directories: each GETATTR's reply was noted behind the
	 * others' steps and missed at once, 2,051 of them went to meta in 3,200 removals) */
	uint64_t now = atomic_load(&c->attr_gen);
	bool others_only = now - agen <= DIRATTR_STEPS;
	for (uint64_t g = agen + 1; others_only && g <= now; g++)
		others_only = c->dirattr->step[g % DIRATTR_STEPS].gen == g &&
			      c->dirattr->step[g % DIRATTR_STEPS].ino != pa->ino;
	if (others_only)
		agen = now;
	struct dirattr_slot *s = &c->dirattr->slot[slot_of(pa->ino)];
	if (s->ino != pa->ino || s->rgen != rgen || s->agen != agen || s->dgen != dgen ||
	    s->a.ctime_ns <= pa->ctime_ns)
		*s = (struct dirattr_slot){.ino = pa->ino, .rgen = rgen, .agen = agen,
					   .dgen = dgen, .a = *pa};
	pthread_mutex_unlock(&c->dirattr_lock);
}

bool client_dirattr_is_dir(struct weft_client *c, uint64_t ino)
{
	if (!c->dirattr)
		return false;
	pthread_mutex_lock(&c->dirattr_lock);
	bool dir = c->dirattr->slot[slot_of(ino)].ino == ino;
	pthread_mutex_unlock(&c->dirattr_lock);
	return dir;
}

bool client_dirattr_get(struct weft_client *c, uint64_t ino, struct weft_attr *a)
{
	if (!c->dirattr || weft_lease_left_ms(c, ino) == 0)
		return false;
	uint64_t rgen = client_recall_gen(c), agen = atomic_load(&c->attr_gen),
		 dgen = atomic_load(&c->dir_gen);
	pthread_mutex_lock(&c->dirattr_lock);
	struct dirattr_slot *s = &c->dirattr->slot[slot_of(ino)];
	bool ok = s->ino == ino && s->rgen == rgen && s->agen == agen && s->dgen == dgen;
	if (ok)
		*a = s->a;
	pthread_mutex_unlock(&c->dirattr_lock);
	return ok;
}

/* ino's slot, if valid at the attribute generation of the moment, takes time_ns as its
 * mtime and ctime (and nlink_delta), or *set when given; with bump, the generation
 * moves on and the slot stays valid at the new one. With others, every other slot valid
 * at the old generation does too: the step is an asynchronous removal in ino or setattr
 * of it, which changes no other directory's attributes (an rm -rf that ended every
 * directory's kept attributes at each unlink sent the kernel's permission checks of the
 * parents to meta, each waiting for every removal sent before it). The move and the
 * slots' step are one under the lock: two threads that each moved it first and then
 * stepped the slots left every slot behind (16 processes removing files: 2,328 GETATTRs
 * to meta, 1.6 ms each at the kernel). */
static void touch(struct weft_client *c, uint64_t ino, int64_t time_ns, bool bump,
		  int nlink_delta, bool others, const struct weft_attr *set)
{
	if (!c->dirattr) {
		if (bump)
			atomic_fetch_add(&c->attr_gen, 1);
		return;
	}
	pthread_mutex_lock(&c->dirattr_lock);
	uint64_t rgen = client_recall_gen(c), dgen = atomic_load(&c->dir_gen);
	uint64_t agen = bump ? atomic_fetch_add(&c->attr_gen, 1) : atomic_load(&c->attr_gen);
	uint64_t new_agen = bump ? agen + 1 : agen;
	if (bump) {
		c->dirattr->step[new_agen % DIRATTR_STEPS].gen = new_agen;
		c->dirattr->step[new_agen % DIRATTR_STEPS].ino = ino;
	}
	for (size_t i = 0; others && i < DIRATTR_SLOTS; i++) {
		struct dirattr_slot *o = &c->dirattr->slot[i];
		if (o->ino && o->ino != ino && o->rgen == rgen && o->agen == agen && o->dgen == dgen)
			o->agen = new_agen;
	}
	struct dirattr_slot *s = &c->dirattr->slot[slot_of(ino)];
	if (s->ino == ino && s->rgen == rgen && s->agen == agen && s->dgen == dgen) {
		s->agen = new_agen;
		s->a.nlink = (uint32_t)((int64_t)s->a.nlink + nlink_delta);
		if (set)
			s->a = *set;
		else if (s->a.ctime_ns < time_ns)
			s->a.mtime_ns = s->a.ctime_ns = time_ns;
	}
	pthread_mutex_unlock(&c->dirattr_lock);
}

void client_dirattr_touch(struct weft_client *c, uint64_t ino, int64_t time_ns)
{
	touch(c, ino, time_ns, false, 0, false, NULL);
}

void client_dirattr_unlinked(struct weft_client *c, uint64_t ino, int64_t time_ns)
{
	touch(c, ino, time_ns, true, 0, true, NULL);
}

void client_dirattr_rmdired(struct weft_client *c, uint64_t ino, int64_t time_ns)
{
	touch(c, ino, time_ns, true, -1, true, NULL);
}

void client_dirattr_mkdired(struct weft_client *c, uint64_t ino, int64_t time_ns)
{
	touch(c, ino, time_ns, true, +1, true, NULL);
}

void client_dirattr_set(struct weft_client *c, const struct weft_attr *a)
{
	touch(c, a->ino, 0, true, 0, true, a);
}
