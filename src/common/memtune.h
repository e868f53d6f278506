/* Process-wide allocator settings for weft's daemons, mount and benchmarks. */
#ifndef WEFT_COMMON_MEMTUNE_H
#define WEFT_COMMON_MEMTUNE_H

/* Keeps freed request buffers (up to 16 MiB + a page each) in the heap for reuse instead
 * of returning them to the kernel: glibc by default maps every such buffer fresh and
 * unmaps it on free, so each MiB moved costs 256 page faults and zeroed pages, which
 * profiles of weft store showed as its largest cost after the socket copy (docs/
 * PERFORMANCE.md). Call once at start, before threads. */
void memtune(void);

#endif
