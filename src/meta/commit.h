/* Group commit: many mutations, one LMDB write txn, one sync.
 *
 * DESIGN: three threads in a pipeline. Producers (any thread) queue struct
 * meta_mutation. The writer opens a write txn, runs queued mutations' apply() directly
 * in it (up to max_batch), keeps taking newly queued ones into the same txn while the
 * previous batch is being synced, numbers the applied ones (transno, persisted in the
 * txn) and commits. Committing syncs the batch's data pages and writes, without syncing,
 * its meta page (MDB_NOMETASYNC, mdb.c). A batch with an op that waits for the sync
 * (durable) goes to the syncer, which calls mdb_env_sync(env, 1) once and hands it to
 * the completion thread (with nothing queued, or with max_batch 1, the writer syncs it
 * itself); any other batch goes to the completion thread at once, which calls every
 * done() with its result: an answer once committed. Its meta page is then made durable
 * by the next commit's data sync (the meta page written before is in the same file), or
 * by the writer once idle for sync_delay_ms (lazy-only batches: idle_sync_ms).
 * meta_commit_synced() says up to which transno everything is durable. A batch is
 * committed only once the sync before it is done: one sync at a time, never beside a
 * commit.
 *
 * A failing op rolls back alone. Applying in the batch txn (no nested txn per op: LMDB
 * copies every page a child touches and allocates its lists per child) is safe for an op
 * that fails before it writes anything, which is how ops are written (validate, then
 * write), and the writer tells the cases apart by the count of write attempts
 * (meta_mdb_writes, mdb.h). An op that fails after a write attempt, or with an error
 * that may come from LMDB itself (-EIO, -ENOSPC, -ENOMEM, -EAGAIN: the txn may be
 * unusable), makes the writer abort the batch txn and redo the batch (what it held so
 * far, and the rest of it) with one nested txn per op, where that op's child is aborted
 * alone. So apply() may run twice:
 * it must act only through the txn and fields of its own that it sets afresh each run.
 * If the commit or the sync fails, every mutation of the batch completes with that error
 * (nothing of it is reported durable). ENOSPC is the exception (space.h): a batch where
 * an op or the commit met it is aborted and redone once, after the map has grown or
 * the reserve was released (then growing ops complete with -ENOSPC unapplied).
 *
 * Lazy batches (below) are committed without a sync: the writer syncs them once it has
 * been idle for idle_sync_ms (META_COMMIT_IDLE_SYNC_MS by default), and at stop, so a
 * lazy change is durable at most that long after its reply (a power cut's worst case:
 * LMDB rolls back to the last synced meta page, one commit at most, since every commit's
 * data sync also flushes the meta page written before it). WEFT_META_TEST_SYNCLOG=FILE
 * (tests only) appends to FILE the LMDB txn id each sync made durable, so a test can
 * model that power cut on a copy of data.mdb (tests/integration/powercut.sh).
 * WEFT_META_TEST_COMMITLOG=FILE (tests only) appends a line per commit that wrote:
 * its LMDB txn id and the `what` of each mutation in it, so that a test can tell which
 * commit a power cut takes back (a store's heartbeat may commit at any moment).
 *
 * Guarantees: done(arg, 0) means the mutation is committed (it survives a crash of meta;
 * a power cut keeps it once meta_commit_synced() >= its transno, or if it is durable:
 * then done() runs after the sync). Mutations complete in submission order (across
 * batches too); a batch's effects are visible to read txns
 * begun after its commit. done() runs on the completion thread: it must be short and
 * must not submit and wait (it may submit without waiting).
 *
 * Threads: submit/run/stats from any thread; start/stop from the owner. No other
 * thread may write to the env while the committer runs (meta_db_write would block
 * behind it and is for tools and tests). */
#ifndef WEFT_META_COMMIT_H
#define WEFT_META_COMMIT_H

#include <stdint.h>

#include "meta/mdb.h"

struct meta_mutation {
	/* Runs in the batch's write txn (in a nested one on the slow path, see above); returns
	 * 0 to keep its changes or -errno, which takes them all out. May run twice. */
	int (*apply)(MDB_txn *txn, void *arg);
	/* Called once on the completion thread after the batch is committed (see durable
	 * below), or failed. */
	void (*done)(void *arg, int result);
	void *arg;
	/* May be NULL. Called in the batch's txn once the op is numbered (applied, wrote
	 * something), before the commit; runs again if the batch is redone. Returns 0 or
	 * -errno, which fails the batch. */
	int (*stamped)(MDB_txn *txn, void *arg, uint64_t transno);
	/* Every mutation completes once its batch is committed (its data pages synced by
	 * the commit, MDB_NOMETASYNC), before the sync of the meta page that makes it
	 * durable; `transno` numbers it and meta_commit_synced says when it is durable.
	 * durable: done() waits for that sync (FSYNC). lazy: nothing asks for a prompt
	 * sync either (EXTEND, session opens): synced after idle_sync_ms idle. Others are
	 * synced within sync_delay_ms, or sooner by the next commit. */
	bool durable;
	bool lazy;
	/* Nobody waits for its answer (a client's flush behind a close that returned): the
	 * writer holds a batch of only such ops up to linger_ms for an op somebody waits for
	 * to join it, so that both share one commit's sync instead of one each. */
	bool linger;
	/* Grows the namespace (space.h): refused with -ENOSPC, unapplied, when a batch is
	 * redone after its ENOSPC released meta's reserve: the reserve is for deletes. */
	bool grows;
	/* What it is, for the commit log test hook (WEFT_META_TEST_COMMITLOG); may be NULL */
	const char *what;
	/* owned by the committer while queued */
	struct meta_mutation *next;
	int result;
	bool wrote;
	/* Set before done(): the transaction number of a mutation applied (result 0) that
	 * wrote something, monotonic across restarts (persisted in the batch's txn, key
	 * "transno" of the super table); 0 if it failed or changed nothing. */
	uint64_t transno;
};

struct meta_commit;

struct meta_commit_stats {
	uint64_t ops;     /* mutations completed */
	uint64_t batches; /* write txns committed */
	uint64_t syncs;   /* mdb_env_sync calls */
	uint64_t failed;  /* mutations completed with an error */
	uint64_t redone;  /* batches redone op by op (an op failed after writing) */
};

#define META_COMMIT_BATCH_DEFAULT 512
#define META_COMMIT_IDLE_SYNC_MS 1000
#define META_COMMIT_SYNC_DELAY_MS 5
#define META_COMMIT_LINGER_MS 5

/* Starts the writer, syncer and completion threads for db. max_batch 0 = META_COMMIT_BATCH_DEFAULT.
 * Errors: -ENOMEM, -errno of pthread_create. */
int meta_commit_start(struct meta_db *db, unsigned max_batch, struct meta_commit **out);
/* Completes everything queued, stops and joins the threads, frees gc. NULL is a no-op.
 * No submit may race with or follow it. */
void meta_commit_stop(struct meta_commit *gc);
/* Queues m (the caller keeps m alive until m->done is called). Never blocks on I/O.
 * Returns 0, or -ESHUTDOWN when the committer is stopping (m->done is not called). */
int meta_commit_submit(struct meta_commit *gc, struct meta_mutation *m);
/* Submits apply(txn, arg) and waits for it to be durable; returns its result.
 * Must not be called from a done() callback. */
int meta_commit_run(struct meta_commit *gc, int (*apply)(MDB_txn *txn, void *arg), void *arg);
void meta_commit_stats(struct meta_commit *gc, struct meta_commit_stats *out);
/* The last transaction number committed, and the last one durable (synced: a power cut
 * keeps it). Any thread. */
uint64_t meta_commit_committed(struct meta_commit *gc);
uint64_t meta_commit_synced(struct meta_commit *gc);
/* How long a committed non-lazy batch may wait for its sync when nothing follows it
 * (default META_COMMIT_SYNC_DELAY_MS; WEFT_META_SYNC_DELAY_MS in meta). Any thread. */
void meta_commit_set_sync_delay(struct meta_commit *gc, unsigned ms);
/* How long a batch of only lingering ops waits for company (default META_COMMIT_LINGER_MS;
 * WEFT_META_LINGER_MS in meta; 0: not at all). Any thread. */
void meta_commit_set_linger(struct meta_commit *gc, unsigned ms);
/* Sets how long the writer stays idle before it syncs committed lazy batches (0 = 1 ms).
 * Any thread. */
void meta_commit_set_idle_sync(struct meta_commit *gc, unsigned ms);

struct meta_space;
/* Gives the writer meta's space (space.h): it is checked before each batch, and a batch
 * that fails with ENOSPC is redone once after meta_space_relieve (map grown, or reserve
 * released and growing ops refused). Call before the first submit. */
void meta_commit_set_space(struct meta_commit *gc, struct meta_space *sp);

#endif
