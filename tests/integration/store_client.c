/* store_client: a protocol-level test client of weft store. It speaks OBJ_* requests
 * straight to one store (no libweft), with the chain tables fetched from meta, and
 * prints one result line per command, so shell tests can check every reply.
 *
 *   store_client [-r REPLICAS] [-c CHAIN [-V VERSION]] KEY META STORE CMD ARGS...
 *   (-V: use that chain version without asking meta, e.g. while meta is stopped)
 *   write INO STRIPE OFF LEN SEED [badcrc|nocrc|sync]  -> "ok size=N" | "err CODE: detail"
 *   read INO STRIPE OFF LEN OUTFILE     (bytes received to OUTFILE, CRCs checked)
 *   truncate INO STRIPE SIZE | fsync INO STRIPE | stat INO STRIPE | delete INO
 *   list | stats | chain                (the chain used: "chain R/ID ver V members T,T,T")
 *   pattern SEED OFF LEN FILE           (no network: writes the expected bytes into FILE
 *                                        at OFF, like dd conv=notrunc)
 *   stream INO STRIPE COUNT BS INFLIGHT ACKFILE  (sequential writes, many in flight; each
 *                                        acknowledged offset appended to ACKFILE; stops
 *                                        at the first error, prints it, exit 1)
 *   verify INO STRIPE BS SEED ACKFILE   (every acknowledged block reads back intact)
 * Exit: 0 ok, 1 the request failed (the error is printed), 2 usage, 3 bad reply. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "proto/objlist.h"
#include "proto/proto.h"
#include "weft/err.h"

static struct loop *loop;
static struct weft_key key;
static struct rpc *meta, *store;
static struct weft_chain chain;
static uint32_t target;
static int want_replicas = 1;
static long want_chain = -1;
static long long want_ver = -1; /* -V: use (R, -c CHAIN, -V VER) without asking meta */

static uint8_t pat(uint64_t o, uint32_t seed)
{
	return (uint8_t)(((o * 2654435761u) >> 11) ^ seed ^ (o >> 20) ^ (o >> 40));
}

static void fill(uint8_t *p, uint64_t off, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(off + i, seed);
}


static int print_err(int rc, struct frame *rep)
{
	char detail[256] = "";
	uint32_t t = rep ? conn_error_detail(rep, detail, sizeof(detail)) : 0;
	printf("err %s (%d) target=%u: %s\n", weft_strerror(rc), rc, t, detail);
	fflush(stdout);
	return 1;
}

static int call(struct rpc *r, uint16_t op, struct wbuf *w, const struct iovec *v, int nv,
		struct frame **rep)
{
	return rpc_call(r, op, w, v, nv, 30000, rep);
}

static int load_chain(void)
{
	if (want_ver >= 0) {
		chain = (struct weft_chain){.id = (uint32_t)want_chain, .replicas = (uint8_t)want_replicas,
					    .version = (uint64_t)want_ver};
		return 0;
	}
	struct wbuf w;
	wbuf_init(&w);
	struct frame *rep = NULL;
	int rc = call(store, WEFT_OP_STORE_STATS, &w, NULL, 0, &rep);
	if (rc) {
		fprintf(stderr, "STORE_STATS: %s\n", weft_strerror(rc));
		frame_free(rep);
		return rc;
	}
	struct weft_msg_store_stats st;
	if (proto_store_stats_decode(rep->payload, rep->h.payload_len, &st, NULL))
		return -EPROTO;
	frame_free(rep);
	target = st.target;
	struct weft_chain_set set;
	rc = chain_set_fetch(meta, 30000, &set);
	if (rc) {
		fprintf(stderr, "chain tables: %s\n", weft_strerror(rc));
		return rc;
	}
	rc = -ENOENT;
	for (uint32_t i = 0; i < set.nchains[want_replicas - 1]; i++) {
		const struct weft_chain *c = &set.chains[want_replicas - 1][i];
		if (want_chain >= 0 ? c->id == (uint32_t)want_chain : c->members[0].target == target) {
			chain = *c;
			rc = 0;
			break;
		}
	}
	proto_chain_set_free(&set);
	if (rc)
		fprintf(stderr, "no chain of %d replicas %s target %u\n", want_replicas,
			want_chain >= 0 ? "with that id for" : "headed by", target);
	return rc;
}

static int do_write(uint64_t ino, uint32_t stripe, uint64_t off, size_t len, uint32_t seed,
		    const char *mode)
{
	uint8_t *buf = malloc(len ? len : 1);
	fill(buf, off, len, seed);
	struct weft_msg_obj_write *m = calloc(1, sizeof(*m));
	*m = (struct weft_msg_obj_write){.ino = ino, .stripe = stripe, .replicas = chain.replicas,
					 .chain = chain.id, .chain_ver = chain.version, .offset = off};
	if (!(mode && strcmp(mode, "nocrc") == 0))
		proto_crcs_compute_buf(buf, (uint32_t)(len), off, &m->crcs);
	if (mode && strcmp(mode, "badcrc") == 0 && m->crcs.n)
		m->crcs.v[m->crcs.n / 2] ^= 1;
	if (mode && strcmp(mode, "sync") == 0)
		m->flags = WEFT_WRITE_SYNC;
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_write_encode(&w, m);
	free(m);
	struct iovec v = {buf, len};
	struct frame *rep = NULL;
	int rc = call(store, WEFT_OP_OBJ_WRITE, &w, &v, len ? 1 : 0, &rep);
	free(buf);
	if (rc)
		rc = print_err(rc, rep);
	else {
		struct weft_msg_obj_written o;
		if (proto_obj_written_decode(rep->payload, rep->h.payload_len, &o, NULL))
			rc = 3;
		else
			printf("ok size=%" PRIu64 "\n", o.size);
	}
	frame_free(rep);
	return rc;
}

/* Reads into *out (malloc'd); returns 0, or prints the error and returns 1/3. */
static int read_obj(uint64_t ino, uint32_t stripe, uint64_t off, uint32_t len, uint8_t **out,
		    size_t *n, bool quiet)
{
	struct weft_msg_obj_read m = {.ino = ino, .stripe = stripe, .replicas = chain.replicas,
				      .chain = chain.id, .chain_ver = chain.version, .offset = off,
				      .len = len};
	struct wbuf w;
	wbuf_init(&w);
	proto_obj_read_encode(&w, &m);
	struct frame *rep = NULL;
	int rc = call(store, WEFT_OP_OBJ_READ, &w, NULL, 0, &rep);
	/* an old chain version (the stores heard of a change before meta's table reached
	 * us): refresh it and ask again, as libweft does */
	for (int k = 0; rc == -WEFT_ESTALECHAIN && want_ver < 0 && k < 50; k++) {
		frame_free(rep);
		rep = NULL;
		usleep(100 * 1000);
		if (load_chain() == 0)
			m.chain_ver = chain.version;
		wbuf_init(&w); /* the call took the last payload */
		proto_obj_read_encode(&w, &m);
		rc = call(store, WEFT_OP_OBJ_READ, &w, NULL, 0, &rep);
	}
	if (rc) {
		rc = quiet ? 1 : print_err(rc, rep);
		frame_free(rep);
		return rc;
	}
	struct weft_msg_obj_data *d = malloc(sizeof(*d));
	struct weft_crcs *want = malloc(sizeof(*want));
	if (proto_obj_data_decode(rep->payload, rep->h.payload_len, d, NULL) ||
	    rep->h.bulk_len > len) {
		printf("bad reply\n");
		rc = 3;
	} else {
		proto_crcs_compute_buf(rep->bulk, (uint32_t)(rep->h.bulk_len), off, want);
		if (want->n != d->crcs.n || memcmp(want->v, d->crcs.v, want->n * 4)) {
			printf("bad crcs in reply (%u pieces, store sent %u)\n", want->n, d->crcs.n);
			rc = 3;
		}
		*n = rep->h.bulk_len;
		*out = malloc(*n + 1);
		memcpy(*out, rep->bulk, *n);
	}
	free(d);
	free(want);
	frame_free(rep);
	return rc;
}

static int simple(uint16_t op, struct wbuf *w, const char *what)
{
	struct frame *rep = NULL;
	int rc = call(store, op, w, NULL, 0, &rep);
	if (rc) {
		rc = print_err(rc, rep);
	} else if (op == WEFT_OP_OBJ_TRUNCATE || op == WEFT_OP_OBJ_STAT) {
		struct weft_msg_obj_size o;
		if (proto_obj_size_decode(rep->payload, rep->h.payload_len, &o, NULL))
			rc = 3;
		else
			printf("ok size=%" PRIu64 "\n", o.size);
	} else {
		printf("ok %s\n", what);
	}
	frame_free(rep);
	return rc;
}

/* ---- stream ---- */

struct stream {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inflight, errors;
	FILE *ack;
	char first_err[400];
};

struct scall {
	struct stream *st;
	uint64_t off;
	uint8_t *buf;
};

static void stream_done(void *arg, int status, struct frame *rep)
{
	struct scall *k = arg;
	struct stream *st = k->st;
	pthread_mutex_lock(&st->lock);
	if (status == 0) {
		fprintf(st->ack, "%" PRIu64 "\n", k->off);
		fflush(st->ack);
	} else {
		if (!st->errors) {
			char detail[256] = "";
			uint32_t t = rep ? conn_error_detail(rep, detail, sizeof(detail)) : 0;
			snprintf(st->first_err, sizeof(st->first_err), "err %s (%d) target=%u: %s",
				 weft_strerror(status), status, t, detail);
		}
		st->errors++;
	}
	st->inflight--;
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
	frame_free(rep);
	free(k);
}

/* The bulk may still sit in the send queue when the reply (an early error) arrives:
 * its buffer is freed only when the connection releases it. */
static void stream_release(void *arg)
{
	free(arg);
}

static int do_stream(uint64_t ino, uint32_t stripe, long count, size_t bs, int inflight,
		     const char *ackpath)
{
	struct stream st = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	st.ack = fopen(ackpath, "w");
	if (!st.ack)
		return 2;
	struct conn *c;
	int rc = rpc_conn(store, &c);
	if (rc)
		return print_err(rc, NULL);
	long i;
	for (i = 0; i < count; i++) {
		pthread_mutex_lock(&st.lock);
		while (st.inflight >= inflight && !st.errors)
			pthread_cond_wait(&st.cond, &st.lock);
		bool stop = st.errors > 0;
		if (!stop)
			st.inflight++;
		pthread_mutex_unlock(&st.lock);
		if (stop)
			break;
		struct scall *k = malloc(sizeof(*k));
		k->st = &st;
		k->off = (uint64_t)i * bs;
		k->buf = malloc(bs);
		fill(k->buf, k->off, bs, (uint32_t)ino);
		struct weft_msg_obj_write *m = calloc(1, sizeof(*m));
		*m = (struct weft_msg_obj_write){.ino = ino, .stripe = stripe,
						 .replicas = chain.replicas, .chain = chain.id,
						 .chain_ver = chain.version, .offset = k->off};
		proto_crcs_compute_buf(k->buf, (uint32_t)(bs), k->off, &m->crcs);
		struct wbuf w;
		wbuf_init(&w);
		proto_obj_write_encode(&w, m);
		free(m);
		struct iovec v = {k->buf, bs};
		if (conn_call(c, WEFT_OP_OBJ_WRITE, &w, &v, 1, stream_release, k->buf, stream_done, k))
			stream_done(k, -ENOTCONN, NULL); /* the release has run */
	}
	pthread_mutex_lock(&st.lock);
	while (st.inflight > 0)
		pthread_cond_wait(&st.cond, &st.lock);
	pthread_mutex_unlock(&st.lock);
	conn_put(c);
	fclose(st.ack);
	printf("sent %ld writes, %d failed\n", i, st.errors);
	if (st.errors) {
		printf("%s\n", st.first_err);
		return 1;
	}
	return 0;
}

static int do_verify(uint64_t ino, uint32_t stripe, size_t bs, uint32_t seed, const char *ackpath)
{
	FILE *f = fopen(ackpath, "r");
	if (!f)
		return 2;
	uint8_t *want = malloc(bs);
	uint64_t off;
	long n = 0, bad = 0;
	while (fscanf(f, "%" SCNu64, &off) == 1) {
		uint8_t *got = NULL;
		size_t gn = 0;
		int rc = read_obj(ino, stripe, off, (uint32_t)bs, &got, &gn, false);
		fill(want, off, bs, seed);
		if (rc || gn != bs || memcmp(got, want, bs)) {
			printf("block at %" PRIu64 " is %s\n", off, rc ? "unreadable" : "wrong");
			bad++;
		}
		free(got);
		n++;
	}
	fclose(f);
	free(want);
	printf("verified %ld acknowledged blocks, %ld bad\n", n, bad);
	return bad ? 1 : 0;
}

static int pattern_file(uint32_t seed, uint64_t off, size_t len, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		return 2;
	uint8_t *b = malloc(len ? len : 1);
	fill(b, off, len, seed);
	ssize_t w = pwrite(fd, b, len, (off_t)off);
	free(b);
	close(fd);
	return w == (ssize_t)len ? 0 : 2;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "r:c:V:")) != -1) {
		if (opt == 'V')
			want_ver = atoll(optarg);
		else if (opt == 'r')
			want_replicas = atoi(optarg);
		else if (opt == 'c')
			want_chain = atol(optarg);
		else
			return 2;
	}
	argc -= optind;
	argv += optind;
	if (argc >= 5 && strcmp(argv[0], "pattern") == 0)
		return pattern_file((uint32_t)num(argv[1]), num(argv[2]), num(argv[3]), argv[4]);
	if (argc < 4 || want_replicas < 1 || want_replicas > 3) {
		fprintf(stderr, "usage: store_client [-r R] [-c CHAIN] KEY META STORE CMD ARGS...\n");
		return 2;
	}
	log_init("store_client", LOG_ERROR);
	char err[256];
	if (auth_key_load(argv[0], &key, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	loop_new(&loop);
	loop_start(loop);
	struct rpc_params mp = {.loop = loop, .key = &key, .addr = argv[1], .role = WEFT_ROLE_CLIENT,
				.name = "store_client"};
	struct rpc_params sp = mp;
	sp.addr = argv[2];
	/* deleting and listing objects is meta's, and a client's object requests need a
	 * capability (per file, from meta): with the cluster key this tool speaks to the
	 * store as meta */
	if (key.serial == 0 || strcmp(argv[3], "delete") == 0 || strcmp(argv[3], "list") == 0)
		sp.role = WEFT_ROLE_META;
	if (rpc_new(&mp, &meta) || rpc_new(&sp, &store))
		return 2;
	const char *cmd = argv[3];
	char **a = argv + 4;
	int na = argc - 4, rc;
	if (load_chain()) {
		rc = 1;
		goto out;
	}
	struct wbuf w;
	wbuf_init(&w);
	if (strcmp(cmd, "write") == 0 && na >= 5) {
		rc = do_write(num(a[0]), (uint32_t)num(a[1]), num(a[2]), num(a[3]), (uint32_t)num(a[4]),
			      na > 5 ? a[5] : NULL);
	} else if (strcmp(cmd, "read") == 0 && na == 5) {
		uint8_t *got = NULL;
		size_t n = 0;
		rc = read_obj(num(a[0]), (uint32_t)num(a[1]), num(a[2]), (uint32_t)num(a[3]), &got, &n,
			      false);
		if (rc == 0) {
			FILE *f = fopen(a[4], "w");
			if (!f || fwrite(got, 1, n, f) != n)
				rc = 2;
			if (f)
				fclose(f);
			printf("ok n=%zu\n", n);
		}
		free(got);
	} else if (strcmp(cmd, "truncate") == 0 && na == 3) {
		struct weft_msg_obj_truncate m = {.ino = num(a[0]), .stripe = (uint32_t)num(a[1]),
						  .replicas = chain.replicas, .chain = chain.id,
						  .chain_ver = chain.version, .size = num(a[2])};
		proto_obj_truncate_encode(&w, &m);
		rc = simple(WEFT_OP_OBJ_TRUNCATE, &w, "");
	} else if (strcmp(cmd, "fsync") == 0 && na == 2) {
		struct weft_msg_obj_sync m = {.ino = num(a[0]), .stripe = (uint32_t)num(a[1]),
					      .replicas = chain.replicas, .chain = chain.id,
					      .chain_ver = chain.version};
		proto_obj_sync_encode(&w, &m);
		rc = simple(WEFT_OP_OBJ_FSYNC, &w, "synced");
	} else if (strcmp(cmd, "stat") == 0 && na == 2) {
		struct weft_msg_obj_id m = {.ino = num(a[0]), .stripe = (uint32_t)num(a[1])};
		proto_obj_id_encode(&w, &m);
		rc = simple(WEFT_OP_OBJ_STAT, &w, "synced");
	} else if (strcmp(cmd, "delete") == 0 && na == 1) {
		struct weft_msg_obj_delete m = {.ino = num(a[0])};
		proto_obj_delete_encode(&w, &m);
		rc = simple(WEFT_OP_OBJ_DELETE, &w, "deleted");
	} else if (strcmp(cmd, "list") == 0) {
		struct weft_msg_obj_list m = {.max = 1000};
		proto_obj_list_encode(&w, &m);
		struct frame *rep = NULL;
		rc = call(store, WEFT_OP_OBJ_LIST, &w, NULL, 0, &rep);
		struct weft_msg_obj_list_reply r;
		if (rc)
			rc = print_err(rc, rep);
		else if (proto_obj_list_reply_decode(rep->payload, rep->h.payload_len, &r, NULL) ||
			 !proto_obj_recs_fit(rep->h.bulk_len, r.count))
			rc = 3;
		else
			for (uint32_t i = 0; i < r.count; i++) {
				struct proto_obj_rec o;
				proto_obj_rec_get(rep->bulk, i, &o);
				printf("%" PRIu64 " %u %" PRIu64 "\n", o.ino, o.stripe, o.length);
			}
		frame_free(rep);
	} else if (strcmp(cmd, "stats") == 0) {
		struct frame *rep = NULL;
		rc = call(store, WEFT_OP_STORE_STATS, &w, NULL, 0, &rep);
		struct weft_msg_store_stats st;
		if (rc == 0 && proto_store_stats_decode(rep->payload, rep->h.payload_len, &st, NULL) == 0)
			printf("target=%u capacity=%" PRIu64 " free=%" PRIu64 " bytes_read=%" PRIu64
			       " bytes_written=%" PRIu64 " ops_read=%" PRIu64 " ops_written=%" PRIu64 "\n",
			       st.target, st.capacity, st.free, st.bytes_read, st.bytes_written,
			       st.ops_read, st.ops_written);
		else
			rc = print_err(rc ? rc : -EPROTO, rep);
		frame_free(rep);
	} else if (strcmp(cmd, "chain") == 0) {
		printf("chain %u/%u ver %" PRIu64 " members", chain.replicas, chain.id, chain.version);
		for (int i = 0; i < chain.nmembers; i++)
			printf("%c%u:%u", i ? ',' : ' ', chain.members[i].target, chain.members[i].state);
		printf("\n");
		rc = 0;
	} else if (strcmp(cmd, "stream") == 0 && na == 6) {
		rc = do_stream(num(a[0]), (uint32_t)num(a[1]), (long)num(a[2]), num(a[3]),
			       (int)num(a[4]), a[5]);
	} else if (strcmp(cmd, "verify") == 0 && na == 5) {
		rc = do_verify(num(a[0]), (uint32_t)num(a[1]), num(a[2]), (uint32_t)num(a[3]), a[4]);
	} else {
		fprintf(stderr, "store_client: bad command or arguments: %s\n", cmd);
		rc = 2;
	}
	wbuf_free(&w);
out:
	fflush(stdout);
	rpc_free(store);
	rpc_free(meta);
	loop_free(loop);
	return rc;
}
