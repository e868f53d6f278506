/* weft setstripe / getstripe PATH: a directory's default layout or a file's layout, as
 * lfs setstripe/getstripe show them. PATH is on a weft mount; meta is found from the
 * mount (its source is weft:HOST:PORT) unless --meta or --dir says otherwise. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "mount/layout_xattr.h"
#include "net/rpc.h"
#include "weft/err.h"

struct stripe_args {
	struct cluster_opts co;
	uint64_t unit;
	long count, replicas;
	const char *path;
	bool json;
};

static int parse(const char *verb, int argc, char **argv, struct stripe_args *a, bool set)
{
	static const struct option opts[] = {
		{"stripe-unit", required_argument, NULL, 'u'}, {"stripe-count", required_argument, NULL, 'c'},
		{"replicas", required_argument, NULL, 'r'}, {"key", required_argument, NULL, 'k'},
		{"meta", required_argument, NULL, 'm'}, {"dir", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'}, {0}};
	int ch;
	opterr = 0;
	a->count = a->replicas = -1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			if (!set || cli_parse_size(optarg, &a->unit) || a->unit < WEFT_STRIPE_UNIT_MIN ||
			    a->unit > WEFT_STRIPE_UNIT_MAX || (a->unit & (a->unit - 1)))
				return cli_usage_error(verb, "--stripe-unit %s: a power of two from 64K to 16M", optarg);
			break;
		case 'c':
			a->count = strtol(optarg, NULL, 10);
			if (!set || a->count < 0 || a->count > 65536)
				return cli_usage_error(verb, "--stripe-count %s: 0 (all chains) or a count", optarg);
			break;
		case 'j':
			if (set)
				return cli_usage_error(verb, "--json is for getstripe");
			a->json = true;
			break;
		case 'r':
			a->replicas = strtol(optarg, NULL, 10);
			if (!set || a->replicas < 1 || a->replicas > 3)
				return cli_usage_error(verb, "--replicas %s: 1, 2 or 3", optarg);
			break;
		case 'k': a->co.key = optarg; break;
		case 'm': a->co.meta = optarg; break;
		case 'd': a->co.dir = optarg; break;
		default: return cli_usage_error(verb, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(verb, "expects one PATH");
	a->path = argv[optind];
	return 0;
}

static int call(const char *verb, struct stripe_args *a, uint16_t op, struct wbuf *w,
		struct frame **reply)
{
	char meta[256];
	if (!a->co.meta && !a->co.dir) {
		if (cluster_meta_of_path(a->path, meta, sizeof(meta)) < 0) {
			wbuf_free(w);
			return cli_fail(verb, "%s: not on a weft mount (give --meta or --dir)", a->path);
		}
	} else {
		cluster_meta_addr(&a->co, meta, sizeof(meta));
	}
	struct weft_key key;
	if (cluster_load_key(verb, &a->co, &key)) {
		wbuf_free(w);
		return 1;
	}
	log_init(verb, LOG_WARN);
	struct loop *loop;
	struct rpc *r;
	if (loop_new(&loop) || loop_start(loop))
		return cli_fail(verb, "cannot start event loop");
	struct rpc_params p = {.loop = loop, .key = &key, .addr = meta, .role = WEFT_ROLE_ADMIN,
			       .name = verb};
	if (rpc_new(&p, &r)) {
		loop_free(loop);
		return cli_usage_error(verb, "bad meta address '%s'", meta);
	}
	int err = rpc_call(r, op, w, NULL, 0, 10000, reply);
	char detail[256] = "";
	if (err && *reply)
		conn_error_detail(*reply, detail, sizeof(detail));
	rpc_free(r);
	loop_free(loop);
	if (err)
		return cli_fail(verb, "%s: %s%s%s", a->path, weft_strerror(err), detail[0] ? ": " : "",
				detail);
	return 0;
}

/* Through the mount when no option names a cluster or a key: the "weft.layout" extended
 * attribute, with this process's own credentials. The helpers below return 0, 1 (failed,
 * printed), or -1 when the mount does not offer it (then the direct way is tried). */
static bool through_mount(const struct stripe_args *a)
{
	return !a->co.key && !a->co.meta && !a->co.dir;
}

static int xattr_fail(const char *verb, const char *path, int e)
{
	if (e == ENOTSUP || e == ENODATA)
		return -1;
	return cli_fail(verb, "%s: %s", path,
			e == EINVAL ? "not a layout (stripe unit a power of two from 64K to 16M, "
				      "replicas 1-3, no more chains or replicas than there are)" :
			strerror(e));
}

static int get_layout_xattr(const char *verb, struct stripe_args *a, struct weft_layout *l,
			    bool *is_default)
{
	char text[256];
	ssize_t n = getxattr(a->path, WEFT_LAYOUT_XATTR, text, sizeof(text) - 1);
	if (n < 0)
		return xattr_fail(verb, a->path, errno);
	*l = (struct weft_layout){0};
	*is_default = false;
	if (layout_xattr_parse(text, (size_t)n, l, is_default))
		return cli_fail(verb, "%s: the mount's layout attribute is malformed", a->path);
	return 0;
}

static int get_layout(const char *verb, struct stripe_args *a, uint64_t ino,
		      struct weft_layout *l, bool *is_default)
{
	if (through_mount(a)) {
		int rc = get_layout_xattr(verb, a, l, is_default);
		if (rc >= 0)
			return rc;
	}
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.ino = ino};
	cluster_cred_self(&m.cred);
	proto_ino_encode(&w, &m);
	struct frame *f = NULL;
	int rc = call(verb, a, WEFT_OP_GETSTRIPE, &w, &f);
	if (rc == 0) {
		struct weft_msg_layout lm;
		if (proto_layout_decode(f->payload, f->h.payload_len, &lm, NULL) < 0) {
			rc = cli_fail(verb, "malformed reply from meta");
		} else {
			*l = lm.layout;
			*is_default = lm.is_default;
		}
	}
	frame_free(f);
	return rc;
}

static int getstripe_run(int argc, char **argv)
{
	struct stripe_args a = {0};
	int rc = parse("getstripe", argc, argv, &a, false);
	if (rc)
		return rc;
	struct stat st;
	if (stat(a.path, &st) < 0)
		return cli_fail("getstripe", "%s: %s", a.path, strerror(errno));
	struct weft_layout l;
	bool def;
	rc = get_layout("getstripe", &a, st.st_ino, &l, &def);
	if (rc)
		return rc;
	if (a.json) {
		json_t *j = json_pack("{s:s,s:s,s:b,s:i,s:i,s:i}", "schema", "weft.layout/1",
			"path", a.path, "directory", S_ISDIR(st.st_mode), "stripe_unit", (int)l.stripe_unit,
			"stripe_count", (int)l.stripe_count, "replicas", (int)l.replicas);
		if (!S_ISDIR(st.st_mode)) {
			json_object_set_new(j, "first_chain", json_integer(l.first_chain));
			json_object_set_new(j, "chain_count", json_integer(l.chain_count));
			json_object_set_new(j, "generation", json_integer(l.gen));
		}
		return cli_print_json("getstripe", j);
	}
	printf("%s\n", a.path);
	if (S_ISDIR(st.st_mode))
		printf("  default layout of new files:\n");
	printf("  stripe_unit:  %u (%u KiB)\n", l.stripe_unit, l.stripe_unit >> 10);
	if (l.stripe_count)
		printf("  stripe_count: %u\n", l.stripe_count);
	else
		printf("  stripe_count: 0 (all chains)\n");
	printf("  replicas:     %u\n", l.replicas);
	if (!S_ISDIR(st.st_mode))
		printf("  first_chain:  %u of %u\n", l.first_chain, l.chain_count);
	if (!S_ISDIR(st.st_mode) && l.gen)
		printf("  generation:   %u (weft migrate)\n", l.gen);
	return 0;
}

static int setstripe_run(int argc, char **argv)
{
	struct stripe_args a = {0};
	int rc = parse("setstripe", argc, argv, &a, true);
	if (rc)
		return rc;
	if (!a.unit && a.count < 0 && a.replicas < 0)
		return cli_usage_error("setstripe", "give --stripe-unit, --stripe-count or --replicas");
	struct stat st;
	if (stat(a.path, &st) < 0)
		return cli_fail("setstripe", "%s: %s", a.path, strerror(errno));
	if (through_mount(&a)) {
		char text[128];
		int n = 0;
		if (a.unit)
			n += snprintf(text + n, sizeof(text) - n, "stripe_unit=%u ", (unsigned)a.unit);
		if (a.count >= 0)
			n += snprintf(text + n, sizeof(text) - n, "stripe_count=%ld ", a.count);
		if (a.replicas > 0)
			n += snprintf(text + n, sizeof(text) - n, "replicas=%ld", a.replicas);
		if (setxattr(a.path, WEFT_LAYOUT_XATTR, text, strlen(text), 0) == 0)
			return 0;
		rc = xattr_fail("setstripe", a.path, errno);
		if (rc >= 0)
			return rc;
	}
	struct weft_layout l;
	bool def;
	rc = get_layout("setstripe", &a, st.st_ino, &l, &def);
	if (rc)
		return rc;
	if (a.unit)
		l.stripe_unit = (uint32_t)a.unit;
	if (a.count >= 0)
		l.stripe_count = (uint32_t)a.count;
	if (a.replicas > 0)
		l.replicas = (uint8_t)a.replicas;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_setstripe m = {.ino = st.st_ino, .layout = l};
	cluster_cred_self(&m.cred);
	proto_setstripe_encode(&w, &m);
	struct frame *f = NULL;
	rc = call("setstripe", &a, WEFT_OP_SETSTRIPE, &w, &f);
	frame_free(f);
	return rc;
}

const struct cli_verb cmd_getstripe = {
	.name = "getstripe",
	.summary = "show the layout of a file or a directory's default",
	.usage = "weft getstripe PATH [--json] [--meta HOST:PORT | --dir STATE] [--key FILE]\n\n"
		 "Shows stripe unit, stripe count and replicas of a file (and its first chain),\n"
		 "or the default layout a directory gives new files. Without --meta, --dir or\n"
		 "--key it asks the mount (the weft.layout attribute), as the calling user: no\n"
		 "key needed.",
	.run = getstripe_run,
};

const struct cli_verb cmd_setstripe = {
	.name = "setstripe",
	.summary = "set a directory's default layout, or an empty file's",
	.usage = "weft setstripe PATH [--stripe-unit SIZE] [--stripe-count N] [--replicas R]\n"
		 "                     [--meta HOST:PORT | --dir STATE] [--key FILE]\n\n"
		 "On a directory, sets the layout new files in it get (and new subdirectories\n"
		 "inherit). On a file, only while it is empty. SIZE is a power of two from 64K\n"
		 "to 16M; N = 0 means as many chains as there are; R is 1, 2 or 3 and may not\n"
		 "exceed the number of storage nodes. Without --meta, --dir or --key it goes\n"
		 "through the mount (the weft.layout attribute) as the calling user, who must\n"
		 "own PATH: no key needed.",
	.run = setstripe_run,
};
