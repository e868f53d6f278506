/* The chain-table cache of a cluster member (libweft and weft store): the targets and
 * chain tables as meta last served them, refreshed single-flight, and one reconnecting
 * connection per target.
 *
 * DESIGN: readers (every data request of every thread) take a read lock for the
 * lookup only, so they never wait for each other, and never for a connect. A refresh
 * (CHAINS_GET to meta) runs in one thread at a time: a thread that finds the table
 * wanting calls chaincache_refresh with the generation it looked at; if another thread
 * installed a table while it waited for the refresh lock, it returns at once. So a
 * hundred threads that meet an unknown chain at once cost one CHAINS_GET. The table
 * goes stale when
 *  - a request names a chain id the table does not have (a store joined and a new file's
 *    layout names its chain), or a chain version newer than ours (the store side):
 *    chaincache_chain refreshes and looks again before answering;
 *  - meta announces a newer epoch (piggybacked on heartbeat replies: chaincache_announce);
 *  - a store refused a request as stale (chaincache_mark_stale).
 * The per-target rpc objects are made when a table naming the target is installed and
 * are freed only with the cache, so a caller may use one after dropping the lock (a
 * target whose address changed gets a new one; the old one stays until then).
 *
 * Threads: every function may be called from any thread except the loop thread the
 * connections run on (refreshes and connects block). */
#ifndef WEFT_NET_CHAINCACHE_H
#define WEFT_NET_CHAINCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "net/conn.h"
#include "proto/chainset.h"

struct chaincache;
struct rpc;
struct loop;

/* Fills *out with the current tables (the cache takes ownership). 0 or -errno. */
typedef int (*chaincache_fetch_fn)(void *arg, struct weft_chain_set *out);

struct chaincache_params {
	struct loop *loop;           /* runs the connections to targets */
	const struct weft_key *key;
	uint8_t role;                /* WEFT_ROLE_* announced to targets */
	const char *name;            /* our node name */
	int default_port;            /* of target addresses without one (0: none) */
	int connect_timeout_ms;      /* 0: 3000 */
	struct rpc *meta;            /* CHAINS_GET goes here (not owned) */
	int meta_timeout_ms;
	chaincache_fetch_fn fetch;   /* instead of CHAINS_GET to meta, when set */
	void *fetch_arg;
	const char *who;             /* names us in log lines ("mount", "store") */
	bool drop_offline;           /* close the connection to a target meta marks offline,
				      * so requests waiting on a silent host fail over now
				      * (clients; a store's forwards time out and report) */
	void (*installed)(void *arg); /* called after each new table is installed (no lock
				       * held; in the refreshing thread), or NULL */
	void *installed_arg;
};

/* Creates an empty cache (no table yet: the first lookup fetches one).
 * Returns 0 or -ENOMEM. */
int chaincache_new(const struct chaincache_params *p, struct chaincache **out);
/* Closes every connection and frees. No call may be running. */
void chaincache_free(struct chaincache *cc);

/* Generation of the installed table: bumped by every successful refresh (0: none yet). */
uint64_t chaincache_gen(struct chaincache *cc);
/* Epoch (meta's chains_epoch) of the installed table; 0 if none. */
uint64_t chaincache_epoch(struct chaincache *cc);
/* Fetches and installs the tables unless a refresh completed since the caller saw
 * generation seen (then returns 0 at once). Single-flight: one fetch at a time; a
 * caller that waited while a fetch failed gets that fetch's error without another
 * (so that threads do not queue one meta timeout each). Returns 0 or the fetch's
 * -errno (the old table stays). */
int chaincache_refresh(struct chaincache *cc, uint64_t seen);
/* Marks the table stale: the next lookup refreshes first. */
void chaincache_mark_stale(struct chaincache *cc);
/* Meta says its tables are at epoch: if that is not ours, the table is stale. Returns
 * true when it is (the caller may refresh now, from a thread that can wait). */
bool chaincache_announce(struct chaincache *cc, uint64_t epoch);
/* True when a refresh is due (marked stale, or announced newer, or no table). */
bool chaincache_stale(struct chaincache *cc);

/* Copies chain (replicas, id) into *out. If the table is stale, does not have the chain
 * or has it at a version lower than min_ver (0: any), refreshes single-flight and looks
 * again; if the refresh it waited for was another thread's and still lacks what it wants
 * (that fetch may have begun before meta's change), it fetches once more. Errors: -WEFT_ESTALECHAIN meta does not know the chain either (or could not be
 * asked: the fetch's error is logged). */
int chaincache_chain(struct chaincache *cc, uint8_t replicas, uint32_t id, uint64_t min_ver,
		     struct weft_chain *out);
/* Copies the address of target id into buf (NUL-terminated, truncated to cap); false
 * if the table does not know it. */
bool chaincache_target_addr(struct chaincache *cc, uint32_t id, char *buf, size_t cap);
/* A ready connection to target id (a new reference: conn_put it), connecting first if
 * needed; one connection per target is shared by all callers. Errors: -ENXIO target
 * unknown; the connect's -errno (-ECONNREFUSED, -ETIMEDOUT, -WEFT_EAUTH...). */
int chaincache_conn(struct chaincache *cc, uint32_t id, struct conn **out);
/* A copy of the whole current table into *out (free it with proto_chain_set_free), for
 * code that walks every chain (resync). -ENOENT before the first table, -ENOMEM. */
int chaincache_snapshot(struct chaincache *cc, struct weft_chain_set *out);
/* Counters, for tests and logs: successful fetches, failed fetches. */
void chaincache_counts(struct chaincache *cc, uint64_t *fetches, uint64_t *failures);

#endif
