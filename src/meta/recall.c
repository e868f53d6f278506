/* Recalls: a mutation that changes what another session caches under a lease waits
 * until that session has given the lease back (lease.h).
 *
 * DESIGN: meta_recall_submit works out what the mutation changes (an inode's attributes
 * or pages, a name under a directory), marks those inodes busy (no new leases on them),
 * and sends RECALL {ino, what, name} over the connection of every other session with a
 * live lease on them. The mutation is parked in a list on the loop thread — the loop
 * never waits — and goes to the group commit once every holder has answered, or at its
 * deadline: now + lease + grace, by which time every lease it waited for has expired.
 * A holder that has not answered by then is evicted: its leases are dropped, its
 * connections fenced and closed, its session closed (its opens go), and its later
 * requests under that session are refused with WEFT_EEVICTED (lease.h).
 *
 * A read (GETATTR, LOOKUP) of a file another session created with WEFT_CREATE_WB and
 * holds open (it may keep the file's chmod/chown/utimes: lease.h) is parked the same
 * way: RECALL {ino, ATTR} goes to that session, which sends what it buffered before it
 * answers; then the read runs again and is answered (meta_recall_read). So is a read of a
 * directory another session claimed for asynchronous creates, or of a name in it:
 * RECALL {dir, CLAIM} goes to the claimant, which answers once its creates there are
 * answered (meta_recall_claimed), and a mutation there recalls the claimant as a holder.
 *
 * After a restart meta has no leases in memory while clients may still cache under the
 * old ones: mutations are parked until one lease + grace after the start (if the
 * database ever had a session). Reads are served at once.
 *
 * Threads: loop thread, except meta_recall_done. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "meta/lease.h"
#include "meta/server_int.h"
#include "meta/session.h"
#include "weft/err.h"

#define RECALL_GRACE_MS 1000
#define RECALL_TICK_MS 50
#define PARK_MAX_HOLDERS 32

struct item {
	uint64_t ino;
	uint32_t what;
	struct weft_str name;
};

struct meta_park {
	struct meta_park *next;
	uint64_t id;
	struct mreq *r;
	uint64_t deadline_ms;
	bool read;      /* r is a read (meta_recall_read): it runs again, then is answered */
	int nh;
	/* one per RECALL sent */
	struct { uint64_t session; bool acked; } h[PARK_MAX_HOLDERS];
};

struct recall_ctx {
	struct meta_server *s;
	uint64_t park, session, ino;
	int idx;
};

#define MSGP(type) ((const struct weft_msg_##type *)(const void *)r->msg)

/* What mutation r changes; returns how many items (at most 2). */
static int items_of(const struct mreq *r, struct item *it)
{
	const uint32_t N = WEFT_RECALL_NAME;
	switch (r->h->op) {
	case WEFT_OP_SETATTR:
		it[0] = (struct item){MSGP(setattr)->ino,
				      WEFT_RECALL_ATTR |
				      ((MSGP(setattr)->valid & WEFT_SET_SIZE) ? WEFT_RECALL_DATA : 0), {0}};
		return 1;
	case WEFT_OP_EXTEND:
		it[0] = (struct item){MSGP(extend)->ino, WEFT_RECALL_DATA | WEFT_RECALL_ATTR, {0}};
		return 1;
	case WEFT_OP_SETSTRIPE: /* a directory's: its claimant's creates follow the old one */
		it[0] = (struct item){MSGP(setstripe)->ino, WEFT_RECALL_ATTR, {0}};
		return 1;
	case WEFT_OP_SETXATTR:
	case WEFT_OP_REMOVEXATTR:
		it[0] = (struct item){MSGP(xattr)->ino, WEFT_RECALL_ATTR, {0}};
		return 1;
	case WEFT_OP_CREATE:
	case WEFT_OP_MKDIR:
		it[0] = (struct item){MSGP(create)->parent, N, MSGP(create)->name};
		return 1;
	case WEFT_OP_CREATE_OPEN:
		it[0] = (struct item){MSGP(create_open)->parent, N, MSGP(create_open)->name};
		return 1;
	case WEFT_OP_SYMLINK:
		it[0] = (struct item){MSGP(symlink)->parent, N, MSGP(symlink)->name};
		return 1;
	case WEFT_OP_UNLINK:
	case WEFT_OP_RMDIR:
		it[0] = (struct item){MSGP(name)->parent, N, MSGP(name)->name};
		return 1;
	case WEFT_OP_RENAME:
		it[0] = (struct item){MSGP(rename)->parent, N, MSGP(rename)->name};
		it[1] = (struct item){MSGP(rename)->newparent, N, MSGP(rename)->newname};
		return 2;
	case WEFT_OP_LINK:
		it[0] = (struct item){MSGP(link)->newparent, N, MSGP(link)->newname};
		it[1] = (struct item){MSGP(link)->ino, WEFT_RECALL_ATTR, {0}};
		return 2;
	case WEFT_OP_MIGRATE:
		if (MSGP(migrate)->step != WEFT_MIGRATE_BEGIN)
			return 0;
		it[0] = (struct item){MSGP(migrate)->ino,
				      WEFT_RECALL_LAYOUT | WEFT_RECALL_DATA | WEFT_RECALL_ATTR, {0}};
		return 1;
	default:
		return 0;
	}
}

uint64_t meta_conn_session(struct meta_server *s, struct conn *c)
{
	return meta_leases_session_of(s->leases, c, NULL);
}

static void go(struct meta_server *s, struct mreq *r)
{
	int rc = meta_commit_submit(s->gc, &r->mut);
	if (rc)
		r->mut.done(r, rc);
}

static struct meta_park *park_find(struct meta_server *s, uint64_t id, struct meta_park ***pp)
{
	struct meta_park **p = &s->parks;
	while (*p && (*p)->id != id)
		p = &(*p)->next;
	if (pp)
		*pp = p;
	return *p;
}

static void park_release(struct meta_server *s, struct meta_park **p)
{
	struct meta_park *k = *p;
	*p = k->next;
	if (k->read)
		meta_read_resume(s, k->r);
	else
		go(s, k->r);
	free(k);
}

static bool all_acked(const struct meta_park *k)
{
	for (int i = 0; i < k->nh; i++)
		if (!k->h[i].acked)
			return false;
	return true;
}

static void recall_done(void *arg, int status, struct frame *reply)
{
	struct recall_ctx *x = arg;
	struct meta_server *s = x->s;
	frame_free(reply);
	if (status == 0) {
		/* the holder dropped what changed; its lease still covers the rest of what it
		 * caches (other names in the directory), so it stays */
		struct meta_park **p;
		struct meta_park *k = park_find(s, x->park, &p);
		if (k) {
			k->h[x->idx].acked = true;
			if (all_acked(k))
				park_release(s, p);
		}
	} else if (status != -ENOTCONN) {
		log_debug("recall of inode %llu from session %llu: %s", (unsigned long long)x->ino,
			  (unsigned long long)x->session, weft_strerror(status));
	}
	free(x);
}

/* ---- eviction ---- */

struct evict {
	struct meta_mutation mut;
	struct meta_server *s;
	uint64_t session;
};

static int evict_apply(MDB_txn *txn, void *arg)
{
	struct evict *e = arg;
	int rc = meta_session_close(e->s->db, txn, e->session);
	return rc == -ENOENT ? 0 : rc;
}

static void evict_done(void *arg, int result)
{
	struct evict *e = arg;
	if (result)
		log_warn("closing evicted session %llu: %s", (unsigned long long)e->session,
			 weft_strerror(result));
	meta_deleter_wake(e->s->del);
	free(e);
}

static void evict(struct meta_server *s, uint64_t session)
{
	log_warn("session %llu did not answer a lease recall within lease + grace (%u ms): "
		 "evicted", (unsigned long long)session,
		 meta_leases_ms(s->leases) + RECALL_GRACE_MS);
	struct conn *c;
	while ((c = meta_leases_conn_of(s->leases, session))) {
		meta_leases_forget(s->leases, session, true);
		conn_close(c, -WEFT_EEVICTED);
		conn_put(c);
	}
	meta_leases_forget(s->leases, session, true);
	struct evict *e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->s = s;
	e->session = session;
	e->mut = (struct meta_mutation){.apply = evict_apply, .done = evict_done, .arg = e,
					.lazy = true, .what = "evict"};
	if (meta_commit_submit(s->gc, &e->mut))
		free(e);
}

/* ---- parking ---- */

/* Sends RECALL for it to session; records it in k. False if it could not be sent (the
 * holder then counts as silent: its lease runs out by the deadline). */
static void send_recall(struct meta_server *s, struct meta_park *k, uint64_t session,
			const struct item *it)
{
	if (k->nh == PARK_MAX_HOLDERS)
		return; /* more holders than tracked: the deadline covers the rest */
	int idx = k->nh++;
	k->h[idx].session = session;
	k->h[idx].acked = false;
	struct conn *c = meta_leases_conn_of(s->leases, session);
	if (!c) {
		log_debug("recall: session %llu has no connection", (unsigned long long)session);
		return;
	}
	struct recall_ctx *x = calloc(1, sizeof(*x));
	if (!x) {
		conn_put(c);
		return;
	}
	*x = (struct recall_ctx){.s = s, .park = k->id, .session = session, .ino = it->ino,
				 .idx = idx};
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_recall m = {.ino = it->ino, .what = it->what, .name = it->name};
	proto_recall_encode(&w, &m);
	log_debug("recall inode %llu (what %#x) from session %llu for %s",
		 (unsigned long long)it->ino, it->what, (unsigned long long)session, proto_op_name(k->r->h->op));
	int e = conn_call(c, WEFT_OP_RECALL, &w, NULL, 0, NULL, NULL, recall_done, x);
	if (e) {
		log_debug("recall to session %llu: %s", (unsigned long long)session,
			  weft_strerror(e));
		free(x);
	}
	conn_put(c);
}

int meta_recall_submit(struct meta_server *s, struct mreq *r)
{
	struct item it[2];
	int n = items_of(r, it);
	uint64_t now = loop_now_ms();
	/* only what a client may cache waits out a restart: sessions, opens and the
	 * reclaiming of opens (REOPEN) go on */
	bool quiet = n > 0 && now < s->quiet_until_ms;
	if (n == 0)
		return meta_commit_submit(s->gc, &r->mut);
	uint64_t self = meta_conn_session(s, r->c);
	for (int i = 0; i < n; i++) {
		meta_leases_busy(s->leases, it[i].ino, +1);
		r->busy[r->nbusy++] = it[i].ino;
	}
	struct meta_park *k = NULL;
	for (int i = 0; i < n; i++) {
		uint64_t who[PARK_MAX_HOLDERS];
		size_t nw = meta_leases_holders(s->leases, it[i].ino, self, now, who,
						PARK_MAX_HOLDERS);
		/* a claimant of the directory may have creates in it not seen here yet */
		uint64_t cl = meta_leases_claim_take(s->leases, it[i].ino, self, now);
		for (size_t j = 0; j < nw && cl; j++)
			if (who[j] == cl)
				cl = 0;
		if (cl && nw < PARK_MAX_HOLDERS)
			who[nw++] = cl;
		for (size_t j = 0; j < nw; j++) {
			if (!k && (k = calloc(1, sizeof(*k)))) {
				k->r = r;
				k->id = ++s->next_park; /* before the first RECALL: its ack names it */
			}
			if (!k)
				break;
			send_recall(s, k, who[j], &it[i]);
		}
	}
	if (!k && quiet && (k = calloc(1, sizeof(*k)))) {
		k->r = r;
		k->id = ++s->next_park;
	}
	if (!k)
		return meta_commit_submit(s->gc, &r->mut);
	k->deadline_ms = now + meta_leases_ms(s->leases) + RECALL_GRACE_MS;
	if (quiet && k->deadline_ms < s->quiet_until_ms)
		k->deadline_ms = s->quiet_until_ms;
	k->next = s->parks;
	s->parks = k;
	return 0;
}

/* Parks read r behind RECALL {ino, what} to session who; it runs again once answered. */
static bool park_read(struct meta_server *s, struct mreq *r, uint64_t who, uint64_t ino,
		      uint32_t what)
{
	struct meta_park *k = calloc(1, sizeof(*k));
	if (!k)
		return false;
	k->r = r;
	k->read = true;
	k->id = ++s->next_park;
	struct item it = {ino, what, {0}};
	send_recall(s, k, who, &it);
	k->deadline_ms = loop_now_ms() + meta_leases_ms(s->leases) + RECALL_GRACE_MS;
	k->next = s->parks;
	s->parks = k;
	return true;
}

bool meta_recall_read(struct meta_server *s, struct mreq *r)
{
	uint64_t ino = r->attr.ino, self = meta_conn_session(s, r->c);
	uint64_t who = meta_leases_wb_take(s->leases, ino, self);
	if (who)
		return park_read(s, r, who, ino, WEFT_RECALL_ATTR);
	/* a directory looked up by name: its attributes move with creates not seen yet */
	if (r->h->op == WEFT_OP_LOOKUP &&
	    (who = meta_leases_claim_take(s->leases, ino, self, loop_now_ms())))
		return park_read(s, r, who, ino, WEFT_RECALL_CLAIM);
	return false;
}

bool meta_recall_claimed(struct meta_server *s, struct mreq *r)
{
	uint64_t dir;
	switch (r->h->op) {
	case WEFT_OP_LOOKUP: dir = MSGP(lookup)->parent; break;
	case WEFT_OP_GETATTR: dir = MSGP(ino)->ino; break;
	case WEFT_OP_READDIR: dir = MSGP(readdir)->ino; break;
	default: return false;
	}
	uint64_t who = meta_leases_claim_take(s->leases, dir, meta_conn_session(s, r->c),
					      loop_now_ms());
	return who && park_read(s, r, who, dir, WEFT_RECALL_CLAIM);
}

void meta_recall_done(struct meta_server *s, struct mreq *r)
{
	for (int i = 0; i < r->nbusy; i++)
		meta_leases_busy(s->leases, r->busy[i], -1);
	r->nbusy = 0;
}

/* Parked mutations past their deadline run; holders that never answered are evicted. */
static void recall_tick(void *arg)
{
	struct meta_server *s = arg;
	if (s->stopping || !s->leases)
		return;
	uint64_t now = loop_now_ms();
	struct meta_park **p = &s->parks;
	while (*p) {
		struct meta_park *k = *p;
		if (k->deadline_ms > now && !(k->nh && all_acked(k))) {
			p = &k->next;
			continue;
		}
		for (int i = 0; i < k->nh; i++) {
			if (k->h[i].acked || meta_leases_evicted(s->leases, k->h[i].session))
				continue;
			evict(s, k->h[i].session);
		}
		park_release(s, p);
	}
	static unsigned sweep;
	if (++sweep % (1000 / RECALL_TICK_MS) == 0)
		meta_leases_sweep(s->leases, now);
}

void meta_recall_flush(struct meta_server *s)
{
	while (s->parks)
		park_release(s, &s->parks);
}

void meta_recall_start(struct meta_server *s)
{
	loop_every(s->loop, RECALL_TICK_MS, recall_tick, s);
}
