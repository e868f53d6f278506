/* weft scrub: every up storage target verifies all its objects' CRCs in the
 * background, at a throttled rate, and repairs damaged ones from another replica. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "weft/err.h"

static int run(int argc, char **argv)
{
	struct cluster_opts co = {0};
	long rate = 0;
	static const struct option opts[] = {
		CLUSTER_LONGOPTS, {"rate", required_argument, NULL, 'r'},
		{0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (cluster_opt(&co, ch, optarg))
			continue;
		switch (ch) {
		case 'r': {
			char *end;
			rate = strtol(optarg, &end, 10);
			if (*end || rate < 0 || rate > 1000000)
				return cli_usage_error("scrub", "--rate %s: MiB/s expected", optarg);
			break;
		}
		default: return cli_usage_error("scrub", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("scrub", "unexpected argument '%s'", argv[optind]);
	struct weft_key key;
	char addr[256];
	struct loop *loop;
	struct rpc *meta;
	int st = cluster_connect("scrub", &co, &key, addr, sizeof(addr), &loop, &meta);
	if (st)
		return st;
	struct weft_chain_set set;
	int rc = chain_set_fetch(meta, 10000, &set);
	rpc_free(meta);
	if (rc) {
		loop_free(loop);
		return cli_fail("scrub", "chain tables from meta %s: %s", addr, weft_strerror(rc));
	}
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_store_scrub m = {.rate = (uint32_t)rate};
	proto_store_scrub_encode(&w, &m);
	unsigned started = 0;
	unsigned failed = w.err ? 1
				: cluster_each_store("scrub", loop, &key, &set, WEFT_OP_STORE_SCRUB,
						     w.data, w.len, &started);
	wbuf_free(&w);
	proto_chain_set_free(&set);
	loop_free(loop);
	printf("scrub started on %u target%s (results in each store's log)\n", started,
	       started == 1 ? "" : "s");
	return failed ? 1 : 0;
}

const struct cli_verb cmd_scrub = {
	.name = "scrub",
	.summary = "verify every object's checksums on every store, repairing from replicas",
	.usage = "weft scrub [--rate MB] [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "Asks every storage target that is up to read all its objects in the\n"
		 "background, at most --rate MiB/s each (default: the store's --resync-rate),\n"
		 "and check every chunk against its CRC32C. A damaged object is copied again\n"
		 "from another replica of its chain, and so is a stale one (files older than\n"
		 "the store's index recorded: an old copy put back). Each store logs what it\n"
		 "found.",
	.run = run,
};
