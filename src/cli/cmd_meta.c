/* weft meta DIR: serve the metadata of one file system. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/stats.h"
#include "meta/server.h"

static int parse_secs(const char *s, uint32_t *ms)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || v <= 0 || v > 86400)
		return -EINVAL;
	*ms = (uint32_t)(v * 1000);
	return *ms ? 0 : -EINVAL;
}

static volatile int stop_flag;

static int run(int argc, char **argv)
{
	struct daemon_opts d = {0};
	const char *metrics = NULL;
	struct meta_server_opts o = {.default_port = WEFT_META_PORT};
	const char *key_path = NULL, *listen = NULL;
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'}, {"key", required_argument, NULL, 'k'},
		{"foreground", no_argument, NULL, 'f'}, {"log", required_argument, NULL, 'L'},
		{"metrics", required_argument, NULL, 'M'},
		{"log-level", required_argument, NULL, 'v'},
		{"pid-file", required_argument, NULL, 'p'},
		{"target-timeout", required_argument, NULL, 'T'},
		{"session-timeout", required_argument, NULL, 'S'},
		{"replace-after", required_argument, NULL, 'R'},
		{"sync-each", no_argument, NULL, 'E'},
		{"reserve", required_argument, NULL, 'r'},
		{"space-warn", required_argument, NULL, 'W'},
		{"rebalance-threshold", required_argument, NULL, 'B'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		switch (ch) {
		case 'l': listen = optarg; break;
		case 'k': key_path = optarg; break;
		case 'f': d.foreground = true; break;
		case 'M': metrics = optarg; break;
		case 'L': d.log_file = optarg; break;
		case 'v': d.log_level = optarg; break;
		case 'p': d.pid_file = optarg; break;
		case 'T':
			if (parse_secs(optarg, &o.target_timeout_ms))
				return cli_usage_error("meta", "--target-timeout %s: not a number of "
						       "seconds", optarg);
			break;
		case 'S':
			if (parse_secs(optarg, &o.session_timeout_ms))
				return cli_usage_error("meta", "--session-timeout %s: not a number of "
						       "seconds", optarg);
			break;
		case 'R':
			if (parse_secs(optarg, &o.replace_after_ms))
				return cli_usage_error("meta", "--replace-after %s: not a number of "
						       "seconds", optarg);
			break;
		case 'E': o.sync_each = true; break;
		case 'B': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 100)
				return cli_usage_error("meta", "--rebalance-threshold %s: percent 0..100 "
						       "expected (0: off)", optarg);
			o.rebalance_threshold = (uint32_t)v;
			o.no_rebalance = v == 0;
			break;
		}
		case 'r':
			if (cli_parse_size(optarg, &o.reserve))
				return cli_usage_error("meta", "--reserve %s: not a size (bytes, or "
						       "with K, M, G)", optarg);
			o.no_reserve = o.reserve == 0;
			break;
		case 'W':
			if (cli_parse_size(optarg, &o.space_warn) || o.space_warn == 0)
				return cli_usage_error("meta", "--space-warn %s: not a size above 0 "
						       "(bytes, or with K, M, G)", optarg);
			break;
		default: return cli_usage_error("meta", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("meta", optind < argc ? "expects exactly one DIR"
							     : "the metadata DIR is required");
	o.dir = argv[optind];
	/* the same as --reserve and --space-warn, for weft up and tests */
	const char *sz = getenv("WEFT_META_RESERVE");
	if (sz && *sz && !o.reserve && !o.no_reserve) {
		if (cli_parse_size(sz, &o.reserve))
			return cli_usage_error("meta", "WEFT_META_RESERVE=%s: not a size", sz);
		o.no_reserve = o.reserve == 0;
	}
	sz = getenv("WEFT_META_SPACE_WARN");
	if (sz && *sz && !o.space_warn && (cli_parse_size(sz, &o.space_warn) || !o.space_warn))
		return cli_usage_error("meta", "WEFT_META_SPACE_WARN=%s: not a size above 0", sz);
	const char *env = getenv("WEFT_META_SYNC_EACH");
	if (env && *env && strcmp(env, "0") != 0)
		o.sync_each = true;
	char lbuf[80];
	if (!listen) {
		snprintf(lbuf, sizeof(lbuf), "0.0.0.0:%d", WEFT_META_PORT);
		listen = lbuf;
	}
	o.listen = listen;
	char kbuf[4096];
	if (!key_path) {
		snprintf(kbuf, sizeof(kbuf), "%s/cluster.key", o.dir);
		key_path = kbuf;
	}
	struct cluster_opts co = {.key = key_path};
	struct weft_key key;
	if (cluster_load_key("meta", &co, &key))
		return 1;
	o.key = &key;

	int rc = daemon_start("meta", &d);
	if (rc)
		return rc;
	daemon_on_signal(&stop_flag, NULL, NULL);
	struct meta_server *s;
	char err[512];
	rc = meta_server_start(&o, &s, err, sizeof(err));
	if (rc) {
		log_error("%s", err);
		if (d.foreground)
			fprintf(stderr, "weft meta: %s\n", err);
		daemon_ready(1);
		daemon_cleanup();
		return 1;
	}
	log_info("serving %s on %s%s", o.dir, meta_server_addr(s),
		 o.sync_each ? " (one sync per mutation)" : "");
	if (daemon_metrics(metrics)) {
		meta_server_stop(s);
		daemon_ready(1);
		daemon_cleanup();
		return 1;
	}
	stats_set_identity("meta", NULL);
	daemon_ready(0);
	while (!stop_flag) {
		daemon_watchdog(meta_server_loop(s));
		poll(NULL, 0, 200);
	}
	log_info("stopping");
	meta_server_stop(s);
	daemon_cleanup();
	return 0;
}

const struct cli_verb cmd_meta = {
	.name = "meta",
	.summary = "serve a file system's metadata (namespace, layouts, targets, sessions)",
	.usage = "weft meta DIR [--listen HOST:PORT] [--key FILE] [-f|--foreground] [--log FILE]\n"
		 "          [--log-level L] [--pid-file F] [--target-timeout SEC]\n"
		 "          [--session-timeout SEC] [--replace-after SEC] [--sync-each]\n"
		 "          [--reserve SIZE] [--space-warn SIZE] [--metrics HOST:PORT]\n"
		 "          [--rebalance-threshold PCT]\n\n"
		 "Serves the file system whose metadata weft mkfs made in DIR. Listens on HOST:PORT\n"
		 "(default 0.0.0.0:7070; IPv6 as [::1]:7070; port 0 picks a free port, logged as\n"
		 "\"serving DIR on HOST:PORT\"). The key defaults to DIR/cluster.key.\n"
		 "  --target-timeout SEC   a store silent this long is marked offline (default 10)\n"
		 "  --session-timeout SEC  a client silent this long loses its session (default 30)\n"
		 "  --replace-after SEC    a store offline this long is replaced in its chains by\n"
		 "                         another, which rebuilds the copies (default 300)\n"
		 "  --sync-each            one write transaction and sync per mutation, no group\n"
		 "                         commit (for benchmarks; also WEFT_META_SYNC_EACH=1)\n"
		 "  --reserve SIZE         space kept for deletes on DIR's disk, in a preallocated\n"
		 "                         file (default 1% of the disk, 8M to 256M, at most 1/8);\n"
		 "                         creates get ENOSPC first (0: no reserve file)\n"
		 "  --space-warn SIZE      log a warning once when the room left for metadata falls\n"
		 "                         under SIZE (default 2x (reserve + low-water), or 5%)\n"
		 "  --metrics HOST:PORT    serve Prometheus metrics at http://HOST:PORT/metrics\n"
		 "  --rebalance-threshold PCT  move data from the fullest store to the emptiest\n"
		 "                         while they differ by more than PCT percent of\n"
		 "                         capacity (default 10; 0: no automatic rebalancing)\n"
		 "Detaches unless -f; returns once serving. SIGTERM or SIGINT stops it cleanly.",
	.run = run,
};
