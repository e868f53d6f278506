/* weft stat: live rates, one line per interval, like dstat and mmpmon. It reads the
 * counters (net/stats.h, schema weft.stats/1) of meta and every store over the
 * protocol (STATS_GET), or of this node's mounts from their stats files, and prints the
 * differences between two snapshots as rates: bytes read and written, operations by
 * class, latency percentiles. --json prints one weft.stat/1 object per interval
 * (docs/operations.md). */
#include <errno.h>
#include <getopt.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/stats.h"
#include "mount/statsfile.h"
#include "proto/targets.h"
#include "weft/err.h"

#define MAX_SOURCES 1024

struct source {
	char label[128];   /* "meta", "target 3", "mount /mnt/weft" */
	char node[64];
	int target;        /* -1 for meta and mounts */
	bool is_mount;
	char path[4096];   /* mounts: the stats file */
	struct rpc *rpc;   /* meta and stores */
	json_t *prev, *cur;
};

struct stat_opts {
	double interval;
	long count;
	bool json, per_source, mounts;
	const char *node;
	const char *mountpoint;
};

enum op_class { CLASS_DATA, CLASS_META, CLASS_OTHER };

static enum op_class class_of(const char *op)
{
	if (strncmp(op, "OBJ_", 4) == 0)
		return CLASS_DATA;
	static const char *const other[] = {"HELLO", "AUTH", "PING", "ECHO", "SINK", "STATS_GET",
					    "SESSION_", "TARGET", "CHAINS_GET", "STORE_STATS", NULL};
	for (int i = 0; other[i]; i++)
		if (strncmp(op, other[i], strlen(other[i])) == 0)
			return CLASS_OTHER;
	return CLASS_META;
}

static uint64_t num(json_t *o, const char *k)
{
	json_t *v = o ? json_object_get(o, k) : NULL;
	return v && json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

/* The difference of one op's field between two snapshots' sections ("served"...). */
static uint64_t op_delta(json_t *cur, json_t *prev, const char *sect, const char *op,
			 const char *field)
{
	json_t *c = json_object_get(json_object_get(cur, sect), op);
	json_t *p = prev ? json_object_get(json_object_get(prev, sect), op) : NULL;
	uint64_t a = num(c, field), b = num(p, field);
	return a > b ? a - b : 0;
}

struct rates {
	double read_bps, write_bps, data_ops, meta_ops;
	uint64_t lat[2][STATS_LAT_BUCKETS]; /* histogram deltas: data, meta */
};

static void add_hist(json_t *cur, json_t *prev, const char *sect, const char *op, uint64_t *h)
{
	json_t *c = json_object_get(json_object_get(json_object_get(cur, sect), op), "latency_log2_us");
	json_t *p = prev ? json_object_get(json_object_get(json_object_get(prev, sect), op),
					   "latency_log2_us") : NULL;
	for (size_t b = 0; b < json_array_size(c) && b < STATS_LAT_BUCKETS; b++) {
		uint64_t a = (uint64_t)json_integer_value(json_array_get(c, b));
		uint64_t z = p && b < json_array_size(p) ? (uint64_t)json_integer_value(json_array_get(p, b)) : 0;
		h[b] += a > z ? a - z : 0;
	}
}

/* Sums ops and latencies of one section by class. */
static void class_sums(json_t *cur, json_t *prev, const char *sect, struct rates *r, double dt)
{
	const char *op;
	json_t *v;
	json_object_foreach(json_object_get(cur, sect), op, v) {
		enum op_class k = class_of(op);
		if (k == CLASS_OTHER)
			continue;
		double n = (double)op_delta(cur, prev, sect, op, "ops") / dt;
		if (k == CLASS_DATA)
			r->data_ops += n;
		else
			r->meta_ops += n;
		add_hist(cur, prev, sect, op, r->lat[k == CLASS_DATA ? 0 : 1]);
	}
}

/* Rates of one source over dt seconds. Writes count what reached the source: at a store,
 * OBJ_WRITE bytes served; cluster_write_bps is what clients sent (a chain's forwarded
 * copies subtracted), so summing it over stores gives the clients' write rate. */
static void source_rates(const struct source *s, double dt, struct rates *r, double *cluster_write_bps)
{
	memset(r, 0, sizeof(*r));
	*cluster_write_bps = 0;
	if (!s->cur)
		return;
	if (s->is_mount) {
		json_t *c = json_object_get(s->cur, "counters");
		json_t *p = s->prev ? json_object_get(s->prev, "counters") : NULL;
		uint64_t rd = num(c, "fuse_read_bytes") - num(p, "fuse_read_bytes");
		uint64_t wr = num(c, "fuse_write_bytes") - num(p, "fuse_write_bytes");
		r->read_bps = (double)rd / dt;
		r->write_bps = (double)wr / dt;
		*cluster_write_bps = r->write_bps;
		class_sums(s->cur, s->prev, "called", r, dt);
		r->data_ops = (double)(num(c, "fuse_read_ops") + num(c, "fuse_write_ops") -
				       num(p, "fuse_read_ops") - num(p, "fuse_write_ops")) / dt;
		return;
	}
	r->read_bps = (double)op_delta(s->cur, s->prev, "served", "OBJ_READ", "bytes_out") / dt;
	r->write_bps = (double)op_delta(s->cur, s->prev, "served", "OBJ_WRITE", "bytes_in") / dt;
	double fwd = (double)op_delta(s->cur, s->prev, "called", "OBJ_WRITE", "bytes_out") / dt;
	*cluster_write_bps = r->write_bps > fwd ? r->write_bps - fwd : 0;
	class_sums(s->cur, s->prev, "served", r, dt);
}

/* A mount's cache counters as rates: weft.stat/1's "cache" of a mount source
 * (docs/operations.md, "Cache counters"; net/stats.h says what each counts). */
static json_t *cache_json(const struct source *s, double dt)
{
	static const struct { const char *cache, *field, *counter; } rates[] = {
		{"attr", "misses_per_s", "cache_attr_misses"},
		{"attr", "grants_per_s", "cache_attr_grants"},
		{"attr", "nogrants_per_s", "cache_attr_nogrants"},
		{"name", "misses_per_s", "cache_name_misses"},
		{"name", "grants_per_s", "cache_name_grants"},
		{"name", "negative_grants_per_s", "cache_negname_grants"},
		{"name", "nogrants_per_s", "cache_name_nogrants"},
		{"page", "hits_per_s", "readahead_hits"},
		{"page", "misses_per_s", "cache_page_misses"},
		{"open", "kept_per_s", "cache_open_kept"},
		{"open", "dropped_per_s", "cache_open_dropped"},
	};
	json_t *c = json_object_get(s->cur, "counters");
	json_t *p = s->prev ? json_object_get(s->prev, "counters") : NULL;
	json_t *out = json_object();
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		json_t *o = json_object_get(out, rates[i].cache);
		if (!o) {
			o = json_object();
			json_object_set_new(out, rates[i].cache, o);
		}
		uint64_t a = num(c, rates[i].counter), b = num(p, rates[i].counter);
		json_object_set_new(o, rates[i].field, json_real((double)(a > b ? a - b : 0) / dt));
	}
	return out;
}

/* The latency under which a fraction q of the histogram's operations finished: the upper
 * edge of the bucket holding that operation, in microseconds (0 when empty). */
static double percentile_us(const uint64_t *h, double q)
{
	uint64_t total = 0;
	for (int b = 0; b < STATS_LAT_BUCKETS; b++)
		total += h[b];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)total), seen = 0;
	for (int b = 0; b < STATS_LAT_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want)
			return ldexp(1.0, b);
	}
	return ldexp(1.0, STATS_LAT_BUCKETS - 1);
}

static json_t *rates_json(const struct rates *r)
{
	return json_pack("{s:f,s:f,s:f,s:f,s:{s:f,s:f},s:{s:f,s:f}}",
		"read_bytes_per_s", r->read_bps, "write_bytes_per_s", r->write_bps,
		"data_ops_per_s", r->data_ops, "meta_ops_per_s", r->meta_ops,
		"data_latency_us", "p50", percentile_us(r->lat[0], 0.5), "p99", percentile_us(r->lat[0], 0.99),
		"meta_latency_us", "p50", percentile_us(r->lat[1], 0.5), "p99", percentile_us(r->lat[1], 0.99));
}

static void print_rates(const char *label, const struct rates *r)
{
	printf("%-22s %9.1f %9.1f %9.0f %9.0f %7.2f %7.2f %7.2f %7.2f\n", label,
	       r->read_bps / 1e6, r->write_bps / 1e6, r->data_ops, r->meta_ops,
	       percentile_us(r->lat[0], 0.5) / 1000, percentile_us(r->lat[0], 0.99) / 1000,
	       percentile_us(r->lat[1], 0.5) / 1000, percentile_us(r->lat[1], 0.99) / 1000);
}

/* ---- sources ---- */

static int snapshot_rpc(struct source *s)
{
	struct frame *f = NULL;
	int rc = rpc_call(s->rpc, WEFT_OP_STATS_GET, NULL, NULL, 0, 5000, &f);
	if (rc == 0) {
		json_error_t je;
		json_t *j = json_loadb((const char *)f->bulk, f->h.bulk_len, 0, &je);
		if (!j || !json_is_object(j)) {
			json_decref(j);
			rc = -WEFT_EPROTO;
		} else {
			json_decref(s->prev);
			s->prev = s->cur;
			s->cur = j;
		}
	}
	frame_free(f);
	return rc;
}

static int snapshot_file(struct source *s)
{
	json_error_t je;
	json_t *j = json_load_file(s->path, 0, &je);
	if (!j)
		return -ENOENT;
	/* a mount rewrites its file every second: an old one was left by a mount that died */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t age = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
		      (int64_t)num(j, "time_ms");
	if (age > 5000) {
		json_decref(j);
		return -ESTALE;
	}
	json_decref(s->prev);
	s->prev = s->cur;
	s->cur = j;
	return 0;
}

static int add_mounts(struct source *src, int *n, const char *mountpoint)
{
	char dir[2048];
	statsfile_dir(dir, sizeof(dir));
	if (mountpoint) {
		char real[4096];
		if (!realpath(mountpoint, real))
			return -errno;
		struct source *s = &src[(*n)++];
		memset(s, 0, sizeof(*s));
		s->target = -1;
		s->is_mount = true;
		statsfile_path(real, s->path, sizeof(s->path));
		snprintf(s->label, sizeof(s->label), "mount %.120s", real);
		return 0;
	}
	DIR *d = opendir(dir);
	if (!d)
		return -ENOENT;
	struct dirent *e;
	while ((e = readdir(d)) && *n < MAX_SOURCES) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".json"))
			continue;
		struct source *s = &src[(*n)++];
		memset(s, 0, sizeof(*s));
		s->target = -1;
		s->is_mount = true;
		snprintf(s->path, sizeof(s->path), "%s/%s", dir, e->d_name);
		snprintf(s->label, sizeof(s->label), "mount %.*s", (int)(l - 5), e->d_name);
	}
	closedir(d);
	return 0;
}

static int add_cluster(struct source *src, int *n, struct loop *loop, const struct weft_key *key,
		       const char *meta_addr, const char *node)
{
	struct rpc_params p = {.loop = loop, .key = key, .addr = meta_addr,
			       .default_port = WEFT_META_PORT, .role = WEFT_ROLE_ADMIN,
			       .name = "weft-stat"};
	struct rpc *meta;
	if (rpc_new(&p, &meta))
		return -EINVAL;
	struct frame *f = NULL;
	int rc = rpc_call(meta, WEFT_OP_TARGETS_GET, NULL, NULL, 0, 10000, &f);
	struct weft_msg_targets tm;
	if (rc == 0 && proto_targets_decode(f->payload, f->h.payload_len, &tm, NULL))
		rc = -WEFT_EPROTO;
	if (rc) {
		frame_free(f);
		rpc_free(meta);
		return rc;
	}
	struct source *m = &src[(*n)++];
	memset(m, 0, sizeof(*m));
	m->target = -1;
	m->rpc = meta;
	snprintf(m->label, sizeof(m->label), "meta");
	struct rbuf r;
	rbuf_init(&r, f->bulk, f->h.bulk_len);
	struct weft_target_rec t;
	for (uint32_t i = 0; i < tm.count && *n < MAX_SOURCES && proto_target_rec_read(&r, &t); i++) {
		if (t.state == WEFT_MEMBER_OFFLINE)
			continue;
		struct source *s = &src[(*n)++];
		memset(s, 0, sizeof(*s));
		s->target = (int)t.id;
		snprintf(s->node, sizeof(s->node), "%.*s", (int)t.node.len, t.node.p);
		snprintf(s->label, sizeof(s->label), "target %u (%s)", t.id, s->node);
		char addr[256];
		snprintf(addr, sizeof(addr), "%.*s", (int)t.addr.len, t.addr.p);
		struct rpc_params sp = p;
		sp.addr = addr;
		sp.default_port = WEFT_STORE_PORT;
		if (rpc_new(&sp, &s->rpc))
			(*n)--;
	}
	rc = rbuf_ok(&r) ? 0 : -WEFT_EPROTO;
	frame_free(f);
	if (node) { /* keep the sources on that node (meta's node is in its first snapshot) */
		int k = 0;
		for (int i = 0; i < *n; i++) {
			if (src[i].target >= 0 && strcmp(src[i].node, node)) {
				rpc_free(src[i].rpc);
				continue;
			}
			src[k++] = src[i];
		}
		*n = k;
	}
	return rc;
}

static void take_snapshots(struct source *src, int n)
{
	for (int i = 0; i < n; i++) {
		int rc = src[i].is_mount ? snapshot_file(&src[i]) : snapshot_rpc(&src[i]);
		if (rc) { /* a source that stops answering shows as idle, not as an error */
			json_decref(src[i].prev);
			src[i].prev = src[i].cur = NULL;
		} else {
			const char *node = json_string_value(json_object_get(src[i].cur, "node"));
			if (node && !src[i].node[0])
				snprintf(src[i].node, sizeof(src[i].node), "%s", node);
		}
	}
}

static void report(struct source *src, int n, const struct stat_opts *o, double dt, bool header)
{
	struct rates total = {0}, r;
	json_t *sources = json_array();
	for (int i = 0; i < n; i++) {
		if (o->node && src[i].target < 0 && !src[i].is_mount && strcmp(src[i].node, o->node))
			continue; /* meta, on another node */
		double cw;
		source_rates(&src[i], dt, &r, &cw);
		total.read_bps += r.read_bps;
		total.write_bps += cw;
		total.data_ops += src[i].target >= 0 || src[i].is_mount ? r.data_ops : 0;
		total.meta_ops += src[i].target < 0 ? r.meta_ops : 0;
		for (int k = 0; k < 2; k++)
			for (int b = 0; b < STATS_LAT_BUCKETS; b++)
				total.lat[k][b] += (k == 0 ? src[i].target >= 0 || src[i].is_mount
						     : src[i].target < 0) ? r.lat[k][b] : 0;
		if (o->json) {
			json_t *j = rates_json(&r);
			json_object_set_new(j, "source", json_string(src[i].label));
			json_object_set_new(j, "node", json_string(src[i].node));
			if (src[i].target >= 0)
				json_object_set_new(j, "target", json_integer(src[i].target));
			json_object_set_new(j, "up", json_boolean(src[i].cur != NULL));
			if (src[i].is_mount && src[i].cur)
				json_object_set_new(j, "cache", cache_json(&src[i], dt));
			json_array_append_new(sources, j);
		} else if (o->per_source) {
			print_rates(src[i].label, &r);
		}
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (o->json) {
		json_t *line = json_pack("{s:s,s:I,s:f,s:o,s:o}", "schema", "weft.stat/1",
			"time_ms", (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
			"interval_s", dt, "total", rates_json(&total), "sources", sources);
		char *s = json_dumps(line, JSON_COMPACT);
		if (s)
			printf("%s\n", s);
		free(s);
		json_decref(line);
	} else {
		json_decref(sources);
		if (header)
			printf("%-22s %9s %9s %9s %9s %7s %7s %7s %7s\n", "", "read MB/s", "write MB/s",
			       "data op/s", "meta op/s", "data p50", "p99 ms", "meta p50", "p99 ms");
		char tbuf[32];
		struct tm tm;
		localtime_r(&ts.tv_sec, &tm);
		strftime(tbuf, sizeof(tbuf), "%H:%M:%S total", &tm);
		print_rates(tbuf, &total);
	}
	fflush(stdout);
}

static int run_stat(int argc, char **argv)
{
	struct cluster_opts co = {0};
	struct stat_opts o = {.interval = 1, .count = -1};
	static const struct option opts[] = {
		CLUSTER_LONGOPTS, {"interval", required_argument, NULL, 'i'},
		{"count", required_argument, NULL, 'c'}, {"json", no_argument, NULL, 'j'},
		{"node", required_argument, NULL, 'n'}, {"mount", no_argument, NULL, 'M'},
		{"sources", no_argument, NULL, 's'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "i:c:", opts, NULL)) != -1) {
		char *end;
		if (cluster_opt(&co, ch, optarg))
			continue;
		switch (ch) {
		case 'i':
			o.interval = strtod(optarg, &end);
			if (*end || !(o.interval >= 0.1 && o.interval <= 3600))
				return cli_usage_error("stat", "-i %s: seconds from 0.1 to 3600", optarg);
			break;
		case 'c':
			o.count = strtol(optarg, &end, 10);
			if (*end || o.count < 1)
				return cli_usage_error("stat", "-c %s: a count of at least 1", optarg);
			break;
		case 'j': o.json = true; break;
		case 'n': o.node = optarg; break;
		case 'M': o.mounts = true; break;
		case 's': o.per_source = true; break;
		default: return cli_usage_error("stat", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		if (!o.mounts || optind + 1 < argc)
			return cli_usage_error("stat", "unexpected argument '%s'", argv[optind]);
		o.mountpoint = argv[optind];
	}
	static struct source src[MAX_SOURCES];
	int n = 0, rc;
	struct loop *loop = NULL;
	static struct weft_key key;
	char addr[256];
	if (o.mounts) {
		rc = add_mounts(src, &n, o.mountpoint);
		if (rc || !n)
			return cli_fail("stat", "no weft mount%s%s on this node (looked for stats files%s)",
					o.mountpoint ? " at " : "", o.mountpoint ? o.mountpoint : "",
					rc ? "" : ": none");
	} else {
		if (cluster_load_key("stat", &co, &key))
			return 1;
		cluster_meta_addr(&co, addr, sizeof(addr));
		log_init("stat", LOG_ERROR);
		if (loop_new(&loop) || loop_start(loop))
			return cli_fail("stat", "cannot start event loop");
		rc = add_cluster(src, &n, loop, &key, addr, o.node);
		if (rc) {
			loop_free(loop);
			return cli_fail("stat", "meta %s: %s", addr, weft_strerror(rc));
		}
	}
	take_snapshots(src, n);
	uint64_t t0 = stats_now_ns();
	for (long line = 0; o.count < 0 || line < o.count; line++) {
		poll(NULL, 0, (int)(o.interval * 1000));
		take_snapshots(src, n);
		uint64_t t1 = stats_now_ns();
		report(src, n, &o, (double)(t1 - t0) / 1e9, line % 20 == 0);
		t0 = t1;
	}
	for (int i = 0; i < n; i++) {
		rpc_free(src[i].rpc);
		json_decref(src[i].prev);
		json_decref(src[i].cur);
	}
	if (loop)
		loop_free(loop);
	return 0;
}

const struct cli_verb cmd_stat = {
	.name = "stat",
	.summary = "live I/O rates of the cluster, a node or this node's mounts",
	.usage = "weft stat [-i SECONDS] [-c COUNT] [--json] [--sources]\n"
		 "          [--node NAME | --mount [MOUNTPOINT]] [--dir STATE | --meta HOST:PORT] [--key FILE]\n"
		 "\n"
		 "Prints one line per interval (default 1 s) of rates: MB/s read and written,\n"
		 "data and metadata operations per second, and p50/p99 latency in ms, for the\n"
		 "cluster (meta and every store that is up, read over the protocol), for the\n"
		 "daemons of one --node, or for this node's mounts (--mount, from their stats\n"
		 "files; no key needed). --sources adds a line per daemon or mount. --json prints\n"
		 "one weft.stat/1 object per line instead (docs/operations.md). Writes are what\n"
		 "clients sent: copies forwarded along a chain are not counted twice.",
	.run = run_stat,
};
