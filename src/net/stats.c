/* Process-wide counters and their JSON snapshot (see stats.h). */
#include "net/stats.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"
#include "weft/err.h"

/* Opcodes are family << 8 | number; families 0..7 and numbers below 64 cover the
 * protocol. Anything else is counted in one "other" slot. */
#define OP_SLOTS (8 * 64 + 1)

struct op_slot {
	_Atomic uint64_t ops, errors, bytes_in, bytes_out;
	_Atomic uint64_t lat_sum_us;
	_Atomic uint64_t lat[STATS_LAT_BUCKETS];
};

#define ERRNO_SLOTS 256
#define WEFT_SLOTS 32 /* weft's own codes, from WEFT_ERR_BASE (weft/err.h) */

static struct op_slot slots[STATS_DIRS][OP_SLOTS];
static _Atomic uint64_t counters[STATS_COUNTERS];
static _Atomic uint64_t gauges[STATS_GAUGES];
static _Atomic unsigned gauges_set; /* bit per gauge: exported only once set */
static _Atomic uint64_t errnos[ERRNO_SLOTS + WEFT_SLOTS + 1]; /* last: any other code */
static char identity_process[16] = "weft", identity_node[64] = "";
static uint64_t start_ns;
static int identity_target = -1;

uint64_t stats_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned errno_slot(int e)
{
	if (e >= 0 && e < ERRNO_SLOTS)
		return (unsigned)e;
	if (e >= WEFT_ERR_BASE && e < WEFT_ERR_BASE + WEFT_SLOTS)
		return ERRNO_SLOTS + (unsigned)(e - WEFT_ERR_BASE);
	return ERRNO_SLOTS + WEFT_SLOTS;
}

/* "ENOSPC", "WEFT_ECHECKSUM", or a number for codes without a name. */
static const char *errno_slot_name(unsigned i, char *buf, size_t cap)
{
	static const char *const weft_names[] = {"WEFT_EPROTO", "WEFT_EAUTH", "WEFT_ECHECKSUM",
		"WEFT_ESTALECHAIN", "WEFT_ETARGETDOWN", "WEFT_EVERSION", "WEFT_ENOTSERVING",
		"WEFT_EMISSING"};
	const char *name = NULL;
	if (i < ERRNO_SLOTS)
		name = strerrorname_np((int)i);
	else if (i - ERRNO_SLOTS < sizeof(weft_names) / sizeof(weft_names[0]))
		name = weft_names[i - ERRNO_SLOTS];
	if (name)
		return name;
	if (i < ERRNO_SLOTS)
		snprintf(buf, cap, "E%u", i);
	else if (i < ERRNO_SLOTS + WEFT_SLOTS)
		snprintf(buf, cap, "WEFT_E%u", WEFT_ERR_BASE + i - ERRNO_SLOTS);
	else
		snprintf(buf, cap, "OTHER");
	return buf;
}

static unsigned slot_of(uint16_t op)
{
	unsigned fam = op >> 8, num = op & 0xff;
	return fam < 8 && num < 64 ? fam * 64 + num : OP_SLOTS - 1;
}

static unsigned bucket_of(uint64_t us)
{
	unsigned b = us ? 64 - (unsigned)__builtin_clzll(us) : 0;
	return b < STATS_LAT_BUCKETS ? b : STATS_LAT_BUCKETS - 1;
}

#define ADD(x, n) atomic_fetch_add_explicit(&(x), (n), memory_order_relaxed)
#define GET(x) atomic_load_explicit(&(x), memory_order_relaxed)

void stats_op(enum stats_dir d, uint16_t opcode, int status, uint64_t lat_ns, uint64_t bytes_in,
	      uint64_t bytes_out)
{
	struct op_slot *s = &slots[d][slot_of(opcode)];
	ADD(s->ops, 1);
	if (bytes_in)
		ADD(s->bytes_in, bytes_in);
	if (bytes_out)
		ADD(s->bytes_out, bytes_out);
	if (status < 0) {
		ADD(s->errors, 1);
		ADD(errnos[errno_slot(-status)], 1);
	}
	if (lat_ns) {
		uint64_t us = lat_ns / 1000;
		ADD(s->lat_sum_us, us);
		ADD(s->lat[bucket_of(us)], 1);
	}
}

void stats_add(enum stats_counter c, uint64_t n)
{
	if ((unsigned)c < STATS_COUNTERS)
		ADD(counters[c], n);
}

void stats_set_gauge(enum stats_gauge g, uint64_t v)
{
	if ((unsigned)g >= STATS_GAUGES)
		return;
	atomic_store_explicit(&gauges[g], v, memory_order_relaxed);
	atomic_fetch_or_explicit(&gauges_set, 1u << g, memory_order_relaxed);
}

static const char *const gauge_names[STATS_GAUGES] = {
	[STATS_TARGET_CAPACITY_BYTES] = "target_capacity_bytes",
	[STATS_TARGET_FREE_BYTES] = "target_free_bytes",
	[STATS_PAGEPOOL_USED_BYTES] = "pagepool_used_bytes",
	[STATS_META_DB_BYTES] = "meta_db_bytes",
	[STATS_META_MAP_BYTES] = "meta_map_bytes",
	[STATS_META_DISK_FREE_BYTES] = "meta_disk_free_bytes",
	[STATS_META_DISK_BYTES] = "meta_disk_bytes",
	[STATS_META_RESERVE_BYTES] = "meta_reserve_bytes",
	[STATS_META_ROOM_BYTES] = "meta_room_bytes",
	[STATS_META_SPACE_LOW] = "meta_space_low",
	[STATS_MOUNT_RELEASES_QUEUED] = "mount_releases_queued",
};

void stats_set_identity(const char *process, const char *node)
{
	snprintf(identity_process, sizeof(identity_process), "%s", process ? process : "weft");
	if (node && node[0])
		snprintf(identity_node, sizeof(identity_node), "%s", node);
	else if (gethostname(identity_node, sizeof(identity_node) - 1) < 0)
		identity_node[0] = '\0';
	if (!start_ns)
		start_ns = stats_now_ns();
}

static const char *stats_counter_name(enum stats_counter c)
{
	static const char *const names[STATS_COUNTERS] = {
		[STATS_FUSE_READ_BYTES] = "fuse_read_bytes",
		[STATS_FUSE_WRITE_BYTES] = "fuse_write_bytes",
		[STATS_FUSE_READ_OPS] = "fuse_read_ops",
		[STATS_FUSE_WRITE_OPS] = "fuse_write_ops",
		[STATS_CRC_FAILURES] = "crc_failures",
		[STATS_RECONNECTS] = "reconnects",
		[STATS_READAHEAD_HITS] = "readahead_hits",
		[STATS_PAGEPOOL_WAITS] = "pagepool_waits",
		[STATS_DISK_READ_ERRORS] = "disk_read_errors",
		[STATS_DISK_WRITE_ERRORS] = "disk_write_errors",
		[STATS_META_DB_COMMITS] = "meta_db_commits",
		[STATS_META_DB_SYNCS] = "meta_db_syncs",
		[STATS_CACHE_ATTR_MISSES] = "cache_attr_misses",
		[STATS_CACHE_ATTR_GRANTS] = "cache_attr_grants",
		[STATS_CACHE_ATTR_NOGRANTS] = "cache_attr_nogrants",
		[STATS_CACHE_NAME_MISSES] = "cache_name_misses",
		[STATS_CACHE_NAME_GRANTS] = "cache_name_grants",
		[STATS_CACHE_NEGNAME_GRANTS] = "cache_negname_grants",
		[STATS_CACHE_NAME_NOGRANTS] = "cache_name_nogrants",
		[STATS_CACHE_PAGE_MISSES] = "cache_page_misses",
		[STATS_CACHE_OPEN_KEPT] = "cache_open_kept",
		[STATS_CACHE_OPEN_DROPPED] = "cache_open_dropped",
		[STATS_OPEN_PREFETCH_STARTED] = "open_prefetch_started",
		[STATS_OPEN_PREFETCH_KEPT] = "open_prefetch_kept",
		[STATS_OPEN_PREFETCH_DROPPED] = "open_prefetch_dropped",
		[STATS_OPEN_LOCAL] = "open_local",
		[STATS_OPEN_LOCAL_REFUSED] = "open_local_refused",
		[STATS_OPEN_AHEAD_READS] = "open_ahead_reads",
		[STATS_OPEN_AHEAD_HITS] = "open_ahead_hits",
		[STATS_DIR_AHEAD_FETCHED] = "dir_ahead_fetched",
		[STATS_DIR_AHEAD_HITS] = "dir_ahead_hits",
		[STATS_ASYNC_CREATES] = "async_creates",
		[STATS_ASYNC_CREATES_FAILED] = "async_creates_failed",
		[STATS_ASYNC_UNLINKS] = "async_unlinks",
		[STATS_ASYNC_UNLINKS_FAILED] = "async_unlinks_failed",
		[STATS_ASYNC_RMDIRS] = "async_rmdirs",
		[STATS_ASYNC_RMDIRS_FAILED] = "async_rmdirs_failed",
		[STATS_ASYNC_SETATTRS] = "async_setattrs",
		[STATS_ASYNC_SETATTRS_FAILED] = "async_setattrs_failed",
		[STATS_ASYNC_EXTRA_SENT] = "async_extra_sent",
		[STATS_ASYNC_MKDIRS] = "async_mkdirs",
		[STATS_ASYNC_MKDIRS_FAILED] = "async_mkdirs_failed",
		[STATS_CLAIM_RENEWALS] = "claim_renewals",
		[STATS_ASYNC_RENAMES] = "async_renames",
		[STATS_ASYNC_RENAMES_FAILED] = "async_renames_failed",
		[STATS_DIRS_LISTED_COMPLETE] = "dirs_listed_complete",
	};
	return names[c];
}

static bool is_cache_counter(unsigned c)
{
	return c >= STATS_CACHE_ATTR_MISSES && c <= STATS_CACHE_OPEN_DROPPED;
}

/* A mount's cache counters in Prometheus' style: one family per kind of event, the
 * cache as a label (weft_client_cache_hits_total{cache="page"}). */
static const struct {
	const char *family, *cache;
	enum stats_counter c;
} cache_series[] = {
	{"hits", "page", STATS_READAHEAD_HITS},
	{"hits", "open", STATS_CACHE_OPEN_KEPT},
	{"misses", "attr", STATS_CACHE_ATTR_MISSES},
	{"misses", "name", STATS_CACHE_NAME_MISSES},
	{"misses", "page", STATS_CACHE_PAGE_MISSES},
	{"misses", "open", STATS_CACHE_OPEN_DROPPED},
	{"grants", "attr", STATS_CACHE_ATTR_GRANTS},
	{"grants", "name", STATS_CACHE_NAME_GRANTS},
	{"grants", "negative_name", STATS_CACHE_NEGNAME_GRANTS},
	{"nogrants", "attr", STATS_CACHE_ATTR_NOGRANTS},
	{"nogrants", "name", STATS_CACHE_NAME_NOGRANTS},
};

static uint16_t op_of_slot(unsigned i)
{
	return (uint16_t)((i / 64) << 8 | (i % 64));
}

static int put_ops(json_t *root, const char *key, enum stats_dir d)
{
	json_t *ops = json_object();
	if (!ops)
		return -ENOMEM;
	for (unsigned i = 0; i < OP_SLOTS; i++) {
		struct op_slot *s = &slots[d][i];
		uint64_t n = GET(s->ops);
		if (!n)
			continue;
		const char *name = i == OP_SLOTS - 1 ? "OTHER" : proto_op_name(op_of_slot(i));
		char unknown[16];
		if (!name) {
			snprintf(unknown, sizeof(unknown), "OP_%04x", op_of_slot(i));
			name = unknown;
		}
		json_t *lat = json_array();
		unsigned top = 0;
		for (unsigned b = 0; b < STATS_LAT_BUCKETS; b++)
			if (GET(s->lat[b]))
				top = b + 1;
		for (unsigned b = 0; b < top; b++)
			json_array_append_new(lat, json_integer((json_int_t)GET(s->lat[b])));
		json_object_set_new(ops, name, json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}",
			"ops", (json_int_t)n, "errors", (json_int_t)GET(s->errors),
			"bytes_in", (json_int_t)GET(s->bytes_in), "bytes_out", (json_int_t)GET(s->bytes_out),
			"latency_sum_us", (json_int_t)GET(s->lat_sum_us), "latency_log2_us", lat));
	}
	return json_object_set_new(root, key, ops) ? -ENOMEM : 0;
}

char *stats_json(void)
{
	if (!start_ns)
		start_ns = stats_now_ns();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	json_t *root = json_pack("{s:s,s:s,s:s,s:I,s:I}", "schema", "weft.stats/1",
		"process", identity_process, "node", identity_node,
		"time_ms", (json_int_t)rt.tv_sec * 1000 + rt.tv_nsec / 1000000,
		"uptime_ms", (json_int_t)((stats_now_ns() - start_ns) / 1000000));
	if (!root)
		return NULL;
	put_ops(root, "served", STATS_SERVED);
	put_ops(root, "called", STATS_CALLED);
	json_t *c = json_object();
	for (unsigned i = 0; i < STATS_COUNTERS; i++)
		json_object_set_new(c, stats_counter_name(i), json_integer((json_int_t)GET(counters[i])));
	json_object_set_new(root, "counters", c);
	json_t *g = json_object();
	for (unsigned i = 0; i < STATS_GAUGES; i++)
		if (GET(gauges_set) & (1u << i))
			json_object_set_new(g, gauge_names[i], json_integer((json_int_t)GET(gauges[i])));
	json_object_set_new(root, "gauges", g);
	json_t *e = json_object();
	for (unsigned i = 0; i <= ERRNO_SLOTS + WEFT_SLOTS; i++) {
		uint64_t n = GET(errnos[i]);
		if (!n)
			continue;
		char buf[24];
		json_object_set_new(e, errno_slot_name(i, buf, sizeof(buf)), json_integer((json_int_t)n));
	}
	json_object_set_new(root, "errors", e);
	char *s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return s;
}

void stats_set_target(int target)
{
	identity_target = target;
}

/* ---- Prometheus text format ---- */

struct text {
	char *p;
	size_t len, cap;
	bool oom;
};

static void tx(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx(struct text *t, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = t->oom ? 0 : vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (t->oom || n < 0)
			return;
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap * 2 + (size_t)n + 4096;
		char *q = realloc(t->p, cap);
		if (!q) {
			t->oom = true;
			return;
		}
		t->p = q;
		t->cap = cap;
	}
}

static void labels(char *out, size_t cap)
{
	int n = snprintf(out, cap, "process=\"%s\",node=\"%s\"", identity_process, identity_node);
	if (identity_target >= 0 && n > 0 && (size_t)n < cap)
		snprintf(out + n, cap - (size_t)n, ",target=\"%d\"", identity_target);
}

static void prom_ops(struct text *t, const char *lb, enum stats_dir d)
{
	const char *dir = d == STATS_SERVED ? "served" : "called";
	const char *what = d == STATS_SERVED ? "Requests this process answered" : "Calls this process made";
	static const struct { const char *suffix, *help; } fields[] = {
		{"requests_total", "operations"}, {"errors_total", "operations that failed"},
		{"received_bytes_total", "bytes received (payload and bulk)"},
		{"sent_bytes_total", "bytes sent (payload and bulk)"}};
	for (unsigned f = 0; f < 4; f++) {
		tx(t, "# HELP weft_%s_%s %s: %s, by op.\n", dir, fields[f].suffix, what, fields[f].help);
		tx(t, "# TYPE weft_%s_%s counter\n", dir, fields[f].suffix);
		for (unsigned i = 0; i < OP_SLOTS; i++) {
			struct op_slot *s = &slots[d][i];
			if (!GET(s->ops))
				continue;
			const char *name = i == OP_SLOTS - 1 ? "OTHER" : proto_op_name(op_of_slot(i));
			uint64_t v = f == 0 ? GET(s->ops) : f == 1 ? GET(s->errors)
				   : f == 2 ? GET(s->bytes_in)
				   : GET(s->bytes_out);
			tx(t, "weft_%s_%s{%s,op=\"%s\"} %llu\n", dir, fields[f].suffix, lb,
			   name ? name : "UNKNOWN", (unsigned long long)v);
		}
	}
	tx(t, "# HELP weft_%s_duration_seconds %s: time from request to reply, by op.\n", dir, what);
	tx(t, "# TYPE weft_%s_duration_seconds histogram\n", dir);
	for (unsigned i = 0; i < OP_SLOTS; i++) {
		struct op_slot *s = &slots[d][i];
		if (!GET(s->ops))
			continue;
		const char *name = i == OP_SLOTS - 1 ? "OTHER" : proto_op_name(op_of_slot(i));
		if (!name)
			name = "UNKNOWN";
		uint64_t cum = 0;
		for (unsigned b = 0; b < STATS_LAT_BUCKETS; b++) {
			cum += GET(s->lat[b]);
			/* bucket b holds latencies below 2^b microseconds */
			tx(t, "weft_%s_duration_seconds_bucket{%s,op=\"%s\",le=\"%g\"} %llu\n", dir, lb,
			   name, ldexp(1.0, (int)b) / 1e6, (unsigned long long)cum);
		}
		tx(t, "weft_%s_duration_seconds_bucket{%s,op=\"%s\",le=\"+Inf\"} %llu\n", dir, lb,
		   name, (unsigned long long)cum);
		tx(t, "weft_%s_duration_seconds_sum{%s,op=\"%s\"} %g\n", dir, lb, name,
		   (double)GET(s->lat_sum_us) / 1e6);
		tx(t, "weft_%s_duration_seconds_count{%s,op=\"%s\"} %llu\n", dir, lb, name,
		   (unsigned long long)cum);
	}
}

static void prom_cache(struct text *t, const char *lb)
{
	static const struct { const char *family, *help; } families[] = {
		{"hits", "Requests a mount answered from its own caches: page, reads served from "
			 "readahead; open, opens that kept the kernel's page cache"},
		{"misses", "Requests a mount could not answer from a cache: attr and name, "
			   "GETATTR/ACCESS and LOOKUP the kernel sent on to meta; page, reads that "
			   "waited for a store; open, opens that dropped the kernel's page cache"},
		{"grants", "Replies that let the kernel cache attributes, names or absent names "
			   "(a timeout > 0 under a lease)"},
		{"nogrants", "Replies that did not let the kernel cache (timeout 0)"},
	};
	for (unsigned f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		tx(t, "# HELP weft_client_cache_%s_total %s.\n", families[f].family, families[f].help);
		tx(t, "# TYPE weft_client_cache_%s_total counter\n", families[f].family);
		for (unsigned i = 0; i < sizeof(cache_series) / sizeof(cache_series[0]); i++)
			if (strcmp(cache_series[i].family, families[f].family) == 0)
				tx(t, "weft_client_cache_%s_total{%s,cache=\"%s\"} %llu\n",
				   families[f].family, lb, cache_series[i].cache,
				   (unsigned long long)GET(counters[cache_series[i].c]));
	}
}

char *stats_prometheus(void)
{
	struct text t = {0};
	char lb[192];
	labels(lb, sizeof(lb));
	prom_ops(&t, lb, STATS_SERVED);
	prom_ops(&t, lb, STATS_CALLED);
	for (unsigned i = 0; i < STATS_COUNTERS; i++) {
		if (is_cache_counter(i))
			continue; /* below, labelled, for mounts */
		const char *n = stats_counter_name(i);
		tx(&t, "# HELP weft_%s_total %s.\n", n, n);
		tx(&t, "# TYPE weft_%s_total counter\n", n);
		tx(&t, "weft_%s_total{%s} %llu\n", n, lb, (unsigned long long)GET(counters[i]));
	}
	if (strcmp(identity_process, "mount") == 0)
		prom_cache(&t, lb);
	for (unsigned i = 0; i < STATS_GAUGES; i++) {
		if (!(GET(gauges_set) & (1u << i)))
			continue;
		tx(&t, "# HELP weft_%s %s.\n", gauge_names[i], gauge_names[i]);
		tx(&t, "# TYPE weft_%s gauge\n", gauge_names[i]);
		tx(&t, "weft_%s{%s} %llu\n", gauge_names[i], lb, (unsigned long long)GET(gauges[i]));
	}
	tx(&t, "# HELP weft_errors_total Failed requests and calls, by error.\n");
	tx(&t, "# TYPE weft_errors_total counter\n");
	for (unsigned i = 0; i <= ERRNO_SLOTS + WEFT_SLOTS; i++) {
		uint64_t n = GET(errnos[i]);
		if (!n)
			continue;
		char buf[24];
		tx(&t, "weft_errors_total{%s,errno=\"%s\"} %llu\n", lb,
		   errno_slot_name(i, buf, sizeof(buf)), (unsigned long long)n);
	}
	tx(&t, "# HELP weft_uptime_seconds Time since the process started counting.\n");
	tx(&t, "# TYPE weft_uptime_seconds gauge\n");
	tx(&t, "weft_uptime_seconds{%s} %.3f\n", lb,
	   start_ns ? (double)(stats_now_ns() - start_ns) / 1e9 : 0.0);
	if (t.oom) {
		free(t.p);
		return NULL;
	}
	return t.p;
}
