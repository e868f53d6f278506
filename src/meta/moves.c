/* Moving chain memberships: drain, remove, rebalance (see moves.h). */
#include "meta/moves.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "meta/chains.h"
#include "meta/super.h"

/* Targets and the three tables, loaded once per call. */
struct view {
	struct meta_target *t;
	uint32_t nt;
	struct weft_chain *ch[WEFT_REPLICAS_MAX];
	uint32_t n[WEFT_REPLICAS_MAX];
	uint32_t *count[WEFT_REPLICAS_MAX]; /* memberships per target index, per table */
};

static void view_free(struct view *v)
{
	free(v->t);
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++) {
		free(v->ch[r]);
		free(v->count[r]);
	}
}

static int view_load(struct meta_db *db, MDB_txn *txn, struct view *v)
{
	memset(v, 0, sizeof(*v));
	int rc = meta_chains_targets(db, txn, &v->t, &v->nt);
	for (int r = 0; r < WEFT_REPLICAS_MAX && !rc; r++) {
		if ((rc = meta_chains_table(db, txn, (uint8_t)(r + 1), &v->ch[r], &v->n[r])))
			break;
		if (!(v->count[r] = calloc(v->nt ? v->nt : 1, sizeof(uint32_t)))) {
			rc = -ENOMEM;
			break;
		}
		for (uint32_t i = 0; i < v->n[r]; i++)
			for (int m = 0; m < v->ch[r][i].nmembers; m++)
				for (uint32_t k = 0; k < v->nt; k++)
					v->count[r][k] += v->t[k].id == v->ch[r][i].members[m].target;
	}
	if (rc)
		view_free(v);
	return rc;
}

static int index_of(const struct view *v, uint32_t id)
{
	for (uint32_t k = 0; k < v->nt; k++)
		if (v->t[k].id == id)
			return (int)k;
	return -1;
}

/* Can target index k join chain c in place of member skip (-1: none)? Up, not
 * draining, not a member yet, on a node none of the other members is on. */
static bool may_join(const struct view *v, const struct weft_chain *c, int skip, uint32_t k)
{
	if (v->t[k].state != WEFT_MEMBER_SERVING || (v->t[k].flags & META_TARGET_DRAINING))
		return false;
	for (int m = 0; m < c->nmembers; m++) {
		if (c->members[m].target == v->t[k].id)
			return false;
		int j = index_of(v, c->members[m].target);
		if (m != skip && j >= 0 && strcmp(v->t[j].node, v->t[k].node) == 0)
			return false;
	}
	return true;
}

static uint64_t used_of(const struct meta_target *t)
{
	return t->free < t->capacity ? t->capacity - t->free : 0;
}

/* Used space in thousandths of capacity. */
static uint64_t permille(const struct meta_target *t, uint64_t used)
{
	return t->capacity ? used * 1000 / t->capacity : 0;
}

/* Starts moving member m of chain c (table r) to target index k. */
static int start_move(struct meta_db *db, MDB_txn *txn, struct view *v, struct weft_chain *c,
		      int m, uint32_t k, const char *why)
{
	int live = 0;
	uint32_t from = c->members[m].target;
	for (int j = 0; j < c->nmembers; j++)
		live += c->members[j].state != WEFT_MEMBER_OFFLINE;
	c->members[m].leaving = true;
	c->members[c->nmembers] = (struct weft_chain_member){.target = v->t[k].id,
							     .state = WEFT_MEMBER_REBUILDING};
	c->nmembers++;
	/* behind the live members: it gets their writes forwarded and copies from the last */
	meta_chains_move_member(c, c->nmembers - 1, live);
	c->version++;
	v->count[c->replicas - 1][k]++;
	log_info("chain %u/%u: %s: target %u moves to target %u (%s), rebuilding there",
		 c->replicas, c->id, why, from, v->t[k].id,
		 v->t[k].node);
	return meta_chains_put(db, txn, c);
}

static unsigned moving(const struct view *v)
{
	unsigned n = 0;
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++)
		for (uint32_t i = 0; i < v->n[r]; i++)
			n += v->ch[r][i].nmembers > v->ch[r][i].replicas;
	return n;
}

/* Drains: each chain with a member on a draining target gets a newcomer. */
static int step_drain(struct meta_db *db, MDB_txn *txn, struct view *v,
		      struct meta_moves_result *res)
{
	int rc = 0;
	for (int r = 0; r < WEFT_REPLICAS_MAX && !rc; r++)
		for (uint32_t i = 0; i < v->n[r] && !rc && res->moving < MOVES_DRAIN_MAX; i++) {
			struct weft_chain *c = &v->ch[r][i];
			if (c->nmembers != c->replicas)
				continue;
			int m = -1, live = 0;
			for (int j = 0; j < c->nmembers; j++) {
				int k = index_of(v, c->members[j].target);
				if (k >= 0 && (v->t[k].flags & META_TARGET_DRAINING))
					m = j;
				live += c->members[j].state == WEFT_MEMBER_SERVING;
			}
			if (m < 0 || live == 0)
				continue; /* nothing to move, or nobody to copy from (yet) */
			int best = -1;
			for (uint32_t k = 0; k < v->nt; k++) {
				if (!may_join(v, c, m, k))
					continue;
				if (best < 0 || v->count[r][k] < v->count[r][best] ||
				    (v->count[r][k] == v->count[r][best] &&
				     permille(&v->t[k], used_of(&v->t[k])) <
					     permille(&v->t[best], used_of(&v->t[best]))))
					best = (int)k;
			}
			if (best < 0)
				continue; /* no room on another node: stays until one joins */
			if ((rc = start_move(db, txn, v, c, m, (uint32_t)best, "drain")) == 0) {
				res->started++;
				res->moving++;
			}
		}
	return rc;
}

/* Rebalance: one membership of the fullest live target to the emptiest, if the gap is
 * over the threshold and the move narrows it. */
static int step_rebalance(struct meta_db *db, MDB_txn *txn, struct view *v,
			  const struct meta_moves_cfg *cfg, struct meta_moves_result *res,
			  const uint32_t *used_chains)
{
	int hi = -1, lo = -1;
	for (uint32_t k = 0; k < v->nt; k++) {
		const struct meta_target *t = &v->t[k];
		if (t->state != WEFT_MEMBER_SERVING || (t->flags & META_TARGET_DRAINING) ||
		    !t->capacity)
			continue;
		uint64_t p = permille(t, used_of(t));
		if (hi < 0 || p > permille(&v->t[hi], used_of(&v->t[hi])))
			hi = (int)k;
		if (lo < 0 || p < permille(&v->t[lo], used_of(&v->t[lo])))
			lo = (int)k;
	}
	if (hi < 0 || lo < 0 || hi == lo)
		return 0;
	const struct meta_target *H = &v->t[hi], *L = &v->t[lo];
	uint64_t gap = permille(H, used_of(H)) - permille(L, used_of(L));
	res->spread = (uint32_t)((gap + 5) / 10);
	if (!cfg->rebalance || res->moving || gap <= (uint64_t)cfg->threshold * 10)
		return 0;
	/* memberships of the fullest in chains some file uses: what a move can take off */
	uint32_t mem = 0;
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++)
		for (uint32_t i = 0; i < v->n[r] && i < used_chains[r]; i++)
			for (int m = 0; m < v->ch[r][i].nmembers; m++)
				mem += v->ch[r][i].members[m].target == H->id;
	if (mem == 0)
		return 0;
	uint64_t est = used_of(H) / mem;
	uint64_t hi2 = permille(H, used_of(H) - est), lo2 = permille(L, used_of(L) + est);
	uint64_t gap2 = hi2 > lo2 ? hi2 - lo2 : lo2 - hi2;
	if (gap2 >= gap)
		return 0; /* one membership is more than the gap: it would only swap them */
	if (L->free < 2 * est)
		return 0; /* no room to take it with a margin for what is written meanwhile */
	for (int r = 0; r < WEFT_REPLICAS_MAX; r++)
		for (uint32_t i = 0; i < v->n[r] && i < used_chains[r]; i++) {
			struct weft_chain *c = &v->ch[r][i];
			int m = -1, serving = 0;
			if (c->nmembers != c->replicas)
				continue;
			for (int j = 0; j < c->nmembers; j++) {
				serving += c->members[j].state == WEFT_MEMBER_SERVING;
				if (c->members[j].target == H->id)
					m = j;
			}
			if (m < 0 || serving != c->nmembers || !may_join(v, c, m, (uint32_t)lo))
				continue;
			int rc = start_move(db, txn, v, c, m, (uint32_t)lo, "rebalance");
			if (rc == 0) {
				res->started++;
				res->moving++;
			}
			return rc;
		}
	return 0;
}

int meta_moves_step(struct meta_db *db, MDB_txn *txn, const struct meta_moves_cfg *cfg,
		    struct meta_moves_result *res)
{
	struct view v;
	struct meta_super sb;
	memset(res, 0, sizeof(*res));
	int rc = meta_super_get(db, txn, &sb);
	if (rc || (rc = view_load(db, txn, &v)))
		return rc;
	res->moving = moving(&v);
	bool draining = false;
	for (uint32_t k = 0; k < v.nt; k++)
		draining |= (v.t[k].flags & META_TARGET_DRAINING) != 0;
	if (draining)
		rc = step_drain(db, txn, &v, res);
	if (!rc)
		rc = step_rebalance(db, txn, &v, cfg, res, sb.used);
	if (!rc && res->started)
		rc = meta_chains_epoch_bump(db, txn);
	view_free(&v);
	return rc;
}

int meta_moves_memberships(struct meta_db *db, MDB_txn *txn, uint32_t id, unsigned *n)
{
	*n = 0;
	for (uint8_t r = 1; r <= WEFT_REPLICAS_MAX; r++) {
		struct weft_chain *ch;
		uint32_t nc;
		int rc = meta_chains_table(db, txn, r, &ch, &nc);
		if (rc)
			return rc;
		for (uint32_t i = 0; i < nc; i++)
			for (int m = 0; m < ch[i].nmembers; m++)
				*n += ch[i].members[m].target == id;
		free(ch);
	}
	return 0;
}

int meta_moves_drain(struct meta_db *db, MDB_txn *txn, uint32_t id, unsigned *memberships)
{
	struct meta_target t;
	int rc = meta_chains_target_get(db, txn, id, &t);
	if (rc)
		return rc;
	if (t.flags & META_TARGET_REMOVED)
		return -EINVAL;
	if ((rc = meta_moves_memberships(db, txn, id, memberships)))
		return rc;
	if (t.flags & META_TARGET_DRAINING)
		return 0;
	t.flags |= META_TARGET_DRAINING;
	log_warn("target %u (%s on %s) draining: %u chain memberships move to other targets",
		 t.id, t.addr, t.node, *memberships);
	return meta_chains_target_put(db, txn, &t);
}

int meta_moves_remove(struct meta_db *db, MDB_txn *txn, uint32_t id)
{
	struct meta_target t;
	unsigned n;
	int rc = meta_chains_target_get(db, txn, id, &t);
	if (rc)
		return rc;
	if (t.flags & META_TARGET_REMOVED)
		return 0;
	if (!(t.flags & META_TARGET_DRAINING))
		return -EINVAL;
	if ((rc = meta_moves_memberships(db, txn, id, &n)))
		return rc;
	if (n)
		return -EBUSY;
	t.flags |= META_TARGET_REMOVED;
	log_warn("target %u (%s on %s) removed from the file system", t.id, t.addr, t.node);
	if ((rc = meta_chains_target_put(db, txn, &t)))
		return rc;
	return meta_chains_epoch_bump(db, txn); /* it leaves the tables' target list */
}
