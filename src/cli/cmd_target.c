/* weft target add: adds a storage target to a cluster started by weft up.
 *
 * A store joins a running file system by registering: meta gives it an id, builds its
 * chains at a new chain-table epoch and every mount and store learns of that epoch
 * (heartbeat replies, or at once when a request names the new chain). So on machines of
 * their own, adding a store is starting `weft store` on the new machine. For a cluster
 * started by weft up, this verb does the same on this machine: it starts store<N> (node
 * name node<N>, N the next free index) through `weft up --stores N+1 --no-mount`, then
 * waits until meta lists the new target, and prints it. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "common/loop.h"
#include "net/conn.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "weft/err.h"

#define STORES_MAX 64 /* as weft up and weft down */

/* Runs argv with its stdout discarded; returns its exit status. */
static int run_quiet(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Prints the target on node and the table sizes once meta has it up; 0 or 1. */
static int show_new(const char *state, const char *node)
{
	struct cluster_opts co = {.dir = state};
	struct weft_key key;
	char meta[256];
	if (cluster_load_key("target", &co, &key))
		return 1;
	cluster_meta_addr(&co, meta, sizeof(meta));
	struct loop *loop;
	if (loop_new(&loop) || loop_start(loop))
		return cli_fail("target", "cannot start event loop");
	struct rpc *r;
	struct rpc_params p = {.loop = loop, .key = &key, .addr = meta, .role = WEFT_ROLE_ADMIN,
			       .name = "weft-target"};
	int rc = rpc_new(&p, &r) ? -EINVAL : -ETIMEDOUT;
	for (int i = 0; rc == -ETIMEDOUT && i < 100; i++) {
		struct weft_chain_set s;
		if (chain_set_fetch(r, 2000, &s) == 0) {
			for (uint32_t t = 0; t < s.ntargets; t++) {
				if (strcmp(s.targets[t].node, node) != 0 ||
				    s.targets[t].state != WEFT_MEMBER_SERVING)
					continue;
				printf("target %u added (%s on %s); chain tables version %llu: "
				       "%u/%u/%u chains of 1/2/3 replicas\n"
				       "new files use it now; files written before stay where they are\n",
				       s.targets[t].id, s.targets[t].addr, node,
				       (unsigned long long)s.epoch, s.nchains[0], s.nchains[1],
				       s.nchains[2]);
				rc = 0;
			}
			proto_chain_set_free(&s);
		}
		if (rc) {
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
		}
	}
	if (rc != -EINVAL)
		rpc_free(r);
	loop_free(loop);
	if (rc)
		return cli_fail("target", "meta %s does not list a target on %s: %s", meta, node,
				weft_strerror(rc));
	return 0;
}

static int target_add(int argc, char **argv)
{
	const char *state = NULL;
	static const struct option opts[] = {{"dir", required_argument, NULL, 'd'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch != 'd')
			return cli_usage_error("target", "unknown option '%s'", argv[optind - 1]);
		state = optarg;
	}
	if (optind != argc)
		return cli_usage_error("target", "unexpected argument '%s'", argv[optind]);
	char statebuf[PATH_MAX], path[PATH_MAX + 32], self[PATH_MAX];
	if (!state) {
		const char *home = getenv("HOME");
		snprintf(statebuf, sizeof(statebuf), "%s/.weft", home && *home ? home : "/tmp");
		state = statebuf;
	}
	snprintf(path, sizeof(path), "%s/meta.pid", state);
	if (access(path, F_OK) != 0)
		return cli_fail("target", "%s is not a cluster started by weft up (no meta.pid); on "
				"a cluster of machines, start `weft store DIR --meta HOST:PORT --node "
				"NODE` on the new machine: it registers and joins", state);
	int n = 0;
	struct stat st;
	for (; n < STORES_MAX; n++) {
		snprintf(path, sizeof(path), "%s/store%d", state, n);
		if (stat(path, &st) != 0)
			break;
	}
	if (n == STORES_MAX)
		return cli_fail("target", "%s already has %d stores, the most weft up runs", state,
				STORES_MAX);
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return cli_fail("target", "cannot find my own binary: %s", strerror(errno));
	self[len] = '\0';
	char count[16], node[32];
	snprintf(count, sizeof(count), "%d", n + 1);
	snprintf(node, sizeof(node), "node%d", n);
	char *up[] = {self, "up", "--dir", (char *)state, "--stores", count, "--no-mount", NULL};
	if (run_quiet(up) != 0)
		return cli_fail("target", "starting store%d in %s failed (see %s/logs/store%d.log)",
				n, state, state, n);
	return show_new(state, node);
}

/* weft target out|drain|remove ID: re-replication now, for a target that will not
 * come back; moving every membership off a target that stays up meanwhile; taking a
 * drained target out for good. */
static int target_admin(int argc, char **argv)
{
	struct cluster_opts co = {0};
	static const struct option opts[] = {
		CLUSTER_LONGOPTS, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (cluster_opt(&co, ch, optarg))
			continue;
		switch (ch) {
		default: return cli_usage_error("target", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error("target", "expects: %s ID", argv[optind]);
	const char *verb = argv[optind];
	char *end;
	unsigned long id = strtoul(argv[optind + 1], &end, 10);
	if (*end || id == 0 || id > UINT32_MAX)
		return cli_usage_error("target", "'%s' is not a target id", argv[optind + 1]);
	struct weft_key key;
	char addr[256];
	struct loop *loop;
	struct rpc *r;
	int st = cluster_connect("target", &co, &key, addr, sizeof(addr), &loop, &r);
	if (st)
		return st;
	struct wbuf w;
	wbuf_init(&w);
	uint16_t op = WEFT_OP_TARGET_OUT;
	if (strcmp(verb, "out") == 0) {
		struct weft_msg_target_out m = {.target = (uint32_t)id};
		proto_target_out_encode(&w, &m);
	} else {
		struct weft_msg_target_drain m = {.target = (uint32_t)id,
						  .remove = strcmp(verb, "remove") == 0};
		proto_target_drain_encode(&w, &m);
		op = WEFT_OP_TARGET_DRAIN;
	}
	struct frame *f = NULL;
	char detail[256] = "";
	int rc = rpc_call(r, op, &w, NULL, 0, 10000, &f);
	if (rc && f)
		conn_error_detail(f, detail, sizeof(detail));
	struct weft_msg_target_out_reply rep = {0};
	if (rc == 0 && proto_target_out_reply_decode(f->payload, f->h.payload_len, &rep, NULL))
		rc = -WEFT_EPROTO;
	frame_free(f);
	rpc_free(r);
	loop_free(loop);
	if (rc)
		return cli_fail("target", "target %s %lu at meta %s: %s", verb, id, addr,
				rc == -ENOENT ? "no such target" : detail[0] ? detail :
				weft_strerror(rc));
	if (strcmp(verb, "out") == 0)
		printf("target %lu out: %u chains rebuild on other targets\n", id, rep.chains);
	else if (strcmp(verb, "drain") == 0)
		printf("target %lu draining: %u chain memberships move to other targets (progress: "
		       "weft status; then weft target remove %lu)\n", id, rep.chains, id);
	else
		printf("target %lu removed: it holds nothing the file system needs; stop its "
		       "store\n", id);
	return 0;
}

static int target_run(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("target", "expects a subcommand: add, drain, remove or out");
	if (strcmp(argv[1], "add") == 0)
		return target_add(argc - 1, argv + 1);
	if (strcmp(argv[1], "out") == 0 || strcmp(argv[1], "drain") == 0 ||
	    strcmp(argv[1], "remove") == 0)
		return target_admin(argc, argv);
	return cli_usage_error("target", "unknown subcommand '%s' (add, drain, remove, out)",
			       argv[1]);
}

const struct cli_verb cmd_target = {
	.name = "target",
	.summary = "add, drain, remove a storage target, or take one out of its chains",
	.usage = "weft target add [--dir STATE]\n"
		 "       weft target drain ID [--dir STATE | --meta HOST:PORT] [--key FILE]\n"
		 "       weft target remove ID [--dir STATE | --meta HOST:PORT] [--key FILE]\n"
		 "       weft target out ID [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "Adds a store to a cluster started by weft up (STATE, default ~/.weft): starts\n"
		 "store<N> on node<N>, the next free index, waits until meta lists it up, and\n"
		 "prints its target id and the new chain-table version. Running mounts and\n"
		 "stores learn of it at once, without a restart; new files use it (files on\n"
		 "fewer chains than there are go where the free space is). Files written\n"
		 "before stay where they are.\n\n"
		 "On a cluster of machines a store is added by starting it on the new machine:\n"
		 "  weft store DIR --meta HOST:PORT --node NODE --key FILE\n"
		 "It registers with meta and joins the same way.\n\n"
		 "out: marks target ID offline and gives each of its chains another target on a\n"
		 "node not already in the chain, which copies the chain's objects from the\n"
		 "members left (as meta does by itself once a target has been offline for\n"
		 "--replace-after). The target's own copies are no longer used.\n\n"
		 "drain: moves every chain membership of target ID to other targets while it\n"
		 "keeps serving: each chain gets the new member as an extra one, which copies\n"
		 "the chain's objects and gets every new write; once it holds them all, meta\n"
		 "drops ID from the chain in one step. The replica count never drops, readers\n"
		 "and writers see no error. ID then deletes its copies. weft status shows the\n"
		 "memberships left. remove: takes a drained target out of the file system for\n"
		 "good (it may not register again); refused while it is still a member of a\n"
		 "chain.",
	.run = target_run,
};
