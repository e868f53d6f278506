/* weft up / weft down: a whole cluster on this machine, in one state directory.
 *
 * STATE/ holds cluster.key, meta/ (metadata), store<i>/ (one target each, node names
 * node<i> so replicas land on different stores as on different machines), *.addr (the
 * address each daemon listens on, kept across restarts), *.pid, logs/, and mnt/ (the
 * default mount point). `up` is idempotent: it starts whatever is not running and mounts
 * if not mounted. `down` unmounts (which flushes), then stops stores and meta. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/addr.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/chainfetch.h"
#include "net/wire.h"
#include "weft/err.h"

#define STORES_MAX 64

static char self[PATH_MAX];

static void path_of(char *out, size_t cap, const char *dir, const char *name)
{
	if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
		out[0] = '\0'; /* too long: an empty path fails loudly where it is used */
}

static int read_line(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	int ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (!ok)
		return -EINVAL;
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

static int write_line(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", s);
	return fclose(f) ? -errno : 0;
}

/* True if pid runs: a killed daemon nobody has reaped yet is a zombie, as good as gone. */
static bool pid_running(pid_t pid)
{
	if (pid <= 0 || kill(pid, 0) < 0)
		return false;
	char path[64], st[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_line(path, st, sizeof(st)) == 0) {
		const char *p = strrchr(st, ')');
		if (p && (p[2] == 'Z' || p[2] == 'X'))
			return false;
	}
	return true;
}

/* The pid recorded in path if that process is alive, else 0. */
static pid_t alive(const char *pidfile)
{
	char buf[32];
	if (read_line(pidfile, buf, sizeof(buf)))
		return 0;
	pid_t pid = (pid_t)atoi(buf);
	return pid_running(pid) ? pid : 0;
}

/* A port nobody listens on now (the kernel's pick). */
static int free_port(void)
{
	struct weft_addr a;
	addr_parse("127.0.0.1:0", 0, &a);
	int fd = addr_listen(&a);
	if (fd < 0)
		return fd;
	int port = addr_local_port(fd);
	close(fd);
	return port;
}

/* The address recorded for a daemon, or a new one (preferred port if free). */
static int daemon_addr(const char *state, const char *name, int preferred, char *out, size_t cap)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s.addr", state, name);
	if (read_line(path, out, cap) == 0)
		return 0;
	int port = preferred;
	if (port) {
		struct weft_addr a;
		char s[32];
		snprintf(s, sizeof(s), "127.0.0.1:%d", port);
		addr_parse(s, 0, &a);
		int fd = addr_listen(&a);
		if (fd < 0)
			port = 0;
		else
			close(fd);
	}
	if (!port)
		port = free_port();
	if (port < 0)
		return port;
	snprintf(out, cap, "127.0.0.1:%d", port);
	return write_line(path, out);
}

/* Runs argv to completion; returns its exit status. */
static int run_cmd(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execv(argv[0], argv);
		fprintf(stderr, "weft up: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool is_mounted(const char *mnt)
{
	char real[PATH_MAX];
	if (!realpath(mnt, real))
		return false;
	FILE *f = fopen("/proc/self/mounts", "r");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (fgets(line, sizeof(line), f)) {
		char dev[1024], dir[PATH_MAX], type[64];
		if (sscanf(line, "%1023s %4095s %63s", dev, dir, type) == 3 &&
		    strcmp(dir, real) == 0 && strncmp(type, "fuse.weft", 9) == 0)
			found = true;
	}
	fclose(f);
	return found;
}

/* Waits until meta lists `want` targets, all up; returns 0 or -ETIMEDOUT. */
static int wait_registered(const char *meta, const char *keyfile, uint32_t want, int secs)
{
	struct weft_key key;
	char err[512];
	if (auth_key_load(keyfile, &key, err, sizeof(err)))
		return -EPERM;
	struct loop *loop;
	if (loop_new(&loop) || loop_start(loop))
		return -ENOMEM;
	struct rpc *r;
	struct rpc_params p = {.loop = loop, .key = &key, .addr = meta, .role = WEFT_ROLE_ADMIN,
			       .name = "weft-up"};
	int rc = rpc_new(&p, &r);
	for (int i = 0; rc == 0 && i < secs * 10; i++) {
		struct weft_chain_set set;
		if (chain_set_fetch(r, 2000, &set) == 0) {
			uint32_t up = 0;
			for (uint32_t t = 0; t < set.ntargets; t++)
				up += set.targets[t].state == WEFT_MEMBER_SERVING;
			proto_chain_set_free(&set);
			if (up >= want) {
				rc = 1;
				break;
			}
		}
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
	rpc_free(r);
	loop_free(loop);
	return rc == 1 ? 0 : -ETIMEDOUT;
}

/* Copies the key file src to dst (created 0600, not there yet). Returns 0 or -1 (errno). */
static int copy_key(const char *src, const char *dst)
{
	char buf[4096];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, e = 0;
	ssize_t n = in < 0 ? -1 : read(in, buf, sizeof(buf));
	if (n >= 0)
		out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out >= 0 && (write(out, buf, (size_t)n) != n || fsync(out) < 0))
		e = errno ? errno : EIO;
	if (n < 0 || out < 0)
		e = errno;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	errno = e;
	return e ? -1 : 0;
}

static int up_run(int argc, char **argv)
{
	const char *state = NULL, *mnt = NULL;
	long nstores = 4, replicas = 2;
	bool no_mount = false, metrics = false;
	const char *wire = "integrity"; /* weft mkfs's default */
	const char *store_cap = NULL;
	static const struct option opts[] = {
		{"store-capacity", required_argument, NULL, 'C'},
		{"stores", required_argument, NULL, 's'}, {"replicas", required_argument, NULL, 'r'},
		{"dir", required_argument, NULL, 'd'}, {"mount", required_argument, NULL, 'm'},
		{"no-mount", no_argument, NULL, 'n'}, {"metrics", no_argument, NULL, 'M'},
		{"wire", required_argument, NULL, 'w'}, {0}};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': nstores = strtol(optarg, NULL, 10); break;
		case 'r': replicas = strtol(optarg, NULL, 10); break;
		case 'd': state = optarg; break;
		case 'm': mnt = optarg; break;
		case 'n': no_mount = true; break;
		case 'M': metrics = true; break;
		case 'w':
			if (wire_level_parse(optarg) < 0)
				return cli_usage_error("up", "--wire %s: none, integrity or privacy", optarg);
			wire = optarg;
			break;
		case 'C': {
			uint64_t v;
			if (cli_parse_size(optarg, &v) || v == 0)
				return cli_usage_error("up", "--store-capacity %s: not a size (bytes, "
						       "or with K, M, G)", optarg);
			store_cap = optarg;
			break;
		}
		default: return cli_usage_error("up", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error("up", "unexpected argument '%s'", argv[optind]);
	if (nstores < 1 || nstores > STORES_MAX)
		return cli_usage_error("up", "--stores must be 1..%d", STORES_MAX);
	if (replicas < 1 || replicas > 3)
		return cli_usage_error("up", "--replicas must be 1..3");
	if (replicas > nstores)
		return cli_usage_error("up", "--replicas %ld needs at least %ld stores", replicas, replicas);
	char statebuf[PATH_MAX], mntbuf[PATH_MAX], path[PATH_MAX], logs[PATH_MAX];
	if (!state) {
		const char *home = getenv("HOME");
		snprintf(statebuf, sizeof(statebuf), "%s/.weft", home && *home ? home : "/tmp");
		state = statebuf;
	}
	if (mkdir(state, 0755) < 0 && errno != EEXIST)
		return cli_fail("up", "mkdir %s: %s", state, strerror(errno));
	if (!realpath(state, statebuf))
		return cli_fail("up", "%s: %s", state, strerror(errno));
	state = statebuf;
	if (!mnt) {
		path_of(mntbuf, sizeof(mntbuf), state, "mnt");
		mnt = mntbuf;
	}
	mkdir(mnt, 0755);
	path_of(logs, sizeof(logs), state, "logs");
	mkdir(logs, 0755);
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0)
		return cli_fail("up", "cannot find my own binary: %s", strerror(errno));

	/* metadata: mkfs once; the key lives at STATE/cluster.key */
	char metadir[PATH_MAX], key[PATH_MAX], rstr[8];
	path_of(metadir, sizeof(metadir), state, "meta");
	path_of(key, sizeof(key), state, "cluster.key");
	path_of(path, sizeof(path), metadir, "data.mdb");
	if (access(path, F_OK) != 0) {
		snprintf(rstr, sizeof(rstr), "%ld", replicas);
		char *mk[] = {self, "mkfs", "--meta", metadir, "--replicas", rstr, "--wire", (char *)wire,
			      NULL};
		if (run_cmd(mk) != 0)
			return cli_fail("up", "mkfs of %s failed", metadir);
		char mkey[PATH_MAX];
		path_of(mkey, sizeof(mkey), metadir, "cluster.key");
		/* meta's directory may be a file system of its own: then a copy */
		if (access(key, F_OK) != 0 && link(mkey, key) < 0 &&
		    (errno != EXDEV || copy_key(mkey, key) < 0))
			return cli_fail("up", "link %s to %s: %s", mkey, key, strerror(errno));
	}

	char meta[64], pidf[PATH_MAX], logf[PATH_MAX];
	int rc = daemon_addr(state, "meta", WEFT_META_PORT, meta, sizeof(meta));
	if (rc)
		return cli_fail("up", "no port for meta: %s", strerror(-rc));
	path_of(pidf, sizeof(pidf), state, "meta.pid");
	path_of(logf, sizeof(logf), logs, "meta.log");
	char maddr[64];
	if (metrics && (rc = daemon_addr(state, "meta.metrics", 0, maddr, sizeof(maddr))))
		return cli_fail("up", "no port for meta's metrics: %s", strerror(-rc));
	if (!alive(pidf)) {
		char *cmd[] = {self, "meta", metadir, "--listen", meta, "--key", key, "--pid-file", pidf,
			       "--log", logf, metrics ? "--metrics" : NULL, maddr, NULL};
		if (run_cmd(cmd) != 0)
			return cli_fail("up", "weft meta did not start; see %s", logf);
	}
	/* --store-capacity is kept in STATE/store.capacity: stores started later (weft up
	 * again, weft target add) get it too */
	char capbuf[32] = "";
	path_of(path, sizeof(path), state, "store.capacity");
	if (store_cap) {
		FILE *cf = fopen(path, "w");
		if (!cf || fprintf(cf, "%s\n", store_cap) < 0 || fclose(cf) != 0)
			return cli_fail("up", "writing %s: %s", path, strerror(errno));
	}
	FILE *cf = fopen(path, "r");
	if (cf) {
		if (!fgets(capbuf, sizeof(capbuf), cf))
			capbuf[0] = '\0';
		capbuf[strcspn(capbuf, "\n")] = '\0';
		fclose(cf);
	}
	/* stores: start those that are not running, and every store<i> the state holds
	 * beyond --stores (added by weft target add): leaving one down would take a
	 * replica of its chains offline */
	for (long i = nstores; i < STORES_MAX; i++) {
		char name[32], dir[PATH_MAX];
		struct stat sst;
		snprintf(name, sizeof(name), "store%ld", i);
		path_of(dir, sizeof(dir), state, name);
		if (stat(dir, &sst) == 0 && S_ISDIR(sst.st_mode))
			nstores = i + 1;
	}
	for (long i = 0; i < nstores; i++) {
		char name[32], dir[PATH_MAX], addr[64], node[32];
		snprintf(name, sizeof(name), "store%ld", i);
		snprintf(node, sizeof(node), "node%ld", i);
		path_of(dir, sizeof(dir), state, name);
		mkdir(dir, 0755);
		rc = daemon_addr(state, name, 0, addr, sizeof(addr));
		if (rc)
			return cli_fail("up", "no port for %s: %s", name, strerror(-rc));
		char fname[48];
		snprintf(fname, sizeof(fname), "%s.pid", name);
		path_of(path, sizeof(path), state, fname);
		snprintf(fname, sizeof(fname), "%s.log", name);
		path_of(logf, sizeof(logf), logs, fname);
		if (alive(path))
			continue;
		char mname[48], maddr2[64];
		snprintf(mname, sizeof(mname), "%s.metrics", name);
		if (metrics && (rc = daemon_addr(state, mname, 0, maddr2, sizeof(maddr2))))
			return cli_fail("up", "no port for %s's metrics: %s", name, strerror(-rc));
		char *cmd[20] = {self, "store", dir, "--meta", meta, "--listen", addr, "--node", node,
				 "--key", key, "--pid-file", path, "--log", logf};
		int nc = 15;
		if (capbuf[0]) {
			cmd[nc++] = "--capacity";
			cmd[nc++] = capbuf;
		}
		if (metrics) {
			cmd[nc++] = "--metrics";
			cmd[nc++] = maddr2;
		}
		cmd[nc] = NULL;
		if (run_cmd(cmd) != 0)
			return cli_fail("up", "weft store %s did not start; see %s", dir, logf);
	}
	if (wait_registered(meta, key, (uint32_t)nstores, 30) != 0)
		return cli_fail("up", "not all %ld stores registered with meta within 30 s; see %s",
				nstores, logs);
	/* the mount */
	path_of(pidf, sizeof(pidf), state, "mount.pid");
	path_of(logf, sizeof(logf), logs, "mount.log");
	if (!no_mount && !is_mounted(mnt)) {
		char o[PATH_MAX + 64], mtaddr[64] = "";
		if (metrics && (rc = daemon_addr(state, "mount.metrics", 0, mtaddr, sizeof(mtaddr))))
			return cli_fail("up", "no port for the mount's metrics: %s", strerror(-rc));
		/* the node that holds the cluster key mounts as itself: root stays root;
		 * $WEFT_UP_MOUNT_OPTS adds mount options (wb_attrs, for benchmarks) */
		const char *extra = getenv("WEFT_UP_MOUNT_OPTS");
		snprintf(o, sizeof(o), "%s,no_root_squash%s%s%s%s",
			 getuid() == 0 ? "allow_other" : "rw", mtaddr[0] ? ",metrics=" : "", mtaddr,
			 extra && *extra ? "," : "", extra && *extra ? extra : "");
		char *cmd[] = {self, "mount", meta, (char *)mnt, "-o", o, "--key", key, "--pid-file",
			       pidf, "--log", logf, NULL};
		if (run_cmd(cmd) != 0)
			return cli_fail("up", "mount at %s failed; see %s", mnt, logf);
	}
	if (!no_mount) {
		char real[PATH_MAX];
		path_of(path, sizeof(path), state, "mount.path");
		write_line(path, realpath(mnt, real) ? real : mnt);
	}
	printf("weft is up:\n"
	       "  meta     %s   (metadata in %s/meta)\n"
	       "  stores   %ld   (%s/store0 .. store%ld)\n"
	       "  mount    %s\n"
	       "  key      %s\n"
	       "  logs     %s\n"
	       "status:  %s status --dir %s\n"
	       "stop:    %s down --dir %s\n",
	       meta, state, nstores, state, nstores - 1, no_mount ? "(not mounted)" : mnt, key, logs,
	       self, state, self, state);
	return 0;
}

/* Sends SIGTERM to the daemon of pidfile and waits for it to exit (SIGKILL after secs). */
static void stop_daemon(const char *pidfile, const char *what, int secs)
{
	pid_t pid = alive(pidfile);
	if (!pid)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < secs * 20 && pid_running(pid); i++) {
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
	}
	if (pid_running(pid)) {
		fprintf(stderr, "weft down: %s (pid %d) did not stop; killing it\n", what, (int)pid);
		kill(pid, SIGKILL);
	}
	unlink(pidfile);
}

static int down_run(int argc, char **argv)
{
	const char *state = NULL;
	static const struct option opts[] = {{"dir", required_argument, NULL, 'd'}, {0}};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'd')
			state = optarg;
		else
			return cli_usage_error("down", "unknown option '%s'", argv[optind - 1]);
	}
	char statebuf[PATH_MAX], path[PATH_MAX], mnt[PATH_MAX];
	if (!state) {
		const char *home = getenv("HOME");
		snprintf(statebuf, sizeof(statebuf), "%s/.weft", home && *home ? home : "/tmp");
		state = statebuf;
	}
	struct stat st;
	if (stat(state, &st) < 0)
		return cli_fail("down", "%s: %s", state, strerror(errno));
	int rc = 0;
	/* unmount first: the kernel releases open files, which flushes their data */
	path_of(path, sizeof(path), state, "mount.path");
	if (read_line(path, mnt, sizeof(mnt)) == 0 && is_mounted(mnt)) {
		char *um[] = {"/bin/umount", mnt, NULL};
		if (run_cmd(um) != 0) {
			fprintf(stderr, "weft down: umount %s failed (busy?); not stopping the servers\n", mnt);
			return 1;
		}
	}
	path_of(path, sizeof(path), state, "mount.pid");
	stop_daemon(path, "mount", 30);
	for (int i = 0; i < STORES_MAX; i++) {
		char name[32];
		snprintf(name, sizeof(name), "store%d.pid", i);
		path_of(path, sizeof(path), state, name);
		stop_daemon(path, "store", 10);
	}
	path_of(path, sizeof(path), state, "meta.pid");
	stop_daemon(path, "meta", 10);
	printf("weft is down (state kept in %s; weft up --dir %s brings it back)\n", state, state);
	return rc;
}

const struct cli_verb cmd_up = {
	.name = "up",
	.summary = "start a whole cluster on this machine and mount it",
	.usage = "weft up [--stores N] [--replicas R] [--dir STATE] [--mount MNT] [--no-mount]\n"
		 "        [--metrics] [--store-capacity SIZE] [--wire LEVEL]\n\n"
		 "Creates the file system in STATE (default ~/.weft) if needed, starts weft meta\n"
		 "and N weft store daemons (default 4, node names node0..) on loopback ports,\n"
		 "waits until every store is registered, and mounts at MNT (default STATE/mnt;\n"
		 "with allow_other when run as root, and no_root_squash: root stays root on the\n"
		 "node that holds the key). --replicas (default 2) is the default\n"
		 "replica count of a new file system. On an existing STATE it starts only what is\n"
		 "not running (every store<i> there, also those beyond --stores that weft target\n"
		 "add made) and mounts if not mounted. --metrics gives every daemon and the mount\n"
		 "a Prometheus endpoint on a loopback port, recorded in STATE/NAME.metrics.addr.\n"
		 "--store-capacity gives every store (also those started later) weft store's\n"
		 "--capacity SIZE: the stores share this machine's file system, and placement\n"
		 "and rebalancing then see each one's own use. --wire is the protection of a new\n"
		 "file system's connections (weft mkfs --wire; default integrity).",
	.run = up_run,
};

const struct cli_verb cmd_down = {
	.name = "down",
	.summary = "unmount and stop a cluster started by weft up",
	.usage = "weft down [--dir STATE]\n\n"
		 "Unmounts (flushing dirty data), then stops the stores and meta started by\n"
		 "weft up. Nothing is lost: weft up --dir STATE brings the same files back.",
	.run = down_run,
};
