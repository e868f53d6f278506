/* Leases: which client session may cache what, in meta's memory (soft state).
 *
 * DESIGN: a lease is (inode, session, expiry). A client holding one may let its kernel
 * cache the inode's attributes and pages, and, for a directory, the names (positive and
 * negative) under it, until the expiry. Meta grants one with every reply that hands out
 * attributes (LOOKUP grants the parent too, for the name), for lease_ms. An open pins
 * the lease of its inode until the release (the kernel keeps an open file's pages).
 * A mutation that would make a holder's cache wrong is parked until every other
 * session holding a lease on the inodes it changes has given it back (recall.c).
 *
 * While a mutation on an inode is parked or committing, the inode is "busy": meta
 * grants no lease on it (lease 0), since the reply may carry what the mutation is about
 * to change.
 *
 * The table also binds each client connection to its session (SESSION_OPEN and
 * SESSION_BEAT bind it), so requests that do not name their session (LOOKUP, GETATTR)
 * get leases, and remembers sessions evicted for not answering a recall: their
 * connections are fenced (mutations refused with WEFT_EEVICTED) until they open a new
 * session.
 *
 * Threads: every function takes the table's lock. */
#ifndef WEFT_META_LEASE_H
#define WEFT_META_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct meta_leases;

int meta_leases_new(uint32_t lease_ms, struct meta_leases **out);
void meta_leases_free(struct meta_leases *l);
uint32_t meta_leases_ms(const struct meta_leases *l);

/* Connection <-> session. bind takes a reference to c; unbind (on close) drops it. */
void meta_leases_bind(struct meta_leases *l, struct conn *c, uint64_t session);
void meta_leases_unbind(struct meta_leases *l, struct conn *c);
/* The session c is bound to (0: none); *fenced: its session was evicted. */
uint64_t meta_leases_session_of(struct meta_leases *l, struct conn *c, bool *fenced);
/* A connection of session (a new reference), or NULL. */
struct conn *meta_leases_conn_of(struct meta_leases *l, uint64_t session);

/* session answers recalls (SESSION_OPEN with WEFT_SESSION_RECALLS): only such sessions
 * get leases, so that a client that cannot give one back never holds up a mutation.
 * Forgotten with the session (meta_leases_forget). */
void meta_leases_recaller(struct meta_leases *l, uint64_t session);

/* Grants session a lease on ino; returns its length in ms, 0 when none is granted
 * (session 0 or not a recaller, ino busy). pin: an open (held until meta_leases_unpin). */
uint32_t meta_leases_grant(struct meta_leases *l, uint64_t session, uint64_t ino, bool pin,
			   uint64_t now_ms);
/* Renews session's lease on ino for lease_ms, only if it is still live by its expiry
 * (a pin alone does not count: a lapsed lease may have missed a change made without a
 * recall) and ino is not busy, or busy with session's own mutations only (session holds
 * the claim on it); returns the ms granted, 0 when not renewed (the lease stays as it
 * was). A client that keeps a directory's names complete under its lease
 * (libweft's lease.c) is told of its creates' renewals this way, never of a new lease
 * over a gap. */
uint32_t meta_leases_renew(struct meta_leases *l, uint64_t session, uint64_t ino,
			   uint64_t now_ms);
void meta_leases_unpin(struct meta_leases *l, uint64_t session, uint64_t ino);
/* session made directory ino (MKDIR with WEFT_CREATE_CLAIM) and may create files in it
 * without waiting for meta (libweft's acreate.c): until the claim ends, no other session
 * is granted a lease on ino, and another session's read of ino or of a name in it, or
 * mutation in it, takes the claim back first (meta_leases_claim_take, then a RECALL the
 * claimant answers once its creates there are answered: recall.c). The claim lasts as
 * long as session's lease on ino (renewals extend it), at least lease_ms from now. */
void meta_leases_claim(struct meta_leases *l, uint64_t session, uint64_t ino, uint64_t now_ms);
/* The session other than except holding a live claim on ino, which ends; 0 if none. */
uint64_t meta_leases_claim_take(struct meta_leases *l, uint64_t ino, uint64_t except,
				uint64_t now_ms);
/* session created ino with WEFT_CREATE_WB and holds it open (pinned): it may keep the
 * file's chmod/chown/utimes until its close. Until then (the last unpin), another
 * session's GETATTR or LOOKUP of ino recalls it first (recall.c, meta_recall_read).
 * wb_take returns such a session other than except, and forgets its claim (after the
 * recall the client stops buffering for the file); 0 if none. */
void meta_leases_wb_claim(struct meta_leases *l, uint64_t session, uint64_t ino);
uint64_t meta_leases_wb_take(struct meta_leases *l, uint64_t ino, uint64_t except);
/* Sessions other than except holding a live lease on ino, up to max into out; returns
 * how many. */
size_t meta_leases_holders(struct meta_leases *l, uint64_t ino, uint64_t except,
			   uint64_t now_ms, uint64_t *out, size_t max);
/* Marks ino busy (delta +1) or not (-1). */
void meta_leases_busy(struct meta_leases *l, uint64_t ino, int delta);
/* The holder gave its lease on ino back (its pin stays: the file is still open). */
void meta_leases_drop(struct meta_leases *l, uint64_t session, uint64_t ino);
/* Drops every lease of session; evicted: remember it and fence its connections. */
void meta_leases_forget(struct meta_leases *l, uint64_t session, bool evicted);
bool meta_leases_evicted(struct meta_leases *l, uint64_t session);
/* The newest evicted sessions, at most max, into out; returns how many; *total: how many
 * were ever evicted (grows with each eviction). */
size_t meta_leases_evicted_list(struct meta_leases *l, uint64_t *out, size_t max,
				size_t *total);
/* Frees expired leases (a periodic sweep). */
void meta_leases_sweep(struct meta_leases *l, uint64_t now_ms);
size_t meta_leases_count(struct meta_leases *l);

#endif
