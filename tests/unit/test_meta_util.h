/* Helpers shared by the meta unit tests: a fresh file system in a temp dir. */
#ifndef WEFT_TEST_META_UTIL_H
#define WEFT_TEST_META_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "meta/mdb.h"
#include "meta/ns.h"
#include "weft/types.h"

/* Makes a temp dir, mkfs (replicas as given), opens it. Aborts on failure. */
struct meta_db *tmeta_open(char *dir, size_t dirlen, uint8_t replicas);
/* Closes db and removes dir. */
void tmeta_close(struct meta_db *db, const char *dir);
/* Registers n targets on n distinct nodes "node<i>" (or on nodes i % nodes). */
void tmeta_targets(struct meta_db *db, unsigned n, unsigned nodes);
/* A credential. */
struct weft_cred tmeta_cred(uint32_t uid, uint32_t gid);

/* Running ops the way the group commit does: one parent write txn per test, each op in
 * its own nested txn, committed on success and aborted on error.
 *   TX_BEGIN(db); r = OP(meta_ns_mkdir(&C, ...)); TX_END();
 * C is the struct meta_ctx ops take; set C.cred to change who asks. */
extern struct meta_ctx C;
extern MDB_txn *tparent;
#define TX_BEGIN(db_) do { \
	CHECK_OK(mdb_txn_begin((db_)->env, NULL, 0, &tparent)); \
	C.db = (db_); C.txn = tparent; } while (0)
#define TX_END() do { CHECK_OK(mdb_txn_commit(tparent)); tparent = NULL; } while (0)
#define OP(expr) ({ \
	MDB_txn *ch_; \
	if (mdb_txn_begin(C.db->env, tparent, 0, &ch_)) \
		abort(); \
	C.txn = ch_; \
	int r_ = (expr); \
	if (r_) \
		mdb_txn_abort(ch_); \
	else if (mdb_txn_commit(ch_)) \
		abort(); \
	C.txn = tparent; \
	r_; })
#define S(str) (str), strlen(str)
#define ROOT ((struct meta_ref){ WEFT_ROOT_INO, 0 })
#define REF(a) ((struct meta_ref){ (a).ino, (a).gen })

#endif
