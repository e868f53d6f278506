/* weft store DIR --meta HOST:PORT: serve one storage target (src/store/server.h). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "net/stats.h"
#include "store/server.h"

static volatile int stop_flag;

/* Open files: two per cached object, one per connection. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("setrlimit(RLIMIT_NOFILE, %llu): %s",
				 (unsigned long long)rl.rlim_max, strerror(errno));
	}
}

static int run(int argc, char **argv)
{
	struct daemon_opts d = {0};
	const char *metrics = NULL;
	struct cluster_opts co = {0};
	struct store_server_opts o = {.default_port = WEFT_STORE_PORT};
	const char *listen = NULL;
	long workers = 0;
	static const struct option opts[] = {
		{"meta", required_argument, NULL, 'm'}, {"listen", required_argument, NULL, 'l'},
		{"advertise", required_argument, NULL, 'a'}, {"node", required_argument, NULL, 'n'},
		{"key", required_argument, NULL, 'k'}, {"workers", required_argument, NULL, 'w'},
		{"foreground", no_argument, NULL, 'f'}, {"log", required_argument, NULL, 'L'},
		{"metrics", required_argument, NULL, 'M'},
		{"log-level", required_argument, NULL, 'v'}, {"buffered", no_argument, NULL, 'B'},
		{"pid-file", required_argument, NULL, 'p'},
		{"resync-rate", required_argument, NULL, 'R'},
		{"capacity", required_argument, NULL, 'C'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		switch (ch) {
		case 'm': co.meta = optarg; break;
		case 'l': listen = optarg; break;
		case 'a': o.advertise = optarg; break;
		case 'n': o.node = optarg; break;
		case 'k': co.key = optarg; break;
		case 'w':
			workers = strtol(optarg, NULL, 10);
			if (workers < 1 || workers > 64)
				return cli_usage_error("store", "--workers must be 1..64");
			break;
		case 'f': d.foreground = true; break;
		case 'M': metrics = optarg; break;
		case 'B': o.buffered = true; break;
		case 'R': {
			char *end;
			long long mb = strtoll(optarg, &end, 10);
			if (*end || mb < 0 || mb > (1ll << 30))
				return cli_usage_error("store", "--resync-rate %s: MB/s expected "
						       "(0: unlimited)", optarg);
			o.resync_rate = mb ? (uint64_t)mb << 20 : UINT64_MAX;
			break;
		}
		case 'C':
			if (cli_parse_size(optarg, &o.capacity) || o.capacity == 0)
				return cli_usage_error("store", "--capacity %s: not a size (bytes, or "
						       "with K, M, G)", optarg);
			break;
		case 'L': d.log_file = optarg; break;
		case 'v': d.log_level = optarg; break;
		case 'p': d.pid_file = optarg; break;
		default: return cli_usage_error("store", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("store", optind < argc ? "expects exactly one DIR"
							      : "the target DIR is required");
	if (!co.meta)
		return cli_usage_error("store", "--meta HOST:PORT is required");
	o.dir = argv[optind];
	o.meta = co.meta;
	o.workers = (unsigned)workers;
	char lbuf[80], host[256];
	if (!listen) {
		snprintf(lbuf, sizeof(lbuf), "0.0.0.0:%d", WEFT_STORE_PORT);
		listen = lbuf;
	}
	o.listen = listen;
	if (!o.node) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = 0;
		host[63] = 0; /* WEFT_NODE_MAX */
		o.node = host;
	}
	struct weft_key key;
	if (cluster_load_key("store", &co, &key))
		return 1;
	if (key.serial && key.role != WEFT_ROLE_STORE)
		return cli_fail("store", "the key is the %s credential of node %s: a store needs a "
				"store credential (weft node add NAME --role store) or the cluster key",
				auth_role_name(key.role), key.name);
	if (key.serial) { /* a store credential names its node */
		if (o.node != host && strcmp(o.node, key.name) != 0)
			return cli_fail("store", "--node %s differs from the credential's node %s",
					o.node, key.name);
		o.node = key.name;
	}
	o.key = &key;
	o.stop = &stop_flag;

	int rc = daemon_start("store", &d);
	if (rc)
		return rc;
	daemon_on_signal(&stop_flag, NULL, NULL);
	raise_nofile();
	struct store_server *s;
	char err[512] = "";
	rc = store_server_start(&o, &s, err, sizeof(err));
	if (rc) {
		if (rc == -EINTR) {
			log_info("stopped before meta answered");
		} else {
			log_error("%s", err);
			if (d.foreground)
				fprintf(stderr, "weft store: %s\n", err);
		}
		daemon_ready(1);
		daemon_cleanup();
		return 1;
	}
	if (daemon_metrics(metrics)) {
		store_server_stop(s);
		daemon_ready(1);
		daemon_cleanup();
		return 1;
	}
	stats_set_identity("store", o.node);
	stats_set_target((int)store_server_target(s));
	daemon_ready(0);
	while (!stop_flag) {
		daemon_watchdog(store_server_loop(s));
		poll(NULL, 0, 200);
	}
	log_info("stopping");
	store_server_stop(s);
	daemon_cleanup();
	return 0;
}

const struct cli_verb cmd_store = {
	.name = "store",
	.summary = "serve one storage target (objects, checksums, chain replication)",
	.usage = "weft store DIR --meta HOST:PORT [--listen HOST:PORT] [--advertise HOST:PORT]\n"
		 "          [--node NAME] [--key FILE] [--workers N] [-f|--foreground] [--log FILE]\n"
		 "          [--log-level L] [--pid-file F] [--buffered] [--resync-rate MB]\n"
		 "          [--metrics HOST:PORT] [--capacity SIZE]\n\n"
		 "Serves the storage target in DIR (formatted on first start, with the file\n"
		 "system's checksum mode) and registers it with meta at HOST:PORT. Listens on\n"
		 "--listen (default 0.0.0.0:7071; port 0 picks a free one). Clients are told the\n"
		 "--advertise address, else the --listen one (0.0.0.0 becomes 127.0.0.1, logged).\n"
		 "--node defaults to the host name: replicas of a chain live on distinct nodes.\n"
		 "The key defaults to --key, $WEFT_KEY, or /etc/weft/cluster.key. --workers sets\n"
		 "the I/O threads (default 8). Large page-aligned writes go to disk with O_DIRECT\n"
		 "(not through the page cache) where the file system allows; --buffered turns\n"
		 "that off. --resync-rate caps what bringing this target up to date (resync,\n"
		 "rebuild) copies, in MiB/s (default 64; 0: no cap), so applications keep the\n"
		 "rest of the disks and links. --metrics serves Prometheus metrics at\n"
		 "http://HOST:PORT/metrics. --capacity reports SIZE (K, M, G) as the target's\n"
		 "size and SIZE less the bytes of its objects as its free space, for stores\n"
		 "that share one file system (placement and rebalancing go by it); it is not\n"
		 "a quota. Detaches unless -f; returns once registered and\n"
		 "serving. SIGTERM or SIGINT stops it cleanly.",
	.run = run,
};
