/* weft migrate PATH...: restripes files, and the files of directory trees, to a new
 * layout while they are in use (Lustre's lfs migrate). The copy runs in this process,
 * as a libweft client (weft_migrate); meta freezes the other mounts' I/O on each file
 * for its copy and switches the layout once the copy reads back the same. Directories
 * get the new layout as their default (as setstripe), so new files follow it too. */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "weft/client.h"
#include "weft/err.h"

static const char VERB[] = "migrate";

struct migrate_args {
	struct cluster_opts co;
	uint64_t unit;
	long count, replicas;
	bool quiet;
};

/* The run's state, for the nftw callback (which takes no argument). */
static struct {
	const struct migrate_args *a;
	struct weft_client *c;
	struct weft_cred cred;
	unsigned files, failed;
	uint64_t bytes;
} run;

static int parse(int argc, char **argv, struct migrate_args *a)
{
	static const struct option opts[] = {
		{"stripe-unit", required_argument, NULL, 'u'}, {"stripe-count", required_argument, NULL, 'c'},
		{"replicas", required_argument, NULL, 'R'}, {"recursive", no_argument, NULL, 'r'},
		{"quiet", no_argument, NULL, 'q'}, {"key", required_argument, NULL, 'k'},
		{"meta", required_argument, NULL, 'm'}, {"dir", required_argument, NULL, 'd'}, {0}};
	int ch;
	opterr = 0;
	a->count = a->replicas = -1;
	while ((ch = getopt_long(argc, argv, "rq", opts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			if (cli_parse_size(optarg, &a->unit) || a->unit < WEFT_STRIPE_UNIT_MIN ||
			    a->unit > WEFT_STRIPE_UNIT_MAX || (a->unit & (a->unit - 1)))
				return cli_usage_error(VERB, "--stripe-unit %s: a power of two from 64K to 16M", optarg);
			break;
		case 'c': {
			char *end;
			a->count = strtol(optarg, &end, 10);
			if (*end || a->count < 0 || a->count >= (long)WEFT_LAYOUT_GEN_STRIDE)
				return cli_usage_error(VERB, "--stripe-count %s: 0 (all chains) or a count", optarg);
			break;
		}
		case 'R':
			a->replicas = strtol(optarg, NULL, 10);
			if (a->replicas < 1 || a->replicas > WEFT_REPLICAS_MAX)
				return cli_usage_error(VERB, "--replicas %s: 1, 2 or 3", optarg);
			break;
		case 'r': break; /* directories are always walked, as lfs_migrate does */
		case 'q': a->quiet = true; break;
		case 'k': a->co.key = optarg; break;
		case 'm': a->co.meta = optarg; break;
		case 'd': a->co.dir = optarg; break;
		default: return cli_usage_error(VERB, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error(VERB, "expects a PATH");
	if (!a->unit && a->count < 0 && a->replicas < 0)
		return cli_usage_error(VERB, "give --stripe-unit, --stripe-count or --replicas");
	return 0;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void say_layout(const struct weft_layout *l, char *out, size_t cap)
{
	snprintf(out, cap, "stripe_count %u, stripe_unit %u KiB, replicas %u", l->stripe_count,
		 l->stripe_unit >> 10, l->replicas);
}

/* A regular file: nothing to do when it has the layout asked for already. */
static void migrate_file(const char *path, const struct stat *st)
{
	const struct migrate_args *a = run.a;
	struct weft_layout cur;
	bool def;
	int err = weft_getstripe(run.c, &run.cred, st->st_ino, &cur, &def);
	if (err) {
		cli_fail(VERB, "%s: %s", path, weft_strerror(err));
		run.failed++;
		return;
	}
	struct weft_layout want = {
		.stripe_unit = a->unit ? (uint32_t)a->unit : cur.stripe_unit,
		.stripe_count = a->count >= 0 ? (uint32_t)a->count : cur.stripe_count,
		.replicas = a->replicas > 0 ? (uint8_t)a->replicas : cur.replicas};
	bool all = want.stripe_count == 0 || want.stripe_count >= cur.chain_count;
	if (want.stripe_unit == cur.stripe_unit && want.replicas == cur.replicas &&
	    (want.stripe_count == cur.stripe_count || (all && cur.stripe_count == cur.chain_count)))
		return; /* as asked already */
	struct weft_migrate_result res;
	char detail[256];
	double t0 = now_s();
	err = weft_migrate(run.c, &run.cred, st->st_ino, &want, &res, detail, sizeof(detail));
	if (err) {
		cli_fail(VERB, "%s: %s%s%s", path, weft_strerror(err), detail[0] ? ": " : "", detail);
		run.failed++;
		return;
	}
	run.files++;
	run.bytes += res.bytes;
	if (!a->quiet) {
		char from[96], to[96];
		say_layout(&res.from, from, sizeof(from));
		say_layout(&res.to, to, sizeof(to));
		double dt = now_s() - t0;
		printf("%s: %s -> %s (%.1f MiB in %.2f s, %.0f MB/s)\n", path, from, to,
		       (double)res.bytes / 1048576.0, dt, dt > 0 ? (double)res.bytes / 1e6 / dt : 0);
	}
}

/* A directory: its default layout for new files becomes the one asked for. */
static void migrate_dir(const char *path, const struct stat *st)
{
	const struct migrate_args *a = run.a;
	struct weft_layout l;
	bool def;
	int err = weft_getstripe(run.c, &run.cred, st->st_ino, &l, &def);
	if (!err) {
		if (a->unit)
			l.stripe_unit = (uint32_t)a->unit;
		if (a->count >= 0)
			l.stripe_count = (uint32_t)a->count;
		if (a->replicas > 0)
			l.replicas = (uint8_t)a->replicas;
		err = weft_setstripe(run.c, &run.cred, st->st_ino, &l);
	}
	if (err) {
		cli_fail(VERB, "%s: default layout: %s", path, weft_strerror(err));
		run.failed++;
	}
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)f;
	if (flag == FTW_D)
		migrate_dir(path, st);
	else if (flag == FTW_F && S_ISREG(st->st_mode))
		migrate_file(path, st);
	else if (flag == FTW_DNR || flag == FTW_NS) {
		cli_fail(VERB, "%s: cannot read", path);
		run.failed++;
	}
	return 0; /* symlinks, devices, fifos: no data to move */
}

static int migrate_run(int argc, char **argv)
{
	struct migrate_args a = {0};
	int rc = parse(argc, argv, &a);
	if (rc)
		return rc;
	char meta[256], keybuf[PATH_MAX];
	if (!a.co.meta && !a.co.dir) {
		if (cluster_meta_of_path(argv[optind], meta, sizeof(meta)) < 0)
			return cli_fail(VERB, "%s: not on a weft mount (give --meta or --dir)",
					argv[optind]);
	} else {
		cluster_meta_addr(&a.co, meta, sizeof(meta));
	}
	for (int i = optind; i < argc; i++) {
		struct stat st;
		char m2[256];
		if (stat(argv[i], &st) < 0)
			return cli_fail(VERB, "%s: %s", argv[i], strerror(errno));
		if (!a.co.meta && !a.co.dir &&
		    (cluster_meta_of_path(argv[i], m2, sizeof(m2)) < 0 || strcmp(m2, meta) != 0))
			return cli_fail(VERB, "%s: not on the weft mount of %s", argv[i], argv[optind]);
	}
	log_init(VERB, LOG_WARN);
	char host[64] = "migrate";
	gethostname(host, sizeof(host) - 1);
	struct weft_client_opts co = {.meta_addr = meta,
				      .key_file = cluster_key_path(&a.co, keybuf, sizeof(keybuf)),
				      .node_name = host, .readahead_units = WEFT_READAHEAD_OFF};
	char err[512];
	if ((rc = weft_client_open(&co, &run.c, err, sizeof(err))))
		return cli_fail(VERB, "%s", err);
	run.a = &a;
	cluster_cred_self(&run.cred);
	double t0 = now_s();
	for (int i = optind; i < argc; i++)
		nftw(argv[i], visit, 16, FTW_PHYS | FTW_MOUNT);
	weft_client_close(run.c);
	double dt = now_s() - t0;
	if (!a.quiet && run.files > 1)
		printf("%u files, %.1f MiB in %.2f s (%.0f MB/s)%s\n", run.files,
		       (double)run.bytes / 1048576.0, dt, dt > 0 ? (double)run.bytes / 1e6 / dt : 0,
		       run.failed ? ", some failed" : "");
	return run.failed ? 1 : 0;
}

const struct cli_verb cmd_migrate = {
	.name = "migrate",
	.summary = "restripe files or directory trees to a new layout, in use",
	.usage = "weft migrate [-r] [--stripe-unit SIZE] [--stripe-count N] [--replicas R] [-q]\n"
		 "                    [--meta HOST:PORT | --dir STATE] [--key FILE] PATH...\n\n"
		 "Copies each file's data into a new layout and switches to it, while the file\n"
		 "may be open and written elsewhere (writers wait during the copy, then go on;\n"
		 "they see no error). Directories are walked (-r is accepted for lfs_migrate\n"
		 "habits) and get the new layout as their default. What is not given is kept.\n"
		 "SIZE is a power of two from 64K to 16M; N = 0 means all chains; R is 1, 2 or\n"
		 "3 and may not exceed the number of storage nodes.",
	.run = migrate_run,
};
