/* Client sessions and open-file bookkeeping.
 *
 * DESIGN: a mount registers a session (id never reused) and heartbeats it. Opens are
 * counted per (inode, session) in two mirrored tables ("opens" keyed by inode first,
 * for "is it open anywhere?", and "sess_opens" keyed by session first, for cleanup).
 * An unlinked file that is still open stays as an orphan (nlink 0, META_INODE_ORPHAN)
 * until its last open goes away, by release or by session close/expiry; then it is
 * freed and its objects queued for deletion, in the same txn.
 *
 * Threads: plain functions on a caller's txn (write txn for changes). */
#ifndef WEFT_META_SESSION_H
#define WEFT_META_SESSION_H

#include <stdint.h>

#include "meta/mdb.h"

struct meta_session {
	uint64_t id;
	char node[WEFT_NODE_MAX + 1];
	int64_t created_ns, last_seen_ns;
};

/* Creates a session for node (1..WEFT_NODE_MAX bytes, else -EINVAL). */
int meta_session_create(struct meta_db *db, MDB_txn *txn, const char *node, int64_t now_ns,
			uint64_t *id);
/* Errors: -ENOENT unknown or expired session (the client must register again: its
 * opens are gone). */
int meta_session_heartbeat(struct meta_db *db, MDB_txn *txn, uint64_t id, int64_t now_ns);
int meta_session_get(struct meta_db *db, MDB_txn *txn, uint64_t id, struct meta_session *out);
/* Ends a session: releases all its opens (freeing orphans), deletes it. -ENOENT unknown. */
int meta_session_close(struct meta_db *db, MDB_txn *txn, uint64_t id);
/* Closes every session silent for more than timeout_ns; *n = how many. */
int meta_session_expire(struct meta_db *db, MDB_txn *txn, int64_t now_ns, int64_t timeout_ns,
			unsigned *n);

/* Counts one more open of ino by session id. Errors: -ENOENT unknown session;
 * -ESTALE no such inode. */
int meta_session_open(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino);
/* Drops one open; at the last open of an orphan anywhere the inode is freed.
 * Errors: -ENOENT the session does not hold ino open. */
int meta_session_release(struct meta_db *db, MDB_txn *txn, uint64_t id, uint64_t ino);
/* 1 when some session holds ino open, 0 when none, or -errno. */
int meta_session_ino_open(struct meta_db *db, MDB_txn *txn, uint64_t ino);

#endif
