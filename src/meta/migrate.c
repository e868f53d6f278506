/* weft migrate at meta: the table of files being migrated, and MIGRATE's steps. */
#include "meta/migrate.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/loop.h"
#include "meta/layout.h"
#include "meta/pending.h"
#include "meta/perm.h"
#include "meta/server_int.h"

#define MIGRATIONS_MAX 64

struct migration {
	uint64_t ino;           /* 0: a free slot */
	struct conn *c;         /* the migrator's connection (not referenced: on_close) */
	uint64_t deadline_ms;
	bool has_to;            /* BEGIN chose `to` */
	struct weft_layout to;
};

struct meta_migrations {
	pthread_mutex_t lock;   /* guards every field of every slot */
	struct migration slot[MIGRATIONS_MAX];
};

int meta_migrate_new(struct meta_migrations **out)
{
	struct meta_migrations *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void meta_migrate_free(struct meta_migrations *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

#define MSGM ((const struct weft_msg_migrate *)(const void *)r->msg)

/* The live slot of ino, or NULL; t->lock held. */
static struct migration *find(struct meta_migrations *t, uint64_t ino)
{
	uint64_t now = loop_now_ms();
	for (int i = 0; i < MIGRATIONS_MAX; i++) {
		struct migration *m = &t->slot[i];
		if (m->ino != ino)
			continue;
		if (now < m->deadline_ms)
			return m;
		m->ino = 0; /* the migrator went silent: the file goes on as it was */
	}
	return NULL;
}

int meta_migrate_mark(struct meta_server *s, struct mreq *r, uint64_t ino)
{
	struct meta_migrations *t = s->migrations;
	int rc = -EAGAIN; /* MIGRATIONS_MAX files at once already */
	pthread_mutex_lock(&t->lock);
	if (find(t, ino)) {
		rc = -EBUSY;
	} else {
		uint64_t now = loop_now_ms();
		for (int i = 0; i < MIGRATIONS_MAX; i++) {
			struct migration *m = &t->slot[i];
			if (m->ino && now < m->deadline_ms)
				continue;
			*m = (struct migration){.ino = ino, .c = r->c,
						.deadline_ms = now + MIGRATE_HOLD_MS};
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

bool meta_migrate_busy(struct meta_server *s, uint64_t ino)
{
	struct meta_migrations *t = s->migrations;
	pthread_mutex_lock(&t->lock);
	bool busy = find(t, ino) != NULL;
	pthread_mutex_unlock(&t->lock);
	return busy;
}

/* Field by field: the struct has padding, which memcmp would compare too. */
static bool same_layout(const struct weft_layout *a, const struct weft_layout *b)
{
	return a->stripe_unit == b->stripe_unit && a->stripe_count == b->stripe_count &&
	       a->first_chain == b->first_chain && a->chain_count == b->chain_count &&
	       a->replicas == b->replicas && a->gen == b->gen;
}

/* Whether c speaks for the node that began migration m: the migrator's requests may come
 * on any of its connections to meta, but never from another node. t->lock held. */
static bool same_migrator(const struct migration *m, const struct conn *c)
{
	return m->c == c || strcmp(conn_peer_name(m->c), conn_peer_name(c)) == 0;
}

/* Ends ino's migration; with by set, only when by speaks for the migrator. */
static void unmark(struct meta_migrations *t, uint64_t ino, const struct conn *by)
{
	pthread_mutex_lock(&t->lock);
	struct migration *m = find(t, ino);
	if (m && (!by || same_migrator(m, by)))
		m->ino = 0;
	pthread_mutex_unlock(&t->lock);
}

/* BEGIN: the new layout, from what was asked (0: keep the file's stripe unit or
 * replicas), in the next generation. */
static int begin(struct mreq *r, const struct meta_ctx *c, struct meta_inode *in)
{
	const struct weft_layout *req = &MSGM->layout;
	struct weft_layout want = {
		.stripe_unit = req->stripe_unit ? req->stripe_unit : in->layout.stripe_unit,
		.stripe_count = req->stripe_count,
		.replicas = req->replicas ? req->replicas : in->layout.replicas};
	if (!meta_layout_valid(&want) || want.stripe_count >= WEFT_LAYOUT_GEN_STRIDE) {
		snprintf(r->detail, sizeof(r->detail), "stripe unit %u, replicas %u: not a layout",
			 want.stripe_unit, want.replicas);
		return -EINVAL;
	}
	if (in->layout.gen >= WEFT_LAYOUT_GEN_MAX)
		return -EOVERFLOW;
	struct weft_layout to;
	int rc = meta_layout_choose(c->db, c->txn, &want, &to);
	if (rc == -EINVAL)
		snprintf(r->detail, sizeof(r->detail),
			 "replicas %u: fewer than %u storage nodes have registered", want.replicas,
			 want.replicas);
	if (rc)
		return rc;
	to.gen = in->layout.gen + 1;
	struct meta_migrations *t = r->s->migrations;
	pthread_mutex_lock(&t->lock);
	struct migration *m = find(t, in->attr.ino);
	if (m) {
		m->to = to;
		m->has_to = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (!m)
		return -ETIMEDOUT; /* the mark expired before the recalls were answered */
	r->layout2 = in->layout;
	r->layout = to;
	return 0;
}

/* SWITCH: the inode takes the new layout and its written-stripes mask; the old
 * generation's objects are queued for deletion. */
static int do_switch(struct mreq *r, const struct meta_ctx *c, struct meta_inode *in)
{
	const struct weft_msg_migrate *m = MSGM;
	struct meta_migrations *t = r->s->migrations;
	pthread_mutex_lock(&t->lock);
	struct migration *g = find(t, in->attr.ino);
	bool ok = g && g->has_to && same_migrator(g, r->c) &&
		  same_layout(&g->to, &m->layout);
	pthread_mutex_unlock(&t->lock);
	if (!ok) {
		snprintf(r->detail, sizeof(r->detail), "no migration of this file in progress");
		return -EINVAL;
	}
	struct weft_layout old = in->layout;
	in->layout = m->layout;
	memset(in->written, 0, sizeof(in->written));
	in->written_len = 0;
	meta_inode_mark_written(in, (const uint8_t *)m->written.p, m->written.len);
	in->attr.ctime_ns = meta_ns_now(c);
	meta_inode_fill_derived(in);
	int rc = meta_inode_put(c->db, c->txn, in);
	if (rc == 0)
		rc = meta_pending_add(c->db, c->txn, META_PENDING_DROP, in->attr.ino, 0, &old);
	r->layout2 = old;
	r->layout = in->layout;
	return rc;
}

/* ABORT: the abandoned copy's objects (the new generation) are queued for the deleter,
 * which removes them from every member of their chains, while the file is still marked
 * (no other migration writes that generation meanwhile). */
static int abort_copy(struct mreq *r, const struct meta_ctx *c)
{
	struct meta_migrations *t = r->s->migrations;
	pthread_mutex_lock(&t->lock);
	struct migration *g = find(t, MSGM->ino);
	bool has = g && g->has_to && same_migrator(g, r->c); /* the migrator's abort only */
	struct weft_layout to = has ? g->to : (struct weft_layout){0};
	pthread_mutex_unlock(&t->lock);
	if (!has)
		return 0;
	return meta_pending_add(c->db, c->txn, META_PENDING_DROP, MSGM->ino, 0, &to);
}

int meta_migrate_apply(struct mreq *r, const struct meta_ctx *c)
{
	const struct weft_msg_migrate *m = MSGM;
	if (m->step == WEFT_MIGRATE_ABORT)
		return abort_copy(r, c);
	struct meta_inode in;
	int rc = meta_inode_get_ref(c->db, c->txn, m->ino, 0, &in);
	if (rc)
		return rc;
	if (!meta_perm_owner(c->cred, &in.attr))
		return -EPERM;
	if (S_ISDIR(in.attr.mode))
		return -EISDIR;
	if (!S_ISREG(in.attr.mode) || !in.layout.chain_count)
		return -EINVAL;
	switch (m->step) {
	case WEFT_MIGRATE_BEGIN: return begin(r, c, &in);
	case WEFT_MIGRATE_SWITCH: return do_switch(r, c, &in);
	default: return -EINVAL;
	}
}

void meta_migrate_done(struct meta_server *s, struct mreq *r, int result)
{
	const struct weft_msg_migrate *m = MSGM;
	/* a BEGIN that worked keeps the mark until SWITCH or ABORT; a failed SWITCH too,
	 * so the migrator may try again or give up */
	if ((m->step == WEFT_MIGRATE_BEGIN && result) ||
	    (m->step == WEFT_MIGRATE_SWITCH && !result) || m->step == WEFT_MIGRATE_ABORT)
		unmark(s->migrations, m->ino, r->c); /* nobody else's request ends it */
}

void meta_migrate_conn_closed(struct meta_server *s, struct conn *c)
{
	struct meta_migrations *t = s->migrations;
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < MIGRATIONS_MAX; i++)
		if (t->slot[i].ino && t->slot[i].c == c)
			t->slot[i].ino = 0;
	pthread_mutex_unlock(&t->lock);
}
