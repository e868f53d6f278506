/* Internals of weft store's server shared by server.c, replicate.c and heartbeat.c.
 * Not an API; see server.h for the threads and guarantees. */
#ifndef WEFT_STORE_SERVER_INT_H
#define WEFT_STORE_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "net/conn.h"
#include "net/rpc.h"
#include "net/server.h"
#include "net/chaincache.h"
#include "store/object.h"
#include "store/server.h"
#include "store/workers.h"

#define STORE_META_TIMEOUT_MS 5000
#define STORE_REPAIRS_MAX 64     /* lost objects being copied from peers at once */

/* Where an object was last written: OBJ_FSYNC names only (ino, stripe). */

/* One request being served. Owned by the loop thread until queued, then by the job;
 * with a forward in flight, by whichever of the local part and the forward ends last
 * (`parts`). */
struct sreq {
	struct store_job job;
	struct store_server *s;
	struct conn *c;           /* referenced */
	struct frame *f;
	uint16_t op;
	union {
		struct weft_msg_obj_write w;
		struct weft_msg_obj_read r;
		struct weft_msg_obj_truncate t;
		struct weft_msg_obj_id id;
		struct weft_msg_obj_sync sy;
		struct weft_msg_obj_delete d;
		struct weft_msg_obj_list l;
		struct weft_msg_obj_missed ms;
		struct weft_msg_store_scrub sc;
		struct weft_msg_store_rate rt;
		struct weft_msg_obj_extent x;
	} m;
	/* replication */
	bool crcs_verified;       /* OBJ_WRITE: check_crcs checked the bulk against its CRCs */
	atomic_int parts;         /* local write + forward still running */
	int local_rc;
	char local_detail[160];   /* what the local operation found (checksum errors) */
	uint64_t local_size;
	uint64_t local_allocated; /* write: the object's allocated bytes after it */
	int fwd_rc;               /* 0, the successor's error status, or a local error */
	bool fwd_sent, fwd_timed_out, fwd_replied;
	uint32_t fwd_target;
	char fwd_addr[WEFT_ADDR_MAX + 1];
	char fwd_detail[200];     /* ERROR detail the successor sent, if any */
	uint32_t fwd_detail_target;
	uint8_t replicas;
	uint32_t chain;
	struct conn *fwd_conn;    /* referenced while the forward is in flight */
	uint64_t fwd_start_ms;
	struct sreq *fprev, *fnext; /* list of forwards in flight, s->fwd_lock */
};

struct nodetab;

struct store_server {
	char *dir, *meta_addr, *node, *listen;
	char addr[WEFT_ADDR_MAX + 1];  /* advertised */
	struct weft_key key;
	struct nodetab *nodes;         /* meta's node registry as last sent (nodes.c) */
	uint32_t heartbeat_ms, forward_timeout_ms;
	_Atomic uint64_t resync_rate;  /* bytes/s the resync/rebuild copier may use; 0: any
					* (STORE_RATE changes it at run time) */
	bool buffered;                 /* no O_DIRECT writes */
	uint64_t capacity;             /* --capacity (0: the file system's) */
	uint64_t held, held_ms;        /* bytes of objects held, when counted (heartbeat.c) */
	const volatile int *stop;

	struct loop *loop;
	struct server *srv;
	struct store_workers *workers;
	struct store_target *t;
	struct store_objs *objs;
	struct rpc *meta;

	uint8_t uuid[16], fsid[16];
	uint32_t target_id;
	bool untrusted;                 /* meta's verdict at the last registration */
	bool renewed;                   /* this start set the old contents aside */
	bool checksums;                 /* the target's mode (== the file system's) */
	atomic_bool ready;              /* registered, target open */
	atomic_bool stopping;
	atomic_uint_fast64_t lease_until_ms; /* fencing: serve data only before this */
	atomic_uint lease_ms;
	atomic_bool fenced_logged;
	atomic_bool disk_failed;        /* a write to the disk failed: serves nothing more */
	atomic_bool disk_reported;      /* and meta has been told */
	atomic_int pending;             /* requests alive (for stop) */

	pthread_t hb_thread;
	bool hb_started;
	pthread_mutex_t hb_lock;        /* guards hb_stop; hb_cond wakes the thread */
	pthread_cond_t hb_cond;
	bool hb_stop;
	bool hb_soon;                   /* beat now (after an fsync), guarded by hb_lock */

	/* chain tables and one connection per successor (src/net/chaincache.h); made at
	 * start once the meta rpc exists, freed at stop */
	struct chaincache *cc;

	pthread_mutex_t fwd_lock;       /* guards the list of forwards in flight */
	struct sreq *fwd_head;


	pthread_mutex_t repair_lock;    /* guards repairing */
	struct { uint64_t ino; uint32_t stripe; bool used; } repairing[STORE_REPAIRS_MAX];
	struct store_resync *rs;        /* resync.c */
	struct store_sweep *sweep;      /* sweep.c */

	/* capabilities (caps.c): the cap keys of the periods met lately, and the sessions
	 * meta evicted (NODES_CHANGED), sorted; caps_lock guards both */
	pthread_mutex_t caps_lock;
	struct { uint32_t period; bool set; uint8_t k[WEFT_KEY_LEN]; } capk[4];
	uint64_t *fenced;
	size_t nfenced;

	pthread_mutex_t report_lock;    /* guards the last failure report (dedupe) */
	uint32_t last_report_target, last_report_chain;
	uint64_t last_report_ms;
};

/* diskfail.c: the disk answered an error instead of data */
bool store_disk_error_code(int rc); /* EIO, EROFS, EUCLEAN */
void store_disk_read_error(struct store_server *s, int rc, uint64_t ino, uint32_t stripe,
			   uint8_t replicas, uint32_t chain);
/* the target fails (serves nothing more, reports itself to meta); blocking */
void store_disk_write_error(struct store_server *s, int rc, const char *what, uint64_t ino,
			    uint32_t stripe);
/* TARGET_FAILED about itself to meta, until meta has it; 0 once it has. Blocking. */
int store_disk_report(struct store_server *s);

/* request.c: one request's reply and end (any file's handlers) */
void store_reply_status(struct sreq *q, int status);
void store_req_free(struct sreq *q);

/* caps.c: a client's request must carry a capability for its object (proto.h); true
 * when the request was refused (answered, f freed); loop thread */
bool store_caps_refuse(struct store_server *s, struct conn *c, struct frame *f,
		       const struct sreq *q);
/* The sessions meta evicted, from NODES_CHANGED (len bytes of LE u64s). */
void store_caps_fenced(struct store_server *s, const void *p, size_t len);
void store_caps_init(struct store_server *s);
void store_caps_fini(struct store_server *s);

/* server.c */
bool store_serving(struct store_server *s);

/* heartbeat.c: meta, leases, chain tables */
int store_hb_register(struct store_server *s, bool first, uint8_t *checksums_out);
int store_hb_start(struct store_server *s);
void store_hb_stop(struct store_server *s);
/* Asks for a heartbeat within HB_SOON_MS (coalesced): after an fsync, so that meta's
 * record of the write sequence soon covers what was made durable (a directory restored
 * from an older copy is then recognised; docs/ARCHITECTURE.md). Any thread. */
void store_hb_soon(struct store_server *s);
/* Makes s->cc (after s->meta). 0 or -ENOMEM. */
int store_chains_init(struct store_server *s);
/* Fetches the chain tables if they are stale (meta announced another epoch) or force. */
int store_chains_refresh(struct store_server *s, bool force);
/* Checks (replicas, chain, ver) for op; on success copies the chain and this target's
 * index in it. Refetches the table (blocking: worker threads only) when the request is
 * newer than ours. Errors: -WEFT_ESTALECHAIN, -WEFT_ENOTSERVING (read from a member
 * that is not SERVING; write to an OFFLINE one). */
int store_chains_check(struct store_server *s, uint8_t replicas, uint32_t chain, uint64_t ver,
		 bool is_read, struct weft_chain *out, int *me);
/* Address of target id from the table into buf; false if unknown. */
bool store_chains_target_addr(struct store_server *s, uint32_t target, char *buf, size_t cap);
/* A connection to target (new reference): chaincache_conn. */
int store_chains_target_conn(struct store_server *s, uint32_t target, struct conn **out);

/* repair.c: lost objects (WEFT_EMISSING) copied back from a serving chain peer */
/* True while (ino, stripe) is being repaired: reads must not be served from it. */
bool store_repair_active(struct store_server *s, uint64_t ino, uint32_t stripe);
/* Queues the repair of (ino, stripe) from a peer of (replicas, chain), keyed like the
 * object's writes, unless one is running or no peer could serve it. Any thread. */
void store_repair_start(struct store_server *s, uint64_t ino, uint32_t stripe, uint8_t replicas,
		  uint32_t chain);
/* Hash that sends all mutations of one object to one worker (request.c). */
uint64_t store_obj_key(uint64_t ino, uint32_t stripe);

/* replicate.c */
void store_repl_write(struct sreq *q);      /* OBJ_WRITE, OBJ_TRUNCATE, OBJ_FSYNC (worker) */
void store_repl_check_timeouts(void *arg);  /* loop timer */

/* resync.c: missed log (survivor side) and copier (returning side) */
struct store_resync;
/* Opens <dir>/missed.log. 0 or -errno. */
int store_resync_open(struct store_server *s);
/* Starts the copier thread. 0 or -errno. */
int store_resync_start(struct store_server *s);
/* Stops the copier, closes the log. No-op without resync_open. */
void store_resync_close(struct store_server *s);
/* Notes (ino, stripe) as missed by every OFFLINE member of ch (before a mutation). */
void store_resync_note(struct store_server *s, const struct weft_chain *ch, uint64_t ino,
		 uint32_t stripe);
/* After a chain-table fetch: drops notes of members serving again, wakes the copier. */
void store_resync_tables_changed(struct store_server *s);
/* The layout of ino at meta (GETSTRIPE; resync.c): 0, -ESTALE or -ENOENT (no such
 * file), or another -errno. Copier thread (it waits on meta). */
int store_meta_layout(struct store_server *s, uint64_t ino, struct weft_layout *out);
/* sweep.c: copies of chains this target left (moves), deleted once not needed.
 * store_sweep_open/close with resync's; store_sweep_tables_changed after a table install;
 * store_sweep_run on the copier thread. */
int store_sweep_open(struct store_server *s);
void store_sweep_close(struct store_server *s);
void store_sweep_tables_changed(struct store_server *s);
void store_sweep_run(struct store_server *s);
/* OBJ_MISSED (worker). Replies; the caller frees q. */
void store_resync_missed_list(struct sreq *q);
/* Copier progress, for the heartbeat; active: this target syncs some chain. */
void store_resync_progress(struct store_server *s, struct weft_msg_resync_progress *out);
bool store_resync_active(struct store_server *s);
/* Queues (ino, stripe) of chain (replicas, chain), which failed its checksum here, for
 * repair from another serving member (copier thread). Any thread; never blocks long. */
/* Starts a background scrub at rate bytes/s (0: the resync rate). Any thread. */
void store_resync_scrub(struct store_server *s, uint64_t rate);
void store_resync_repair(struct store_server *s, uint8_t replicas, uint32_t chain, uint64_t ino,
		   uint32_t stripe);

/* nodes.c: checks a peer's credential (auth_verify_fn), and the ops of the connection
 * to meta (NODES_CHANGED). */
int store_verify_peer(void *arg, uint8_t role, const char *name, uint32_t serial,
		      uint8_t out[WEFT_KEY_LEN], char *why, size_t whylen);
extern const struct conn_ops store_meta_conn_ops;

#endif
