/* bench_rpc: RPC round-trip latency and 1 MiB bulk throughput over loopback between two
 * processes, beside a raw TCP stream between two processes in the same run.
 * usage: bench_rpc [--seconds S] [--wire none|integrity|privacy]
 * (prints a table; see docs/PERFORMANCE.md). --wire protects the RPC connection at that
 * level (net/wire.h; WEFT_WIRE_NO_AES=1 for ChaCha20/Poly1305). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "net/builtin.h"
#include "common/log.h"
#include "common/memtune.h"
#include "net/rpc.h"
#include "net/server.h"
#include "net/wire.h"
#include "weft/err.h"

#define MIB (1u << 20)

static double seconds = 3.0;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void srv_request(struct conn *c, struct frame *f)
{
	if (!builtin_handle(c, f)) {
		conn_reply_error(c, f, -ENOSYS, 0, NULL);
		frame_free(f);
	}
}

/* Child: weft server answering PING/ECHO/SINK; writes its port to fd. */
static void run_weft_server(const struct weft_key *key, int port_fd)
{
	static const struct conn_ops ops = {.on_request = srv_request};
	struct loop *loop;
	struct server *s;
	char err[256];
	loop_new(&loop);
	struct server_params p = {.loop = loop, .key = key, .listen = "127.0.0.1:0", .ops = &ops};
	if (server_new(&p, &s, err, sizeof(err)) < 0)
		_exit(1);
	int port = server_port(s);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		_exit(1);
	loop_run(loop);
	_exit(0);
}

/* Child: raw TCP sink reading into a 1 MiB buffer; writes its port to fd. */
static void run_raw_server(int port_fd)
{
	struct weft_addr a;
	addr_parse("127.0.0.1:0", 0, &a);
	int lfd = addr_listen(&a);
	int port = addr_local_port(lfd);
	if (write(port_fd, &port, sizeof(port)) != sizeof(port))
		_exit(1);
	char *buf = malloc(MIB);
	for (;;) {
		int fd = -1;
		while (fd < 0)
			fd = accept(lfd, NULL, NULL);
		for (;;) {
			ssize_t r = read(fd, buf, MIB);
			if (r <= 0)
				break;
		}
		char ack = 1;
		if (write(fd, &ack, 1) != 1)
			_exit(1);
		close(fd);
	}
}

static pid_t fork_server(int kind, const struct weft_key *key, int *port)
{
	int p[2];
	if (pipe(p) < 0)
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (kind == 0)
			run_weft_server(key, p[1]);
		else
			run_raw_server(p[1]);
	}
	close(p[1]);
	if (read(p[0], port, sizeof(*port)) != sizeof(*port))
		exit(1);
	close(p[0]);
	return pid;
}

static double raw_stream(int port)
{
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	struct weft_addr a;
	addr_parse(addr, 0, &a);
	int fd = addr_connect(&a, 2000);
	fcntl(fd, F_SETFL, 0); /* blocking writes of 1 MiB */
	char *buf = malloc(MIB);
	memset(buf, 0x42, MIB);
	double t0 = now(), t;
	uint64_t bytes = 0;
	do {
		size_t off = 0;
		while (off < MIB) {
			ssize_t w = write(fd, buf + off, MIB - off);
			if (w <= 0)
				exit(1);
			off += (size_t)w;
		}
		bytes += MIB;
		t = now();
	} while (t - t0 < seconds);
	shutdown(fd, SHUT_WR);
	char ack;
	if (read(fd, &ack, 1) != 1)
		exit(1);
	t = now();
	close(fd);
	free(buf);
	return (double)bytes / (t - t0) / 1e6;
}

struct flight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding, errors;
};

static void bulk_done(void *arg, int status, struct frame *reply)
{
	struct flight *s = arg;
	pthread_mutex_lock(&s->lock);
	s->outstanding--;
	if (status)
		s->errors++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	frame_free(reply);
}

static double rpc_bulk(struct conn *c, int inflight)
{
	char *buf = malloc(MIB);
	memset(buf, 0x42, MIB);
	struct flight s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	uint64_t bytes = 0;
	double t0 = now();
	pthread_mutex_lock(&s.lock);
	while (now() - t0 < seconds) {
		while (s.outstanding >= inflight)
			pthread_cond_wait(&s.cond, &s.lock);
		s.outstanding++;
		pthread_mutex_unlock(&s.lock);
		struct iovec v = {buf, MIB};
		if (conn_call(c, WEFT_OP_SINK, NULL, &v, 1, NULL, NULL, bulk_done, &s) < 0)
			exit(1);
		bytes += MIB;
		pthread_mutex_lock(&s.lock);
	}
	while (s.outstanding > 0)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	double t = now();
	free(buf);
	if (s.errors)
		exit(1);
	return (double)bytes / (t - t0) / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void rpc_latency(struct conn *c, double *p50, double *p99, double *rate)
{
	int n = 20000;
	double *lat = malloc(sizeof(double) * (size_t)n);
	double t0 = now();
	for (int i = 0; i < n; i++) {
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_ping m = {.token = (uint64_t)i};
		proto_ping_encode(&w, &m);
		double s = now();
		if (conn_call_sync(c, WEFT_OP_PING, &w, NULL, 0, 5000, NULL) < 0)
			exit(1);
		lat[i] = (now() - s) * 1e6;
	}
	*rate = n / (now() - t0);
	qsort(lat, (size_t)n, sizeof(double), cmp_d);
	*p50 = lat[n / 2];
	*p99 = lat[n * 99 / 100];
	free(lat);
}

int main(int argc, char **argv)
{
	memtune();
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--seconds") == 0) {
			seconds = atof(argv[i + 1]);
		} else if (strcmp(argv[i], "--wire") == 0 && wire_level_parse(argv[i + 1]) >= 0) {
			wire_floor_raise(wire_level_parse(argv[i + 1]));
		} else {
			fprintf(stderr, "usage: bench_rpc [--seconds S] [--wire none|integrity|privacy]\n");
			return 2;
		}
	}
	log_init("bench_rpc", LOG_WARN);
	if (getenv("MALLOPT")) { mallopt(M_MMAP_THRESHOLD, 64 << 20); mallopt(M_TRIM_THRESHOLD, 512 << 20); }
	signal(SIGPIPE, SIG_IGN);
	struct weft_key key;
	auth_random(key.k, sizeof(key.k));
	int wport, rport;
	pid_t wpid = fork_server(0, &key, &wport);
	pid_t rpid = fork_server(1, NULL, &rport);

	struct loop *loop;
	loop_new(&loop);
	loop_start(loop);
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", wport);
	struct rpc *r;
	struct rpc_params rp = {.loop = loop, .key = &key, .addr = addr, .role = WEFT_ROLE_ADMIN};
	rpc_new(&rp, &r);
	struct conn *c;
	if (rpc_conn(r, &c) < 0) {
		fprintf(stderr, "bench_rpc: cannot connect\n");
		return 1;
	}
	double p50, p99, rate;
	rpc_latency(c, &p50, &p99, &rate);
	double raw1 = raw_stream(rport);
	double bulk1 = rpc_bulk(c, 1);
	double bulk8 = rpc_bulk(c, 8);
	double raw2 = raw_stream(rport);
	double raw = raw1 > raw2 ? raw1 : raw2;

	printf("| measure | weft RPC | raw TCP stream | ratio |\n|---|---|---|---|\n");
	printf("| ping round trip, 1 in flight | p50 %.1f us, p99 %.1f us, %.0f ops/s | | |\n", p50, p99, rate);
	printf("| 1 MiB bulk, 1 in flight | %.0f MB/s | %.0f MB/s | %.2f |\n", bulk1, raw, bulk1 / raw);
	printf("| 1 MiB bulk, 8 in flight | %.0f MB/s | %.0f MB/s | %.2f |\n", bulk8, raw, bulk8 / raw);

	conn_put(c);
	rpc_free(r);
	loop_free(loop);
	kill(wpid, SIGKILL);
	kill(rpid, SIGKILL);
	waitpid(wpid, NULL, 0);
	waitpid(rpid, NULL, 0);
	return 0;
}
