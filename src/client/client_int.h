/* libweft internals shared by its files: the client, the per-inode write state, the
 * store data path. See include/weft/client.h for the contract.
 *
 * Files: session.c (the client, its session at meta, heartbeats, chain tables through
 * the chain cache, the pagepool, suspects), lease.c (leases, recalls, fencing), ns.c
 * (names, directories, xattrs, stripes), attr.c (getattr, setattr, access, ENTRY
 * replies), file.c (open files: open, create, write gathering, read, flush, fsync,
 * release), winode.c (the winode table, write-behind sending and draining, the size
 * this client knows), readahead.c, data.c (store I/O for pieces of a file), sparse.c
 * (st_blocks), stripe.c (block to object mapping). Calls go one way: file.c and ns.c
 * use attr.c and winode.c, never each other.
 *
 * DESIGN: one event-loop thread owns every connection (meta and stores); callers block in
 * their own threads on replies. A background thread sends session heartbeats; their
 * replies carry meta's chain-table epoch, meta also pushes it (CHAINS_CHANGED) when it
 * moves, and the thread refreshes the tables then. The tables and store connections are
 * a chain cache (src/net/chaincache.h): lookups never wait for each other, a chain the
 * table does not know is fetched single-flight. Open files of one inode share a
 * struct winode (write-behind state, known size) kept in a table by inode number, so every
 * handle of this client sees the same bytes. */
#ifndef WEFT_CLIENT_INT_H
#define WEFT_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "client/stripe.h"
#include "net/rpc.h"
#include "net/chaincache.h"
#include "proto/proto.h"
#include "weft/client.h"

#define CLIENT_META_TIMEOUT_MS  60000
/* How long a meta request waits for an unreachable meta (restarting, failing over)
 * before the application gets the error. */
#define CLIENT_META_WAIT_MS     300000
#define CLIENT_STORE_TIMEOUT_MS 60000

/* Targets this client could not reach lately (client_suspect): reads start elsewhere. */
#define CLIENT_SUSPECTS 16
#define CLIENT_SUSPECT_MS 10000

/* Listing order remembered, and files read ahead in it (prefetch.c) */
#define CLIENT_PF_ORDER 8192
#define CLIENT_PF_HELD 32

struct weft_client {
	pthread_mutex_t suspect_lock; /* guards suspects */
	struct { uint32_t target; uint64_t until_ms; } suspects[CLIENT_SUSPECTS];
	struct loop *loop;
	struct weft_key key;
	struct rpc *meta;
	char node[WEFT_NODE_MAX + 1];
	bool checksums;
	bool wb_attrs;                /* attribute write-back (wbattr.c) */
	bool complete_dirs;           /* lookups answered in complete directories (lease.c) */
	struct client_dirahead *dirahead; /* subdirectories' listings read ahead, or NULL */
	struct client_acreate *acreate;   /* asynchronous creates (acreate.c), or NULL */
	struct client_emptied *emptied;   /* directories emptied here (emptied.c), or NULL */
	pthread_mutex_t wb_list_lock; /* guards wb_list */
	struct winode *wb_list;       /* winodes with buffered attributes */
	atomic_int wb_owners;         /* of them, those whose owner changes (wb_owner) */
	/* Bumped by every change this client sends meta that may alter attributes of an
	 * inode it holds besides those wbattr.c tracks (link, unlink, rename, xattrs, an
	 * unbuffered setattr): client_wbattr_getattr answers only for a winode created
	 * since (wi->wb_agen). */
	atomic_uint_fast64_t attr_gen;
	/* Directories' attributes as this client's creates left them (dirattr.c); dir_gen is
	 * bumped by its namespace changes other than CREATE_OPEN (mkdir, mknod, symlink) */
	pthread_mutex_t dirattr_lock;
	struct dirattr_table *dirattr;
	atomic_uint_fast64_t dir_gen;
	/* Creates (CREATE_OPEN, answered here or not), which move neither generation
	 * above: a listing read ahead before one lacks its name (dirahead.c) */
	atomic_uint_fast64_t create_gen;
	/* Close-behind (closebehind.c): winodes whose close returned before their flush.
	 * cb_lock guards the list, each winode's cb_pending and cb_listed, cb_running (their
	 * flushes under way) and cb_err (the first error not yet returned by weft_sync). */
	bool close_behind;
	pthread_mutex_t cb_lock;
	pthread_cond_t cb_cond;       /* cb_running fell to 0 */
	struct winode *cb_list;
	int cb_running;
	int cb_err;
	bool cb_space_ok;             /* enough free space for closes to go behind, */
	bool cb_inodes_ok;            /* and inodes for creates to (acreate.c), */
	int64_t cb_space_at;          /* as meta said then (CLOCK_MONOTONIC ms) */
	uint32_t readahead_units;
	int64_t attr_timeout_ns;  /* how long learned attributes may be trusted */
	/* The session at meta. Meta keeps open state in memory only: after a restart it
	 * answers our id with ENOENT, and we open a new session and send REOPEN for every
	 * file we hold open (client_session_renew). Held for reading around an open or a
	 * release (the session id they use and the winode open counts they change), for
	 * writing by a renewal. */
	pthread_rwlock_t sess_lock;
	uint64_t session;
	uint32_t lease_ms;

	struct chaincache *cc;         /* chain tables and one connection per store */

	pthread_mutex_t pool_lock;     /* guards pool_used; pool_cond signals releases */
	pthread_cond_t pool_cond;
	uint64_t pool_used, pool_max;

	pthread_mutex_t inodes_lock;   /* guards the winode table */
	struct winode **inodes;
	size_t inodes_cap;

	pthread_t beat_thread;
	pthread_mutex_t beat_lock;
	pthread_cond_t beat_cond;
	bool stopping;
	bool refresh_now;              /* meta pushed a new chain epoch (beat_lock) */
	atomic_bool meta_wait;         /* wait for meta when unreachable (set once open) */

	/* leases and recalls (lease.c) */
	struct client_recall *recall;
	uint32_t lease_ms_seen;        /* longest lease meta granted (self-fencing period) */
	atomic_uintptr_t meta_conn_seen;      /* the meta connection last bound (session.c) */
	atomic_uint_fast64_t last_beat_ok_ms; /* loop_now_ms() of the last answered heartbeat */
	/* sessions up to this id were evicted by meta: handles opened in them are fenced
	 * (their writes fail with EIO) */
	atomic_uint_fast64_t fenced_upto;

	atomic_uint_fast64_t bytes_read, bytes_written, ops_read, ops_written, checksum_retries;

	/* What READDIRPLUS last said of regular files (prefetch.c): direct-mapped by ino,
	 * pf_lock guards it; NULL when prefetching is off. */
	pthread_mutex_t pf_lock;
	struct client_pf *pf;
	/* Opens for reading answered here from those entries (client_open_local), when
	 * local_open. An open takes lopen_lock for reading from its lease check until its
	 * OPEN is queued to meta; the recall thread takes it for writing before it answers a
	 * recall: so meta sees every such OPEN before the answer that lets a conflicting
	 * change (an unlink) go ahead. */
	bool local_open;
	pthread_rwlock_t lopen_lock;
	/* Files read ahead in listing order (prefetch.c), pf_lock: pf_order[pos %
	 * CLIENT_PF_ORDER] is the ino noted at position pos (from 1); opens answered here
	 * that follow it start reading the next files' first stripe units, held in pf_held
	 * (a winode reference each) until their open or CLIENT_PF_HELD_MS. */
	uint64_t *pf_order;
	uint64_t pf_next_pos, pf_last_pos, pf_ahead_to;
	struct { struct winode *wi; uint64_t pos, at_ms; } pf_held[CLIENT_PF_HELD];
	int pf_nheld;

	/* acknowledged mutations not yet synced at meta, for a replay (replay.c) */
	pthread_mutex_t kept_lock;
	struct kept *kept;             /* kept_lock */
	size_t nkept;                  /* kept_lock */
	uint64_t boot, synced;         /* kept_lock: meta's incarnation, its last synced */
	uint64_t boot_new;             /* kept_lock: a new incarnation seen, not replayed */
	pthread_rwlock_t replay_lock;  /* mutations: read; a replay: write */
	atomic_bool recovering;        /* a thread runs client_replay_recovering */
	uint64_t client_id;            /* random: names this client's TAGGED requests */
	atomic_uint_fast64_t next_xid; /* their numbers */
};

/* A regular file as a READDIRPLUS entry showed it, with a short-lived read capability:
 * an open for reading starts reading its first stripe unit with the OPEN (prefetch.c). */
#define CLIENT_PF_SLOTS 8192

struct client_pf {
	uint64_t ino;             /* 0: empty slot */
	struct weft_attr attr;
	struct weft_layout layout;
	uint8_t cap[WEFT_CAP_LEN];
	/* For an open answered here (client_open_local): the first byte of the file's
	 * written-stripes mask; the listing's own lease on the file (until, loop_now_ms
	 * clock; 0: none) and the recall and attribute generations from before its request
	 * (a recall of the file, or a change this client made, since: not used); who
	 * listed it (meta checked read access for them). */
	uint8_t written0;
	bool cached;              /* the kernel may hold its pages: no early read */
	uint64_t pos;             /* in listing order (pf_order) */
	uint64_t lease_until_ms, gen, agen;
	uint32_t uid, gid;
	uint64_t groups_hash;
};

/* ---- replay.c: the durability contract with meta ---- */
struct client_durable {
	uint64_t transno, synced, boot;
};
/* A reply's DURABLE record (its bulk). Returns 0 or -ENOENT (none). */
int client_durable_parse(const struct frame *f, struct client_durable *d);
/* Mutations kept until synced and replayed after meta restarts. */
bool client_replay_keepable(uint16_t op);
/* After a successful reply f to op (request payload/len, bulk): notes what meta says
 * is synced, and keeps op if it is not yet. */
void client_durable_seen(struct weft_client *c, uint16_t op, uint64_t xid,
			 const struct frame *f, const uint8_t *payload, uint32_t len,
			 const struct iovec *bulk, int nbulk);
/* The xid below which meta may drop its reply records of this client: the oldest kept
 * mutation's (a replay is deduplicated by its record), and at most 4096 back. */
uint64_t client_replay_done_below(struct weft_client *c, uint64_t xid);
/* Around sending a keepable mutation: none goes while a replay runs. */
void client_replay_enter(struct weft_client *c);
void client_replay_leave(struct weft_client *c);
/* Replays what older incarnations of meta acknowledged (after a session renewal). */
void client_replay_run(struct weft_client *c);
/* Meta answered WEFT_ERECOVERING: learns its incarnation (an FSYNC, whose reply carries
 * it; no session needed) and replays. One thread at a time; the others return. */
void client_replay_recovering(struct weft_client *c);
void client_replay_free(struct weft_client *c);

/* A stripe-unit buffer being gathered or written behind. */
struct wblock {
	struct wblock *next;
	struct winode *wi;
	uint64_t file_off;   /* start of the dirty range in the file */
	uint32_t len;        /* dirty bytes */
	uint32_t cap;        /* buffer size; data holds [file_off, file_off + cap) */
	uint64_t block;      /* file block index */
	uint32_t target;     /* the chain head it was last sent to */
	uint32_t chain;
	int status;          /* result of the last send */
	uint8_t checksum_retries; /* sends the store refused for a checksum mismatch */
	uint8_t *data;
};

struct winode {
	struct winode *next;      /* hash chain, inodes_lock */
	struct weft_client *c;
	uint64_t ino;
	int refs;                 /* open handles, inodes_lock */
	int opens;                /* opens counted at meta in our session, inodes_lock */
	struct weft_layout layout;

	pthread_mutex_t lock;     /* guards everything below */
	pthread_cond_t cond;      /* in-flight writes completing */
	uint64_t size;            /* size as this client knows it */
	bool size_dirty;          /* written since the last report to meta */
	bool flushing;            /* a flush's report is on its way (flush_lock held) */
	bool blocks_dirty;        /* written since st_blocks was last measured (sparse.c) */
	bool size_refresh;        /* another client changed the data (a recall): take meta's
				   * size from its next answer */
	int64_t mtime_ns;
	struct wblock *dirty;     /* blocks being gathered (not sent yet) */
	struct wblock *inflight;  /* blocks sent, reply pending */
	struct wblock *retry;     /* blocks whose send failed with a retryable error */
	int ninflight;
	int error;                /* first error not yet reported */
	/* A weft migrate of the file is under way (a WEFT_RECALL_LAYOUT): its write-behind
	 * went to the stores, and reads and writes wait in client_winode_lock_ready until
	 * meta says the migration is over, then go on with the layout meta gives. */
	bool frozen;
	bool pf_held;             /* read ahead in listing order, not opened yet (pf_lock) */
	/* Created asynchronously (acreate.c): until meta answered, no layout nor capability
	 * (client_acreate_settle waits on cond); acreate_err: meta refused it. */
	bool acreate_pending;
	int acreate_err;

	uint64_t wgen;            /* bumped by every write and truncate */
	uint64_t ra_next;         /* where a sequential reader is expected next */
	struct ra_block *ra;      /* prefetched stripe units (readahead.c) */
	int nra;
	int ra_inflight;          /* fetches not completed; the winode outlives them */
	uint64_t ra_hwm;          /* blocks below it were fetched already in this run */
	uint64_t ra_alt_end;      /* end of the last read outside the run (0: none) */
	uint32_t ra_window;       /* stripe units fetched ahead (grows, readahead.c) */
	int ra_pins;              /* block references held by readers (ra_pin) */
	/* Until this CLOCK_MONOTONIC time the file is known to have no security.capability
	 * xattr: the kernel asks for it before every write (to strip capabilities), and
	 * answering from here saves a meta round trip per write. Learned from meta's
	 * answer or from creating the file; forgotten on this client's own xattr changes;
	 * another client's become visible within the attribute timeout, like its chmod. */
	int64_t nocap_until;
	int writers;              /* handles open for writing */
	/* The capability for the stores (caps.c); cap_lock guards these four. renew_ms:
	 * realtime ms after which the next use renews it (half its life) */
	pthread_mutex_t cap_lock;
	uint8_t cap[WEFT_CAP_LEN];
	uint8_t cap_rights;
	uint64_t cap_expiry_ms, cap_renew_ms;
	/* Stripe objects known written: meta's record (from OPENED) and this client's
	 * acknowledged writes; bit s of written[s / 8]. A read of a stripe whose bit is set
	 * says so to the store, which then answers a missing object with WEFT_EMISSING
	 * instead of a hole. sent: stripes this client sent writes to (set before the store
	 * has them, so not used for reads); EXTEND carries sent | written to meta. Both are
	 * accessed with __atomic builtins (readers hold no lock). */
	uint8_t written[WEFT_WRITTEN_MAX];
	uint8_t sent[WEFT_WRITTEN_MAX];
	uint8_t lost[WEFT_WRITTEN_MAX]; /* stripes no replica held after a grace (data.c) */
	/* st_blocks (sparse.c): alloc[s] is stripe s's allocated bytes as the store said in
	 * its latest reply to this client's write (the largest seen), valid where bit s of
	 * alloc_known is set; a truncate forgets them. alloc has stripe_count entries, made
	 * at the first write (lock held); entries and bits are __atomic (write replies). */
	uint64_t *alloc;
	uint8_t alloc_known[WEFT_WRITTEN_MAX];

	/* Attribute write-back (wbattr.c): chmod, chown and utimes of a file this client
	 * created (wb_created: set at the create, cleared by a recall of the inode) stay
	 * here, merged into one SETATTR, until a flush. wb_lock serialises buffering and
	 * sending (it is held across the SETATTR to meta, and taken before lock); wb and
	 * wb_base are written under both and may be read under either (the overlay in
	 * client_winode_fix_size reads them under lock). */
	pthread_mutex_t wb_lock;
	bool wb_created;
	uint64_t wb_agen;          /* c->attr_gen at the create */
	struct wb_pend {
		uint32_t valid;       /* WEFT_SET_MODE/UID/GID/ATIME/MTIME/CTIME; 0: nothing */
		struct weft_cred cred;
		uint32_t mode, uid, gid;
		int64_t atime_ns, mtime_ns, ctime_ns;
		uint64_t mtime_wgen;  /* wgen when the mtime was set: a later write's wins */
	} wb, wb_sent;             /* pending; the last one meta applied (still overlaid: a
				    * reply to a GETATTR sent before it may arrive after) */
	struct weft_attr wb_base;  /* meta's last answer (create or flush) */
	int wb_err;                /* a flush meta refused: reported by the next flush */
	bool wb_owner;             /* wb gives another owner than wb_base's (lock): counted in
	                            * c->wb_owners, which unlink and rename look at (ns.c) */
	struct winode *wb_next;    /* c->wb_list (c->wb_list_lock), which holds a ref */
	bool wb_listed;            /* c->wb_list_lock */

	/* Flushes (file.c client_winode_flush) one at a time: a recall or weft_sync that
	 * finds one under way waits for it, so what it sends has reached meta when it
	 * answers. Taken before wb_lock and lock. */
	pthread_mutex_t flush_lock;
	/* Close-behind (closebehind.c): a close returned before the flush; the credential
	 * and session of that handle, for the flush that follows. c->cb_lock guards all. */
	bool cb_pending;
	bool cb_off;               /* recalled once: closes flush before returning */
	struct weft_cred cb_cred;
	uint64_t cb_session;
	struct winode *cb_next;    /* c->cb_list, which holds a ref while cb_pending */
};
/* ---- attribute write-back (wbattr.c) ----
 * A file this client created may keep its chmod, chown and utimes here, merged into one
 * SETATTR, while it is open; they go to meta at the file's flush (close) or fsync, at a
 * recall of the inode or of any name (the recall thread flushes before it answers), and
 * before this client's unlink, rmdir, rename or link. Off unless c->wb_attrs. */
/* wi was created by this client with attributes a (the CREATE_OPEN reply). */
void client_wbattr_created(struct weft_client *c, struct winode *wi, const struct weft_attr *a);
/* Buffers a setattr of ino when it may be: returns 1 with *out the attributes as they
 * will be, or 0 when the caller must send it (anything buffered for ino has gone to meta
 * first). Never fails: a refused flush is kept for the next client_wbattr_take_err. */
int client_wbattr_try(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      uint32_t valid, const struct weft_attr *in, struct weft_attr *out);
/* Sends what wi has buffered and waits for meta; returns 0 or meta's error (also kept
 * for client_wbattr_take_err). drop: forget it instead (a fenced session), -EIO.
 * behind: a flush behind a close (WEFT_SET_BEHIND). */
int client_wbattr_flush(struct weft_client *c, struct winode *wi, bool drop, bool behind);
/* The error of a refused flush of wi, once (0: none). */
int client_wbattr_take_err(struct winode *wi);
/* Stops buffering for wi (its last handle is being released); what is buffered goes
 * with the next flush. */
void client_wbattr_end(struct weft_client *c, struct winode *wi);
/* Flushes ino (and stops buffering for it: another client wants it), or everything;
 * recall: from the recall thread, which does not wait long for a winode another thread
 * is sending already (wbattr.c). */
void client_wbattr_recall(struct weft_client *c, uint64_t ino);
void client_wbattr_flush_all(struct weft_client *c, bool recall);
/* Some buffered setattr gives a file another owner than meta has: an unlink or rename,
 * whose sticky-directory check at meta reads the owner, sends them first (ns.c). */
bool client_wbattr_owner_pending(struct weft_client *c);
/* The attributes of ino as meta would give them, from what this client knows, when it
 * knows them all: a file it created that no other client has asked about since (meta
 * recalls this client before answering one, which ends this) and whose attributes no
 * other request of this client may have changed (attr_gen). True if *a was set. */
bool client_wbattr_getattr(struct weft_client *c, uint64_t ino, struct weft_attr *a);
/* dirattr.c (see there): 0 or -1 (no memory: then nothing is kept) */
int client_dirattr_init(struct weft_client *c);
/* pa: a CREATE_OPEN reply's parent attributes; the generations read before the request */
void client_dirattr_note(struct weft_client *c, const struct weft_attr *pa, uint64_t rgen,
			 uint64_t agen, uint64_t dgen);
/* True if ino is known to be a directory (its slot, current or not, holds it). */
bool client_dirattr_is_dir(struct weft_client *c, uint64_t ino);
/* True with *a when this client knows directory ino's attributes as meta has them. */
bool client_dirattr_get(struct weft_client *c, uint64_t ino, struct weft_attr *a);
/* An asynchronous create in directory ino at time_ns (acreate.c): meta will stamp it as
 * the directory's mtime and ctime, which a valid slot takes now. */
void client_dirattr_touch(struct weft_client *c, uint64_t ino, int64_t time_ns);
/* An asynchronous unlink in directory ino at time_ns: attr_gen moves on (the unlinked
 * file's nlink and ctime), and ino's slot, valid before, stays valid with that time. */
void client_dirattr_unlinked(struct weft_client *c, uint64_t ino, int64_t time_ns);
/* An asynchronous rmdir in directory ino: as unlinked, and one link less. */
void client_dirattr_rmdired(struct weft_client *c, uint64_t ino, int64_t time_ns);
/* An asynchronous mkdir in directory ino: as unlinked, and one link more. */
void client_dirattr_mkdired(struct weft_client *c, uint64_t ino, int64_t time_ns);
/* The same for an asynchronous setattr of directory a->ino: its slot takes *a. */
void client_dirattr_set(struct weft_client *c, const struct weft_attr *a);
/* A request that may change attributes client_wbattr_getattr cannot follow goes out. */
static inline void client_attrs_changed(struct weft_client *c)
{
	atomic_fetch_add(&c->attr_gen, 1);
}
/* Applies what wi has buffered to a (wi->lock held). */
void client_wbattr_overlay(const struct winode *wi, struct weft_attr *a);

/* Whether stripe s of wi is recorded written; wi may be NULL (false). */
bool client_winode_written(const struct winode *wi, uint32_t s);
/* The security.capability cache of winode ino (winode.c; ns.c reads and sets it): */
bool client_winode_nocap(struct weft_client *c, uint64_t ino);
void client_winode_set_nocap(struct weft_client *c, uint64_t ino, bool absent);
/* The same on a winode the caller holds (a create: the new inode has no xattrs). */
void client_winode_mark_nocap(struct weft_client *c, struct winode *wi, bool absent);

/* A stripe unit fetched ahead of a sequential reader. */
struct ra_block {
	struct ra_block *next;
	struct winode *wi;
	uint64_t block;           /* file block index */
	uint64_t gen;             /* wi->wgen when the fetch started */
	uint32_t len;             /* bytes of the block below the file size */
	uint32_t cap;             /* pagepool bytes it holds (the stripe unit) */
	uint32_t used;            /* bytes of it read so far */
	int state;                /* RA_INFLIGHT, RA_READY, RA_FAILED */
	int refs;                 /* readers handing its bytes to the kernel (ra_pin) */
	bool orphan;              /* dropped while in flight or pinned: freed when neither */
	bool checked;             /* reply's checksums verified */
	bool need_data;           /* an empty answer is not the file's: fail it (ra_first) */
	bool unconfirmed;         /* read before its OPEN answered: served to nobody until
				   * client_pf_finish keeps it (ra_first) */
	uint64_t obj_off;         /* where in its object the block was read */
	struct frame *reply;      /* when ready: the data in its bulk; NULL: all zeros */
};

struct weft_file {
	struct weft_client *c;
	struct winode *wi;
	struct weft_cred cred;
	int flags;
	bool blocks_reported;     /* a flush sent meta a new st_blocks (weft_file_blocks_changed) */
	uint64_t session;         /* the session it was opened in (fencing) */
};

/* acreate.c: asynchronous creates in directories this client claimed at meta.
 * client_acreate_try answers weft_create here when it may: 0 (*out, *attr), 1 when it
 * may not (the caller asks meta), or -errno. */
int client_acreate_start(struct weft_client *c);
void client_acreate_stop(struct weft_client *c);
int client_acreate_try(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		       const char *name, uint32_t mode, int flags, struct weft_file **out,
		       struct weft_attr *attr);
/* A create or mkdir in dir, an existing directory, could not be answered here because dir
 * is not complete: when it is worth it (client_cdir_fill_due), claims dir (DIR_CLAIM) and
 * lists it, and dir becomes complete and claimed as one this client made; true if it
 * did (the caller tries client_acreate_try or _mkdir again). */
bool client_acreate_fill(struct weft_client *c, const struct weft_cred *cr, uint64_t dir);
/* Waits until every create posted before this call was answered (client_meta_call does,
 * so that this client's own requests see its creates). */
void client_acreate_barrier(struct weft_client *c);
/* A request that depends only on what this client sent in directory dir, or to remove
 * it (a listing of dir, its attributes, a create in it): waits for those jobs alone,
 * then lets this thread's meta calls pass the full barrier until
 * client_acreate_scope_end. */
void client_acreate_dir_scope(struct weft_client *c, uint64_t dir);
/* The same for two directories (an rmdir: the parent and the directory it removes). */
void client_acreate_dirs_scope(struct weft_client *c, uint64_t dir, uint64_t dir2);
/* The same for name in dir and the setattrs of dir (a LOOKUP of name). */
void client_acreate_name_scope(struct weft_client *c, uint64_t dir, const char *name);
void client_acreate_scope_end(void);
/* A reply naming inodes its request did not (a LOOKUP's, a listing's) may carry a
 * directory's attributes from before a setattr answered here and sent behind: _mark
 * before the request, then _stale for each such inode says whether its attributes may
 * be older than what the kernel was told (one is still posted, or answered since the
 * mark; a mark of 0: none was posted); _setattr_wait waits until the setattrs posted of ino are answered. */
uint64_t client_acreate_attr_mark(struct weft_client *c);
bool client_acreate_attr_stale(struct weft_client *c, uint64_t ino, uint64_t mark);
void client_acreate_setattr_wait(struct weft_client *c, uint64_t ino);
/* The calling thread never waits in client_acreate_barrier while above 0 (a replay). */
void client_acreate_no_barrier(int delta);
/* Answers weft_unlink here when dir is claimed (asking meta for the claim first if
 * need be): 0, or 1 when it may not (the caller asks meta). */
int client_acreate_unlink(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			  const char *name);
/* Answers weft_rmdir here when name in dir is a directory this client emptied
 * (emptied.c) and dir is claimed: 0, or 1 when it may not (the caller asks meta). */
int client_acreate_rmdir(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			 const char *name);
/* Answers weft_rename here for a rename within dir, claimed and complete here, of a name
 * it holds to one it does not (no replace): 0, or 1 when it may not (the caller asks
 * meta). */
int client_acreate_rename(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			  const char *name, const char *newname);
/* Answers weft_mkdir here when parent is claimed and complete (as a create): 0 with
 * *attr, or 1 when it may not (the caller asks meta). */
int client_acreate_mkdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
			 const char *name, uint32_t mode, struct weft_attr *attr);
/* Whether meta would allow cr's setattr (valid, in) of an inode with attributes a
 * (setattr_check in meta's ns.c, for the bits buffered: mode, owner, times); wbattr.c. */
bool client_setattr_allowed(const struct weft_cred *cr, const struct weft_attr *a, uint32_t valid,
			    const struct weft_attr *in);
/* Answers weft_setattr of directory ino here (chmod, chown, explicit times) when it is
 * claimed and its attributes are known under a lease (dirattr.c): 0 with *out, or 1 when
 * it may not (the caller asks meta). */
int client_acreate_setattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			   uint32_t valid, const struct weft_attr *in, struct weft_attr *out);
/* Waits (bounded) for the creates posted in dir, and its removal (a recall of it). */
void client_acreate_drain(struct weft_client *c, uint64_t dir);
/* Waits until wi's own create was answered; returns its error (0: none, or not one). */
int client_acreate_settle(struct weft_client *c, struct winode *wi);
/* file.c: sends OPEN or CREATE_OPEN (msg) and decodes the OPENED reply into *o, with
 * its written mask copied to written (*wlen bytes). On success returns 0 with sess_lock
 * held for reading and *sid the session the request named; else -errno, not held. */
int client_open_rpc(struct weft_client *c, uint16_t op, void *msg, struct weft_msg_opened *o,
		    uint8_t written[WEFT_WRITTEN_MAX], uint32_t *wlen, uint64_t *sid);

/* file.c: flushes wi's write-behind, size report and buffered attributes with cred in
 * session (fencing); wi->flush_lock held (one flush at a time); *blocks (may be NULL)
 * set when meta was told a new st_blocks. */
int client_winode_flush_locked(struct weft_client *c, struct winode *wi,
			       const struct weft_cred *cred, uint64_t session, bool *blocks);
/* winode.c: another reference to a winode the caller holds. */
void client_winode_hold(struct weft_client *c, struct winode *w);

/* closebehind.c (see weft_file_close) */
/* Leaves f's flush for later when it may; true if so. */
bool client_close_defer(struct weft_file *f);
/* Enough free space at the stores (and, with inodes, inodes at meta) for work to go
 * behind the application's back (statfs, asked at most every few seconds). */
bool client_space_to_spare(struct weft_client *c, bool inodes);
/* A flush of wi begins (flush_lock held): takes what a close left behind; true if it did
 * (then client_close_settled follows with the flush's result). */
bool client_close_begin(struct weft_client *c, struct winode *wi);
void client_close_settled(struct weft_client *c, int err);
/* The recall thread, before it answers a recall of ino's attributes or data: flushes
 * what a close left behind (waits for a flush under way). */
void client_close_recall(struct weft_client *c, uint64_t ino);
/* Flushes everything closes left behind and waits for flushes under way; returns the
 * first error of one since the last call that took it (take_err). */
int client_close_flush_all(struct weft_client *c, bool take_err);
/* Before a request of this client that meta answers from ino's attributes (OPEN,
 * ACCESS, LINK, a setattr it sends): what a close left behind and what wbattr.c
 * buffers for ino go to meta first, so meta judges by what this client has shown. */
void client_settle_ino(struct weft_client *c, uint64_t ino);

/* ns.c: READDIR for cr from cookie (plus: attributes, with capabilities and leases as
 * this client takes them); on success *f holds the entries (frame_free it). */
int client_readdir_call(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			uint64_t cookie, bool plus, uint32_t max_bytes, struct frame **f,
			struct weft_msg_dirlist *dl);
/* Walks the entries of one READDIR reply: with note, notes their leases (gen: the recall
 * generation before the request) and prefetch capabilities; collects subdirectories
 * (other than . and ..), the shortest lease, the last cookie and the count into dw;
 * calls fn for each entry when fn is set. Returns what fn stopped with, 0, or -EIO. */
#define CLIENT_DIRWALK_SUBS 64
struct client_dirwalk {
	bool note;
	const struct weft_cred *cr;  /* the lister (with note) */
	uint64_t dir;                /* the directory listed (with note; 0: unknown) */
	uint64_t gen, agen, dgen;    /* recall, attribute, dir generations before the request */
	uint64_t amark;              /* client_acreate_attr_mark before the request */
	uint64_t subs[CLIENT_DIRWALK_SUBS];
	size_t nsubs;
	uint32_t min_lease;  /* of entries other than . and ..: 0 if one had none; start high */
	uint64_t cookie;
	uint32_t n;
	uint32_t names;      /* entries other than . and .. */
};
int client_dirents_walk(struct weft_client *c, const uint8_t *bulk, size_t len,
			struct client_dirwalk *dw,
			int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg);

/* emptied.c: directories this client emptied, for rmdir answered here (acreate.c).
 * _sub: a listing of parent (recall generation rgen before it) showed name as directory
 * child under a lease of lease_ms; _listed: a listing of dir came whole with names
 * entries, its shortest lease min_lease_ms; _removed: one of dir's names was removed
 * here, asynchronously; _forget: dir's names changed here otherwise (a create, or a
 * synchronous change in it); _child: the directory name in parent names, if this client
 * knows it is empty at meta once what it sent is applied, else 0. */
int client_emptied_init(struct weft_client *c);
void client_emptied_free(struct weft_client *c);
void client_emptied_sub(struct weft_client *c, uint64_t parent, const char *name, size_t len,
			uint64_t child, uint32_t lease_ms, uint64_t rgen);
void client_emptied_listed(struct weft_client *c, uint64_t dir, uint32_t names,
			   uint32_t min_lease_ms, uint64_t rgen);
void client_emptied_removed(struct weft_client *c, uint64_t dir);
void client_emptied_forget(struct weft_client *c, uint64_t dir);
/* dir was removed here: its own record goes (no generation moves on, so no other
 * directory's record is forgotten with it). */
void client_emptied_drop(struct weft_client *c, uint64_t dir);
/* dir's lease was renewed without a break for lease_ms (DIR_CLAIM): nobody changed its
 * names meanwhile, so its record and what its listing said of its subdirectories hold
 * that long, if they still held. */
void client_emptied_renewed(struct weft_client *c, uint64_t dir, uint32_t lease_ms);
uint64_t client_emptied_child(struct weft_client *c, uint64_t parent, const char *name);
/* The directory name in parent names, whenever this client knows it (as for _child,
 * empty or not), else 0. */
uint64_t client_emptied_subdir(struct weft_client *c, uint64_t parent, const char *name);

/* dirahead.c: listings of subdirectories fetched before they are asked */
int client_dirahead_start(struct weft_client *c);
void client_dirahead_stop(struct weft_client *c);
/* Queues dirs (subdirectories a listing showed) to be read ahead for cr. */
void client_dirahead_queue(struct weft_client *c, const struct weft_cred *cr,
			   const uint64_t *dirs, size_t n);
/* Lists ino from cookie 0 for cr from a listing read ahead, if one is kept and still
 * valid: calls fn per entry as weft_readdir does; returns 0 (or what fn stopped with),
 * 1 when there is none (ask meta), -EIO. */
int client_dirahead_take(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			 int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg);

/* lease.c */
int client_lease_start(struct weft_client *c);
void client_lease_stop(struct weft_client *c);
/* The recall generation: read it before a request whose reply carries a lease. */
uint64_t client_recall_gen(struct weft_client *c);
/* A recall of ino (or of everything) came since generation gen; true when it cannot
 * tell. */
bool client_recalled_since(struct weft_client *c, uint64_t ino, uint64_t gen);
/* A reply granted a lease of lease_ms on ino; gen: client_recall_gen before the request. */
void client_lease_note(struct weft_client *c, uint64_t ino, uint32_t lease_ms, uint64_t gen);
/* Forgets every lease (an eviction: meta gave them away). */
void client_lease_drop_all(struct weft_client *c);
/* Complete directories (lease.c, cdir.h; off with complete_dirs false). dir was made by
 * this client's MKDIR, whose reply granted lease_ms on it (gen: client_recall_gen before
 * the request): it starts complete and empty. */
void client_cdir_created(struct weft_client *c, uint64_t dir, uint32_t lease_ms, uint64_t gen,
			 const struct weft_attr *claimed, uint32_t stripe_unit);
/* Asynchronous creates (acreate.c): dir is complete and claimed, without S_ISGID, and
 * name is not in it: name is added (file: a file, else a directory), and the stripe
 * unit of dir's files returned; else 0. */
uint32_t client_cdir_claim_name(struct weft_client *c, uint64_t dir, const char *name,
				bool file);
/* dir is complete and claimed here for creates, its lease running. */
bool client_cdir_claimed(struct weft_client *c, uint64_t dir);
/* name was unlinked from dir (asynchronously): gone from dir's names if complete. */
void client_cdir_unlinked(struct weft_client *c, uint64_t dir, const char *name);
/* dir is claimed and complete here, name in it and newname not, or both in it and known
 * not to be directories (newname is replaced): name becomes newname in its known names;
 * false if not so (nothing changed, or dir is no longer complete). */
bool client_cdir_rename_name(struct weft_client *c, uint64_t dir, const char *name,
			     const char *newname);
/* dir is no longer complete (nor claimed, for creates or unlinks). */
void client_cdir_unclaim(struct weft_client *c, uint64_t dir);
/* An existing directory made complete from a listing (acreate.c, client_acreate_fill):
 * _due: a create (or, removing, a create after a removal here) in dir went to meta
 * because dir was not complete; when it should be tried now (not complete, not tried in
 * the last few seconds), the most names worth listing, else 0. _begin: dir is this client's one fill under way, and
 * no mutation of this client that may add a name there is under way (else false: not
 * now); the recall generation and the time are taken then, before the claim is asked.
 * _end: what the claim and the listing gave; dir becomes complete and claimed
 * with the listed names unless a mutation of this client began there meanwhile, a
 * recall named it, or something failed (listed false); returns whether it did. */
#define CLIENT_CDIR_MAX_NAMES 65536 /* names a complete directory may hold */
struct client_cdir_fill {
	bool listed;            /* every page of the listing came */
	uint32_t lease_ms;      /* the claim's lease, 0 refused */
	uint32_t mode, stripe_unit; /* the directory's mode, its files' stripe unit */
	const uint8_t *names;   /* the names, each a byte (1: not a directory), a length
				 * byte and its bytes */
	size_t names_len;
};
size_t client_cdir_fill_due(struct weft_client *c, uint64_t dir, bool removing);
bool client_cdir_fill_begin(struct weft_client *c, uint64_t dir);
bool client_cdir_fill_end(struct weft_client *c, uint64_t dir, const struct client_cdir_fill *f);
/* Directories claimed for asynchronous unlinks (DIR_CLAIM): 1 dir is claimed here, 0 not
 * known, -1 meta refused lately (do not ask). note: DIR_CLAIM's answer (lease_ms 0:
 * refused; gen: the recall generation when it was asked). */
int client_uclaim_held(struct weft_client *c, uint64_t dir);
/* dir is claimed here and half its claim's lease is gone: renewed at its next use, before
 * it runs out while removals in it are on their way (acreate.c, claim_dir). */
bool client_uclaim_due(struct weft_client *c, uint64_t dir);
void client_uclaim_note(struct weft_client *c, uint64_t dir, uint32_t lease_ms, uint64_t gen);
/* A reply renewed the lease on dir (dir_lease ms; gen: the recall generation when the
 * request went). */
void client_cdir_renewed(struct weft_client *c, uint64_t dir, uint32_t dir_lease, uint64_t gen);
/* What the kernel was told of ino (what: WEFT_RECALL_ATTR), or of the entry name under
 * directory ino (WEFT_RECALL_NAME), is wrong: the notifier thread invalidates it. */
void client_lease_invalidate(struct weft_client *c, uint64_t ino, uint32_t what, const char *name);
/* A mutation of this client that may change names in dir starts: until its
 * client_cdir_end, lookups in dir ask meta. */
void client_cdir_begin(struct weft_client *c, uint64_t dir);
/* It ended with err (0 or -errno; any error drops dir: its outcome is not known here).
 * change > 0: name now exists in dir (2: known not to be a directory), < 0: it no longer
 * does, 0: no name changed.
 * dir_lease: the renewal of the lease on dir the reply carried (0 none); gen:
 * client_recall_gen before the request. */
void client_cdir_end(struct weft_client *c, uint64_t dir, const char *name, int change, int err,
		     uint32_t dir_lease, uint64_t gen);
/* True when dir is complete and has no entry name: a lookup may answer ENOENT. */
bool client_cdir_absent(struct weft_client *c, uint64_t dir, const char *name);
/* No directory is complete any more (a new session: meta restarted or evicted us). */
void client_cdir_drop_all(struct weft_client *c);
/* A RECALL request from meta (loop thread): queued; true if it took f. */
bool client_recall_request(struct weft_client *c, struct conn *cn, struct frame *f);
/* Before a write through f: false when f's session was evicted (checks with meta first
 * when no heartbeat was answered within a lease: this client may have been stopped). */
bool client_file_fenced(struct weft_file *f);

/* session.c */
int client_meta_call(struct weft_client *c, uint16_t op, struct wbuf *payload,
		     const struct iovec *bulk, int nbulk, struct frame **reply);
/* Tells meta that target (head of chain) could not be reached, so it is taken out of
 * its chains and writes can go on to the remaining members. */
void client_report_failed(struct weft_client *c, uint32_t target, uint32_t chain, uint8_t replicas);
/* A call to meta in flight while the caller does something else. */
struct meta_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int status;
	struct weft_client *c;
	uint16_t op;
	struct wbuf again;  /* the request, to send again if meta was away */
};
/* After ENOENT from meta for a request carrying session id old: true if meta no longer
 * knows that session (asks it with a heartbeat). */
bool client_session_lost(struct weft_client *c, uint64_t old);
/* Opens a new session in place of old (unless another thread already did) and sends
 * REOPEN for every file held open. Takes sess_lock for writing. 0 or -errno. */
int client_session_renew(struct weft_client *c, uint64_t old);
/* Sends a heartbeat now (handling an unknown or evicted session as the beat thread does). */
void client_beat_now(struct weft_client *c);
/* Sends a request to meta and does not wait for the reply (payload taken); an error is
 * logged at debug level. Requests sent this way reach meta in order with later ones. */
void client_meta_post(struct weft_client *c, uint16_t op, struct wbuf *payload);
/* The same with done(arg, status, reply) called once the reply came (on the loop
 * thread; it owns reply, which may be NULL), or at once if it could not be sent. */
void client_meta_post_fn(struct weft_client *c, uint16_t op, struct wbuf *payload,
			 conn_call_fn done, void *arg);
/* Sends a request to meta without waiting (payload taken). */
void client_meta_start(struct weft_client *c, uint16_t op, struct wbuf *payload,
		       struct meta_wait *w);
/* Waits for it; returns its status. */
int client_meta_wait(struct meta_wait *w);
/* Fetches the chain tables from meta now (single-flight: threads calling at once share
 * one fetch). 0 or -errno (the old table stays). */
int client_refresh_chains(struct weft_client *c);
/* Returns a ready connection to target (new reference) or -errno (-ENXIO unknown). */
int client_store_conn(struct weft_client *c, uint32_t target, struct conn **out);
/* Copies chain (replicas, id) out of the table, fetching the tables first if they are
 * stale or do not have it (a store joined). -WEFT_ESTALECHAIN if meta does not know it
 * either or cannot be reached. */
int client_chain(struct weft_client *c, uint8_t replicas, uint32_t id, struct weft_chain *out);
/* sparse.c: st_blocks */
/* Bytes the stores hold for the stripes set in mask (mlen bytes), one copy each:
 * st_blocks * 512 after a flush (sparse.c). 0 or -errno. */
int client_sparse_allocated(struct weft_client *c, struct winode *wi, const uint8_t *mask,
		     uint32_t mlen, uint64_t *bytes);
/* A write reply said stripe s of wi now takes `allocated` bytes (loop thread). */
void client_sparse_note_alloc(struct winode *wi, uint32_t s, uint64_t allocated);
/* session.c (continued) */
/* A store said our table is out of date: the next lookup refreshes it. */
void client_chains_stale(struct weft_client *c);
/* Pagepool accounting: blocks until bytes fit (or the pool is empty), then takes them. */
void client_pool_take(struct weft_client *c, uint64_t bytes);
void client_pool_give(struct weft_client *c, uint64_t bytes);
/* Takes bytes without waiting (a gathering buffer growing by at most its stripe unit). */
void client_pool_grow(struct weft_client *c, uint64_t bytes);

/* caps.c: capabilities for the stores. Fills out with a capability with rights need
 * (WEFT_CAP_*) for ino: wi's (NULL: the winode of ino, if open) while fresh, else a new
 * one from meta (the renewal of wi's, or checked for cred: NULL acts as root, which
 * meta squashes). Not on the loop thread. 0 or -errno (EACCES, WEFT_EEVICTED...). */
int client_cap_get(struct weft_client *c, struct winode *wi, uint64_t ino, uint8_t need,
		   const struct weft_cred *cred, uint8_t out[WEFT_CAP_LEN]);
/* A capability from an OPENED reply (zeros: none); a fresh read-write one is kept over
 * a read-only one. */
void client_cap_note(struct winode *wi, const uint8_t cap[WEFT_CAP_LEN]);
/* A store said the capability expired: the next use renews it. wi may be NULL. */
void client_cap_stale(struct winode *wi);

/* winode.c: the winode table, sending and draining write-behind blocks, and the size
 * this client knows (used by file.c, attr.c, ns.c, lease.c; calls none of them) */
/* The winode of ino if this client has the file open, with a reference; NULL if not. */
struct winode *client_winode_find(struct weft_client *c, uint64_t ino);
/* Finds or creates the winode of a->ino (layout l, size and mtime from a), taking a
 * reference. NULL when out of memory. */
struct winode *client_winode_get(struct weft_client *c, const struct weft_attr *a,
				 const struct weft_layout *l);
void client_winode_put(struct weft_client *c, struct winode *w);
/* A WEFT_RECALL_LAYOUT for ino (the recall thread, before it answers): marks its winode
 * frozen, sends its write-behind and waits for it, drops readahead. No winode: nothing
 * to do (an OPEN during the migration is answered WEFT_EMIGRATING and waits). */
void client_winode_freeze(struct weft_client *c, uint64_t ino);
/* Takes wi->lock once wi is not frozen: while it is, asks meta (GETSTRIPE) every 20 ms
 * whether the migration is over and then takes the file's layout (a new generation
 * forgets the stripe masks and readahead of the old one). Returns with wi->lock held. */
void client_winode_lock_ready(struct weft_client *c, struct winode *wi);
/* Sends block b (already unlinked from the dirty list); wi->lock held on entry and exit,
 * dropped while sending. Waits first for an in-flight block of the same file block, so
 * that overlapping writes reach the store in order. */
void client_wb_submit(struct weft_client *c, struct winode *wi, struct wblock *b);
/* Sends every gathered block; wi->lock held. */
void client_wb_submit_dirty(struct weft_client *c, struct winode *wi);
/* Frees the gathered blocks and those waiting to be sent again, unsent (a file meta
 * refused to create; a winode freed); wi->lock held. */
void client_wb_discard(struct weft_client *c, struct winode *wi);
/* Sends everything and waits until nothing is in flight, resending blocks that failed
 * for a retryable reason for a while (see winode.c). wi->lock held. Returns the first
 * error, which it clears. */
int client_wb_drain(struct weft_client *c, struct winode *wi);
/* Sends and waits for blocks overlapping [off, off+len) so a read sees this client's
 * writes; an error is kept for flush and close. wi->lock held. */
void client_wb_drain_range(struct weft_client *c, struct winode *wi, uint64_t off, uint64_t len);
/* Before a size change by setattr: sends and waits for buffered writes, then records
 * the new size locally. Returns the first write error. */
int client_truncate_local(struct weft_client *c, uint64_t ino, uint64_t size);
/* Attributes from meta, corrected by what this client has written (size, mtime,
 * st_blocks of writes in flight): client_fix_size finds the winode of a->ino (none: a
 * is left alone), client_winode_fix_size takes one the caller holds. */
void client_fix_size(struct weft_client *c, struct weft_attr *a);
void client_winode_fix_size(struct winode *wi, struct weft_attr *a);

/* attr.c: getattr, setattr, access (public), and for ns.c: */
/* Calls meta (payload w taken) and decodes an ENTRY reply into attr and layout (each
 * may be NULL), its size corrected by client_fix_size and its lease noted. */
int client_call_entry(struct weft_client *c, uint16_t op, struct wbuf *w, struct weft_attr *attr,
		      struct weft_layout *layout);
/* The reply's leases, for client_call_entry_lease: on the entry and on its directory
 * (dir_lease), and the recall generation read before the request. */
struct client_entry_lease {
	uint32_t lease, dir_lease;
	uint64_t gen;
};
/* client_call_entry, telling the leases the reply carried (l: all 0 on an error). */
int client_call_entry_lease(struct weft_client *c, uint16_t op, struct wbuf *w,
			    struct weft_attr *attr, struct weft_layout *layout,
			    struct client_entry_lease *l);

/* data.c: store I/O for pieces of a file */
struct io_batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding;
	int first_err;
};
void client_io_batch_init(struct io_batch *b);
void client_io_batch_wait(struct io_batch *b);

/* Reads [off, off+len) of a file into dst with every piece in flight at once; zeros
 * beyond what objects hold. Returns 0 or -errno. */
int client_data_read_range(struct weft_client *c, struct winode *wi, uint64_t ino,
		    const struct weft_layout *l,
		    uint64_t off, uint64_t len, uint8_t *dst);
/* Sends a block asynchronously; done(b) runs on the loop thread with b->status set. */
int client_data_write_block(struct weft_client *c, const struct weft_layout *l, struct wblock *b,
		     void (*done)(struct wblock *b));
/* Truncates every stripe object of the file to match size `size` (synchronous). */
int client_data_truncate(struct weft_client *c, const struct weft_cred *cred, uint64_t ino,
			 const struct weft_layout *l, uint64_t size);
/* Asks every object of the file to be made durable (synchronous). */
int client_data_fsync(struct weft_client *c, uint64_t ino, const struct weft_layout *l);

/* prefetch.c: the first stripe unit read at the same time as the OPEN */
/* Remembers a READDIRPLUS entry that carries a layout and a read capability. */
void client_pf_note(struct weft_client *c, const struct weft_dirent *d,
		    const struct client_dirwalk *dw);
/* Allocates and frees the table (session.c). client_pf_drop_held gives back the files
 * read ahead in listing order (before the loop stops). */
int client_pf_init(struct weft_client *c);
void client_pf_drop_held(struct weft_client *c);
/* Gives back the files read ahead longer ago than they are kept (the heartbeat's
 * thread calls it too, so an idle mount keeps none). */
void client_pf_expire(struct weft_client *c);
void client_pf_free(struct weft_client *c);
/* Gives back ino's winode if it is held, read ahead in listing order: an open that
 * asks meta makes its winode from meta's answer. */
void client_pf_unhold_ino(struct weft_client *c, uint64_t ino);
/* Forgets ino's entry: this client is about to change the file. */
void client_pf_forget(struct weft_client *c, uint64_t ino);
/* An open for reading of ino answered here, without waiting for meta: when ino's entry
 * was listed for the same caller under a lease still running, with no recall of the
 * file or change by this client since, a fresh capability, and no other open of it
 * here. The OPEN goes to meta behind it (counted and pinned there as any open). Returns
 * 0 (*out, *attr), or 1 when it may not (the caller asks meta). */
int client_open_local(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      int flags, struct weft_file **out, struct weft_attr *attr);
/* Before an OPEN of ino with flags: if a fresh entry allows it and this client does not
 * have the file open, takes a winode for it and starts reading its first stripe unit;
 * returns that winode (a reference, given back by client_pf_finish) and the entry the
 * read was started from in *pf. NULL: nothing started. */
struct winode *client_pf_start(struct weft_client *c, uint64_t ino, int flags,
			       struct client_pf *pf);
/* After the OPEN (err, and o when 0): the prefetched block stays in wi's readahead only
 * if the open succeeded and meta shows the file as the entry did (size, mtime, ctime,
 * layout); else it is dropped (its reply, if still to come, freed unseen). Puts wi. */
void client_pf_finish(struct weft_client *c, struct winode *wi, const struct client_pf *pf,
		      int err, const struct weft_attr *attr, const struct weft_layout *layout);

/* readahead.c; wi->lock held for all of them */
/* Copies [off, off+len) from prefetched blocks if they hold all of it (waiting for blocks
 * in flight); returns true if it did. */
bool client_ra_take(struct weft_client *c, struct winode *wi, uint64_t off, size_t len, uint8_t *dst);
/* Like ra_take, but pins the blocks holding [off, off+len) (at most max) instead of
 * copying: out[i] and checked[i] (its checksums verified already) for each, in order.
 * The caller checks the unchecked ones without the lock and then calls ra_unpin with
 * a verdict per block: > 0 checked and good, < 0 bad (marked failed: read again with
 * failover), 0 not checked (left as it was); verdict NULL: all good. */
bool client_ra_pin(struct weft_client *c, struct winode *wi, uint64_t off, size_t len,
	    struct ra_block **out, bool *checked, int max);
void client_ra_unpin(struct weft_client *c, struct winode *wi, struct ra_block **bs, int n,
	      const signed char *verdict);
/* Starts fetching the stripe units from the one holding `end` on that are not cached.
 * Drops wi->lock while sending. */
void client_ra_ahead(struct weft_client *c, struct winode *wi, uint64_t end);
/* Starts fetching block 0 alone (the open's prefetch). False if nothing started.
 * Drops wi->lock while sending. */
bool client_ra_first(struct weft_client *c, struct winode *wi);
/* The open's answer came: meta records stripe 0 as written, so a prefetched block 0
 * that found no object (read before that record was known, when a missing object reads
 * as a hole) is not served: it is read again with the record (a lost object is an
 * error, never zeros). */
void client_ra_first_written(struct weft_client *c, struct winode *wi);
/* The open that started ra_first answered and showed the file unchanged: block 0 may be
 * served (until then another handle's reads go to the stores). */
void client_ra_first_confirm(struct weft_client *c, struct winode *wi);
/* Drops every prefetched block (a write or truncate made them stale). */
void client_ra_drop(struct weft_client *c, struct winode *wi);
/* Drops every block and waits until no fetch is in flight (before freeing wi). */
void client_ra_quiesce(struct weft_client *c, struct winode *wi);
/* data.c, for readahead.c */
/* Sends one read of a whole piece; done(arg, err, f) runs on the loop thread with the
 * reply (the callee owns it and frees it with frame_free; NULL with err 0: the object
 * does not exist, all zeros), or an error. Its checksums are not checked yet: the loop
 * thread carries every connection, so that pass is left to the thread that uses the
 * data (data_read_verify). Returns 0 or -errno (done not called). */
int client_data_read_async(struct weft_client *c, struct winode *wi, uint64_t ino,
		    const struct weft_layout *l,
		    const struct stripe_piece *p,
		    void (*done)(void *arg, int err, struct frame *f), void *arg);
/* Checks a reply of client_data_read_async (a read of len bytes at obj_off): well formed, no
 * longer than asked, and its piece CRCs when the file system has checksums on; counts
 * its bytes. 0, -WEFT_ECHECKSUM or -EIO. */
int client_data_read_verify(struct weft_client *c, const struct frame *f, uint64_t obj_off,
		     uint32_t len);

/* session.c: targets this client could not reach */
/* Remembers that target could not be reached (connect failed or timed out, the
 * connection died under a request) for CLIENT_SUSPECT_MS; a read whose turn would go to
 * it starts on another serving member. Any thread. */
void client_suspect(struct weft_client *c, uint32_t target);
bool client_is_suspect(struct weft_client *c, uint32_t target);

#endif
