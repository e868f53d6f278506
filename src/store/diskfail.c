/* Disk errors: what a store does when its own disk answers EIO (or EROFS, EUCLEAN: a
 * file system that gave up) rather than data.
 *
 * DESIGN. A failed read costs one object, not the target: the client reads that piece
 * from the next serving member (any error does that), and the store queues the object
 * to be copied again from a member that serves (a rewrite lets the disk remap the bad
 * sector). A failed write, truncate or fsync is worse: this copy may now be older than
 * the others, and nothing records which bytes are missing. The target fails at once: it
 * refuses every data request (ENOTSERVING, so clients use the other members), stops
 * its heartbeats, and reports itself to meta with TARGET_FAILED (reporter == target; sent
 * again in place of each heartbeat until meta has it), which meta takes without a probe: it
 * marks the target offline and sets it to rebuild every chain when it returns, since a
 * resync from the missed log would keep the stale bytes. The process stays up so that
 * its counters and log can be read; an administrator replaces the disk and restarts it
 * (re-replication moves its chains elsewhere meanwhile, after meta's --replace-after).
 *
 * Threads: any worker; the report is sent from the thread that saw the first failure. */
#include "store/server_int.h"

#include <errno.h>
#include <inttypes.h>

#include "common/log.h"
#include "net/stats.h"
#include "weft/err.h"

bool store_disk_error_code(int rc)
{
	return rc == -EIO || rc == -EROFS || rc == -EUCLEAN;
}

void store_disk_read_error(struct store_server *s, int rc, uint64_t ino, uint32_t stripe,
			   uint8_t replicas, uint32_t chain)
{
	static struct log_limit lines = LOG_LIMIT_INIT;
	unsigned dropped;
	stats_add(STATS_DISK_READ_ERRORS, 1);
	if (log_limit_ok(&lines, 10, 10000, &dropped))
		log_warn("target %u: the disk failed a read of ino %" PRIu64 " stripe %" PRIu32
			 ": %s; %s (%u such lines not shown)", s->target_id, ino, stripe,
			 weft_strerror(rc), replicas > 1 ? "copying it again from another member" :
			 "no other copy (replicas 1)", dropped);
	if (replicas > 1)
		store_resync_repair(s, replicas, chain, ino, stripe);
}

void store_disk_write_error(struct store_server *s, int rc, const char *what, uint64_t ino,
			    uint32_t stripe)
{
	stats_add(STATS_DISK_WRITE_ERRORS, 1);
	if (atomic_exchange(&s->disk_failed, true))
		return;
	log_error("target %u: the disk failed %s of ino %" PRIu64 " stripe %" PRIu32 ": %s; "
		  "the target fails: it serves nothing more and meta takes it out of its chains "
		  "(replace the disk, then restart this store: it rebuilds its chains)",
		  s->target_id, what, ino, stripe, weft_strerror(rc));
	store_disk_report(s);
}

int store_disk_report(struct store_server *s)
{
	if (atomic_load(&s->disk_reported))
		return 0;
	struct weft_msg_target_failed m = {.reporter = s->target_id, .target = s->target_id};
	struct wbuf w;
	wbuf_init(&w);
	proto_target_failed_encode(&w, &m);
	struct frame *rep = NULL;
	int err = rpc_call(s->meta, WEFT_OP_TARGET_FAILED, &w, NULL, 0, STORE_META_TIMEOUT_MS, &rep);
	frame_free(rep);
	if (err)
		log_warn("target %u: reporting the failed disk to meta %s: %s (tried again each "
			 "heartbeat)", s->target_id, s->meta_addr, weft_strerror(err));
	else
		atomic_store(&s->disk_reported, true);
	return err;
}
