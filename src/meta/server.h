/* weft meta's RPC server: the namespace, sessions, targets and chains served over the
 * wire protocol (src/proto/proto.h, opcodes 0x01xx, 0x02xx, 0x03xx).
 *
 * DESIGN: one event-loop thread (src/common/loop.h) owns every connection. It decodes
 * each request and either answers it at once from an LMDB read txn (lookups, getattr,
 * readdir, statfs, xattr reads, chains...) or queues it as a mutation on the group
 * committer (commit.h), whose completion thread replies once the batch is durable; the
 * connection is referenced (conn_get) while its request is pending. Timers on the loop
 * expire silent targets and client sessions. A deleter thread (deleter.c) drains the
 * durable pending-deletions table by sending OBJ_DELETE to the stores.
 *
 * Threads: meta_server_start/stop from one owner thread; everything else runs on the
 * server's own loop, writer, sync, completion and deleter threads. */
#ifndef WEFT_META_SERVER_H
#define WEFT_META_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"

struct meta_server;

struct meta_server_opts {
	const char *dir;            /* metadata directory made by weft mkfs */
	const char *listen;         /* "host:port", "[v6]:port", ":port" */
	int default_port;           /* used when listen has no port */
	const struct weft_key *key; /* cluster key (copied) */
	uint32_t target_timeout_ms; /* 0 = 10 s: a silent target is marked offline */
	uint32_t session_timeout_ms;/* 0 = 30 s: a silent client session is closed */
	uint32_t replace_after_ms;  /* 0 = 300 s: an offline target is replaced in its chains */
	uint32_t lease_ms;          /* 0 = 5 s: how long a client may cache under a lease */
	bool sync_each;             /* one write txn and sync per mutation (benchmarks) */
	uint32_t deleter_period_ms; /* 0 = 2000: retry period of the deleter */
	uint64_t reserve;           /* bytes kept for deletes; 0 = default (space.h) */
	bool no_reserve;            /* --reserve 0 */
	uint64_t space_warn;        /* warn under this much room; 0 = default */
	/* automatic rebalancing: moves start when the fullest live target is this many
	 * percent of capacity above the emptiest; 0 = 10; no_rebalance: off */
	uint32_t rebalance_threshold;
	bool no_rebalance;
};

/* Opens the file system, starts the committer, the deleter, the loop thread, and binds.
 * Returns 0 or -errno with a one-line reason in err (e.g. "open /x: no file system
 * (run weft mkfs --meta /x)"). */
int meta_server_start(const struct meta_server_opts *o, struct meta_server **out, char *err,
		      size_t errlen);
/* The bound address as "host:port" (the listen host with the real port). */
const char *meta_server_addr(const struct meta_server *s);
/* Stops accepting requests, completes queued mutations, stops every thread, closes the
 * file system, frees s. NULL is a no-op. */
void meta_server_stop(struct meta_server *s);
/* The server's event loop (for liveness checks such as systemd's watchdog). */
struct loop *meta_server_loop(const struct meta_server *s);

#endif
