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
#include "common/stats.h"
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
		{"sync-each", no_argument, NULL, 'E'}, {0}};
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
		default: return cli_usage_error("meta", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("meta", optind < argc ? "expects exactly one DIR"
							     : "the metadata DIR is required");
	o.dir = argv[optind];
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
		 "          [--metrics HOST:PORT]\n\n"
		 "Serves the file system whose metadata weft mkfs made in DIR. Listens on HOST:PORT\n"
		 "(default 0.0.0.0:7070; IPv6 as [::1]:7070; port 0 picks a free port, logged as\n"
		 "\"serving DIR on HOST:PORT\"). The key defaults to DIR/cluster.key.\n"
		 "  --target-timeout SEC   a store silent this long is marked offline (default 10)\n"
		 "  --session-timeout SEC  a client silent this long loses its session (default 30)\n"
		 "  --replace-after SEC    a store offline this long is replaced in its chains by\n"
		 "                         another, which rebuilds the copies (default 300)\n"
		 "  --sync-each            one write transaction and sync per mutation, no group\n"
		 "                         commit (for benchmarks; also WEFT_META_SYNC_EACH=1)\n"
		 "  --metrics HOST:PORT    serve Prometheus metrics at http://HOST:PORT/metrics\n"
		 "Detaches unless -f; returns once serving. SIGTERM or SIGINT stops it cleanly.",
	.run = run,
};
