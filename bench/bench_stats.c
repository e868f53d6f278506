/* bench_stats: the cost of counting one request (stats_op with a latency, as conn.c does
 * for each request served and each call made), from 1 and 2 threads at once, in ns. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/stats.h"
#include "proto/proto.h"

#define N 20000000ull

static void *hammer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < N; i++) {
		uint64_t t0 = stats_now_ns();
		stats_op(STATS_SERVED, WEFT_OP_OBJ_WRITE, 0, stats_now_ns() - t0 + 1000 * (i & 1023),
			 1 << 20, 64);
	}
	return NULL;
}

int main(void)
{
	for (int threads = 1; threads <= 2; threads++) {
		pthread_t t[2];
		uint64_t t0 = stats_now_ns();
		for (int i = 0; i < threads; i++)
			pthread_create(&t[i], NULL, hammer, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		double ns = (double)(stats_now_ns() - t0) / (double)N;
		printf("threads %d: %.1f ns per counted request (two clock reads included)\n", threads, ns);
	}
	char *j = stats_json();
	printf("snapshot: %zu bytes of JSON\n", j ? strlen(j) : 0);
	free(j);
	return 0;
}
