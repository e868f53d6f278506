/* weft status and weft df: the cluster's targets, chains and capacity, as meta sees them. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "net/conn.h"
#include "net/wire.h"
#include "proto/targets.h"
#include "weft/err.h"

struct admin {
	struct loop *loop;
	struct rpc *rpc;
	char addr[256];
	bool json;
};

static int admin_open(const char *verb, int argc, char **argv, struct admin *a)
{
	struct cluster_opts co = {0};
	static const struct option opts[] = {
		CLUSTER_LONGOPTS, {"json", no_argument, NULL, 'j'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (cluster_opt(&co, ch, optarg))
			continue;
		switch (ch) {
		case 'j': a->json = true; break;
		default: return cli_usage_error(verb, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(verb, "unexpected argument '%s'", argv[optind]);
	struct weft_key key; /* rpc_new copies it */
	return cluster_connect(verb, &co, &key, a->addr, sizeof(a->addr), &a->loop, &a->rpc);
}

static void admin_close(struct admin *a)
{
	rpc_free(a->rpc);
	loop_free(a->loop);
}

static int statfs_get(struct admin *a, struct weft_msg_statfs_reply *s)
{
	struct frame *f = NULL;
	int rc = rpc_call(a->rpc, WEFT_OP_STATFS, NULL, NULL, 0, 10000, &f);
	if (rc == 0 && proto_statfs_reply_decode(f->payload, f->h.payload_len, s, NULL))
		rc = -WEFT_EPROTO;
	frame_free(f);
	return rc;
}

static void human(uint64_t v, char *out, size_t cap)
{
	static const char *u[] = {"B", "K", "M", "G", "T", "P", "E"};
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 6) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, cap, "%llu%s", (unsigned long long)v, u[i]);
	else
		snprintf(out, cap, d < 10 ? "%.1f%s" : "%.0f%s", d, u[i]);
}

static const char *state_name(uint8_t s)
{
	switch (s) {
	case WEFT_MEMBER_SERVING: return "serving";
	case WEFT_MEMBER_SYNCING: return "syncing";
	case WEFT_MEMBER_OFFLINE: return "offline";
	case WEFT_MEMBER_REBUILDING: return "rebuilding";
	default: return "?";
	}
}

/* Moves in progress and the rebalancing settings (REBALANCE query; nothing if meta
 * does not answer it). */
static void rebalance_state(struct admin *a, json_t *out)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_rebalance q = {0};
	proto_rebalance_encode(&w, &q);
	struct frame *f = NULL;
	struct weft_msg_rebalance_reply m;
	if (rpc_call(a->rpc, WEFT_OP_REBALANCE, &w, NULL, 0, 10000, &f) == 0 &&
	    proto_rebalance_reply_decode(f->payload, f->h.payload_len, &m, NULL) == 0) {
		if (out)
			json_object_set_new(out, "rebalance", json_pack("{s:b,s:b,s:i,s:i,s:i}",
				"active", m.active, "automatic", m.automatic,
				"threshold_pct", (int)m.threshold, "spread_pct", (int)m.spread,
				"moves", (int)m.moving));
		else
			printf("  moves: %u in progress; rebalance %s (automatic %s, threshold %u%%)\n",
			       m.moving, m.active ? "running" : "idle", m.automatic ? "on" : "off",
			       m.threshold);
	}
	frame_free(f);
}

static int print_targets(struct admin *a, json_t *out)
{
	struct frame *f = NULL;
	int rc = rpc_call(a->rpc, WEFT_OP_TARGETS_GET, NULL, NULL, 0, 10000, &f);
	struct weft_msg_targets tm;
	if (rc == 0 && proto_targets_decode(f->payload, f->h.payload_len, &tm, NULL))
		rc = -WEFT_EPROTO;
	if (rc) {
		frame_free(f);
		return rc;
	}
	json_t *list = json_array();
	if (!out) {
		printf("targets: %u\n", tm.count);
		if (tm.count)
			printf("  %4s  %-16s %-22s %-5s %8s %8s %10s %10s %10s %10s %7s\n", "id", "node",
			       "address", "state", "size", "free", "read", "written", "reads", "writes",
			       "seen");
	}
	struct rbuf r;
	rbuf_init(&r, f->bulk, f->h.bulk_len);
	struct weft_target_rec t;
	double most = -1, least = 101; /* percent used of targets that are up */
	uint32_t most_id = 0, least_id = 0;
	for (uint32_t i = 0; i < tm.count && proto_target_rec_read(&r, &t); i++) {
		const char *state = t.state == WEFT_MEMBER_OFFLINE ? "down" : "up";
		if (out) {
			json_array_append_new(list, json_pack("{s:i,s:s#,s:s#,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I},s:b,s:i}",
				"id", (int)t.id, "node", t.node.p, (size_t)t.node.len, "address", t.addr.p,
				(size_t)t.addr.len, "state", state, "size_bytes", (json_int_t)t.capacity,
				"free_bytes", (json_int_t)t.free, "read_bytes", (json_int_t)t.bytes_read,
				"written_bytes", (json_int_t)t.bytes_written, "read_ops", (json_int_t)t.ops_read,
				"write_ops", (json_int_t)t.ops_written, "silent_ms", (json_int_t)t.silent_ms,
				"resync", "objects_left", (json_int_t)t.resync_objects_left,
				"bytes_left", (json_int_t)t.resync_bytes_left,
				"bytes_per_s", (json_int_t)t.resync_rate,
				"draining", (t.flags & WEFT_TARGET_DRAINING) != 0,
				"memberships", (int)t.memberships));
			continue;
		}
		char cap[16], fr[16], rd[16], wr[16];
		human(t.capacity, cap, sizeof(cap));
		human(t.free, fr, sizeof(fr));
		human(t.bytes_read, rd, sizeof(rd));
		human(t.bytes_written, wr, sizeof(wr));
		printf("  %4u  %-16.*s %-22.*s %-5s %8s %8s %10s %10s %10llu %10llu %6.1fs\n", t.id,
		       (int)t.node.len, t.node.p, (int)t.addr.len, t.addr.p, state, cap, fr, rd, wr,
		       (unsigned long long)t.ops_read, (unsigned long long)t.ops_written,
		       (double)t.silent_ms / 1000);
		if (t.resync_objects_left || t.resync_bytes_left) {
			char left[16], rate[16];
			human(t.resync_bytes_left, left, sizeof(left));
			human(t.resync_rate, rate, sizeof(rate));
			printf("        resync: %llu objects, %s left, %s/s\n",
			       (unsigned long long)t.resync_objects_left, left, rate);
		}
		if (t.flags & WEFT_TARGET_DRAINING)
			printf("        draining: %u chain membership%s left%s\n", t.memberships,
			       t.memberships == 1 ? "" : "s",
			       t.memberships ? "" : " (drained: weft target remove)");
		/* a draining target is emptied on purpose: not part of the balance */
		if (t.state != WEFT_MEMBER_OFFLINE && t.capacity && t.free <= t.capacity &&
		    !(t.flags & WEFT_TARGET_DRAINING)) {
			double used = 100.0 * (double)(t.capacity - t.free) / (double)t.capacity;
			if (used > most)
				most = used, most_id = t.id;
			if (used < least)
				least = used, least_id = t.id;
		}
	}
	if (most >= 0)
		printf("  balance: most used %.1f%% (target %u), least used %.1f%% (target %u), "
		       "spread %.1f points\n", most, most_id, least, least_id, most - least);
	rebalance_state(a, out);
	rc = rbuf_ok(&r) ? 0 : -WEFT_EPROTO;
	frame_free(f);
	if (out)
		json_object_set_new(out, "targets", list);
	else
		json_decref(list);
	return rc;
}

static int print_chains(struct admin *a, json_t *out)
{
	struct weft_chain_set set;
	int rc = chain_set_fetch(a->rpc, 10000, &set);
	if (rc)
		return rc;
	json_t *reps = json_object();
	if (!out)
		printf("chains (epoch %llu):\n", (unsigned long long)set.epoch);
	for (int rep = 1; rep <= WEFT_REPLICAS_MAX; rep++) {
		uint32_t n = set.nchains[rep - 1], below = 0;
		for (uint32_t i = 0; i < n; i++) {
			int serving = 0; /* a moving chain has one member more */
			for (int m = 0; m < set.chains[rep - 1][i].nmembers; m++)
				serving += set.chains[rep - 1][i].members[m].state == WEFT_MEMBER_SERVING;
			below += serving < rep;
		}
		json_t *chains = json_array();
		if (!out) {
			printf("  %d replica%s: %u chain%s%s", rep, rep > 1 ? "s" : "", n,
			       n == 1 ? "" : "s", n ? "" : " (needs more storage nodes)");
			if (below)
				printf(", %u below %d serving copies", below, rep);
			printf("\n");
		}
		for (uint32_t i = 0; i < n; i++) {
			const struct weft_chain *c = &set.chains[rep - 1][i];
			json_t *members = json_array();
			if (!out)
				printf("    chain %-4u v%-4llu", c->id, (unsigned long long)c->version);
			for (int m = 0; m < c->nmembers; m++) {
				if (out)
					json_array_append_new(members, json_pack("{s:i,s:s}",
						"target", (int)c->members[m].target,
						"state", state_name(c->members[m].state)));
				else
					printf(" %s%u(%s)", m ? "-> " : "", c->members[m].target,
					       state_name(c->members[m].state));
			}
			if (out)
				json_array_append_new(chains, json_pack("{s:i,s:I,s:o}", "id", (int)c->id,
					"version", (json_int_t)c->version, "members", members));
			else {
				json_decref(members);
				printf("%s\n", c->nmembers > rep ? "  (moving)" : "");
			}
		}
		char key[4];
		snprintf(key, sizeof(key), "%d", rep);
		json_object_set_new(reps, key, chains);
	}
	if (out)
		json_object_set_new(out, "chains", json_pack("{s:I,s:o}", "epoch",
				    (json_int_t)set.epoch, "replicas", reps));
	else
		json_decref(reps);
	proto_chain_set_free(&set);
	return 0;
}

/* meta's own space (database, map, its disk, the reserve for deletes), from the gauges
 * meta exports (space.c) through STATS_GET. NULL if meta has none. */
static json_t *meta_space_get(struct admin *a)
{
	static const char *const keys[][2] = {
		{"meta_db_bytes", "db_bytes"}, {"meta_map_bytes", "map_bytes"},
		{"meta_disk_bytes", "disk_bytes"}, {"meta_disk_free_bytes", "disk_free_bytes"},
		{"meta_reserve_bytes", "reserve_bytes"}, {"meta_room_bytes", "room_bytes"}};
	struct frame *f = NULL;
	json_t *out = NULL;
	if (rpc_call(a->rpc, WEFT_OP_STATS_GET, NULL, NULL, 0, 10000, &f) == 0) {
		json_error_t je;
		json_t *j = json_loadb((const char *)f->bulk, f->h.bulk_len, 0, &je);
		json_t *g = j ? json_object_get(j, "gauges") : NULL;
		if (g && json_object_get(g, "meta_db_bytes")) {
			out = json_object();
			for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
				json_object_set_new(out, keys[i][1], json_integer(json_integer_value(
					json_object_get(g, keys[i][0]))));
			json_object_set_new(out, "low", json_boolean(json_integer_value(
				json_object_get(g, "meta_space_low"))));
		}
		json_decref(j);
	}
	frame_free(f);
	return out;
}

static void print_meta_space(const json_t *m)
{
	char v[6][16];
	const char *k[] = {"db_bytes", "map_bytes", "disk_bytes", "disk_free_bytes",
			   "reserve_bytes", "room_bytes"};
	for (int i = 0; i < 6; i++)
		human((uint64_t)json_integer_value(json_object_get(m, k[i])), v[i], sizeof(v[i]));
	printf("meta space: database %s, map %s, disk %s (%s free), reserve %s, room %s%s\n",
	       v[0], v[1], v[2], v[3], v[4], v[5],
	       json_is_true(json_object_get(m, "low")) ? "; FULL: new entries get ENOSPC" : "");
}

static int run_status(int argc, char **argv)
{
	struct admin a = {0};
	int rc = admin_open("status", argc, argv, &a);
	if (rc)
		return rc;
	json_t *j = a.json ? json_pack("{s:s,s:s}", "schema", "weft.status/1", "meta", a.addr) : NULL;
	struct weft_msg_statfs_reply s;
	rc = statfs_get(&a, &s);
	if (rc == 0 && j) {
		json_object_set_new(j, "capacity", json_pack("{s:I,s:I,s:I,s:I}",
			"size_bytes", (json_int_t)(s.blocks * s.bsize),
			"used_bytes", (json_int_t)((s.blocks - s.bfree) * s.bsize),
			"free_bytes", (json_int_t)(s.bfree * s.bsize),
			"inodes_used", (json_int_t)(s.files - s.ffree)));
	} else if (rc == 0) {
		char t[16], u[16], fr[16];
		human(s.blocks * s.bsize, t, sizeof(t));
		human((s.blocks - s.bfree) * s.bsize, u, sizeof(u));
		human(s.bfree * s.bsize, fr, sizeof(fr));
		printf("meta %s: capacity %s, used %s, free %s, inodes %llu used\n", a.addr, t, u, fr,
		       (unsigned long long)(s.files - s.ffree));
	}
	if (rc == 0) {
		/* meta chose the file system's level for this connection (net/wire.h) */
		struct conn *c = NULL;
		bool aes = false;
		int lv = rpc_conn(a.rpc, &c) == 0 ? conn_wire_level(c, &aes) : wire_floor();
		const char *cipher = lv == WIRE_PRIVACY ? (aes ? "AES-256-GCM" : "ChaCha20-Poly1305") :
				     lv == WIRE_INTEGRITY ? (aes ? "AES-256-GCM" : "Poly1305") : "";
		if (j)
			json_object_set_new(j, "wire", json_pack("{s:s,s:s}", "level",
					    wire_level_name(lv), "cipher", cipher));
		else
			printf("wire: %s%s%s%s\n", wire_level_name(lv), lv ? " (" : "", cipher,
			       lv ? " on this connection)" : "");
		if (c)
			conn_put(c);
	}
	if (rc == 0) {
		json_t *ms = meta_space_get(&a);
		if (ms && j)
			json_object_set_new(j, "meta_space", ms);
		else if (ms) {
			print_meta_space(ms);
			json_decref(ms);
		}
	}
	if (rc == 0)
		rc = print_targets(&a, j);
	if (rc == 0)
		rc = print_chains(&a, j);
	admin_close(&a);
	if (rc) {
		json_decref(j);
		return cli_fail("status", "meta %s: %s", a.addr, weft_strerror(rc));
	}
	return j ? cli_print_json("status", j) : 0;
}

static int run_df(int argc, char **argv)
{
	struct admin a = {0};
	int rc = admin_open("df", argc, argv, &a);
	if (rc)
		return rc;
	struct weft_msg_statfs_reply s;
	rc = statfs_get(&a, &s);
	json_t *ms = rc ? NULL : meta_space_get(&a);
	admin_close(&a);
	if (rc)
		return cli_fail("df", "meta %s: %s", a.addr, weft_strerror(rc));
	char t[16], u[16], fr[16];
	uint64_t used = s.blocks - s.bfree;
	human(s.blocks * s.bsize, t, sizeof(t));
	human(used * s.bsize, u, sizeof(u));
	human(s.bavail * s.bsize, fr, sizeof(fr));
	uint64_t denom = used + s.bavail;
	char name[300];
	snprintf(name, sizeof(name), "weft@%s", a.addr);
	if (a.json) {
		json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:f,s:I,s:I}",
			"schema", "weft.df/1", "filesystem", name,
			"size_bytes", (json_int_t)(s.blocks * s.bsize), "used_bytes", (json_int_t)(used * s.bsize),
			"avail_bytes", (json_int_t)(s.bavail * s.bsize),
			"use_percent", denom ? 100.0 * (double)used / (double)denom : 0.0,
			"inodes", (json_int_t)s.files, "inodes_used", (json_int_t)(s.files - s.ffree));
		if (j && ms)
			json_object_set_new(j, "meta_space", ms);
		else
			json_decref(ms);
		return cli_print_json("df", j);
	}
	printf("%-24s %8s %8s %8s %5s %12s %12s\n", "Filesystem", "Size", "Used", "Avail", "Use%",
	       "Inodes", "IUsed");
	printf("%-24s %8s %8s %8s %4.0f%% %12llu %12llu\n", name, t, u, fr,
	       denom ? 100.0 * (double)used / (double)denom : 0.0, (unsigned long long)s.files,
	       (unsigned long long)(s.files - s.ffree));
	if (ms)
		print_meta_space(ms);
	json_decref(ms);
	return 0;
}

const struct cli_verb cmd_status = {
	.name = "status",
	.summary = "targets, chains and capacity of a cluster",
	.usage = "weft status [--json] [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "Asks meta for its storage targets (id, node, address, up/down, size, free,\n"
		 "bytes and operations read and written, time since the last heartbeat), its\n"
		 "chain tables per replica count (members in order and their states), and the\n"
		 "file system's capacity, and meta's own space (database, map, disk, reserve).\n"
		 "--json prints it as one weft.status/1 object.",
	.run = run_status,
};

const struct cli_verb cmd_df = {
	.name = "df",
	.summary = "capacity, used and free space, like df",
	.usage = "weft df [--json] [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "Prints the file system's size, used and available space (summed over the\n"
		 "storage targets that are up) and inodes, in human units (--json: bytes, as\n"
		 "one weft.df/1 object), then meta's own space: its database, LMDB map, disk\n"
		 "and free space, the reserve held for deletes, and the room left for new\n"
		 "entries (\"meta_space\" in --json).",
	.run = run_df,
};
