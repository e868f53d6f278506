/* Sweep: deleting the copies a target holds for chains it is no longer a member of
 * (a drain or rebalance moved its membership to another target; src/meta/moves.h).
 *
 * DESIGN. Meta drops the leaving member only once the newcomer serves, so at that point
 * the chain has its full count of copies without this target. The store notices from
 * the chain tables: a new table in which it lost a membership schedules a sweep
 * SWEEP_DELAY_MS later (mounts and stores have learned the new epoch by then; a read
 * still sent here with the old version is refused as stale and resent). The sweep goes
 * over the local objects, asks meta for each inode's layout (GETSTRIPE) and deletes an
 * object when its chain does not have this target and serves with at least its
 * replica count (no move in progress there), or when its file is gone. A target in no
 * chain at all sweeps again every SWEEP_IDLE_MS while it holds objects (files deleted
 * after it left are not sent to it by meta's deleter), so a drained target ends empty;
 * so does a target that kept an object for another reason than being a member of its
 * chain (a move in progress there, meta not answering).
 * Deletes are conditional on the object's version (store_obj_delete_if): a copy a
 * write touched in between is left for the next sweep.
 *
 * Threads: store_sweep_tables_changed runs after a table install; store_sweep_run on the copier
 * thread (resync.c). sw->lock guards the membership list and the due time. */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "weft/err.h"

#define SWEEP_DELAY_MS 3000

/* The delay after a lost membership; WEFT_STORE_SWEEP_DELAY_MS overrides it for tests
 * whose objects meta does not know (written with the raw store protocol: a sweep would
 * rightly take them for the objects of deleted files). */
static uint64_t sweep_delay_ms(void)
{
	const char *e = getenv("WEFT_STORE_SWEEP_DELAY_MS");
	return e && *e ? strtoull(e, NULL, 10) : SWEEP_DELAY_MS;
}
#define SWEEP_IDLE_MS 10000
#define MEMBER_WHY "a member of its chain"

struct store_sweep {
	pthread_mutex_t lock;
	uint64_t *mine;   /* (replicas << 32 | chain) of the chains it was a member of */
	size_t n;
	bool known;       /* mine holds a table (not the first install) */
	uint64_t due_ms;  /* a sweep is due at this time (0: none) */
	bool member_nowhere;
};

int store_sweep_open(struct store_server *s)
{
	struct store_sweep *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	pthread_mutex_init(&sw->lock, NULL);
	s->sweep = sw;
	return 0;
}

void store_sweep_close(struct store_server *s)
{
	if (!s->sweep)
		return;
	pthread_mutex_destroy(&s->sweep->lock);
	free(s->sweep->mine);
	free(s->sweep);
	s->sweep = NULL;
}

static bool has(const uint64_t *a, size_t n, uint64_t k)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] == k)
			return true;
	return false;
}

void store_sweep_tables_changed(struct store_server *s)
{
	struct store_sweep *sw = s->sweep;
	struct weft_chain_set set;
	if (!sw || chaincache_snapshot(s->cc, &set))
		return;
	size_t cap = 0, n = 0;
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++)
		cap += set.nchains[r];
	uint64_t *mine = calloc(cap ? cap : 1, sizeof(*mine));
	if (!mine) {
		proto_chain_set_free(&set);
		return;
	}
	for (int r = 1; r <= WEFT_REPLICAS_MAX; r++)
		for (uint32_t i = 0; i < set.nchains[r - 1]; i++) {
			const struct weft_chain *c = &set.chains[r - 1][i];
			for (int m = 0; m < c->nmembers; m++)
				if (c->members[m].target == s->target_id)
					mine[n++] = (uint64_t)r << 32 | i;
		}
	proto_chain_set_free(&set);
	pthread_mutex_lock(&sw->lock);
	bool lost = false;
	for (size_t i = 0; sw->known && i < sw->n && !lost; i++)
		lost = !has(mine, n, sw->mine[i]);
	free(sw->mine);
	sw->mine = mine;
	sw->n = n;
	/* a target that starts in no chain (drained before a restart) sweeps too */
	if (lost || (!sw->known && n == 0))
		sw->due_ms = loop_now_ms() + sweep_delay_ms();
	sw->known = true;
	sw->member_nowhere = n == 0;
	pthread_mutex_unlock(&sw->lock);
}

/* May this target's copy of (ino, stripe), whose file has layout l, go? */
static bool not_needed(const struct store_server *s, const struct weft_chain_set *set,
		       const struct weft_layout *l, uint32_t stripe, const char **why)
{
	*why = "no layout";
	if (!l->chain_count)
		return false;
	/* object numbers carry the layout generation (weft/types.h) */
	uint32_t gen = stripe / WEFT_LAYOUT_GEN_STRIDE;
	stripe %= WEFT_LAYOUT_GEN_STRIDE;
	*why = "a migration's copy of the file";
	if (gen > l->gen)
		return false;
	*why = "a layout a migration replaced";
	if (gen < l->gen)
		return true;
	uint32_t chain = (uint32_t)(((uint64_t)l->first_chain + stripe) % l->chain_count);
	const struct weft_chain *c = proto_chain_set_get(set, l->replicas, chain);
	*why = "its chain moves (or is unknown here)";
	if (!c || c->nmembers != c->replicas)
		return false; /* ask again later */
	int serving = 0;
	*why = MEMBER_WHY;
	for (int m = 0; m < c->nmembers; m++) {
		if (c->members[m].target == s->target_id)
			return false;
		serving += c->members[m].state == WEFT_MEMBER_SERVING;
	}
	*why = "its chain is below its replica count";
	return serving >= c->replicas;
}

/* One pass over the local objects. Copier thread. */
static void sweep_pass(struct store_server *s)
{
	struct weft_chain_set set;
	if (chaincache_snapshot(s->cc, &set))
		return;
	struct store_index_rec recs[256];
	size_t n;
	uint64_t ino = 0, deleted = 0, kept = 0, cur_ino = UINT64_MAX;
	bool again = false; /* something to look at again later (a move, meta away) */
	uint32_t stripe = 0;
	struct weft_layout l = {0};
	int lrc = 0;
	while (!atomic_load(&s->stopping) &&
	       store_obj_list(s->objs, ino, stripe, recs, 256, &n) == 0 && n) {
		for (size_t i = 0; i < n; i++) {
			if (recs[i].ino != cur_ino) {
				cur_ino = recs[i].ino;
				lrc = store_meta_layout(s, cur_ino, &l);
			}
			const char *why = NULL;
			/* a file deleted since is ESTALE (its inode is gone) */
			bool go = lrc == -ENOENT || lrc == -ESTALE ||
				  (lrc == 0 && not_needed(s, &set, &l, recs[i].stripe, &why));
			int rc = 0;
			if (go) {
				uint64_t v = store_obj_version(s->objs, recs[i].ino, recs[i].stripe);
				rc = store_obj_delete_if(s->objs, v, recs[i].ino, recs[i].stripe);
				if (rc == 0 || rc == -ENOENT) {
					deleted += rc == 0;
					continue;
				}
			}
			if (go || lrc)
				why = weft_strerror(go ? rc : lrc);
			again |= go || lrc || strcmp(why, MEMBER_WHY) != 0;
			if (kept++ < 3) /* a sample, for whoever wonders why a target is not empty */
				log_info("sweep: ino %" PRIu64 " stripe %" PRIu32 " kept: %s",
					 recs[i].ino, recs[i].stripe, why);
		}
		ino = recs[n - 1].ino;
		stripe = recs[n - 1].stripe + 1;
		if (stripe == 0)
			ino++;
	}
	proto_chain_set_free(&set);
	if (deleted)
		log_info("sweep: %" PRIu64 " objects of chains this target left deleted (their "
			 "chains hold their copies elsewhere); %" PRIu64 " kept", deleted, kept);
	struct store_sweep *sw = s->sweep;
	pthread_mutex_lock(&sw->lock);
	if ((again || (kept && sw->member_nowhere)) && !sw->due_ms)
		sw->due_ms = loop_now_ms() + SWEEP_IDLE_MS;
	pthread_mutex_unlock(&sw->lock);
}

void store_sweep_run(struct store_server *s)
{
	struct store_sweep *sw = s->sweep;
	if (!sw)
		return;
	pthread_mutex_lock(&sw->lock);
	bool due = sw->due_ms && loop_now_ms() >= sw->due_ms;
	if (due)
		sw->due_ms = 0;
	pthread_mutex_unlock(&sw->lock);
	if (due)
		sweep_pass(s);
}
