/* Striping math: where a file's bytes live. Pure functions, any thread.
 *
 * Block b (bytes [b*su, (b+1)*su)) lives in stripe s = b % stripe_count, at object offset
 * (b / stripe_count) * su + (offset within the block); stripe s is the object (ino, s) on
 * every member of chain (first_chain + s) % chain_count of the table for `replicas`. */
#ifndef WEFT_STRIPE_H
#define WEFT_STRIPE_H

#include <stdint.h>

#include "weft/types.h"

/* One contiguous piece of a file range that lies in one block. */
struct stripe_piece {
	uint64_t file_off;  /* where the piece starts in the file */
	uint64_t obj_off;   /* where it starts in its object */
	uint32_t len;
	uint32_t stripe;
	uint32_t chain;     /* chain id in the table for layout->replicas */
	uint64_t block;     /* file block index */
};

/* Maps the piece of [off, off+len) that starts at off: fills p and returns its length
 * (at most to the end of off's block). len must be > 0. */
uint32_t stripe_map(const struct weft_layout *l, uint64_t off, uint64_t len, struct stripe_piece *p);
/* Length of stripe s's object when the file is `size` bytes long. */
uint64_t stripe_object_len(const struct weft_layout *l, uint32_t s, uint64_t size);
/* Chain of stripe s. */
uint32_t stripe_chain(const struct weft_layout *l, uint32_t s);
/* The object number stores know stripe s by: s in generation 0, s + gen * stride after
 * a migrate (weft/types.h). Masks (written, sent) stay indexed by s. */
uint32_t stripe_object(const struct weft_layout *l, uint32_t s);

#endif
