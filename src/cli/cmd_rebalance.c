/* weft rebalance: moves chain memberships from the fullest storage targets to the
 * emptiest until they differ by less than the threshold (src/meta/moves.h); sets the
 * automatic mode, the threshold and the stores' copy rate; --wait follows it to the
 * end. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "weft/err.h"

/* REBALANCE round trip; 0 or -errno. */
static int call(struct rpc *meta, uint8_t mode, uint32_t threshold,
		struct weft_msg_rebalance_reply *out)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_rebalance m = {.mode = mode, .threshold = threshold};
	proto_rebalance_encode(&w, &m);
	struct frame *f = NULL;
	int rc = rpc_call(meta, WEFT_OP_REBALANCE, &w, NULL, 0, 10000, &f);
	if (rc == 0 && proto_rebalance_reply_decode(f->payload, f->h.payload_len, out, NULL))
		rc = -WEFT_EPROTO;
	frame_free(f);
	return rc;
}

/* STORE_RATE to every store that is up; the number that failed. */
static unsigned set_rate(struct loop *loop, const struct weft_key *key, struct rpc *meta,
			 uint32_t rate)
{
	struct weft_chain_set set;
	if (chain_set_fetch(meta, 10000, &set))
		return 1;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_store_rate m = {.rate = rate};
	proto_store_rate_encode(&w, &m);
	unsigned failed = w.err ? 1
				: cluster_each_store("rebalance", loop, key, &set, WEFT_OP_STORE_RATE,
						     w.data, w.len, NULL);
	wbuf_free(&w);
	proto_chain_set_free(&set);
	return failed;
}

static void show(const struct weft_msg_rebalance_reply *r)
{
	printf("rebalance: %s, automatic %s, threshold %u%%; fullest - emptiest target: %u%% "
	       "of capacity; %u move%s in progress\n",
	       r->active ? "running" : "idle", r->automatic ? "on" : "off", r->threshold,
	       r->spread, r->moving, r->moving == 1 ? "" : "s");
}

static int run(int argc, char **argv)
{
	struct cluster_opts co = {0};
	long threshold = 0, rate = -1, wait_s = 0;
	int mode = 1; /* rebalance now */
	static const struct option opts[] = {
		CLUSTER_LONGOPTS, {"threshold", required_argument, NULL, 't'},
		{"auto", required_argument, NULL, 'a'}, {"rate", required_argument, NULL, 'r'},
		{"status", no_argument, NULL, 's'}, {"wait", required_argument, NULL, 'w'}, {0}};
	int ch;
	char *end;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (cluster_opt(&co, ch, optarg))
			continue;
		switch (ch) {
		case 't':
			threshold = strtol(optarg, &end, 10);
			if (*end || threshold < 1 || threshold > 100)
				return cli_usage_error("rebalance", "--threshold %s: percent 1..100 "
						       "expected", optarg);
			break;
		case 'a':
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
				return cli_usage_error("rebalance", "--auto %s: on or off expected",
						       optarg);
			mode = strcmp(optarg, "on") == 0 ? 2 : 3;
			break;
		case 'r':
			rate = strtol(optarg, &end, 10);
			if (*end || rate < 0 || rate > 1000000)
				return cli_usage_error("rebalance", "--rate %s: MiB/s expected (0: no "
						       "cap)", optarg);
			break;
		case 's': mode = 0; break;
		case 'w':
			wait_s = strtol(optarg, &end, 10);
			if (*end || wait_s < 1 || wait_s > 86400)
				return cli_usage_error("rebalance", "--wait %s: seconds expected",
						       optarg);
			break;
		default:
			return cli_usage_error("rebalance", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("rebalance", "unexpected argument '%s'", argv[optind]);
	struct weft_key key;
	char addr[256];
	struct loop *loop;
	struct rpc *meta;
	int st = cluster_connect("rebalance", &co, &key, addr, sizeof(addr), &loop, &meta);
	if (st)
		return st;
	int ret = 0;
	if (rate >= 0 && set_rate(loop, &key, meta, (uint32_t)rate))
		ret = 1;
	struct weft_msg_rebalance_reply rep;
	int rc = call(meta, (uint8_t)mode, (uint32_t)threshold, &rep);
	/* --wait: until meta has nothing left to move (balanced, or no move would narrow
	 * the gap); the step that starts moves runs every second at meta */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int quiet = 0; rc == 0 && wait_s && quiet < 2;) {
		struct timespec ts = {1, 0}, now;
		nanosleep(&ts, NULL);
		if ((rc = call(meta, 0, 0, &rep)))
			break;
		quiet = !rep.active ? quiet + 1 : 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > wait_s) {
			show(&rep);
			rpc_free(meta);
			loop_free(loop);
			return cli_fail("rebalance", "not balanced within %ld s", wait_s);
		}
	}
	rpc_free(meta);
	loop_free(loop);
	if (rc)
		return cli_fail("rebalance", "meta %s: %s", addr, weft_strerror(rc));
	show(&rep);
	if (rate >= 0)
		printf("copy rate of every store: %s%ld MiB/s\n", rate ? "" : "no cap, ", rate);
	return ret;
}

const struct cli_verb cmd_rebalance = {
	.name = "rebalance",
	.summary = "move data from the fullest storage targets to the emptiest",
	.usage = "weft rebalance [--threshold PCT] [--auto on|off] [--rate MB] [--wait SEC]\n"
		 "               [--status] [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "Moves chain memberships, one at a time, from the fullest storage target to\n"
		 "the emptiest while the fullest is more than PCT percent of capacity (default\n"
		 "10, or meta's --rebalance-threshold) fuller. Each move is copy, then switch at\n"
		 "meta, then delete: the new target copies the chain's objects and gets every\n"
		 "new write meanwhile, meta swaps it in for the old one in one step, and the old\n"
		 "one deletes its copies. Readers and writers see no error. --auto on|off sets\n"
		 "the automatic mode (meta rebalances by itself when over the threshold; on by\n"
		 "default) instead. --rate caps the copying of every store (resync, rebuilds and\n"
		 "moves) at MiB/s (0: no cap). --wait SEC returns when balanced (failing after\n"
		 "SEC). --status only shows the state. Progress is also in weft status.",
	.run = run,
};
