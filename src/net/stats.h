/* Counters of one weft process (meta, a store, a mount): every request it served and
 * every call it made, by opcode (operations, errors, bytes in and out, a log2 latency
 * histogram), errors by errno, and named counters for what is not a request (bytes the
 * kernel read and wrote through a mount, checksum failures, reconnects).
 *
 * DESIGN: the transport counts requests and calls in one place (conn.c), so no handler
 * carries counting code. A count is a few relaxed atomic adds on slots of its own opcode;
 * nothing is locked and nothing allocates, so counting costs nothing measurable beside a
 * request (docs/PERFORMANCE.md). Readers take a snapshot (stats_json) whenever they like:
 * totals only grow, and rates are differences between snapshots (weft stat, Prometheus). */
#ifndef WEFT_STATS_H
#define WEFT_STATS_H

#include <stdint.h>

#define STATS_LAT_BUCKETS 28 /* bucket i counts latencies in [2^(i-1), 2^i) us; 0: < 1 us */

enum stats_dir { STATS_SERVED, STATS_CALLED, STATS_DIRS };

/* Named counters. Keep stats_counter_name() in stats.c in step. */
enum stats_counter {
	STATS_FUSE_READ_BYTES,  /* bytes a mount returned to the kernel's reads */
	STATS_FUSE_WRITE_BYTES, /* bytes the kernel wrote through a mount */
	STATS_FUSE_READ_OPS,
	STATS_FUSE_WRITE_OPS,
	STATS_CRC_FAILURES,     /* data that failed its CRC32C check */
	STATS_RECONNECTS,       /* connections re-established after a loss */
	STATS_READAHEAD_HITS,   /* reads served from libweft's readahead */
	STATS_PAGEPOOL_WAITS,   /* writers that waited for pagepool room (write-behind full) */
	STATS_DISK_READ_ERRORS, /* a store's disk failed a read (EIO, EROFS, EUCLEAN) */
	STATS_DISK_WRITE_ERRORS, /* and a write, truncate or fsync: the target fails */
	STATS_META_DB_COMMITS,  /* meta: write txns that changed the database (pages written) */
	STATS_META_DB_SYNCS,    /* meta: syncs of the database to disk */
	/* A mount's caches, as far as it can see them (docs/operations.md, "Cache
	 * counters"). The kernel's own hits on its attribute and dentry caches never reach
	 * the mount: it sees their misses, and whether it let the kernel cache what it sent
	 * (a timeout > 0, under a lease). Page hits are readahead_hits above. */
	STATS_CACHE_ATTR_MISSES,   /* GETATTR and ACCESS the kernel sent, answered by meta */
	STATS_CACHE_ATTR_GRANTS,   /* attributes sent to the kernel with a timeout > 0 */
	STATS_CACHE_ATTR_NOGRANTS, /* and with 0 (no lease, or attr_timeout=0) */
	STATS_CACHE_NAME_MISSES,   /* LOOKUPs the kernel sent, answered by meta */
	STATS_CACHE_NAME_GRANTS,   /* positive entries sent with an entry timeout > 0 */
	STATS_CACHE_NEGNAME_GRANTS, /* negative entries (ENOENT) sent with a timeout > 0 */
	STATS_CACHE_NAME_NOGRANTS, /* entries, positive or negative, sent with 0 */
	STATS_CACHE_PAGE_MISSES,   /* reads that waited for a store (no readahead held them) */
	STATS_CACHE_OPEN_KEPT,     /* opens that kept the kernel's page cache (keep_cache) */
	STATS_CACHE_OPEN_DROPPED,  /* opens that dropped it (changed, first open, O_TRUNC) */
	STATS_OPEN_PREFETCH_STARTED, /* opens that read the first stripe unit with the OPEN */
	STATS_OPEN_PREFETCH_KEPT,    /* ... whose block was kept (the open showed it current) */
	STATS_OPEN_PREFETCH_DROPPED, /* ... dropped unseen (open refused, or file changed) */
	STATS_OPEN_LOCAL,            /* opens for reading answered by the mount (prefetch.c) */
	STATS_OPEN_LOCAL_REFUSED,    /* ... that meta refused afterwards */
	STATS_OPEN_AHEAD_READS,      /* files read ahead in listing order (prefetch.c) */
	STATS_OPEN_AHEAD_HITS,       /* ... whose open took the read */
	STATS_DIR_AHEAD_FETCHED,     /* subdirectory listings read ahead and kept */
	STATS_DIR_AHEAD_HITS,        /* listings answered from them */
	STATS_ASYNC_CREATES,         /* creates answered by the mount, sent behind (acreate.c) */
	STATS_ASYNC_CREATES_FAILED,  /* ... that meta refused after all */
	STATS_ASYNC_UNLINKS,         /* unlinks answered by the mount, sent behind */
	STATS_ASYNC_UNLINKS_FAILED,  /* ... that meta refused after all */
	STATS_ASYNC_RMDIRS,          /* rmdirs answered by the mount, sent behind */
	STATS_ASYNC_RMDIRS_FAILED,   /* ... that meta refused after all */
	STATS_ASYNC_SETATTRS,        /* directory setattrs answered by the mount, sent behind */
	STATS_ASYNC_SETATTRS_FAILED, /* ... that meta refused after all */
	STATS_ASYNC_EXTRA_SENT,      /* jobs sent behind by the extra workers (meta slow) */
	STATS_ASYNC_MKDIRS,          /* mkdirs answered by the mount, sent behind */
	STATS_ASYNC_MKDIRS_FAILED,   /* ... that meta refused after all */
	STATS_CLAIM_RENEWALS,        /* directory claims for removals renewed without a break */
	STATS_ASYNC_RENAMES,         /* renames in one directory answered by the mount */
	STATS_ASYNC_RENAMES_FAILED,  /* ... that meta refused after all */
	STATS_DIRS_LISTED_COMPLETE,  /* existing directories made complete from a listing */
	STATS_COUNTERS
};

/* Gauges: values that go up and down, set by their owner. */
enum stats_gauge {
	STATS_TARGET_CAPACITY_BYTES, /* a store's target: size of its file system */
	STATS_TARGET_FREE_BYTES,     /* and what is free for weft */
	STATS_PAGEPOOL_USED_BYTES,   /* a mount: write-behind and readahead buffers held */
	STATS_META_DB_BYTES,         /* meta: LMDB pages in use (file size less free pages) */
	STATS_META_MAP_BYTES,        /* meta: LMDB map size (grows online) */
	STATS_META_DISK_FREE_BYTES,  /* meta: free bytes of meta's file system (statvfs) */
	STATS_META_DISK_BYTES,       /* meta: size of meta's file system */
	STATS_META_RESERVE_BYTES,    /* meta: reserve file held for deletes (0: released) */
	STATS_META_ROOM_BYTES,       /* meta: room for growth: disk free + LMDB free pages */
	STATS_META_SPACE_LOW,        /* meta: 1 while namespace growth is refused (ENOSPC) */
	STATS_MOUNT_RELEASES_QUEUED, /* a mount: RELEASEs waiting for its workers (workq.c) */
	STATS_GAUGES
};

/* Counts one request served or call made (any thread). status < 0 counts an error;
 * lat_ns 0 means unknown (not put in the histogram). */
void stats_op(enum stats_dir d, uint16_t opcode, int status, uint64_t lat_ns, uint64_t bytes_in,
	      uint64_t bytes_out);
void stats_add(enum stats_counter c, uint64_t n);
void stats_set_gauge(enum stats_gauge g, uint64_t v);
/* Names this process in snapshots: "meta", "store", "mount", and its node name. */
void stats_set_identity(const char *process, const char *node);

/* A store's target id, as a label of its metrics (-1: none). */
void stats_set_target(int target);

/* The same counters in Prometheus' text exposition format (version 0.0.4): weft_served_*
 * and weft_called_* by op, latency histograms in seconds, named counters, errors by
 * errno, each labelled with process and node (and target for a store). Returns a
 * malloc'ed string or NULL on ENOMEM. */
char *stats_prometheus(void);

/* A snapshot of every counter as one JSON document (schema "weft.stats/1", described in
 * docs/operations.md). Returns a malloc'ed string (caller frees) or NULL on ENOMEM. */
char *stats_json(void);
/* Monotonic nanoseconds, for latencies. */
uint64_t stats_now_ns(void);

#endif
