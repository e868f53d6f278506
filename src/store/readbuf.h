/* Buffers of reads' replies: page-aligned (for O_DIRECT), the common size (up to one
 * stripe unit of 1 MiB) kept for the next read instead of given back to malloc.
 *
 * DESIGN: one process-wide LIFO of at most STORE_READBUF_KEEP buffers of
 * STORE_READBUF_SIZE bytes under a mutex. A buffer taken again is one whose pages are
 * mapped and were recently used, so the disk's DMA into it (and the pinning of its pages
 * for O_DIRECT) faults nothing in. Larger reads allocate and free as before.
 *
 * Threads: any. The LIFO outlives every store of the process (a reply's buffer may be
 * released after its store stopped). */
#ifndef WEFT_STORE_READBUF_H
#define WEFT_STORE_READBUF_H

#include <stddef.h>

#define STORE_READBUF_SIZE (1u << 20)
#define STORE_READBUF_KEEP 16

/* A page-aligned buffer of at least len (> 0) bytes, or NULL (out of memory). Give it
 * back with store_readbuf_put, never free(). */
void *store_readbuf_get(size_t len);
/* Gives back a buffer of store_readbuf_get (of len bytes, as asked); NULL is a no-op.
 */
void store_readbuf_put(void *buf, size_t len);
/* conn_release_fn for a buffer of STORE_READBUF_SIZE or less taken with
 * store_readbuf_get: keeps it for the next read. */
void store_readbuf_release_small(void *buf);

#endif
