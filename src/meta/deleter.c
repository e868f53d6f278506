/* The deleter: drains the durable pending table by asking stores to delete objects.
 *
 * DESIGN: one thread, woken by mutations that may have queued deletions (unlink,
 * rename over a file, release of an orphan, session close) and every period_ms. A pass
 * reads up to DEL_BATCH records and the chain tables in one read txn, then for each
 * DELETE record sends OBJ_DELETE {ino} to every target that is a member of any chain
 * the file's layout uses (the stores delete every stripe of ino they hold). A record is
 * removed (one group-commit mutation per pass) when every member answered 0 or -ENOENT;
 * a DROP record (the layout a `weft migrate` replaced) sends OBJ_REMOVE {ino, object}
 * for each stripe of that layout to every member of its chain, likewise;
 * one with a member offline or unreachable stays for a later pass. TRUNCATE records are
 * dropped: clients trim objects themselves before they report a smaller size.
 * Connections to stores are struct rpc on the deleter's own event loop, so the server's
 * loop thread never waits on the network. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "net/rpc.h"
#include "meta/chains.h"
#include "meta/pending.h"
#include "meta/server_int.h"
#include "weft/err.h"

#define DEL_BATCH 256
#define DEL_TIMEOUT_MS 5000

struct del_ep {
	uint32_t target;
	char addr[WEFT_ADDR_MAX + 1];
	struct rpc *rpc;
	bool failed_this_pass;
};

struct meta_deleter {
	struct meta_server *s;
	uint32_t period_ms;
	pthread_t thread;
	struct loop *loop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool wake, stop;         /* guarded by lock */
	struct del_ep *eps;      /* deleter thread only */
	size_t neps;
	uint64_t deleted;        /* records completed (deleter thread) */
};

static struct del_ep *endpoint(struct meta_deleter *d, const struct weft_chain_target *t)
{
	for (size_t i = 0; i < d->neps; i++) {
		if (d->eps[i].target != t->id)
			continue;
		if (strcmp(d->eps[i].addr, t->addr) != 0) {
			rpc_free(d->eps[i].rpc);
			d->eps[i].rpc = NULL;
			memcpy(d->eps[i].addr, t->addr, sizeof(t->addr));
		}
		return &d->eps[i];
	}
	struct del_ep *n = realloc(d->eps, (d->neps + 1) * sizeof(*n));
	if (!n)
		return NULL;
	d->eps = n;
	struct del_ep *e = &d->eps[d->neps++];
	memset(e, 0, sizeof(*e));
	e->target = t->id;
	memcpy(e->addr, t->addr, sizeof(t->addr));
	return e;
}

/* stripe: UINT32_MAX deletes every object of ino (OBJ_DELETE), else one object. */
static int delete_on(struct meta_deleter *d, struct del_ep *e, uint64_t ino, uint32_t stripe)
{
	if (e->failed_this_pass)
		return -EAGAIN;
	if (!e->rpc) {
		struct rpc_params p = {.loop = d->loop, .key = &d->s->key, .addr = e->addr,
				       .role = WEFT_ROLE_META, .name = "weft-meta",
				       .connect_timeout_ms = 2000};
		int rc = rpc_new(&p, &e->rpc);
		if (rc)
			return rc;
	}
	struct wbuf w;
	wbuf_init(&w);
	uint16_t op = WEFT_OP_OBJ_DELETE;
	if (stripe == UINT32_MAX) {
		struct weft_msg_obj_delete m = {.ino = ino};
		proto_obj_delete_encode(&w, &m);
	} else {
		struct weft_msg_obj_id m = {.ino = ino, .stripe = stripe};
		proto_obj_id_encode(&w, &m);
		op = WEFT_OP_OBJ_REMOVE;
	}
	int rc = rpc_call(e->rpc, op, &w, NULL, 0, DEL_TIMEOUT_MS, NULL);
	if (rc == -ENOENT)
		rc = 0;
	if (rc) {
		e->failed_this_pass = true;
		log_debug("deleter: %s %llu on target %u (%s): %s", proto_op_name(op),
			  (unsigned long long)ino, e->target, e->addr, weft_strerror(rc));
	}
	return rc;
}

/* Deletes rec's objects everywhere; 0 when every member acknowledged. */
static int delete_record(struct meta_deleter *d, const struct weft_chain_set *set,
			 const struct meta_pending *p)
{
	const struct weft_layout *l = &p->layout;
	bool drop = p->kind == META_PENDING_DROP;
	if ((p->kind != META_PENDING_DELETE && !drop) || l->chain_count == 0 || l->replicas == 0)
		return 0;
	uint32_t done[META_TARGETS_MAX / 32 + 1] = {0};
	uint32_t stripes = l->stripe_count ? l->stripe_count : l->chain_count;
	if (stripes > l->chain_count)
		stripes = l->chain_count;
	int result = 0;
	for (uint32_t st = 0; st < stripes; st++) {
		const struct weft_chain *ch =
			proto_chain_set_get(set, l->replicas, (l->first_chain + st) % l->chain_count);
		if (!ch)
			continue; /* a table never shrinks; nothing can be there */
		for (unsigned m = 0; m < ch->nmembers; m++) {
			uint32_t tid = ch->members[m].target;
			if (!drop && tid < META_TARGETS_MAX && (done[tid / 32] & (1u << (tid % 32))))
				continue; /* OBJ_DELETE took every stripe there */
			const struct weft_chain_target *t = NULL;
			for (uint32_t i = 0; i < set->ntargets; i++)
				if (set->targets[i].id == tid)
					t = &set->targets[i];
			if (!t || t->state == WEFT_MEMBER_OFFLINE) {
				result = -EAGAIN; /* a down target keeps its objects for now */
				continue;
			}
			struct del_ep *e = endpoint(d, t);
			uint32_t obj = drop ? st + l->gen * WEFT_LAYOUT_GEN_STRIDE : UINT32_MAX;
			int rc = e ? delete_on(d, e, p->ino, obj) : -ENOMEM;
			if (rc)
				result = rc;
			else if (tid < META_TARGETS_MAX)
				done[tid / 32] |= 1u << (tid % 32);
		}
	}
	return result;
}

struct done_list {
	struct meta_db *db;
	uint64_t *seq;
	size_t n;
};

static int done_apply(MDB_txn *txn, void *arg)
{
	struct done_list *dl = arg;
	for (size_t i = 0; i < dl->n; i++) {
		int rc = meta_pending_done(dl->db, txn, dl->seq[i]);
		if (rc && rc != -ENOENT)
			return rc;
	}
	return 0;
}

static int no_change(MDB_txn *txn, void *arg)
{
	(void)txn;
	(void)arg;
	return 0;
}

/* One pass; returns how many records it removed, or -errno. */
static int pass(struct meta_deleter *d)
{
	struct meta_db *db = d->s->db;
	MDB_txn *txn;
	/* Meta answers an unlink once committed, before the sync: objects are deleted
	 * only for records a power cut cannot take back. The writer syncs within its delay
	 * (or the next commit does); after 50 ms, a sync is asked for. */
	if (d->s->gc) {
		uint64_t upto = meta_commit_committed(d->s->gc);
		for (int i = 0; i < 10 && meta_commit_synced(d->s->gc) < upto; i++)
			usleep(5000);
		if (meta_commit_synced(d->s->gc) < upto) {
			int src = meta_commit_run(d->s->gc, no_change, NULL);
			if (src)
				return src;
		}
	}
	struct meta_pending *recs = calloc(DEL_BATCH, sizeof(*recs));
	uint64_t *seqs = calloc(DEL_BATCH, sizeof(*seqs));
	struct weft_chain_set set;
	size_t n = 0, ndone = 0;
	int rc = recs && seqs ? meta_db_read_begin(db, &txn) : -ENOMEM;
	if (rc)
		goto out;
	rc = meta_pending_list(db, txn, 0, recs, DEL_BATCH, &n);
	if (rc == 0 && n)
		rc = meta_chains_snapshot(db, txn, &set);
	meta_db_read_end(db, txn);
	if (rc || n == 0)
		goto out;
	for (size_t i = 0; i < d->neps; i++)
		d->eps[i].failed_this_pass = false;
	for (size_t i = 0; i < n; i++)
		if (delete_record(d, &set, &recs[i]) == 0)
			seqs[ndone++] = recs[i].seq;
	proto_chain_set_free(&set);
	if (ndone) {
		struct done_list dl = {.db = db, .seq = seqs, .n = ndone};
		rc = meta_commit_run(d->s->gc, done_apply, &dl);
		if (rc == 0)
			d->deleted += ndone;
	}
out:
	free(recs);
	free(seqs);
	return rc ? rc : (int)ndone;
}

static void *deleter_main(void *arg)
{
	struct meta_deleter *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		if (!d->wake) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += d->period_ms / 1000;
			ts.tv_nsec += (long)(d->period_ms % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&d->cond, &d->lock, &ts);
		}
		if (d->stop)
			break;
		d->wake = false;
		pthread_mutex_unlock(&d->lock);
		int rc;
		/* keep going while whole batches complete */
		while ((rc = pass(d)) == DEL_BATCH)
			;
		if (rc < 0 && rc != -ESHUTDOWN)
			log_warn("deleter: %s", weft_strerror(rc));
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int meta_deleter_start(struct meta_server *s, uint32_t period_ms, struct meta_deleter **out)
{
	struct meta_deleter *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->s = s;
	d->period_ms = period_ms;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	int rc = loop_new(&d->loop);
	if (rc)
		goto fail;
	if ((rc = loop_start(d->loop)))
		goto fail_loop;
	if ((rc = -pthread_create(&d->thread, NULL, deleter_main, d)))
		goto fail_loop;
	*out = d;
	return 0;
fail_loop:
	loop_free(d->loop);
fail:
	free(d);
	return rc;
}

void meta_deleter_wake(struct meta_deleter *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->wake = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void meta_deleter_stop(struct meta_deleter *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	for (size_t i = 0; i < d->neps; i++)
		rpc_free(d->eps[i].rpc);
	free(d->eps);
	loop_free(d->loop);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}
