/* Client sessions and open-file bookkeeping.
 *
 * DESIGN: open state is session state, kept in memory (struct meta_live, hung off the
 * meta_db): sessions and their heartbeats, and per (inode, session) open counts. Opening,
 * releasing and heartbeating write nothing to disk. After a meta restart the table is
 * empty; a client learns it when meta answers its session id with ENOENT, opens a new
 * session and sends REOPEN for every file it holds open, which rebuilds it.
 *
 * What must survive a restart is made durable only when it is needed: an unlinked file
 * still open somewhere (nlink 0, META_INODE_ORPHAN) gets a record in the "opens" table
 * (ino BE64 -> empty) in the unlink's own txn. It is freed, its objects queued for
 * deletion, once no session holds it open: by the reaper (meta_session_reap), which the
 * server runs every second in the group commit. After a restart every orphan record is
 * loaded (meta_session_load) and kept for a grace period (one session timeout) so that
 * clients can reclaim their opens before unopened orphans are freed.
 *
 * An OPEN runs on the loop thread in a read txn, an unlink in the writer's txn: an open
 * whose snapshot predates an unlink that freed the inode (not yet committed, or committed
 * after the snapshot began) would otherwise succeed on a freed file. The unlink records
 * the inode as dying with its txn id under the same lock as the open check, and an open
 * whose snapshot is older than that id gets ESTALE (as if the unlink came first).
 *
 * Threads: every function takes the table's lock; the txn arguments are the caller's
 * (any thread); functions that write need a write txn. */
#ifndef WEFT_META_SESSION_H
#define WEFT_META_SESSION_H

#include <stdint.h>

#include "meta/mdb.h"

struct meta_session {
	uint64_t id;
	char node[WEFT_NODE_MAX + 1];
	int64_t created_ns, last_seen_ns;
};

/* The in-memory table (meta_db_open makes one per db). */
struct meta_live;
struct meta_live *meta_live_new(void);
void meta_live_free(struct meta_live *l);

/* Startup (write txn, before serving): turns open records of the old format (session
 * tables on disk) into orphan records, drops stored sessions, and loads the orphan
 * records; none of them is freed before grace_until_ns (0: no grace), which gives
 * clients time to reclaim their opens. */
int meta_session_load(struct meta_db *db, MDB_txn *txn, int64_t grace_until_ns);

/* Creates a session for node (1..WEFT_NODE_MAX bytes, else -EINVAL): a new id from the
 * superblock (write txn: ids are never reused, across restarts too). */
int meta_session_create(struct meta_db *db, MDB_txn *txn, const char *node, int64_t now_ns,
			uint64_t *id);
/* Errors: -ENOENT unknown or expired session (the client must open a new one and send
 * its opens again). txn unused. */
int meta_session_heartbeat(struct meta_db *db, MDB_txn *txn, uint64_t id, int64_t now_ns);
int meta_session_get(struct meta_db *db, MDB_txn *txn, uint64_t id, struct meta_session *out);
/* Ends a session: drops all its opens, frees orphans left unopened (write txn), deletes
 * it. -ENOENT unknown. */
int meta_session_close(struct meta_db *db, MDB_txn *txn, uint64_t id);
/* Closes every session silent for more than timeout_ns; *n = how many. Write txn. */
int meta_session_expire(struct meta_db *db, MDB_txn *txn, int64_t now_ns, int64_t timeout_ns,
			unsigned *n);

/* Counts count more opens of ino by session id. txn (read or write) is the snapshot the
 * caller checks the inode in. Errors: -ENOENT unknown session; -ESTALE no such inode, or
 * it was freed by an unlink that txn does not see yet. Writes nothing. */
int meta_session_open(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino);
/* meta_session_open for a caller that has just read or created ino in txn (OPEN,
 * CREATE_OPEN): the inode is not looked up (and decoded) a second time. */
int meta_session_open_found(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino);
int meta_session_reopen(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino,
			uint32_t count);
/* 1 when session id holds ino open, 0 when not. */
int meta_session_holds(struct meta_db *db, uint64_t id, uint64_t ino);
/* Drops one open. With a write txn, an orphan whose last open this was is freed in it
 * (returns 0); with txn NULL (loop thread) only the memory changes, and it returns 1 when
 * ino is an orphan no session holds open any more (the caller runs meta_session_reap in
 * a write txn), else 0. Errors: -ENOENT the session does not hold ino open. */
int meta_session_release(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino);
/* The last link of ino is going (write txn): 1 when some session holds it open (it is
 * then recorded as an orphan, durably, in txn), 0 when none (it is marked dying: opens
 * with older snapshots fail), or -errno. */
int meta_session_unlinked(struct meta_db *db, MDB_txn *txn, uint64_t ino);
/* 1 when some session holds ino open, 0 when none. */
int meta_session_ino_open(struct meta_db *db, MDB_txn *txn, uint64_t ino);
/* Frees every orphan no session holds open (write txn), but not before its grace;
 * *n = how many (may be NULL). An orphan taken out of the table whose txn then fails
 * stays recorded on disk and is freed after the next restart. */
int meta_session_reap(struct meta_db *db, MDB_txn *txn, unsigned *n);
/* Sessions and open (inode, session) pairs, for tests and status. */
void meta_session_counts(struct meta_db *db, unsigned *sessions, unsigned *opens,
			 unsigned *orphans);

#endif
