/* The first stripe unit of a file read at the same time as its OPEN (issue 17, small
 * files in one round trip).
 *
 * DESIGN: a READDIRPLUS answer (WEFT_READDIR_PLUS_CAP) carries, for each regular file
 * the caller may read, its layout and a read capability meta minted for this session,
 * valid for 30 s. They are kept here, direct-mapped by ino. An open for reading of a file
 * this client does not have open takes its entry (one use) and, while the capability
 * is fresh, makes the file's winode from the entry and starts the store read of block 0
 * into its readahead (readahead.c, client_ra_first) before sending OPEN: the two round
 * trips overlap, and the kernel's first READ finds the block there (or in flight). The
 * OPEN does not wait for the read. The block is kept only if the OPEN succeeds and shows
 * the file as the entry did (size, mtime, ctime, layout): a file changed since, by any
 * mount, moves its mtime or ctime, and its block is dropped unseen and read again after
 * the open; a refused OPEN (the mode changed since) drops it and no byte of it reaches
 * the application. Its checksums are checked at use, as every readahead block's. The
 * read is sent once the application opens the file, so it sees every write closed
 * before that open (close-to-open), as a read after the OPEN would; until the OPEN has
 * answered, the block serves no other handle of the file either (ra_block.unconfirmed).
 *
 * Threads: any but the loop thread; pf_lock guards the table. */
#include "client/client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/loop.h"
#include "net/auth.h"
#include "net/stats.h"
#include "weft/err.h"

/* A capability this close to its end is not worth starting a read with */
#define PF_MARGIN_MS 2000

/* Who may use an entry for an open answered here: the lister's uid, gid and groups. */
static uint64_t groups_hash(const struct weft_cred *cr)
{
	uint64_t h = 0xcbf29ce484222325ull ^ cr->more_groups;
	uint32_t n = cr->ngroups < WEFT_GROUPS_MAX ? cr->ngroups : WEFT_GROUPS_MAX;
	h = (h ^ n) * 0x100000001b3ull;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ cr->groups[i]) * 0x100000001b3ull;
	return h;
}

void client_pf_note(struct weft_client *c, const struct weft_dirent *d,
		    const struct client_dirwalk *dw)
{
	if (!c->pf || !d->has_cap || !S_ISREG(d->attr.mode) || d->ino == 0)
		return;
	uint64_t now = loop_now_ms();
	pthread_mutex_lock(&c->pf_lock);
	struct client_pf *e = &c->pf[d->ino % CLIENT_PF_SLOTS];
	/* listed again as it was (the kernel reads a listing in pieces, each a READDIR
	 * from its cookie; or a second pass): its place in the listing order stays */
	bool same = e->ino == d->ino && e->pos && e->attr.size == d->attr.size &&
		    e->attr.mtime_ns == d->attr.mtime_ns && e->attr.ctime_ns == d->attr.ctime_ns &&
		    c->pf_order[e->pos % CLIENT_PF_ORDER] == d->ino;
	e->ino = d->ino;
	e->attr = d->attr;
	e->layout = d->layout;
	if (e->layout.stripe_unit == 0)
		e->layout.stripe_unit = WEFT_STRIPE_UNIT_DEFAULT;
	memcpy(e->cap, d->cap, WEFT_CAP_LEN);
	e->written0 = d->written0;
	e->cached = false;
	if (!same) {
		e->pos = ++c->pf_next_pos;
		c->pf_order[e->pos % CLIENT_PF_ORDER] = d->ino;
	}
	/* the lease ran from before the request left: the same margin as lease.c's */
	e->lease_until_ms = d->lease && dw->cr ? now + d->lease - d->lease / 10 : 0;
	e->gen = dw->gen;
	e->agen = dw->agen;
	if (dw->cr) {
		e->uid = dw->cr->uid;
		e->gid = dw->cr->gid;
		e->groups_hash = groups_hash(dw->cr);
	}
	pthread_mutex_unlock(&c->pf_lock);
}

void client_pf_forget(struct weft_client *c, uint64_t ino)
{
	if (!c->pf)
		return;
	pthread_mutex_lock(&c->pf_lock);
	struct client_pf *e = &c->pf[ino % CLIENT_PF_SLOTS];
	if (e->ino == ino)
		e->ino = 0;
	pthread_mutex_unlock(&c->pf_lock);
}

void weft_prefetch_cached(struct weft_client *c, const struct weft_attr *was)
{
	if (!c->pf || was->ino == 0)
		return;
	pthread_mutex_lock(&c->pf_lock);
	struct client_pf *e = &c->pf[was->ino % CLIENT_PF_SLOTS];
	if (e->ino == was->ino && e->attr.size == was->size && e->attr.mtime_ns == was->mtime_ns &&
	    e->attr.ctime_ns == was->ctime_ns)
		e->cached = true;
	pthread_mutex_unlock(&c->pf_lock);
}

/* Takes ino's entry out of the table (one use: a second open goes the usual way). */
static bool pf_take(struct weft_client *c, uint64_t ino, struct client_pf *out)
{
	bool found = false;
	pthread_mutex_lock(&c->pf_lock);
	struct client_pf *e = &c->pf[ino % CLIENT_PF_SLOTS];
	if (e->ino == ino && !e->cached) {
		*out = *e;
		e->ino = 0;
		found = true;
	}
	pthread_mutex_unlock(&c->pf_lock);
	return found;
}

/* A winode of its own made from entry e, with the read of its first stripe unit
 * started (written0: the stripes known written), or NULL: the file is open or in use
 * here (its readahead and the kernel's pages serve it), or nothing could start. */
static struct winode *first_read(struct weft_client *c, const struct client_pf *e,
				 uint8_t written0)
{
	struct winode *wi = client_winode_find(c, e->ino);
	if (wi) {
		client_winode_put(c, wi);
		return NULL;
	}
	if (!(wi = client_winode_get(c, &e->attr, &e->layout)))
		return NULL;
	pthread_mutex_lock(&c->inodes_lock);
	bool alone = wi->refs == 1 && wi->opens == 0;
	pthread_mutex_unlock(&c->inodes_lock);
	bool started = false;
	if (alone) {
		client_cap_note(wi, e->cap);
		__atomic_fetch_or(&wi->written[0], written0, __ATOMIC_RELAXED);
		pthread_mutex_lock(&wi->lock);
		started = !wi->frozen && !wi->writers && client_ra_first(c, wi);
		pthread_mutex_unlock(&wi->lock);
	}
	if (!started) {
		client_winode_put(c, wi);
		return NULL;
	}
	return wi;
}

struct winode *client_pf_start(struct weft_client *c, uint64_t ino, int flags,
			       struct client_pf *pf)
{
	if (!c->pf || (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) || !pf_take(c, ino, pf))
		return NULL;
	struct weft_cap cap;
	auth_cap_parse(pf->cap, &cap);
	pthread_rwlock_rdlock(&c->sess_lock);
	uint64_t sid = c->session;
	pthread_rwlock_unlock(&c->sess_lock);
	if (cap.ino != ino || cap.session != sid || !(cap.rights & WEFT_CAP_READ) ||
	    cap.expiry_ms < auth_realtime_ms() + PF_MARGIN_MS || pf->attr.size == 0)
		return NULL;
	struct winode *wi = first_read(c, pf, 0); /* stripe 0 written: from the OPEN */
	if (wi)
		stats_add(STATS_OPEN_PREFETCH_STARTED, 1);
	return wi;
}

static bool layout_same(const struct weft_layout *a, const struct weft_layout *b)
{
	return a->stripe_unit == b->stripe_unit && a->stripe_count == b->stripe_count &&
	       a->first_chain == b->first_chain && a->chain_count == b->chain_count &&
	       a->replicas == b->replicas && a->gen == b->gen;
}

void client_pf_finish(struct weft_client *c, struct winode *wi, const struct client_pf *pf,
		      int err, const struct weft_attr *attr, const struct weft_layout *layout)
{
	struct weft_layout l = {0};
	if (!err) {
		l = *layout;
		if (l.stripe_unit == 0)
			l.stripe_unit = WEFT_STRIPE_UNIT_DEFAULT;
	}
	bool keep = !err && attr->size == pf->attr.size && attr->mtime_ns == pf->attr.mtime_ns &&
		    attr->ctime_ns == pf->attr.ctime_ns && layout_same(&l, &pf->layout);
	pthread_mutex_lock(&wi->lock);
	if (keep && client_winode_written(wi, 0))
		client_ra_first_written(c, wi);
	if (keep)
		client_ra_first_confirm(c, wi);
	if (!keep) {
		client_ra_drop(c, wi);
		/* the winode was made from the entry: take meta's size from the open's answer */
		wi->size_refresh = true;
	}
	pthread_mutex_unlock(&wi->lock);
	stats_add(keep ? STATS_OPEN_PREFETCH_KEPT : STATS_OPEN_PREFETCH_DROPPED, 1);
	client_winode_put(c, wi);
}

/* ---- opens answered here ---- */

/* A lease this close to its end is not used for an open answered here: the OPEN sent
 * behind must reach meta well before the lease could lapse there. */
#define LOCAL_OPEN_MARGIN_MS 500

static void open_behind_done(void *arg, int status, struct frame *reply)
{
	frame_free(reply);
	if (status == 0)
		return;
	/* not counted at meta: the file went between the check and meta's turn (an
	 * unlink by another mount that did not wait for this one's lease), or the
	 * connection did; reads of it fail as reads of a removed file do */
	stats_add(STATS_OPEN_LOCAL_REFUSED, 1);
	log_info("open of inode %llu answered by this mount: the OPEN sent behind it failed: %s",
		 (unsigned long long)(uintptr_t)arg, weft_strerror(status));
}

/* Whether entry e lets cr open ino for reading here, at now. */
static bool local_ok(struct weft_client *c, const struct client_pf *e, const struct weft_cred *cr,
		     uint64_t now, const struct weft_cap *cap)
{
	/* the entry tells stripes 0-7 written or not: the file's data must lie there */
	bool in_first_byte = e->layout.stripe_count <= 8 ||
			     e->attr.size <= 8 * (uint64_t)e->layout.stripe_unit;
	return e->lease_until_ms > now + LOCAL_OPEN_MARGIN_MS && in_first_byte &&
	       e->uid == cr->uid && e->gid == cr->gid && e->groups_hash == groups_hash(cr) &&
	       e->agen == atomic_load(&c->attr_gen) && cap->ino == e->ino &&
	       (cap->rights & WEFT_CAP_READ) &&
	       cap->expiry_ms >= auth_realtime_ms() + PF_MARGIN_MS;
}

/* ---- files read ahead in listing order ----
 *
 * find | xargs cat, tar c, cp -r and rsync open a directory's files in the order a
 * listing gave them. Two opens answered here at consecutive positions of the listing
 * order make a sequence: the first stripe units of the next PF_AHEAD files are read then,
 * each into a winode of its own held here (not open; CLIENT_PF_HELD at most, for
 * CLIENT_PF_HELD_MS), under the same conditions as an open answered here, so that their
 * opens find the bytes come. An open of a held file takes its winode if the entry is
 * still the one it was read from and no recall of the file came since the listing;
 * a recall before that drops the read bytes (lease.c, drop_data). */
#define PF_AHEAD 8
#define CLIENT_PF_HELD_MS 3000

int client_pf_init(struct weft_client *c)
{
	c->pf = calloc(CLIENT_PF_SLOTS, sizeof(*c->pf));
	c->pf_order = calloc(CLIENT_PF_ORDER, sizeof(*c->pf_order));
	if (!c->pf || !c->pf_order) {
		client_pf_free(c);
		return -ENOMEM;
	}
	return 0;
}

void client_pf_free(struct weft_client *c)
{
	free(c->pf);
	free(c->pf_order);
	c->pf = NULL;
	c->pf_order = NULL;
}

/* Takes slot i out of the held list (pf_lock held); returns its winode. */
static struct winode *held_take(struct weft_client *c, int i)
{
	struct winode *wi = c->pf_held[i].wi;
	wi->pf_held = false;
	c->pf_held[i] = c->pf_held[--c->pf_nheld];
	return wi;
}

void client_pf_drop_held(struct weft_client *c)
{
	if (!c->pf)
		return;
	for (;;) {
		pthread_mutex_lock(&c->pf_lock);
		struct winode *wi = c->pf_nheld ? held_take(c, 0) : NULL;
		pthread_mutex_unlock(&c->pf_lock);
		if (!wi)
			return;
		client_winode_put(c, wi);
	}
}

void client_pf_expire(struct weft_client *c)
{
	if (!c->pf)
		return;
	struct winode *old[CLIENT_PF_HELD];
	int nold = 0;
	uint64_t now = loop_now_ms();
	pthread_mutex_lock(&c->pf_lock);
	for (int i = 0; i < c->pf_nheld;)
		if (c->pf_held[i].at_ms + CLIENT_PF_HELD_MS < now)
			old[nold++] = held_take(c, i);
		else
			i++;
	pthread_mutex_unlock(&c->pf_lock);
	for (int i = 0; i < nold; i++)
		client_winode_put(c, old[i]);
}

/* Whether wi is held: HELD_NOT, HELD_MINE (read ahead from the entry at pos; taken
 * out of the list, its reference now the caller's) or HELD_OLD (from an older entry:
 * given back, the caller's own reference aside). */
enum { HELD_NOT, HELD_MINE, HELD_OLD };

static int pf_unhold(struct weft_client *c, struct winode *wi, uint64_t pos)
{
	struct winode *drop = NULL;
	int r = HELD_NOT;
	pthread_mutex_lock(&c->pf_lock);
	for (int i = 0; wi->pf_held && i < c->pf_nheld; i++) {
		if (c->pf_held[i].wi != wi)
			continue;
		r = c->pf_held[i].pos == pos ? HELD_MINE : HELD_OLD;
		drop = held_take(c, i);
		break;
	}
	pthread_mutex_unlock(&c->pf_lock);
	if (r == HELD_OLD)
		client_winode_put(c, drop);
	return r;
}

void client_pf_unhold_ino(struct weft_client *c, uint64_t ino)
{
	struct winode *wi;
	if (!c->pf || !(wi = client_winode_find(c, ino)))
		return;
	pf_unhold(c, wi, 0); /* no entry's position is 0: a held winode is given back */
	client_winode_put(c, wi);
}

/* Holds wi, read ahead from the entry at pos; the oldest goes if the list is full. */
static void pf_hold(struct weft_client *c, struct winode *wi, uint64_t pos, uint64_t now)
{
	struct winode *drop = NULL;
	pthread_mutex_lock(&c->pf_lock);
	if (c->pf_nheld == CLIENT_PF_HELD) {
		int old = 0;
		for (int i = 1; i < c->pf_nheld; i++)
			if (c->pf_held[i].at_ms < c->pf_held[old].at_ms)
				old = i;
		drop = held_take(c, old);
	}
	wi->pf_held = true;
	c->pf_held[c->pf_nheld++] = (typeof(c->pf_held[0])){wi, pos, now};
	pthread_mutex_unlock(&c->pf_lock);
	if (drop)
		client_winode_put(c, drop);
}

/* Starts reading the file at entry e ahead of its open, for cr, if an open answered here
 * could take it. */
static void pf_read_ahead(struct weft_client *c, const struct weft_cred *cr,
			  struct client_pf *e, uint64_t sid, uint64_t now)
{
	struct weft_cap cap;
	auth_cap_parse(e->cap, &cap);
	if (e->attr.size == 0 || !local_ok(c, e, cr, now, &cap) || cap.session != sid ||
	    client_recalled_since(c, e->ino, e->gen))
		return;
	struct winode *wi = client_winode_find(c, e->ino);
	if (wi) { /* read ahead from an older listing: read again from this one */
		int held = pf_unhold(c, wi, e->pos);
		if (held == HELD_MINE)
			pf_hold(c, wi, e->pos, now); /* read ahead already: stays held */
		client_winode_put(c, wi); /* find's */
		if (held != HELD_OLD)
			return;
	}
	if (!(wi = first_read(c, e, e->written0)))
		return;
	stats_add(STATS_OPEN_AHEAD_READS, 1);
	pf_hold(c, wi, e->pos, now);
}

/* An open answered here at listing position pos: the next files in the listing are read
 * ahead if it followed the one before; held files past their time go. */
static void pf_ahead(struct weft_client *c, const struct weft_cred *cr, uint64_t pos,
		     uint64_t sid)
{
	struct client_pf next[PF_AHEAD];
	int n = 0;
	uint64_t now = loop_now_ms();
	client_pf_expire(c);
	pthread_mutex_lock(&c->pf_lock);
	bool seq = pos == c->pf_last_pos + 1;
	c->pf_last_pos = pos;
	if (!seq)
		c->pf_ahead_to = pos; /* a new sequence starts here, if one follows */
	uint64_t from = seq ? (pos > c->pf_ahead_to ? pos : c->pf_ahead_to) + 1 : pos + PF_AHEAD + 1;
	for (uint64_t q = from; q <= pos + PF_AHEAD && q <= c->pf_next_pos; q++) {
		uint64_t ino = c->pf_order[q % CLIENT_PF_ORDER];
		const struct client_pf *e = &c->pf[ino % CLIENT_PF_SLOTS];
		if (ino && e->ino == ino && e->pos == q && !e->cached)
			next[n++] = *e;
		c->pf_ahead_to = q;
	}
	pthread_mutex_unlock(&c->pf_lock);
	for (int i = 0; i < n; i++)
		pf_read_ahead(c, cr, &next[i], sid, now);
}

int client_open_local(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      int flags, struct weft_file **out, struct weft_attr *attr)
{
	if (!c->pf || !c->local_open || !c->recall || (flags & O_ACCMODE) != O_RDONLY ||
	    (flags & O_TRUNC))
		return 1;
	struct client_pf e;
	pthread_mutex_lock(&c->pf_lock);
	bool found = c->pf[ino % CLIENT_PF_SLOTS].ino == ino;
	if (found)
		e = c->pf[ino % CLIENT_PF_SLOTS]; /* kept: the next open may use it too */
	pthread_mutex_unlock(&c->pf_lock);
	struct weft_cap cap;
	if (!found)
		return 1;
	auth_cap_parse(e.cap, &cap);
	if (!local_ok(c, &e, cr, loop_now_ms(), &cap))
		return 1;
	/* read ahead from this listing: its reference becomes the open's; else a winode
	 * here means open or busy here, and meta's answer covers what this client did */
	bool ahead = false;
	struct winode *wi = client_winode_find(c, ino);
	if (wi) {
		int held = pf_unhold(c, wi, e.pos);
		ahead = held == HELD_MINE;
		client_winode_put(c, wi); /* find's; a held one's stays */
		if (held == HELD_NOT)
			return 1;
		if (held == HELD_OLD)
			wi = NULL; /* given back: a winode of its own, as if none was held */
	}
	struct weft_file *f = calloc(1, sizeof(*f));
	if (!f) {
		if (wi)
			client_winode_put(c, wi);
		return 1;
	}
	/* as open_call: a session renewal reclaims exactly the opens counted here */
	pthread_rwlock_rdlock(&c->sess_lock);
	uint64_t sid = c->session;
	pthread_rwlock_rdlock(&c->lopen_lock);
	bool alone = false;
	bool current = cap.session == sid && !client_recalled_since(c, ino, e.gen);
	if (current)
		f->wi = wi ? wi : client_winode_get(c, &e.attr, &e.layout);
	else if (wi)
		client_winode_put(c, wi); /* read ahead, now stale */
	if (f->wi) {
		pthread_mutex_lock(&c->inodes_lock);
		if ((alone = f->wi->refs == 1 && f->wi->opens == 0))
			f->wi->opens++;
		pthread_mutex_unlock(&c->inodes_lock);
	}
	if (alone) {
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_open m = {.cred = *cr, .ino = ino, .flags = (uint32_t)flags,
					  .session = sid, .behind = 1};
		proto_open_encode(&w, &m);
		client_meta_post_fn(c, WEFT_OP_OPEN, &w, open_behind_done, (void *)(uintptr_t)ino);
	}
	pthread_rwlock_unlock(&c->lopen_lock);
	pthread_rwlock_unlock(&c->sess_lock);
	if (!alone) {
		if (f->wi)
			client_winode_put(c, f->wi);
		free(f);
		return 1;
	}
	client_cap_note(f->wi, e.cap);
	__atomic_fetch_or(&f->wi->written[0], e.written0, __ATOMIC_RELAXED);
	f->c = c;
	f->cred = *cr;
	f->flags = flags;
	f->session = sid;
	/* the first stripe unit, read now, unless the kernel holds the file's pages: its
	 * first READ follows at once */
	bool started = false;
	pthread_mutex_lock(&f->wi->lock);
	if (ahead || (!e.cached && (started = client_ra_first(c, f->wi))))
		client_ra_first_confirm(c, f->wi);
	pthread_mutex_unlock(&f->wi->lock);
	if (started) {
		stats_add(STATS_OPEN_PREFETCH_STARTED, 1);
		stats_add(STATS_OPEN_PREFETCH_KEPT, 1);
	}
	if (ahead)
		stats_add(STATS_OPEN_AHEAD_HITS, 1);
	stats_add(STATS_OPEN_LOCAL, 1);
	*attr = e.attr;
	*out = f;
	pf_ahead(c, cr, e.pos, sid);
	return 0;
}
