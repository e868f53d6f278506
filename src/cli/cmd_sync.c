/* weft sync: sync(1) for weft, which the kernel's sync does not reach on a FUSE mount. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "net/rpc.h"
#include "proto/proto.h"
#include "weft/err.h"

/* fsync of the mount's root: the mount sends what it buffers, then FSYNC (mount.c). */
static int sync_mount(const char *mnt)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail("sync", "%s: %s", mnt, strerror(errno));
	int rc = fsync(fd) ? errno : 0;
	close(fd);
	if (rc)
		return cli_fail("sync", "fsync %s: %s", mnt, strerror(rc));
	return 0;
}

/* FSYNC of the root at meta: returns once meta's database is synced. */
static int sync_meta(const struct cluster_opts *co)
{
	struct weft_key key;
	char addr[256];
	struct loop *loop;
	struct rpc *meta;
	int rc = cluster_connect("sync", co, &key, addr, sizeof(addr), &loop, &meta);
	if (rc)
		return rc;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.ino = 1};
	cluster_cred_self(&m.cred);
	proto_ino_encode(&w, &m);
	rc = rpc_call(meta, WEFT_OP_FSYNC, &w, NULL, 0, 60000, NULL);
	rpc_free(meta);
	loop_free(loop);
	if (rc)
		return cli_fail("sync", "meta %s: %s", addr, weft_strerror(rc));
	return 0;
}

static int sync_run(int argc, char **argv)
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
		default: return cli_usage_error("sync", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind + 1 < argc)
		return cli_usage_error("sync", "unexpected argument '%s'", argv[optind + 1]);
	if (optind < argc) {
		if (co.dir || co.meta)
			return cli_usage_error("sync", "a mount point or --dir/--meta, not both");
		return sync_mount(argv[optind]);
	}
	return sync_meta(&co);
}

const struct cli_verb cmd_sync = {
	.name = "sync",
	.summary = "make every acknowledged change durable (sync(1) does not reach FUSE)",
	.usage = "weft sync MOUNTPOINT\n"
		 "weft sync [--dir STATE | --meta HOST:PORT] [--key FILE]\n\n"
		 "With a mount point: the mount sends the attribute changes it buffers\n"
		 "(wb_attrs), then meta syncs its database; returns once every change meta\n"
		 "acknowledged before is on its stable storage. Data that still-open files\n"
		 "buffer needs their own fsync. With --dir or --meta: meta syncs only.",
	.run = sync_run,
};
