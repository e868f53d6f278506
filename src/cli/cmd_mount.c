/* weft mount HOST:PORT MOUNTPOINT [-o OPTIONS] [-f]: mount the file system with FUSE.
 * Also what mount(8) runs for /etc/fstab entries of type fuse.weft. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/log.h"
#include "mount/mount.h"
#include "weft/client.h"

/* Splits -o options: ours are consumed, the rest are passed to FUSE. */
static int parse_opts(char *s, struct mount_opts *o, char *rest, size_t restcap,
		      struct cluster_opts *co)
{
	size_t used = 0;
	rest[0] = '\0';
	for (char *save = NULL, *opt = strtok_r(s, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		char *val = strchr(opt, '=');
		if (val)
			*val++ = '\0';
		if (strcmp(opt, "pagepool") == 0 && val) {
			if (cli_parse_size(val, &o->pagepool) || o->pagepool < (16u << 20))
				return cli_usage_error("mount", "pagepool=%s: need a size of at least 16M", val);
		} else if (strcmp(opt, "checksums") == 0 && val) {
			if (strcmp(val, "on") && strcmp(val, "off"))
				return cli_usage_error("mount", "checksums=%s: on or off", val);
			o->checksums_off = strcmp(val, "off") == 0;
		} else if (strcmp(opt, "attr_timeout") == 0 && val) {
			char *end;
			o->attr_timeout = strtod(val, &end);
			if (*end || o->attr_timeout < 0)
				return cli_usage_error("mount", "attr_timeout=%s: seconds >= 0", val);
		} else if (strcmp(opt, "readahead") == 0 && val) {
			long n = strtol(val, NULL, 10);
			if (n < 0 || n > 64)
				return cli_usage_error("mount", "readahead=%s: 0..64 stripe units", val);
			o->readahead_units = n ? (uint32_t)n : WEFT_READAHEAD_OFF;
		} else if (strcmp(opt, "open_prefetch") == 0 && val) {
			if (strcmp(val, "on") && strcmp(val, "off"))
				return cli_usage_error("mount", "open_prefetch=%s: on or off", val);
			o->open_prefetch_off = strcmp(val, "off") == 0;
		} else if (strcmp(opt, "local_open") == 0 && val) {
			if (strcmp(val, "on") && strcmp(val, "off"))
				return cli_usage_error("mount", "local_open=%s: on or off", val);
			o->local_open_off = strcmp(val, "off") == 0;
		} else if (strcmp(opt, "complete_dirs") == 0 && val) {
			if (strcmp(val, "on") && strcmp(val, "off"))
				return cli_usage_error("mount", "complete_dirs=%s: on or off", val);
			o->complete_dirs_off = strcmp(val, "off") == 0;
		} else if (strcmp(opt, "async_create") == 0 && val) {
			if (strcmp(val, "on") && strcmp(val, "off"))
				return cli_usage_error("mount", "async_create=%s: on or off", val);
			o->async_create_off = strcmp(val, "off") == 0;
		} else if (strcmp(opt, "dir_ahead") == 0 && val) {
			if (strcmp(val, "on") && strcmp(val, "off"))
				return cli_usage_error("mount", "dir_ahead=%s: on or off", val);
			o->dir_ahead_off = strcmp(val, "off") == 0;
		} else if (strcmp(opt, "readahead_kb") == 0 && val) {
			o->readahead_kb = (uint32_t)strtoul(val, NULL, 10);
		} else if (strcmp(opt, "key") == 0 && val) {
			co->key = strdup(val);
		} else if (strcmp(opt, "metrics") == 0 && val) {
			o->metrics = strdup(val);
		} else if (strcmp(opt, "name") == 0 && val) {
			o->node_name = strdup(val);
		} else if (strcmp(opt, "ro") == 0) {
			o->read_only = true;
		} else if (strcmp(opt, "rw") == 0) {
			o->read_only = false;
		} else if (strcmp(opt, "allow_other") == 0) {
			o->allow_other = true;
		} else if (strcmp(opt, "wb_attrs") == 0) {
			o->wb_attrs = true;
		} else if (strcmp(opt, "no_wb_attrs") == 0) {
			o->wb_attrs = false;
		} else if (strcmp(opt, "sync_close") == 0) {
			o->sync_close = true;
		} else if (strcmp(opt, "root_squash") == 0) {
			o->root_squash = true;
		} else if (strcmp(opt, "no_root_squash") == 0) {
			o->root_squash = false;
		} else if (strcmp(opt, "defaults") == 0 || strcmp(opt, "_netdev") == 0 ||
			   strcmp(opt, "nofail") == 0 || strcmp(opt, "auto") == 0 ||
			   strcmp(opt, "noauto") == 0 || strcmp(opt, "user") == 0 ||
			   strcmp(opt, "nouser") == 0 || strncmp(opt, "x-", 2) == 0) {
			/* meant for mount(8), not for us */
		} else {
			int n = snprintf(rest + used, restcap - used, "%s%s%s%s", used ? "," : "", opt,
					 val ? "=" : "", val ? val : "");
			if (n < 0 || (size_t)n >= restcap - used)
				return cli_usage_error("mount", "too many options");
			used += (size_t)n;
		}
	}
	return 0;
}

static int run(int argc, char **argv)
{
	struct mount_opts o = {.attr_timeout = 1.0, .readahead_kb = 4096, .root_squash = true,
			       .wb_attrs = true};
	struct cluster_opts co = {0};
	struct daemon_opts d = {0};
	char rest[1024] = "", optbuf[2048];
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'}, {"dir", required_argument, NULL, 'D'},
		{"meta", required_argument, NULL, 'M'},
		{"foreground", no_argument, NULL, 'f'}, {"log", required_argument, NULL, 'l'},
		{"log-level", required_argument, NULL, 'L'}, {"pid-file", required_argument, NULL, 'p'},
		{"options", required_argument, NULL, 'o'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "fo:sdn", opts, NULL)) != -1) {
		switch (ch) {
		case 'k': co.key = optarg; break;
		case 'D': co.dir = optarg; break;
		case 'M': co.meta = optarg; break;
		case 'f': d.foreground = true; break;
		case 'l': d.log_file = optarg; break;
		case 'L': d.log_level = optarg; break;
		case 'p': d.pid_file = optarg; break;
		case 'o':
			snprintf(optbuf, sizeof(optbuf), "%s", optarg);
			if (parse_opts(optbuf, &o, rest, sizeof(rest), &co))
				return EXIT_USAGE;
			break;
		case 's': case 'n': break; /* single-threaded / no-mtab flags from mount helpers */
		case 'd': d.foreground = true; d.log_level = "debug"; break;
		default: return cli_usage_error("mount", "unknown option '%s'", argv[optind - 1]);
		}
	}
	char metabuf[256];
	if (argc - optind == 2) {
		o.meta = argv[optind];
		o.mountpoint = argv[optind + 1];
	} else if (argc - optind == 1 && (co.dir || co.meta)) {
		o.meta = cluster_meta_addr(&co, metabuf, sizeof(metabuf));
		o.mountpoint = argv[optind];
	} else {
		return cli_usage_error("mount", "expects HOST:PORT MOUNTPOINT");
	}
	struct stat st;
	if (stat(o.mountpoint, &st) < 0 || !S_ISDIR(st.st_mode))
		return cli_fail("mount", "%s: not a directory", o.mountpoint);
	char keybuf[4096];
	o.key_file = cluster_key_path(&co, keybuf, sizeof(keybuf));
	o.fuse_opts = rest[0] ? rest : NULL;
	int rc = daemon_start("mount", &d);
	if (rc)
		return rc;
	rc = mount_run(&o, daemon_ready);
	daemon_cleanup();
	return rc;
}

const struct cli_verb cmd_mount = {
	.name = "mount",
	.summary = "mount a weft file system with FUSE",
	.usage = "weft mount HOST:PORT MOUNTPOINT [-o OPTIONS] [-f] [--key FILE] [--log FILE]\n"
		 "       weft mount --meta HOST:PORT | --dir STATE  MOUNTPOINT\n\n"
		 "Mounts the file system served by weft meta at HOST:PORT. Runs in the\n"
		 "background once the mount is live, or in the foreground with -f.\n"
		 "Options (-o, comma-separated):\n"
		 "  pagepool=SIZE      write-behind and readahead memory (default 256M)\n"
		 "  checksums=on|off   verify CRC32C of every read (default on)\n"
		 "  attr_timeout=SEC   how long attributes and names may be cached (default 1)\n"
		 "  readahead=N        stripe units libweft fetches ahead of a sequential reader\n"
		 "                     (default 8; 0 turns it off)\n"
		 "  open_prefetch=on|off  read a listed file's first stripe unit with its open\n"
		 "                     (default on; off with readahead=0)\n"
		 "  local_open=on|off  open a listed file for reading under its lease without\n"
		 "                     waiting for meta (default on; needs open_prefetch)\n"
		 "  complete_dirs=on|off  answer lookups of absent names in directories this\n"
		 "                     mount created, under their lease, without meta (default on)\n"
		 "  async_create=on|off  create files in directories this mount made without\n"
		 "                     waiting for meta (default on; needs complete_dirs)\n"
		 "  dir_ahead=on|off   list subdirectories of a listed directory before they are\n"
		 "                     asked, under leases (default on)\n"
		 "  readahead_kb=N     kernel read-ahead of the mount (default 4096; root only)\n"
		 "  key=FILE           cluster key (default: --key, STATE/cluster.key, $WEFT_KEY,\n"
		 "                     /etc/weft/cluster.key)\n"
		 "  name=NODE          this client's name at meta (default: host name)\n"
		 "  metrics=HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"
		 "  wb_attrs           keep chmod, chown and utimes of files this mount created\n"
		 "                     here while they are open; sent at close, fsync or a\n"
		 "                     recall (default on; no_wb_attrs turns it off)\n"
		 "  sync_close         close(2) of a file created here waits for its data and\n"
		 "                     size to reach the cluster (default: with wb_attrs the\n"
		 "                     flush runs behind the close, its error at weft sync)\n"
		 "  root_squash        root of this node acts as nobody (65534) (default)\n"
		 "  no_root_squash     root of this node is root on the file system (weft up\n"
		 "                     mounts its local node so)\n"
		 "  ro, rw, allow_other, and other FUSE mount options\n\n"
		 "/etc/fstab: HOST:PORT /mnt/weft fuse.weft defaults,key=/etc/weft/cluster.key 0 0\n"
		 "Unmount with umount MOUNTPOINT (or fusermount3 -u); dirty data is flushed first.",
	.run = run,
};
