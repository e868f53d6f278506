/* Reply cache: a client's tagged mutation (TAGGED, proto.h) is applied once, whatever
 * number of times it is sent.
 *
 * DESIGN. libweft tags each namespace mutation with its client id (random, one per
 * libweft instance) and a request number (xid) it keeps when it sends the request again
 * after its connection died. Meta writes the reply of an applied tagged mutation in the
 * mutation's own txn (table "replies": client BE64 + xid BE64 -> u8 version 1, u64
 * transno, the reply payload), so that it is there exactly when the mutation is, across
 * a crash of meta too; a tagged request whose record exists is answered from it, not
 * applied. While a tagged mutation is between arrival and reply, its (client, xid) is in
 * an in-memory pending set, and a copy that arrives meanwhile is told to ask again
 * (WEFT_ERECOVERING). Records below the request's done_below (the client has all those
 * replies) are deleted in the same txn.
 *
 * Threads: the pending set is locked inside (loop thread adds, completion thread
 * removes); get/put in the caller's txn. */
#ifndef WEFT_META_REPLIES_H
#define WEFT_META_REPLIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "meta/mdb.h"

struct meta_replies;

int meta_replies_new(struct meta_replies **out);
void meta_replies_free(struct meta_replies *p);
/* Adds (client, xid) to the pending set: false if it is there already (or no memory). */
bool meta_replies_pending_add(struct meta_replies *p, uint64_t client, uint64_t xid);
void meta_replies_pending_del(struct meta_replies *p, uint64_t client, uint64_t xid);
/* The reply recorded for (client, xid): its transno and payload (appended to out).
 * Errors: -ENOENT none, -EIO a record this version does not know, LMDB's. */
int meta_replies_get(struct meta_db *db, MDB_txn *txn, uint64_t client, uint64_t xid,
		     uint64_t *transno, struct wbuf *out);
/* Records the reply of (client, xid) and deletes the client's records below done_below.
 * Errors: LMDB's (-ENOSPC map full, -EIO). */
int meta_replies_put(struct meta_db *db, MDB_txn *txn, uint64_t client, uint64_t xid,
		     uint64_t transno, const void *payload, size_t len, uint64_t done_below);

#endif
