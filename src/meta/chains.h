/* Storage targets and chain tables, durable in LMDB ("targets" and "chains" tables).
 *
 * DESIGN: a target (one `weft store` data directory) registers with its UUID and gets a
 * stable id (the same UUID always gets the same id back; its address is updated). For
 * each replica count R in 1..3 there is one chain table: chains of R targets on R
 * distinct nodes. Every target owns (is built around, and heads while it serves) one
 * chain per table; the other members are chosen greedily as the eligible targets (node
 * not yet in the chain, online first) in fewest chains of that table, ties broken by
 * how full they are (emptiest first, in whole percent) and then rotation order from
 * the owner, the targets being ordered round-robin across nodes.
 * A table exists once there are R distinct nodes. Tables only grow (a new target adds
 * one chain per table) and chain ids keep their meaning: a file's layout records the
 * table size at create. Members change state, never identity:
 *  - offline (silent past the timeout, or reported): state OFFLINE, moved to the end;
 *  - back (heartbeat or re-register): state SYNCING, moved behind the live members;
 *  - synced (meta_chains_member_serving): state SERVING.
 * Every change bumps the chain's version and the superblock's chains_epoch.
 *
 * Threads: plain functions on a caller's txn (write txn for those that change state). */
#ifndef WEFT_META_CHAINS_H
#define WEFT_META_CHAINS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/chainset.h"
#include "meta/mdb.h"

/* meta_target.flags */
#define META_TARGET_DRAINING 0x01 /* weft target drain: its memberships move elsewhere */
#define META_TARGET_REMOVED 0x02  /* weft target remove: out for good, may not register */

struct meta_target {
	uint32_t id;
	uint8_t flags; /* META_TARGET_* */
	uint8_t uuid[16];
	uint8_t state; /* WEFT_MEMBER_SERVING (up) or WEFT_MEMBER_OFFLINE (down) */
	char node[WEFT_NODE_MAX + 1];
	char addr[WEFT_ADDR_MAX + 1];
	uint64_t capacity, free;              /* bytes */
	uint64_t read_bytes, write_bytes;     /* counters as last reported */
	uint64_t read_ops, write_ops;
	int64_t last_seen_ns, registered_ns;
	/* What the target's directory holds, as it last reported (0: never reported): its
	 * incarnation (changes when the store cannot vouch for its contents) and the highest
	 * write sequence of its object index. */
	uint64_t incarnation, wseq;
};

struct meta_target_stats {
	uint64_t capacity, free;
	uint64_t read_bytes, write_bytes, read_ops, write_ops;
	uint64_t wseq;                        /* 0: not reported */
};

/* Registers a target (or re-registers the same uuid: same id, address and capacity
 * updated, an offline target comes back as syncing), then grows the chain tables.
 * node and addr are NUL-terminated. Errors: -EINVAL empty or too long node/addr;
 * -ENOSPC META_TARGETS_MAX reached; -errno from LMDB. */
int meta_chains_register(struct meta_db *db, MDB_txn *txn, const uint8_t uuid[16],
			 const char *node, const char *addr, uint64_t capacity, int64_t now_ns,
			 uint32_t *id);
/* Records a heartbeat: stats and last-seen time; an offline target rejoins its chains
 * as syncing. Errors: -ENOENT unknown target. */
int meta_chains_heartbeat(struct meta_db *db, MDB_txn *txn, uint32_t id,
			  const struct meta_target_stats *st, int64_t now_ns);
/* Checks what a (re-)registering target reports about its directory against meta's
 * record: a different incarnation, or a write sequence below the highest one it
 * reported before, means its objects cannot be trusted (disk replaced, emptied, or
 * restored from an older copy). Such a target becomes SYNCING in every chain it serves
 * in (it gets writes, serves no reads until resynced); *untrusted says so. The new
 * values are recorded. Errors: -ENOENT unknown target. */
int meta_chains_vouch(struct meta_db *db, MDB_txn *txn, uint32_t id, uint64_t incarnation,
		      uint64_t wseq, bool *untrusted);
/* Marks every up target silent for more than timeout_ns offline; *n = how many. */
int meta_chains_expire(struct meta_db *db, MDB_txn *txn, int64_t now_ns, int64_t timeout_ns,
		       unsigned *n);
/* *all = true when there are at least two up targets, one has been silent for more than
 * timeout_ns and every one for more than half of it: then meta is the one cut off, not
 * them (one failed target leaves the others heard from within a heartbeat). */
int meta_chains_all_silent(struct meta_db *db, MDB_txn *txn, int64_t now_ns,
			   int64_t timeout_ns, bool *all);
/* *heard = true when some target (any state) was heard from after since_ns. */
int meta_chains_heard_since(struct meta_db *db, MDB_txn *txn, int64_t since_ns, bool *heard);
/* Marks target id offline now (e.g. its predecessor reported it failed).
 * Errors: -ENOENT unknown target. Already offline: 0, nothing changes. */
int meta_chains_target_offline(struct meta_db *db, MDB_txn *txn, uint32_t id);
/* The target reported its own disk failing: offline now, and when it returns it
 * rebuilds every chain it is in (what it held may be stale where a write failed). */
int meta_chains_target_disk_failed(struct meta_db *db, MDB_txn *txn, uint32_t id);
/* A syncing member finished catching up: SERVING. Errors: -ENOENT no such chain or
 * target not a member; -EINVAL member is offline. Already serving: 0. */
int meta_chains_member_serving(struct meta_db *db, MDB_txn *txn, uint8_t replicas,
			       uint32_t chain, uint32_t target);

/* Re-replication: takes target id out of every chain it is a member of that has another
 * live member to rebuild from (an up target is marked offline first), putting in its
 * place the eligible
 * target (up, on a node not yet in the chain) in fewest chains of that table, as
 * REBUILDING behind the live members (versions bumped). A chain with no eligible
 * target keeps it. *n = chains changed. Errors: -ENOENT unknown target. */
int meta_chains_replace(struct meta_db *db, MDB_txn *txn, uint32_t id, unsigned *n);
/* Replaces every target offline for more than after_ns that is still in some chain.
 * *n = chains changed. */
int meta_chains_replace_expired(struct meta_db *db, MDB_txn *txn, int64_t now_ns,
				int64_t after_ns, unsigned *n);

int meta_chains_target_get(struct meta_db *db, MDB_txn *txn, uint32_t id,
			   struct meta_target *out);
/* Errors: -ENOENT no such chain. */
int meta_chains_get(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t id,
		    struct weft_chain *out);
/* Size of the table for replicas (0 when it does not exist yet). */
int meta_chains_count(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t *n);
/* Sum of capacity and free bytes of all targets that are up. */
int meta_chains_capacity(struct meta_db *db, MDB_txn *txn, uint64_t *total, uint64_t *free);
/* room[c] for chains c < n of table replicas: the free bytes of the fullest live member
 * (what the chain can still take); 0 for a chain with no live member or none at all. */
int meta_chains_room(struct meta_db *db, MDB_txn *txn, uint8_t replicas, uint32_t n,
		     uint64_t *room);
/* Loads every target and table into *out (free with proto_chain_set_free). */
int meta_chains_snapshot(struct meta_db *db, MDB_txn *txn, struct weft_chain_set *out);

/* Building blocks for moves.c, on the caller's txn: the targets not removed (id
 * order), table replicas (indexed by id), one chain written back, the epoch bumped,
 * member m moved to position to. */
int meta_chains_target_put(struct meta_db *db, MDB_txn *txn, const struct meta_target *t);
int meta_chains_targets(struct meta_db *db, MDB_txn *txn, struct meta_target **out,
			uint32_t *n);
int meta_chains_table(struct meta_db *db, MDB_txn *txn, uint8_t replicas,
		      struct weft_chain **out, uint32_t *n);
int meta_chains_put(struct meta_db *db, MDB_txn *txn, const struct weft_chain *c);
int meta_chains_epoch_bump(struct meta_db *db, MDB_txn *txn);
void meta_chains_move_member(struct weft_chain *c, int m, int to);

#endif
