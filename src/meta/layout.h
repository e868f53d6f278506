/* File layouts: choosing a new file's layout from its directory's default, and
 * setstripe/getstripe.
 *
 * A new regular file gets: stripe_unit and replicas of the default; chain_count = the
 * size of the chain table for replicas now; stripe_count = the default's, clamped to
 * chain_count, 0 meaning all chains; first_chain from a persistent round-robin cursor
 * per replica count (superblock), so files spread evenly over the chains, except when
 * a file is striped over fewer chains than there are and the chains' free space is
 * uneven (the roomiest window of chains has over 20% more room than the least roomy,
 * a chain's room being its fullest live member's free bytes): then the first chain is
 * drawn with probability proportional to the room of the window it starts (a store
 * added to full ones takes most new files). A file on all chains has no choice.
 *
 * Threads: plain functions on a caller's write txn. */
#ifndef WEFT_META_LAYOUT_H
#define WEFT_META_LAYOUT_H

#include <stdbool.h>

#include "meta/ns.h"

/* Chooses a layout for a new file from dflt (a directory default).
 * Errors: -EINVAL when the table for dflt->replicas does not exist: fewer distinct
 * storage nodes have registered than the replicas asked for (including none at all);
 * -EINVAL when dflt is malformed. */
int meta_layout_choose(struct meta_db *db, MDB_txn *txn, const struct weft_layout *dflt,
		       struct weft_layout *out);
struct meta_super;
/* As meta_layout_choose, advancing the round-robin cursor in sb, which the caller writes
 * back (a create updates the superblock once for its layout and its inode number).
 * Writes nothing itself. */
int meta_layout_pick(struct meta_db *db, MDB_txn *txn, struct meta_super *sb,
		     const struct weft_layout *dflt, struct weft_layout *out);

/* True when l is acceptable as a default: stripe_unit a power of two within
 * [WEFT_STRIPE_UNIT_MIN, WEFT_STRIPE_UNIT_MAX], replicas 1..WEFT_REPLICAS_MAX. */
bool meta_layout_valid(const struct weft_layout *l);

/* setstripe: on a directory sets its default (stripe_unit, stripe_count, replicas of
 * req; first_chain and chain_count ignored); on a regular file chooses a new layout
 * from req, only while the file is empty (size 0), like lfs setstripe.
 * Owner or root only. Errors: -EPERM not owner; -EINVAL bad req, or the table for
 * req->replicas does not exist; -EBUSY file has data; -ENOTSUP other types; -ESTALE. */
int meta_layout_setstripe(const struct meta_ctx *c, struct meta_ref ref,
			  const struct weft_layout *req, struct weft_layout *out);
/* getstripe: a file's layout or a directory's default (meta_ns_getlayout). */
int meta_layout_getstripe(const struct meta_ctx *c, struct meta_ref ref, struct weft_layout *out);

#endif
