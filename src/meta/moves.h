/* Moving chain memberships between targets while the chains serve: drain, remove and
 * rebalance (issue 16).
 *
 * DESIGN: a move is re-replication without the loss of a copy. The chain gets one member
 * more than its replicas: the newcomer, REBUILDING behind the live members, so that it
 * gets every new write forwarded and copies the chain's objects from the serving member
 * before it (the store's resync, unchanged). The member that goes is marked leaving and
 * keeps serving. When the newcomer reports CHAIN_SYNCED, meta makes it SERVING and drops
 * the leaving member in the same transaction (meta_chains_member_serving): one new
 * chain version, one epoch, pushed to mounts and stores. The leaving target deletes its
 * copies of that chain's objects later, once the chain serves with its full count
 * without it (store/sweep.c).
 *  - drain: every membership of a draining target moves (up to MOVES_DRAIN_MAX chains at
 *    once), each to the live target on a node not yet in the chain that is in fewest
 *    chains of that table, the emptiest first.
 *  - rebalance: when the fullest and the emptiest live target differ by more than the
 *    threshold (in percent of capacity), one membership of the fullest moves to the
 *    emptiest (one move at a time, and only when it narrows the gap: the size of a
 *    membership is estimated as the target's used bytes over its memberships).
 * The copy rate is the stores' resync rate (weft rebalance --rate sets it at run time).
 *
 * Threads: plain functions on the writer's txn. */
#ifndef WEFT_META_MOVES_H
#define WEFT_META_MOVES_H

#include <stdbool.h>
#include <stdint.h>

#include "meta/mdb.h"

#define MOVES_DRAIN_MAX 4 /* chains moving at once for drains */
/* a rebalancing move starts this long after the last move ended at the earliest */
#define MOVES_SETTLE_MS 8000

struct meta_moves_cfg {
	bool rebalance;     /* start rebalancing moves (automatic mode, or weft rebalance) */
	uint32_t threshold; /* percent of capacity the fullest may exceed the emptiest by */
};

struct meta_moves_result {
	unsigned started;   /* moves started by this step */
	unsigned moving;    /* moves in progress after it */
	uint32_t spread;    /* fullest minus emptiest live target, percent of capacity */
};

/* Marks target id draining (its memberships move elsewhere from the next step).
 * *memberships = chains it is a member of. Errors: -ENOENT unknown target; -EINVAL it
 * is removed. */
int meta_moves_drain(struct meta_db *db, MDB_txn *txn, uint32_t id, unsigned *memberships);
/* Takes target id out for good: refused with -EBUSY while it is a member of any chain
 * (its copies are still needed), -EINVAL unless it is draining. */
int meta_moves_remove(struct meta_db *db, MDB_txn *txn, uint32_t id);
/* One step: starts the moves due (drains first, then rebalancing). */
int meta_moves_step(struct meta_db *db, MDB_txn *txn, const struct meta_moves_cfg *cfg,
		    struct meta_moves_result *res);
/* Chains target id is a member of (in any table). */
int meta_moves_memberships(struct meta_db *db, MDB_txn *txn, uint32_t id, unsigned *n);

#endif
