/* Reply buffers of reads, the common size reused (see readbuf.h). */
#include "store/readbuf.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *kept[STORE_READBUF_KEEP]; /* guarded by lock */
static unsigned nkept;                 /* guarded by lock */

void *store_readbuf_get(size_t len)
{
	if (len > STORE_READBUF_SIZE)
		return aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	void *b = NULL;
	pthread_mutex_lock(&lock);
	if (nkept)
		b = kept[--nkept];
	pthread_mutex_unlock(&lock);
	return b ? b : aligned_alloc(4096, STORE_READBUF_SIZE);
}

void store_readbuf_release_small(void *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&lock);
	if (nkept < STORE_READBUF_KEEP) {
		kept[nkept++] = buf;
		buf = NULL;
	}
	pthread_mutex_unlock(&lock);
	free(buf);
}

void store_readbuf_put(void *buf, size_t len)
{
	if (len > STORE_READBUF_SIZE)
		free(buf);
	else
		store_readbuf_release_small(buf);
}
