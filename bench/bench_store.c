/* bench_store: one weft store's write and read throughput over loopback, as a client
 * sees it: sequential requests of --bs bytes to --objects objects round-robin, --inflight
 * requests outstanding on one connection, CRCs computed and checked by the client as
 * libweft does (unless the file system has checksums off: --nocrc).
 *
 * usage: bench_store KEY META STORE --bs BYTES --total BYTES [--inflight N]
 *                    [--objects N] [--ino BASE] [--nocrc] write|read
 * write: the writes, then an OBJ_FSYNC of every object (durable, like dd conv=fsync),
 *        all inside the timing. read: reads the same objects back.
 * Prints one line: "write|read BS inflight N: X MB/s (Y s, Z MiB, client cpu C s)". bench/bench_store.sh runs
 * it beside dd on the same disk (see docs/PERFORMANCE.md). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/crc.h"
#include "common/log.h"
#include "common/memtune.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "proto/proto.h"
#include "weft/err.h"

static struct weft_chain chain;
static bool nocrc;
static uint64_t bs;
static int inflight = 8;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}


struct state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding, errors, first_err, bad;
};

struct call {
	struct state *st;
	uint64_t off;
	uint8_t *buf; /* reads: NULL */
};

static void done(void *arg, int status, struct frame *rep)
{
	struct call *k = arg;
	struct state *st = k->st;
	bool bad = false;
	if (status == 0 && !k->buf) {
		struct weft_msg_obj_data *d = malloc(sizeof(*d));
		struct weft_crcs *w = malloc(sizeof(*w));
		if (proto_obj_data_decode(rep->payload, rep->h.payload_len, d, NULL) ||
		    rep->h.bulk_len != bs)
			bad = true;
		else if (!nocrc) {
			proto_crcs_compute_buf(rep->bulk, (uint32_t)(rep->h.bulk_len), k->off, w);
			bad = w->n != d->crcs.n || memcmp(w->v, d->crcs.v, w->n * 4) != 0;
		}
		free(d);
		free(w);
	}
	frame_free(rep);
	pthread_mutex_lock(&st->lock);
	if (status && !st->errors++)
		st->first_err = status;
	st->bad += bad;
	st->outstanding--;
	pthread_cond_signal(&st->cond);
	pthread_mutex_unlock(&st->lock);
	free(k);
}

static int load_chain(struct rpc *meta, struct rpc *store)
{
	struct frame *rep = NULL;
	int rc = rpc_call(store, WEFT_OP_STORE_STATS, NULL, NULL, 0, 10000, &rep);
	struct weft_msg_store_stats ss;
	if (rc || proto_store_stats_decode(rep->payload, rep->h.payload_len, &ss, NULL)) {
		fprintf(stderr, "bench_store: STORE_STATS: %s\n", weft_strerror(rc ? rc : -EPROTO));
		return 1;
	}
	frame_free(rep);
	struct weft_chain_set set;
	rc = chain_set_fetch(meta, 10000, &set);
	if (rc) {
		fprintf(stderr, "bench_store: chain tables: %s\n", weft_strerror(rc));
		return 1;
	}
	rc = 1;
	for (uint32_t i = 0; i < set.nchains[0]; i++)
		if (set.chains[0][i].members[0].target == ss.target) {
			chain = set.chains[0][i];
			rc = 0;
		}
	proto_chain_set_free(&set);
	if (rc)
		fprintf(stderr, "bench_store: no chain of 1 replica on target %u\n", ss.target);
	return rc;
}

int main(int argc, char **argv)
{
	memtune();
	uint64_t total = 1ull << 30, ino = 1000;
	int objects = 4;
	static const struct option opts[] = {
		{"bs", required_argument, NULL, 'b'}, {"total", required_argument, NULL, 't'},
		{"inflight", required_argument, NULL, 'i'}, {"objects", required_argument, NULL, 'o'},
		{"ino", required_argument, NULL, 'n'}, {"nocrc", no_argument, NULL, 'c'}, {0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': bs = strtoull(optarg, NULL, 0); break;
		case 't': total = strtoull(optarg, NULL, 0); break;
		case 'i': inflight = atoi(optarg); break;
		case 'o': objects = atoi(optarg); break;
		case 'n': ino = strtoull(optarg, NULL, 0); break;
		case 'c': nocrc = true; break;
		default: return 2;
		}
	}
	if (argc - optind != 4 || bs == 0 || bs > WEFT_BULK_MAX || objects < 1 || inflight < 1) {
		fprintf(stderr, "usage: bench_store KEY META STORE --bs N --total N [--inflight N] "
				"[--objects N] [--ino N] [--nocrc] write|read\n");
		return 2;
	}
	bool writing = strcmp(argv[optind + 3], "write") == 0;
	log_init("bench_store", LOG_ERROR);
	struct weft_key key;
	char err[256];
	if (auth_key_load(argv[optind], &key, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	struct loop *loop;
	loop_new(&loop);
	loop_start(loop);
	struct rpc *meta, *store;
	struct rpc_params p = {.loop = loop, .key = &key, .addr = argv[optind + 1],
			       .role = WEFT_ROLE_CLIENT, .name = "bench_store"};
	rpc_new(&p, &meta);
	p.addr = argv[optind + 2];
	/* a client's object requests need a capability per file: with the cluster key this
	 * benchmark speaks to the store as meta, which is exempt */
	if (key.serial == 0)
		p.role = WEFT_ROLE_META;
	rpc_new(&p, &store);
	if (load_chain(meta, store))
		return 1;
	struct conn *c;
	int rc = rpc_conn(store, &c);
	if (rc) {
		fprintf(stderr, "bench_store: %s: %s\n", argv[optind + 2], weft_strerror(rc));
		return 1;
	}
	uint64_t nreq = total / bs;
	/* one data buffer per in-flight slot, filled once */
	uint8_t **bufs = calloc((size_t)inflight, sizeof(*bufs));
	for (int i = 0; i < inflight; i++) {
		bufs[i] = malloc(bs);
		for (uint64_t j = 0; j < bs; j++)
			bufs[i][j] = (uint8_t)(j * 131 + (uint64_t)i * 7 + (j >> 12));
	}
	struct state st = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct weft_msg_obj_write *wm = calloc(1, sizeof(*wm));
	double t0 = now();
	for (uint64_t r = 0; r < nreq; r++) {
		pthread_mutex_lock(&st.lock);
		while (st.outstanding >= inflight)
			pthread_cond_wait(&st.cond, &st.lock);
		st.outstanding++;
		pthread_mutex_unlock(&st.lock);
		uint64_t obj = ino + r % (uint64_t)objects, off = (r / (uint64_t)objects) * bs;
		struct call *k = calloc(1, sizeof(*k));
		k->st = &st;
		k->off = off;
		struct wbuf w;
		wbuf_init(&w);
		if (writing) {
			k->buf = bufs[r % (uint64_t)inflight];
			*wm = (struct weft_msg_obj_write){.ino = obj, .replicas = 1, .chain = chain.id,
							  .chain_ver = chain.version, .offset = off};
			if (!nocrc)
				proto_crcs_compute_buf(k->buf, (uint32_t)(bs), off, &wm->crcs);
			proto_obj_write_encode(&w, wm);
			struct iovec v = {k->buf, bs};
			rc = conn_call(c, WEFT_OP_OBJ_WRITE, &w, &v, 1, NULL, NULL, done, k);
		} else {
			struct weft_msg_obj_read m = {.ino = obj, .replicas = 1, .chain = chain.id,
						      .chain_ver = chain.version, .offset = off,
						      .len = (uint32_t)bs};
			proto_obj_read_encode(&w, &m);
			rc = conn_call(c, WEFT_OP_OBJ_READ, &w, NULL, 0, NULL, NULL, done, k);
		}
		if (rc)
			done(k, rc, NULL);
	}
	pthread_mutex_lock(&st.lock);
	while (st.outstanding > 0)
		pthread_cond_wait(&st.cond, &st.lock);
	pthread_mutex_unlock(&st.lock);
	for (int o = 0; writing && o < objects && !st.errors; o++) {
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_obj_sync m = {.ino = ino + (uint64_t)o, .replicas = 1, .chain = chain.id,
					      .chain_ver = chain.version};
		proto_obj_sync_encode(&w, &m);
		struct frame *rep = NULL;
		rc = conn_call_sync(c, WEFT_OP_OBJ_FSYNC, &w, NULL, 0, 60000, &rep);
		frame_free(rep);
		if (rc && !st.errors++)
			st.first_err = rc;
	}
	double secs = now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
	printf("%s bs %llu KiB inflight %d%s: %.0f MB/s (%.2f s, %llu MiB, client cpu %.2f s)",
	       writing ? "write" : "read", (unsigned long long)(bs >> 10), inflight,
	       nocrc ? " nocrc" : "", (double)(nreq * bs) / secs / 1e6, secs,
	       (unsigned long long)(nreq * bs >> 20), cpu);
	if (st.errors || st.bad)
		printf("  %d errors (first: %s), %d bad replies", st.errors,
		       weft_strerror(st.first_err), st.bad);
	printf("\n");
	free(wm);
	for (int i = 0; i < inflight; i++)
		free(bufs[i]);
	free(bufs);
	conn_put(c);
	rpc_free(store);
	rpc_free(meta);
	loop_free(loop);
	return st.errors || st.bad ? 1 : 0;
}
