/* Internals of weft meta's RPC server shared by server.c, handlers_*.c and deleter.c. */
#ifndef WEFT_META_SERVER_INT_H
#define WEFT_META_SERVER_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/conn.h"
#include "net/server.h"
#include "meta/commit.h"
#include "meta/inode.h"
#include "meta/mdb.h"
#include "meta/ns.h"
#include "meta/server.h"
#include "meta/moves.h"
#include "meta/super.h"

struct meta_deleter;
struct nodetab;
struct meta_leases;
struct meta_park;
struct meta_migrations;

struct meta_server {
	struct meta_db *db;
	struct meta_commit *gc;
	struct meta_space *space;   /* reserve, map growth, the growth gate (space.h) */
	struct loop *loop;
	struct server *srv;
	struct meta_deleter *del;
	struct weft_key key;
	struct nodetab *nodes;      /* the node registry in memory (nodes.c) */
	atomic_uint_fast64_t nodes_version; /* bumped by each change of it */
	uint64_t pushed_nodes_version;      /* loop thread: the last one acted on */
	uint8_t fsid[16];
	bool root_squash, checksums;
	bool had_sessions;          /* the database served clients before this start */
	uint32_t target_timeout_ms, session_timeout_ms, replace_after_ms;
	uint64_t started_ms;        /* loop_now_ms() at start: expiry grace period */
	/* writer thread: meta concluded it was the one cut off, and has heard no target
	 * since deaf_since_ns (meta_now_ns); nobody's silence counts meanwhile */
	bool deaf;
	int64_t deaf_since_ns;
	MDB_txn *rtxn;              /* loop thread's reusable read txn (reset between uses) */
	bool stopping;              /* loop thread only: refuse new requests */
	atomic_bool expiring;       /* an expiry mutation is queued */
	struct meta_mutation expire_mut;
	atomic_uint_fast64_t next_handle;
	char addr[80];
	uint64_t pushed_epoch;      /* loop thread: chains_epoch last pushed (push.c) */
	atomic_int probes;          /* TARGET_FAILED probes running (probe.c) */
	struct meta_resync_progress *progress; /* per target id; loop thread only */
	/* moves (moves.h); writer thread only (the expiry step and REBALANCE) */
	struct meta_moves_cfg moves;
	bool rebalance_auto;        /* moves.rebalance on whenever over the threshold */
	bool rebalance_once;        /* weft rebalance: until there is nothing to do */
	bool moves_idle;            /* the last step: nothing moving, settled, none started */
	uint64_t moves_busy_ms;     /* when a move was last seen in progress */
	struct meta_moves_result moves_res; /* as of the last step */
	struct meta_leases *leases;  /* lease.h */
	uint32_t cap_ms;             /* lifetime of the capabilities meta mints */
	uint32_t pushed_evictions;   /* loop thread: evicted sessions last sent to the stores */
	struct meta_park *parks;     /* mutations waiting for recalls (recall.c); loop thread */
	struct meta_migrations *migrations; /* files being migrated (migrate.h) */
	uint64_t next_park;
	/* after a restart, until this loop_now_ms() no mutation runs: leases the last run
	 * granted may still be cached by clients (recall.c) */
	uint64_t quiet_until_ms;
	/* test hooks, read at start: CREATE_OPEN and UNLINK of names with these prefixes
	 * fail (WEFT_META_TEST_REFUSE_CREATE: ENOSPC, _UNLINK: EIO); NULL: none */
	const char *test_refuse_create, *test_refuse_unlink;
	uint32_t test_refuse_mode; /* WEFT_META_TEST_REFUSE_MODE: a chmod to it fails */
	/* Replay (ARCHITECTURE.md, "Metadata durability"): boot is this incarnation's id,
	 * sent in every DURABLE record; boundary the last transaction number the database
	 * held at start (a REPLAY of one at or below it is already applied); until
	 * recover_until_ms (loop_now_ms) namespace mutations other than replays get
	 * WEFT_ERECOVERING, when the last run did not stop cleanly. */
	uint64_t boot, boundary;
	struct meta_replies *replies; /* replies.h */
	uint64_t recover_until_ms;
	char running_path[4200];
#define META_REPLAY_INO_GAP (1ull << 24) /* inode numbers skipped after an unclean stop */    /* DIR/running: exists while meta runs */
};

/* Resync progress a syncing store reported last (RESYNC_PROGRESS), shown by status. */
struct meta_resync_progress {
	uint64_t objects_left, bytes_left, rate;
};

/* True for ops refused with ENOSPC while meta's space is low (server.c has the list). */
bool meta_op_grows(uint16_t op);

/* push.c: CHAINS_CHANGED to every client when the chain epoch moves. */
void meta_push_start(struct meta_server *s);

struct mreq;
/* Runs the request in c's txn (a batch's write txn, or a read txn); fills the
 * mreq's result fields. Returns 0 or -errno (r->detail may explain). */
typedef int (*mreq_apply_fn)(struct mreq *r, const struct meta_ctx *c);
/* Encodes the success reply into *w (and r->bulk). */
typedef void (*mreq_reply_fn)(struct mreq *r, struct wbuf *w);

struct meta_handler {
	uint16_t op;
	bool write;          /* a mutation: runs in the group commit */
	bool has_cred;       /* request message starts with a struct weft_cred */
	bool wakes_deleter;  /* may queue object deletions */
	bool name_errors;    /* a string over its limit is -ENAMETOOLONG, not -WEFT_EPROTO */
	mreq_apply_fn apply;
	mreq_reply_fn reply; /* NULL: by reply type (entry, attr, empty) */
};

/* One request being served: lives from decode to reply. */
struct mreq {
	struct meta_mutation mut;
	struct meta_server *s;
	struct conn *c;
	struct frame *f;
	const struct meta_handler *h;
	struct weft_cred cred;      /* the request's, root-squashed if the fs says so */
	/* results */
	struct weft_attr attr;
	struct weft_layout layout;
	struct weft_layout layout2;  /* MIGRATE: the layout it replaces */
	struct weft_attr pattr;      /* CREATE_OPEN: the parent after the create */
	uint64_t u64;
	uint32_t u32;
	bool flag;
	struct wbuf bulk;           /* reply bulk, if any */
	uint64_t opened_ino;        /* CREATE_OPEN: the open this request counted, if any */
	uint8_t rec_role;           /* NODE_ADD: the node's role and state as written */
	bool rec_revoked;
	uint16_t written_len;       /* OPENED: the file's written-stripes mask */
	uint8_t written[META_WRITTEN_MAX];
	uint64_t busy[4];           /* inodes this mutation marked busy (lease.h) */
	uint8_t nbusy;
	bool replay;                /* a REPLAY's op: impose replay_ino/gen on a create */
	bool tagged, tag_pending;   /* a TAGGED op (replies.h), in the pending set */
	uint64_t tag_client, tag_xid, tag_done_below;
	struct wbuf saved;          /* a tagged op's reply, as recorded */
	uint64_t replay_ino, replay_gen;
	uint32_t err_target;        /* ERROR.target of a failed reply */
	char detail[200];           /* ERROR.detail of a failed reply ("" = none) */
	_Alignas(16) unsigned char msg[]; /* the decoded request (proto_msg_size bytes) */
};

/* Handler tables (handlers_ns.c, handlers_cluster.c, nodes.c), terminated by op 0. */
extern const struct meta_handler meta_ns_handlers[];
extern const struct meta_handler meta_cluster_handlers[];
extern const struct meta_handler meta_node_handlers[];

/* nodes.c: the node registry. Loads it from LMDB (at start); checks a peer's credential
 * (auth_verify_fn, loop thread); sends it to a store that connected; acts on a change:
 * cuts off revoked or replaced credentials and tells every store (push tick). */
int meta_nodes_load(struct meta_server *s);
int meta_nodes_verify(void *arg, uint8_t role, const char *name, uint32_t serial,
		      uint8_t out[WEFT_KEY_LEN], char *why, size_t whylen);
void meta_nodes_ready(struct meta_server *s, struct conn *c);
/* A client node's policy on a request's credentials (Lustre's nodemap): root squashed
 * unless the node is trusted; uids and gids outside its ranges refused. Credentials of
 * the cluster key and of admins pass as they are. 0, or -EACCES with detail. */
int meta_nodes_clamp(struct meta_server *s, struct conn *c, struct weft_cred *cred, char *detail,
		     size_t cap);
void meta_nodes_tick(struct meta_server *s);

/* Mints the capability of rights on ino for session, for the node c authenticated as
 * (handlers_ns.c; any thread). */
void meta_cap_mint(struct meta_server *s, struct conn *c, uint64_t ino, uint64_t session,
		   uint8_t rights, uint8_t out[WEFT_CAP_LEN]);
/* The same with a lifetime of ms (at most meta's capability lifetime). */
void meta_cap_mint_ms(struct meta_server *s, struct conn *c, uint64_t ino, uint64_t session,
		      uint8_t rights, uint32_t ms, uint8_t out[WEFT_CAP_LEN]);

/* Host part of a "host:port" the store gave when it is unspecified ("", 0.0.0.0, ::)
 * replaced by the peer's address. */
void meta_fix_store_addr(const char *given, size_t len, const char *peer, char *out,
			 size_t cap);

/* Probes target (at addr) after reporter (a target id, 0 for a client) reported it
 * failed; marks it offline only if it does not answer (probe.c). Loop thread.
 * 0 (probe started or already running), -EAGAIN (too many probes), -ENOMEM. */
int meta_probe_target(struct meta_server *s, uint32_t target, const char *addr,
		      uint32_t reporter);

/* recall.c: runs mutation r (meta_commit_submit) once no other session holds a lease
 * on what it changes: recalls them first, parking r meanwhile. Loop thread. Returns 0
 * or -errno (r not taken). */
int meta_recall_submit(struct meta_server *s, struct mreq *r);
/* Read r (GETATTR, LOOKUP: r->attr is its answer) shows a file another session may
 * hold buffered attributes of (lease.h, meta_leases_wb_take): recalls them and parks r,
 * which meta_read_resume runs again once answered. True if parked. Loop thread. */
bool meta_recall_read(struct meta_server *s, struct mreq *r);
/* Before read r (LOOKUP, GETATTR, READDIR) runs: the directory it reads is claimed by
 * another session for asynchronous creates (lease.h, meta_leases_claim): takes the claim
 * back and parks r until the claimant answered. True if parked. Loop thread. */
bool meta_recall_claimed(struct meta_server *s, struct mreq *r);
/* Runs read r again and answers it (server.c). Loop thread. */
void meta_read_resume(struct meta_server *s, struct mreq *r);
/* The mutation is done: its inodes are no longer busy. Any thread. */
void meta_recall_done(struct meta_server *s, struct mreq *r);
/* Stopping: every parked mutation runs now. Loop thread. */
void meta_recall_flush(struct meta_server *s);
/* Starts the deadline timer. */
void meta_recall_start(struct meta_server *s);
/* Session of the connection a request came on (0: none). */
uint64_t meta_conn_session(struct meta_server *s, struct conn *c);

/* Deleter (deleter.c). */
int meta_deleter_start(struct meta_server *s, uint32_t period_ms, struct meta_deleter **out);
/* Wakes the deleter (any thread). NULL is a no-op. */
void meta_deleter_wake(struct meta_deleter *d);
void meta_deleter_stop(struct meta_deleter *d);

#endif
