/* weft ping ADDR: round trips (and optional bulk echoes) to any weft daemon, with many
 * requests in flight; checks reachability, the cluster key, and the transport's speed. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/rpc.h"
#include "weft/err.h"

struct ping_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding, done, errors, bad_data;
	int first_err;
	uint64_t *lat_ns;
	size_t size;
	const uint8_t *pattern;
};

struct ping_call {
	struct ping_state *s;
	uint64_t start_ns, seq;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void call_done(void *arg, int status, struct frame *reply)
{
	struct ping_call *k = arg;
	struct ping_state *s = k->s;
	uint64_t lat = now_ns() - k->start_ns;
	bool bad = false;
	if (status == 0 && s->size) {
		bad = !reply || reply->h.bulk_len != s->size || memcmp(reply->bulk, s->pattern, s->size);
	}
	pthread_mutex_lock(&s->lock);
	if (status) {
		s->errors++;
		if (!s->first_err)
			s->first_err = status;
	}
	if (bad)
		s->bad_data++;
	s->lat_ns[k->seq] = lat;
	s->outstanding--;
	s->done++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	frame_free(reply);
	free(k);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int run(int argc, char **argv)
{
	struct cluster_opts co = {0};
	long count = 1000, inflight = 1;
	uint64_t size = 0;
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'}, {"dir", required_argument, NULL, 'd'},
		{"count", required_argument, NULL, 'c'}, {"inflight", required_argument, NULL, 'i'},
		{"size", required_argument, NULL, 's'}, {0}};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "c:i:s:", opts, NULL)) != -1) {
		switch (ch) {
		case 'k': co.key = optarg; break;
		case 'd': co.dir = optarg; break;
		case 'c': count = strtol(optarg, NULL, 10); break;
		case 'i': inflight = strtol(optarg, NULL, 10); break;
		case 's':
			if (cli_parse_size(optarg, &size) || size > WEFT_BULK_MAX)
				return cli_usage_error("ping", "--size %s: not a size up to 16M", optarg);
			break;
		default: return cli_usage_error("ping", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (count <= 0 || inflight <= 0 || inflight > 4096)
		return cli_usage_error("ping", "--count must be > 0 and --inflight 1..4096");
	char addrbuf[256];
	const char *addr = optind < argc ? argv[optind] : cluster_meta_addr(&co, addrbuf, sizeof(addrbuf));
	if (optind < argc - 1)
		return cli_usage_error("ping", "unexpected argument '%s'", argv[optind + 1]);
	struct weft_key key;
	if (cluster_load_key("ping", &co, &key))
		return 1;
	log_init("ping", LOG_WARN);

	struct loop *loop;
	struct rpc *r;
	struct conn *c;
	if (loop_new(&loop) || loop_start(loop))
		return cli_fail("ping", "cannot start event loop");
	struct rpc_params rp = {.loop = loop, .key = &key, .addr = addr, .role = WEFT_ROLE_ADMIN,
				.name = "weft-ping"};
	if (rpc_new(&rp, &r))
		return cli_usage_error("ping", "bad address '%s'", addr);
	int err = rpc_conn(r, &c);
	if (err) {
		rpc_free(r);
		loop_free(loop);
		return cli_fail("ping", "%s: %s", addr, weft_strerror(err));
	}

	struct ping_state s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
			       .size = size};
	s.lat_ns = calloc((size_t)count, sizeof(uint64_t));
	uint8_t *pattern = malloc(size ? size : 1);
	for (uint64_t i = 0; i < size; i++)
		pattern[i] = (uint8_t)(i * 2654435761u >> 13);
	s.pattern = pattern;
	uint64_t t0 = now_ns();
	pthread_mutex_lock(&s.lock);
	for (long i = 0; i < count; i++) {
		while (s.outstanding >= inflight)
			pthread_cond_wait(&s.cond, &s.lock);
		s.outstanding++;
		pthread_mutex_unlock(&s.lock);
		struct ping_call *k = malloc(sizeof(*k));
		k->s = &s;
		k->seq = (uint64_t)i;
		k->start_ns = now_ns();
		struct wbuf w;
		wbuf_init(&w);
		int rc;
		if (size) {
			struct iovec v = {pattern, size};
			rc = conn_call(c, WEFT_OP_ECHO, NULL, &v, 1, NULL, NULL, call_done, k);
		} else {
			struct weft_msg_ping m = {.token = (uint64_t)i};
			proto_ping_encode(&w, &m);
			rc = conn_call(c, WEFT_OP_PING, &w, NULL, 0, NULL, NULL, call_done, k);
		}
		if (rc)
			call_done(k, rc, NULL);
		pthread_mutex_lock(&s.lock);
	}
	while (s.done < count)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	double secs = (double)(now_ns() - t0) / 1e9;
	qsort(s.lat_ns, (size_t)count, sizeof(uint64_t), cmp_u64);
	printf("%s: %ld %s, %d errors, %d corrupt, %.0f ops/s, latency p50 %.1f us p99 %.1f us",
	       addr, count, size ? "echoes" : "pings", s.errors, s.bad_data, (double)count / secs,
	       (double)s.lat_ns[count / 2] / 1e3, (double)s.lat_ns[(count * 99) / 100] / 1e3);
	if (size)
		printf(", %.1f MB/s each way", (double)size * (double)count / secs / 1e6);
	printf("\n");
	int rc = s.errors || s.bad_data ? 1 : 0;
	if (s.errors)
		fprintf(stderr, "weft ping: first error: %s\n", weft_strerror(s.first_err));
	conn_put(c);
	rpc_free(r);
	loop_free(loop);
	free(s.lat_ns);
	free(pattern);
	return rc;
}

const struct cli_verb cmd_ping = {
	.name = "ping",
	.summary = "round trips and bulk echoes to a weft daemon",
	.usage = "weft ping [ADDR] [--count N] [--inflight N] [--size BYTES] [--key FILE | --dir STATE]\n\n"
		 "Authenticates to the daemon at ADDR (default: meta of --dir, or 127.0.0.1:7070)\n"
		 "and sends N pings, or N bulk echoes of BYTES each verified byte for byte, with\n"
		 "up to --inflight requests outstanding. Prints rate and latency percentiles.\n"
		 "Exit status 1 if any request failed or came back different.",
	.run = run,
};
