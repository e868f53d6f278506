/* weft migrate at meta: restriping a file to a new layout while it is in use.
 *
 * DESIGN: the migrator (a libweft client: weft_migrate) copies the file's objects into
 * objects of a new layout generation (weft/types.h: the same inode, other object
 * numbers), and meta makes the switch. MIGRATE BEGIN marks the inode migrating here (in
 * memory) and recalls WEFT_RECALL_LAYOUT from every other session holding it: each
 * sends its write-behind to the stores and holds the file's reads and writes until
 * GETSTRIPE says the migration is over. While it is marked, OPEN of the file answers
 * WEFT_EMIGRATING (libweft waits and asks again), so no one starts I/O with the old
 * layout. BEGIN's reply (once every holder answered) gives the old and new layouts;
 * the migrator copies and verifies, then SWITCH writes the new layout and the new
 * written-stripes mask into the inode and queues a DROP of the old generation's
 * objects for the deleter, in one transaction; the mark goes after that commit, so a
 * waiting client's next GETSTRIPE gets the new layout. ABORT, the migrator's
 * connection closing, or MIGRATE_HOLD_MS without a SWITCH drop the mark and the file
 * goes on with its old layout (the new generation's copies are left for the stores'
 * sweep).
 *
 * Threads: the table (struct meta_migrations, one per server) has its own lock; any
 * thread. */
#ifndef WEFT_META_MIGRATE_H
#define WEFT_META_MIGRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "net/conn.h"
#include "weft/types.h"

struct meta_server;
struct mreq;
struct meta_ctx;
struct meta_migrations;

/* The table of files being migrated, empty. Errors: -ENOMEM. meta_migrate_free(NULL)
 * is a no-op; free only once no thread uses the server. */
int meta_migrate_new(struct meta_migrations **out);
void meta_migrate_free(struct meta_migrations *t);

/* How long a BEGIN holds the file without a SWITCH (the migrator died silently). */
#define MIGRATE_HOLD_MS (10 * 60 * 1000)

/* Marks ino migrating for the BEGIN of r (loop thread, before its recall is sent).
 * Errors: -EBUSY another migration of ino is in progress; -EAGAIN 64 files are being
 * migrated already. */
int meta_migrate_mark(struct meta_server *s, struct mreq *r, uint64_t ino);
/* Whether ino is being migrated (OPEN answers WEFT_EMIGRATING, GETSTRIPE says so). */
bool meta_migrate_busy(struct meta_server *s, uint64_t ino);
/* MIGRATE's handler, in the batch's write txn: BEGIN picks the new layout, SWITCH
 * writes it. Errors: -EPERM not owner (nor root); -EISDIR, -EINVAL not a regular
 * file, bad layout, no migration of ino in progress (SWITCH), or the table for the
 * replicas asked does not exist (fewer storage nodes); -EOVERFLOW no generation left. */
int meta_migrate_apply(struct mreq *r, const struct meta_ctx *c);
/* After MIGRATE's commit (result 0) or failure: drops the mark unless BEGIN succeeded. */
void meta_migrate_done(struct meta_server *s, struct mreq *r, int result);
/* A connection closed: the migrations it began are given up. */
void meta_migrate_conn_closed(struct meta_server *s, struct conn *c);

#endif
