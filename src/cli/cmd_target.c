/* weft target out ID: re-replication now, for a target that will not come back. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "common/rpc.h"
#include "weft/err.h"

static int run(int argc, char **argv)
{
	struct cluster_opts co = {0};
	static const struct option opts[] = {
		{"dir", required_argument, NULL, 'd'}, {"meta", required_argument, NULL, 'm'},
		{"key", required_argument, NULL, 'k'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'd': co.dir = optarg; break;
		case 'm': co.meta = optarg; break;
		case 'k': co.key = optarg; break;
		default: return cli_usage_error("target", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 2 || strcmp(argv[optind], "out") != 0)
		return cli_usage_error("target", "expects: out ID");
	char *end;
	unsigned long id = strtoul(argv[optind + 1], &end, 10);
	if (*end || id == 0 || id > UINT32_MAX)
		return cli_usage_error("target", "'%s' is not a target id", argv[optind + 1]);
	struct weft_key key;
	if (cluster_load_key("target", &co, &key))
		return 1;
	char addr[256];
	cluster_meta_addr(&co, addr, sizeof(addr));
	log_init("target", LOG_WARN);
	struct loop *loop;
	if (loop_new(&loop) || loop_start(loop))
		return cli_fail("target", "cannot start event loop");
	struct rpc_params p = {.loop = loop, .key = &key, .addr = addr,
			       .default_port = WEFT_META_PORT, .role = WEFT_ROLE_ADMIN,
			       .name = "weft-target"};
	struct rpc *r;
	if (rpc_new(&p, &r)) {
		loop_free(loop);
		return cli_usage_error("target", "bad meta address '%s'", addr);
	}
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_target_out m = {.target = (uint32_t)id};
	weft_target_out_encode(&w, &m);
	struct frame *f = NULL;
	int rc = rpc_call(r, WEFT_OP_TARGET_OUT, &w, NULL, 0, 10000, &f);
	struct weft_msg_target_out_reply rep = {0};
	if (rc == 0 && weft_target_out_reply_decode(f->payload, f->h.payload_len, &rep, NULL))
		rc = -WEFT_EPROTO;
	frame_free(f);
	rpc_free(r);
	loop_free(loop);
	if (rc)
		return cli_fail("target", "target out %lu at meta %s: %s", id, addr,
				rc == -ENOENT ? "no such target" : weft_strerror(rc));
	printf("target %lu out: %u chains rebuild on other targets\n", id, rep.chains);
	return 0;
}

const struct cli_verb cmd_target = {
	.name = "target",
	.summary = "take a storage target out of its chains (re-replication now)",
	.usage = "weft target out ID [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "Marks target ID offline and gives each of its chains another target on a node\n"
		 "not already in the chain, which copies the chain's objects from the members\n"
		 "left (as meta does by itself once a target has been offline for\n"
		 "--replace-after). The target's own copies are no longer used.",
	.run = run,
};
