/* libweft's side of leases (meta's lease.h): what this client may cache, and recalls.
 *
 * DESIGN: a small direct-mapped table (ino -> lease expiry, CLOCK_MONOTONIC ms) filled
 * from every reply that carries a lease; weft_lease_left_ms tells the mount how long the
 * kernel may cache an inode's attributes and entries. A lost slot (two inodes in one)
 * only means "no lease": the kernel then asks again.
 *
 * A RECALL from meta arrives on the loop thread, which only queues it. The recall thread
 * bumps the recall generation (a reply to a request sent before a recall carries no
 * lease: it may show the old state), drops this client's own stale copies (readahead
 * blocks, the known size), and hands the kernel invalidation to the notifier thread
 * through the mount's callback. It acknowledges once the callback returned or after
 * RECALL_WAIT_MS, whichever is first: notify_inval_entry takes the directory's inode
 * lock, which the kernel holds across this mount's own CREATE or UNLINK in it, and that
 * request may be parked at meta behind a recall sent to another mount that is itself
 * waiting the same way. Neither thread takes a lock a FUSE READ or WRITE handler holds
 * while it waits on meta.
 *
 * Complete directories (cdir.h): a directory this client created starts empty and
 * complete, and stays so while its lease stays valid without a gap and no recall names
 * it; the names this client makes and removes in it are kept, so a lookup of any other
 * name is answered ENOENT here (client_cdir_absent). Its lease is extended only by a
 * renewal meta grants on a lease that never lapsed (dir_lease in ENTRY and OPENED
 * replies, meta_leases_renew) or by a reply while the directory's own expiry here has
 * not passed, and that no recall of the directory came after (recalled_since); seen
 * past it, the directory is dropped. Kept under slot_lock, with its own
 * expiry (a slot lost to another inode does not lose it; weft_lease_left_ms, what the
 * kernel may cache, stays the slot's).
 *
 * Threads: any; the recall and notifier threads are started by client_lease_start. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/cdir.h"
#include "client/client_int.h"
#include "common/log.h"
#include "weft/err.h"

#define LEASE_SLOT_BITS 16
#define LEASE_SLOTS (1u << LEASE_SLOT_BITS)
#define RECALL_WAIT_MS 300
#define CDIR_MAX_DIRS 1024
#define UCLAIM_SLOT_BITS 8
#define UCLAIM_SLOTS (1u << UCLAIM_SLOT_BITS)
#define RECALL_RING 64
#define UCLAIM_REFUSED_MS 1000
/* directories made complete from a listing (client_cdir_fill_*): sync creates counted
 * per directory in a direct-mapped table, a directory tried at most once in this long */
#define FILL_SLOT_BITS 6
#define FILL_RETRY_MS 5000
#define FILL_FIRST_NAMES 4096
/* this client's mutations under way that may add a name, by a hash of their directory */
#define INFLIGHT_SLOT_BITS 8

struct recall_item {
	struct recall_item *next;
	struct conn *cn;
	struct frame *f;
	uint64_t ino;
	uint32_t what;
	size_t namelen;
	char name[WEFT_NAME_MAX + 1];
	int refs;          /* recall thread + notifier (cr->lock) */
	bool notified;     /* the callback returned (cr->lock) */
};

struct client_recall {
	pthread_mutex_t lock;  /* guards everything below but the slots */
	pthread_cond_t cond;   /* queue, notified */
	struct recall_item *queue, **qtail;     /* for the recall thread */
	struct recall_item *nqueue, **nqtail;   /* for the notifier */
	bool stopping;
	pthread_t recall_thread, notify_thread;
	weft_recall_fn fn;
	void *arg;
	atomic_uint_fast64_t gen;
	pthread_mutex_t slot_lock;
	struct { uint64_t ino; uint64_t until_ms; } *slots;
	struct cdir *cdirs;    /* slot_lock; NULL: the mount's neg_cache=off */
	/* directories claimed for asynchronous unlinks (DIR_CLAIM), direct-mapped; until_ms:
	 * the claim's lease here; renew_ms: half of it gone, renewed at the next use;
	 * refused_ms: meta said no, not asked again before (slot_lock) */
	struct { uint64_t dir, until_ms, renew_ms, refused_ms; } uclaims[UCLAIM_SLOTS];
	/* which inode each recent bump of gen was for (slot_lock): a reply sent before a
	 * recall of another inode is still good for its own (recalled_since) */
	struct { uint64_t ino, gen; } ring[RECALL_RING];
	uint64_t gen_all;      /* the last bump for every inode (slot_lock) */
	/* a directory being made complete from a listing, one at a time (0: none);
	 * fill_spoiled: a mutation of this client began there meanwhile; inflight: this
	 * client's mutations under way (client_cdir_begin to _end) by a hash of their
	 * directory; fills: creates that went to meta per directory, and when it was last
	 * tried (all slot_lock) */
	uint64_t fill_dir, fill_gen, fill_asked_ms; /* the recall generation and the time
						      * before its claim was asked */
	bool fill_spoiled;
	uint32_t inflight[1u << INFLIGHT_SLOT_BITS];
	struct { uint64_t dir, tried_ms; uint32_t creates; } fills[1u << FILL_SLOT_BITS];
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The slot of key in a direct-mapped table of 2^bits entries (Fibonacci hashing). */
static size_t hash_slot(uint64_t key, unsigned bits)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

static size_t slot_of(uint64_t ino)
{
	return hash_slot(ino, LEASE_SLOT_BITS);
}

static void cdir_forget(struct client_recall *cr, uint64_t dir);

/* Bumps the recall generation for ino (0: every inode). */
static void gen_bump(struct client_recall *cr, uint64_t ino)
{
	pthread_mutex_lock(&cr->slot_lock);
	uint64_t g = atomic_fetch_add(&cr->gen, 1) + 1;
	if (ino) {
		cr->ring[g % RECALL_RING].ino = ino;
		cr->ring[g % RECALL_RING].gen = g;
	} else {
		cr->gen_all = g;
	}
	pthread_mutex_unlock(&cr->slot_lock);
}

/* A recall of dir (or of everything) came since generation gen (slot_lock held); true
 * when it cannot tell. */
static bool recalled_since(const struct client_recall *cr, uint64_t dir, uint64_t gen)
{
	uint64_t now = atomic_load(&cr->gen);
	if (now == gen)
		return false;
	if (now < gen || now - gen >= RECALL_RING || cr->gen_all > gen)
		return true;
	for (uint64_t g = gen + 1; g <= now; g++)
		if (cr->ring[g % RECALL_RING].gen != g || cr->ring[g % RECALL_RING].ino == dir)
			return true;
	return false;
}

uint64_t client_recall_gen(struct weft_client *c)
{
	return c->recall ? atomic_load(&c->recall->gen) : 0;
}

bool client_recalled_since(struct weft_client *c, uint64_t ino, uint64_t gen)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return true;
	pthread_mutex_lock(&cr->slot_lock);
	bool r = recalled_since(cr, ino, gen);
	pthread_mutex_unlock(&cr->slot_lock);
	return r;
}

/* A reply renewed ino's lease for lease_ms (slot_lock held): a complete directory's
 * expiry moves with it if it had not passed; if it had, the directory was not covered
 * for a while (another session may have changed it without a recall): dropped. */
static void cdir_extend(struct client_recall *cr, uint64_t ino, uint32_t lease_ms, uint64_t now)
{
	uint64_t until;
	if (!cr->cdirs || !(until = cdir_until(cr->cdirs, ino)))
		return;
	if (until <= now) {
		cdir_drop(cr->cdirs, ino);
		return;
	}
	uint64_t nu = now + lease_ms - lease_ms / 10;
	if (nu > until)
		cdir_set_until(cr->cdirs, ino, nu);
}

void client_lease_note(struct weft_client *c, uint64_t ino, uint32_t lease_ms, uint64_t gen)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return;
	if (lease_ms && lease_ms > c->lease_ms_seen)
		c->lease_ms_seen = lease_ms; /* a race here only delays a self-check */
	/* a recall since the request went: the reply may predate the change */
	if (atomic_load(&cr->gen) != gen)
		lease_ms = 0;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = slot_of(ino);
	cr->slots[i].ino = ino;
	/* the lease ran from before the request left; a margin for the reply's way back */
	cr->slots[i].until_ms = lease_ms ? now + lease_ms - lease_ms / 10 : 0;
	if (lease_ms)
		cdir_extend(cr, ino, lease_ms, now);
	pthread_mutex_unlock(&cr->slot_lock);
}

static void lease_forget(struct client_recall *cr, uint64_t ino)
{
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = slot_of(ino);
	if (cr->slots[i].ino == ino)
		cr->slots[i].until_ms = 0;
	pthread_mutex_unlock(&cr->slot_lock);
}

uint32_t weft_lease_left_ms(struct weft_client *c, uint64_t ino)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return 0;
	uint64_t now = mono_ms(), left = 0;
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = slot_of(ino);
	if (cr->slots[i].ino == ino && cr->slots[i].until_ms > now)
		left = cr->slots[i].until_ms - now;
	/* not a complete directory's own expiry: a slot set to 0 by a reply that may
	 * predate a change must keep the kernel from caching that reply. A negative entry
	 * answered in libweft then gets 0 too, and the kernel asks libweft again. */
	pthread_mutex_unlock(&cr->slot_lock);
	return (uint32_t)left;
}

/* ---- complete directories ---- */

void client_cdir_created(struct weft_client *c, uint64_t dir, uint32_t lease_ms, uint64_t gen,
			 const struct weft_attr *claimed, uint32_t stripe_unit)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs || !lease_ms)
		return;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	/* a recall since the request went may have named it (the recall thread bumps the
	 * generation before it drops directories under this lock) */
	if (!recalled_since(cr, dir, gen) &&
	    cdir_add_dir(cr->cdirs, dir, now + lease_ms - lease_ms / 10) == 0 && claimed)
		cdir_claim(cr->cdirs, dir, claimed->mode, stripe_unit);
	pthread_mutex_unlock(&cr->slot_lock);
}

/* dir is complete and claimed here, its lease running (slot_lock held): with its mode
 * and its files' stripe unit. */
static bool claimed_locked(struct client_recall *cr, uint64_t dir, uint32_t *mode, uint32_t *su)
{
	return cdir_until(cr->cdirs, dir) > mono_ms() && cdir_claimed(cr->cdirs, dir, mode, su);
}

uint32_t client_cdir_claim_name(struct weft_client *c, uint64_t dir, const char *name,
				bool file)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return 0;
	uint32_t ok = 0, mode, su;
	size_t len = strlen(name);
	pthread_mutex_lock(&cr->slot_lock);
	/* a setgid directory gives its group, which meta checks against the caller's */
	if (claimed_locked(cr, dir, &mode, &su) && !(mode & S_ISGID) &&
	    cdir_lookup(cr->cdirs, dir, name, len) == CDIR_ABSENT) {
		cdir_name_add_kind(cr->cdirs, dir, name, len, file);
		ok = cdir_lookup(cr->cdirs, dir, name, len) == CDIR_PRESENT ? su : 0;
	}
	pthread_mutex_unlock(&cr->slot_lock);
	return ok;
}

bool client_cdir_claimed(struct weft_client *c, uint64_t dir)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return false;
	uint32_t mode, su;
	pthread_mutex_lock(&cr->slot_lock);
	bool ok = claimed_locked(cr, dir, &mode, &su);
	pthread_mutex_unlock(&cr->slot_lock);
	return ok;
}

bool client_cdir_rename_name(struct weft_client *c, uint64_t dir, const char *name,
			     const char *newname)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return false;
	bool ok = false;
	uint32_t mode, su;
	size_t len = strlen(name), newlen = strlen(newname);
	pthread_mutex_lock(&cr->slot_lock);
	enum cdir_answer to = CDIR_UNKNOWN;
	bool file = false;
	if (claimed_locked(cr, dir, &mode, &su) &&
	    cdir_lookup(cr->cdirs, dir, name, len) == CDIR_PRESENT) {
		to = cdir_lookup(cr->cdirs, dir, newname, newlen);
		file = cdir_name_file(cr->cdirs, dir, name, len);
	}
	/* over an existing name only a file over a file: a directory replaced must be
	 * empty, which is meta's to say */
	if (to == CDIR_ABSENT ||
	    (to == CDIR_PRESENT && file && cdir_name_file(cr->cdirs, dir, newname, newlen))) {
		cdir_name_del(cr->cdirs, dir, name, len);
		cdir_name_add_kind(cr->cdirs, dir, newname, newlen, file);
		/* a name that did not fit dropped dir: no longer complete, not answered here */
		ok = cdir_lookup(cr->cdirs, dir, newname, newlen) == CDIR_PRESENT;
	}
	pthread_mutex_unlock(&cr->slot_lock);
	return ok;
}

void client_cdir_unclaim(struct weft_client *c, uint64_t dir)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return;
	cdir_forget(cr, dir);
}

void client_cdir_unlinked(struct weft_client *c, uint64_t dir, const char *name)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return;
	pthread_mutex_lock(&cr->slot_lock);
	cdir_name_del(cr->cdirs, dir, name, strlen(name));
	pthread_mutex_unlock(&cr->slot_lock);
}

void client_cdir_renewed(struct weft_client *c, uint64_t dir, uint32_t dir_lease, uint64_t gen)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs || !dir_lease)
		return;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	if (!recalled_since(cr, dir, gen))
		cdir_extend(cr, dir, dir_lease, now);
	pthread_mutex_unlock(&cr->slot_lock);
}

static size_t inflight_slot(uint64_t dir)
{
	return hash_slot(dir, INFLIGHT_SLOT_BITS);
}

void client_cdir_begin(struct weft_client *c, uint64_t dir)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return;
	pthread_mutex_lock(&cr->slot_lock);
	cdir_pending(cr->cdirs, dir, +1);
	cr->inflight[inflight_slot(dir)]++;
	if (dir == cr->fill_dir)
		cr->fill_spoiled = true;
	pthread_mutex_unlock(&cr->slot_lock);
}

void client_cdir_end(struct weft_client *c, uint64_t dir, const char *name, int change, int err,
		     uint32_t dir_lease, uint64_t gen)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	cdir_pending(cr->cdirs, dir, -1);
	cr->inflight[inflight_slot(dir)]--;
	if (err) {
		/* refused, or its outcome unknown: what is in dir is no longer certain */
		cdir_drop(cr->cdirs, dir);
	} else if (cdir_until(cr->cdirs, dir) <= now) {
		cdir_drop(cr->cdirs, dir); /* its lease ran out: others may have changed it */
	} else {
		if (change > 0)
			cdir_name_add_kind(cr->cdirs, dir, name, strlen(name), change == 2);
		else if (change < 0)
			cdir_name_del(cr->cdirs, dir, name, strlen(name));
		/* a renewal granted after a recall may predate the change: not taken (the
		 * recall dropped the directory anyway if it named it) */
		if (dir_lease && !recalled_since(cr, dir, gen))
			cdir_extend(cr, dir, dir_lease, now);
	}
	pthread_mutex_unlock(&cr->slot_lock);
}

bool client_cdir_absent(struct weft_client *c, uint64_t dir, const char *name)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return false;
	bool absent = false;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	uint64_t until = cdir_until(cr->cdirs, dir);
	if (until && until <= now)
		cdir_drop(cr->cdirs, dir); /* lapsed: never complete again */
	else if (until)
		absent = cdir_lookup(cr->cdirs, dir, name, strlen(name)) == CDIR_ABSENT;
	pthread_mutex_unlock(&cr->slot_lock);
	return absent;
}

size_t client_cdir_fill_due(struct weft_client *c, uint64_t dir, bool removing)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return 0;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = hash_slot(dir, FILL_SLOT_BITS);
	if (cr->fills[i].dir != dir) {
		cr->fills[i].dir = dir;
		cr->fills[i].creates = 0;
		cr->fills[i].tried_ms = 0;
	}
	cr->fills[i].creates++;
	bool due = (removing || cr->fills[i].creates >= 2) && !cdir_until(cr->cdirs, dir) &&
		   (!cr->fills[i].tried_ms || now - cr->fills[i].tried_ms >= FILL_RETRY_MS);
	if (due)
		cr->fills[i].tried_ms = now;
	/* one create after a removal (an editor's save, sed -i) lists a small directory
	 * only; a second create there is worth a large one */
	size_t max = !due ? 0 : cr->fills[i].creates >= 2 ? CLIENT_CDIR_MAX_NAMES : FILL_FIRST_NAMES;
	pthread_mutex_unlock(&cr->slot_lock);
	return max;
}

bool client_cdir_fill_begin(struct weft_client *c, uint64_t dir)
{
	struct client_recall *cr = c->recall;
	if (!cr || !cr->cdirs)
		return false;
	pthread_mutex_lock(&cr->slot_lock);
	/* a mutation of this client there already under way may add a name the listing
	 * misses: not now */
	bool ok = !cr->fill_dir && !cr->inflight[inflight_slot(dir)];
	if (ok) {
		cr->fill_dir = dir;
		cr->fill_spoiled = false;
		cr->fill_gen = atomic_load(&cr->gen);
		cr->fill_asked_ms = mono_ms();
	}
	pthread_mutex_unlock(&cr->slot_lock);
	return ok;
}

bool client_cdir_fill_end(struct weft_client *c, uint64_t dir, const struct client_cdir_fill *f)
{
	struct client_recall *cr = c->recall;
	pthread_mutex_lock(&cr->slot_lock);
	bool ok = f->listed && f->lease_ms && f->stripe_unit && !cr->fill_spoiled &&
		  !recalled_since(cr, dir, cr->fill_gen) &&
		  cdir_add_dir(cr->cdirs, dir, cr->fill_asked_ms + f->lease_ms - f->lease_ms / 10) == 0;
	if (ok) {
		struct rbuf r;
		rbuf_init(&r, f->names, f->names_len);
		while (rbuf_left(&r)) {
			bool file = rbuf_u8(&r) != 0;
			uint8_t len = rbuf_u8(&r);
			const uint8_t *name = rbuf_ptr(&r, len);
			if (!rbuf_ok(&r))
				break;
			cdir_name_add_kind(cr->cdirs, dir, (const char *)name, len, file);
		}
		cdir_claim(cr->cdirs, dir, f->mode, f->stripe_unit);
		ok = rbuf_ok(&r) && cdir_has(cr->cdirs, dir); /* a name that did not fit
								* dropped it */
		if (!ok)
			cdir_drop(cr->cdirs, dir);
	}
	cr->fill_dir = 0;
	pthread_mutex_unlock(&cr->slot_lock);
	return ok;
}

static size_t uclaim_slot(uint64_t dir)
{
	return hash_slot(dir, UCLAIM_SLOT_BITS);
}

/* A recall names dir, or a change of this client's there failed (slot_lock held). */
static void uclaim_drop(struct client_recall *cr, uint64_t dir)
{
	size_t i = uclaim_slot(dir);
	if (cr->uclaims[i].dir == dir)
		cr->uclaims[i].until_ms = 0;
}

static void cdir_forget(struct client_recall *cr, uint64_t dir)
{
	pthread_mutex_lock(&cr->slot_lock);
	if (cr->cdirs)
		cdir_drop(cr->cdirs, dir);
	uclaim_drop(cr, dir);
	pthread_mutex_unlock(&cr->slot_lock);
}

int client_uclaim_held(struct weft_client *c, uint64_t dir)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return -1;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = uclaim_slot(dir);
	int r = 0;
	if (cr->uclaims[i].dir == dir && cr->uclaims[i].until_ms > now)
		r = 1;
	else if (cr->uclaims[i].dir == dir && cr->uclaims[i].refused_ms > now)
		r = -1;
	pthread_mutex_unlock(&cr->slot_lock);
	return r;
}

bool client_uclaim_due(struct weft_client *c, uint64_t dir)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return false;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = uclaim_slot(dir);
	bool due = cr->uclaims[i].dir == dir && cr->uclaims[i].until_ms > now &&
		   cr->uclaims[i].renew_ms <= now;
	pthread_mutex_unlock(&cr->slot_lock);
	return due;
}

void client_uclaim_note(struct weft_client *c, uint64_t dir, uint32_t lease_ms, uint64_t gen)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return;
	uint64_t now = mono_ms();
	pthread_mutex_lock(&cr->slot_lock);
	size_t i = uclaim_slot(dir);
	cr->uclaims[i].dir = dir;
	/* a recall since the request went may have ended it */
	bool ok = lease_ms && !recalled_since(cr, dir, gen);
	cr->uclaims[i].until_ms = ok ? now + lease_ms - lease_ms / 10 : 0;
	cr->uclaims[i].renew_ms = now + lease_ms / 2;
	cr->uclaims[i].refused_ms = ok ? 0 : now + UCLAIM_REFUSED_MS;
	pthread_mutex_unlock(&cr->slot_lock);
}

void weft_client_on_recall(struct weft_client *c, weft_recall_fn fn, void *arg)
{
	pthread_mutex_lock(&c->recall->lock);
	c->recall->fn = fn;
	c->recall->arg = arg;
	pthread_mutex_unlock(&c->recall->lock);
}

void client_lease_drop_all(struct weft_client *c)
{
	struct client_recall *cr = c->recall;
	gen_bump(cr, 0);
	pthread_mutex_lock(&cr->slot_lock);
	memset(cr->slots, 0, LEASE_SLOTS * sizeof(*cr->slots));
	memset(cr->uclaims, 0, sizeof(cr->uclaims));
	if (cr->cdirs)
		cdir_clear(cr->cdirs);
	pthread_mutex_unlock(&cr->slot_lock);
}

void client_cdir_drop_all(struct weft_client *c)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return;
	pthread_mutex_lock(&cr->slot_lock);
	if (cr->cdirs)
		cdir_clear(cr->cdirs);
	memset(cr->uclaims, 0, sizeof(cr->uclaims)); /* a new session: meta forgot them */
	pthread_mutex_unlock(&cr->slot_lock);
}

/* ---- recalls ---- */

static void item_put(struct client_recall *cr, struct recall_item *it)
{
	pthread_mutex_lock(&cr->lock);
	bool last = --it->refs == 0;
	pthread_mutex_unlock(&cr->lock);
	if (last)
		free(it);
}

bool client_recall_request(struct weft_client *c, struct conn *cn, struct frame *f)
{
	struct client_recall *cr = c->recall;
	struct weft_msg_recall m;
	const char *why = NULL;
	if (proto_recall_decode(f->payload, f->h.payload_len, &m, &why) < 0) {
		conn_reply_error(cn, f, -WEFT_EPROTO, 0, "RECALL: %s", why ? why : "malformed");
		return false;
	}
	struct recall_item *it = calloc(1, sizeof(*it));
	if (!it) {
		conn_reply(cn, f, -ENOMEM, NULL, NULL, 0, NULL, NULL);
		return false;
	}
	it->ino = m.ino;
	it->what = m.what;
	it->namelen = m.name.len;
	memcpy(it->name, m.name.p, m.name.len);
	it->cn = cn;
	conn_get(cn);
	it->f = f;
	it->refs = 1;
	pthread_mutex_lock(&cr->lock);
	*cr->qtail = it;
	cr->qtail = &it->next;
	pthread_cond_broadcast(&cr->cond);
	pthread_mutex_unlock(&cr->lock);
	return true; /* f is the item's now */
}

/* Our own caches of a file whose data changed elsewhere: prefetched blocks, and the
 * size (taken from meta's next answer). */
static void drop_data(struct weft_client *c, uint64_t ino)
{
	struct winode *wi = client_winode_find(c, ino);
	if (!wi)
		return;
	pthread_mutex_lock(&wi->lock);
	wi->wgen++;
	client_ra_drop(c, wi);
	wi->size_refresh = true;
	pthread_mutex_unlock(&wi->lock);
	client_winode_put(c, wi);
}

/* Hands it to the notifier thread (cr->lock held). */
static void notify_enqueue(struct client_recall *cr, struct recall_item *it)
{
	*cr->nqtail = it;
	cr->nqtail = &it->next;
	pthread_cond_broadcast(&cr->cond);
}

void client_lease_invalidate(struct weft_client *c, uint64_t ino, uint32_t what, const char *name)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return;
	gen_bump(cr, ino);
	lease_forget(cr, ino);
	struct recall_item *it = calloc(1, sizeof(*it));
	if (!it)
		return;
	it->ino = ino;
	it->what = what;
	it->namelen = name ? strlen(name) : 0;
	memcpy(it->name, name ? name : "", it->namelen);
	it->refs = 1;
	/* the notifier's alone: it may wait for the directory's lock in the kernel, which
	 * a create there holds while it waits for room among the posted creates */
	pthread_mutex_lock(&cr->lock);
	notify_enqueue(cr, it);
	pthread_mutex_unlock(&cr->lock);
}

static void *notify_main(void *arg)
{
	struct client_recall *cr = arg;
	pthread_mutex_lock(&cr->lock);
	for (;;) {
		while (!cr->nqueue && !cr->stopping)
			pthread_cond_wait(&cr->cond, &cr->lock);
		struct recall_item *it = cr->nqueue;
		if (!it)
			break;
		if (!(cr->nqueue = it->next))
			cr->nqtail = &cr->nqueue;
		weft_recall_fn fn = cr->fn;
		void *fa = cr->arg;
		pthread_mutex_unlock(&cr->lock);
		if (fn)
			fn(fa, it->ino, it->what, it->namelen ? it->name : NULL, it->namelen);
		pthread_mutex_lock(&cr->lock);
		it->notified = true;
		pthread_cond_broadcast(&cr->cond);
		if (--it->refs == 0)
			free(it);
	}
	pthread_mutex_unlock(&cr->lock);
	return NULL;
}

static void *recall_main(void *arg)
{
	struct weft_client *c = arg;
	struct client_recall *cr = c->recall;
	pthread_mutex_lock(&cr->lock);
	for (;;) {
		while (!cr->queue && !cr->stopping)
			pthread_cond_wait(&cr->cond, &cr->lock);
		struct recall_item *it = cr->queue;
		if (!it)
			break;
		if (!(cr->queue = it->next))
			cr->qtail = &cr->queue;
		it->next = NULL;
		pthread_mutex_unlock(&cr->lock);
		gen_bump(cr, it->ino);
		/* whatever it recalls, a directory named is no longer known complete (after
		 * the generation: client_cdir_created) */
		cdir_forget(cr, it->ino);
		/* creates sent there and not answered yet reach meta first (acreate.c) */
		client_acreate_drain(c, it->ino);
		/* buffered attributes go to meta before the answer (wbattr.c): the recalled
		 * request then sees them */
		if (it->what & (WEFT_RECALL_ATTR | WEFT_RECALL_DATA | WEFT_RECALL_LAYOUT)) {
			client_close_recall(c, it->ino); /* data and size a close left behind */
			client_wbattr_recall(c, it->ino);
		}
		if (it->what & WEFT_RECALL_NAME)
			client_wbattr_flush_all(c, true);
		if (it->what & (WEFT_RECALL_ATTR | WEFT_RECALL_DATA))
			lease_forget(cr, it->ino);
		if (it->what & WEFT_RECALL_LAYOUT)
			client_winode_freeze(c, it->ino); /* before the answer: migrate.h at meta */
		if (it->what & WEFT_RECALL_DATA)
			drop_data(c, it->ino);
		pthread_mutex_lock(&cr->lock);
		it->refs++;
		notify_enqueue(cr, it);
		struct timespec until = loop_deadline_ms(RECALL_WAIT_MS);
		while (!it->notified && !cr->stopping &&
		       pthread_cond_timedwait(&cr->cond, &cr->lock, &until) == 0)
			;
		if (!it->notified)
			log_info("recall of inode %llu: the kernel's invalidation is still waiting "
				 "after %d ms; acknowledged anyway", (unsigned long long)it->ino,
				 RECALL_WAIT_MS);
		struct conn *cn = it->cn;
		struct frame *f = it->f;
		pthread_mutex_unlock(&cr->lock);
		/* opens answered here that saw no recall (gen_bump above) have sent their
		 * OPEN by now: it reaches meta before this answer (prefetch.c) */
		pthread_rwlock_wrlock(&c->lopen_lock);
		pthread_rwlock_unlock(&c->lopen_lock);
		conn_reply(cn, f, 0, NULL, NULL, 0, NULL, NULL);
		frame_free(f);
		conn_put(cn);
		item_put(cr, it);
		pthread_mutex_lock(&cr->lock);
	}
	pthread_mutex_unlock(&cr->lock);
	return NULL;
}

int client_lease_start(struct weft_client *c)
{
	struct client_recall *cr = calloc(1, sizeof(*cr));
	if (!cr || !(cr->slots = calloc(LEASE_SLOTS, sizeof(*cr->slots))) ||
	    (c->complete_dirs && !(cr->cdirs = cdir_new(CDIR_MAX_DIRS, CLIENT_CDIR_MAX_NAMES)))) {
		if (cr)
			free(cr->slots);
		free(cr);
		return -ENOMEM;
	}
	pthread_mutex_init(&cr->lock, NULL);
	pthread_mutex_init(&cr->slot_lock, NULL);
	pthread_cond_init(&cr->cond, NULL);
	cr->qtail = &cr->queue;
	cr->nqtail = &cr->nqueue;
	c->recall = cr;
	int err = pthread_create(&cr->recall_thread, NULL, recall_main, c);
	if (err == 0)
		pthread_setname_np(cr->recall_thread, "weft-recall");
	if (err == 0 && (err = pthread_create(&cr->notify_thread, NULL, notify_main, cr))) {
		pthread_mutex_lock(&cr->lock);
		cr->stopping = true;
		pthread_cond_broadcast(&cr->cond);
		pthread_mutex_unlock(&cr->lock);
		pthread_join(cr->recall_thread, NULL);
	}
	if (err) {
		c->recall = NULL;
		cdir_free(cr->cdirs);
		free(cr->slots);
		free(cr);
		return -err;
	}
	return 0;
}

void client_lease_stop(struct weft_client *c)
{
	struct client_recall *cr = c->recall;
	if (!cr)
		return;
	pthread_mutex_lock(&cr->lock);
	cr->stopping = true;
	pthread_cond_broadcast(&cr->cond);
	pthread_mutex_unlock(&cr->lock);
	pthread_join(cr->recall_thread, NULL);
	pthread_join(cr->notify_thread, NULL);
	/* recalls never handled: meta's deadline covers them */
	while (cr->queue) {
		struct recall_item *it = cr->queue;
		cr->queue = it->next;
		frame_free(it->f);
		conn_put(it->cn);
		free(it);
	}
	c->recall = NULL;
	cdir_free(cr->cdirs);
	free(cr->slots);
	free(cr);
}
