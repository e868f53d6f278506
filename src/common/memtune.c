#include "common/memtune.h"

#include <malloc.h>

void memtune(void)
{
	/* above the largest frame (16 MiB of bulk + checksums + header page) */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	/* the heap's free top is given back only beyond this */
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
}
