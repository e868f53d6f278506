/* weft mkfs --meta DIR: create a file system's metadata directory and cluster key. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "net/auth.h"
#include "net/wire.h"
#include "meta/mdb.h"
#include "meta/super.h"
#include "weft/err.h"

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int print_uuid(const char *dir)
{
	struct meta_db *db;
	MDB_txn *txn;
	struct meta_super sb;
	int rc = meta_db_open(dir, 0, &db);
	if (rc)
		return rc;
	rc = meta_db_read_begin(db, &txn);
	if (rc == 0) {
		rc = meta_super_get(db, txn, &sb);
		meta_db_read_end(db, txn);
	}
	meta_db_close(db);
	if (rc)
		return rc;
	const uint8_t *u = sb.uuid;
	printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", u[0],
	       u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
	       u[14], u[15]);
	return 0;
}

static int run(int argc, char **argv)
{
	const char *dir = NULL;
	struct meta_mkfs_opts mo = {.options = META_OPT_CHECKSUMS |
					       (WIRE_INTEGRITY << META_OPT_WIRE_SHIFT)};
	int lv;
	uint64_t su;
	uint32_t v;
	static const struct option opts[] = {
		{"meta", required_argument, NULL, 'm'}, {"stripe-unit", required_argument, NULL, 'u'},
		{"stripe-count", required_argument, NULL, 'c'},
		{"replicas", required_argument, NULL, 'r'}, {"force", no_argument, NULL, 'F'},
		{"no-checksums", no_argument, NULL, 'N'}, {"root-squash", no_argument, NULL, 'S'},
		{"wire", required_argument, NULL, 'w'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'm': dir = optarg; break;
		case 'u':
			if (cli_parse_size(optarg, &su) || su < WEFT_STRIPE_UNIT_MIN ||
			    su > WEFT_STRIPE_UNIT_MAX || (su & (su - 1)))
				return cli_usage_error("mkfs", "--stripe-unit %s: must be a power of two "
						       "from 64K to 16M", optarg);
			mo.stripe_unit = (uint32_t)su;
			break;
		case 'c':
			if (parse_u32(optarg, 0, 65536, &v))
				return cli_usage_error("mkfs", "--stripe-count %s: must be 0 (all chains) "
						       "to 65536", optarg);
			mo.stripe_count = v;
			break;
		case 'r':
			if (parse_u32(optarg, 1, WEFT_REPLICAS_MAX, &v))
				return cli_usage_error("mkfs", "--replicas %s: must be 1, 2 or 3", optarg);
			mo.replicas = (uint8_t)v;
			break;
		case 'F': mo.force = true; break;
		case 'N': mo.options &= ~META_OPT_CHECKSUMS; break;
		case 'S': mo.options |= META_OPT_ROOT_SQUASH; break;
		case 'w':
			if ((lv = wire_level_parse(optarg)) < 0)
				return cli_usage_error("mkfs", "--wire %s: none, integrity or privacy",
						       optarg);
			mo.options = (mo.options & ~META_OPT_WIRE_MASK) |
				     ((uint32_t)lv << META_OPT_WIRE_SHIFT);
			break;
		default: return cli_usage_error("mkfs", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("mkfs", "unexpected argument '%s'", argv[optind]);
	if (!dir)
		return cli_usage_error("mkfs", "--meta DIR is required");
	int err = meta_mkfs(dir, &mo);
	if (err == -EEXIST)
		return cli_fail("mkfs", "%s: a file system is already there (use --force to replace "
				"it)", dir);
	if (err)
		return cli_fail("mkfs", "%s: %s", dir, weft_strerror(err));
	char key[4096];
	snprintf(key, sizeof(key), "%s/cluster.key", dir);
	err = auth_keygen(key, 0);
	if (err && err != -EEXIST)
		return cli_fail("mkfs", "%s: %s", key, weft_strerror(err));
	if ((err = print_uuid(dir)))
		return cli_fail("mkfs", "%s: %s", dir, weft_strerror(err));
	return 0;
}

const struct cli_verb cmd_mkfs = {
	.name = "mkfs",
	.summary = "create a file system (metadata directory and cluster key)",
	.usage = "weft mkfs --meta DIR [--stripe-unit SIZE] [--stripe-count N] [--replicas R]\n"
		 "          [--force] [--no-checksums] [--root-squash]\n"
		 "          [--wire none|integrity|privacy]\n\n"
		 "Creates the metadata of a new file system in DIR (made if missing): the LMDB\n"
		 "store, a random file system UUID (printed), the root directory with the default\n"
		 "layout, and the cluster key DIR/cluster.key (mode 0600) unless one exists.\n"
		 "  --stripe-unit SIZE   block size of files, 64K..16M, power of two (default 1M)\n"
		 "  --stripe-count N     chains a file is striped over (default 0: all chains)\n"
		 "  --replicas R         copies of every block, 1..3 (default 1)\n"
		 "  --force              replace an existing file system in DIR (the key is kept)\n"
		 "  --no-checksums       no CRC32C on data chunks\n"
		 "  --root-squash        clients' uid/gid 0 become nobody (65534)\n"
		 "  --wire LEVEL         protection of every connection: none, integrity (every\n"
		 "                       frame authenticated, data in clear; the default) or\n"
		 "                       privacy (everything encrypted)",
	.run = run,
};
