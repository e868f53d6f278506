/* The inodes of the last CHANGES_RING changes, by a running count: whether an inode
 * changed since the count was read (all of them are taken as changed once the ring has
 * wrapped past it). The caller holds the lock that guards it. */
#ifndef WEFT_CHANGES_H
#define WEFT_CHANGES_H

#include <stdbool.h>
#include <stdint.h>

#define CHANGES_RING 256

struct changes {
	uint64_t n; /* changes ever */
	uint64_t ino[CHANGES_RING];
};

static inline void changes_add(struct changes *ch, uint64_t ino)
{
	ch->ino[ch->n++ % CHANGES_RING] = ino;
}

static inline bool changes_since(const struct changes *ch, uint64_t at, uint64_t ino)
{
	if (ch->n - at > CHANGES_RING)
		return true;
	for (uint64_t k = at; k < ch->n; k++)
		if (ch->ino[k % CHANGES_RING] == ino)
			return true;
	return false;
}

#endif
