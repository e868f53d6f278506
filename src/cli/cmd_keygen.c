/* weft keygen FILE: write a new 32-byte cluster key with mode 0600. */
#include <getopt.h>
#include <errno.h>
#include <string.h>

#include "cli/cli.h"
#include "net/auth.h"

static int run(int argc, char **argv)
{
	int force = 0;
	static const struct option opts[] = {{"force", no_argument, NULL, 'F'}, {0}};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'F')
			force = 1;
		else
			return cli_usage_error("keygen", "unknown option '%s'", argv[optind - 1]);
	}
	if (optind != argc - 1)
		return cli_usage_error("keygen", "expects exactly one FILE");
	int err = auth_keygen(argv[optind], force);
	if (err)
		return cli_fail("keygen", "%s: %s%s", argv[optind], strerror(-err),
				err == -EEXIST ? " (use --force to replace it)" :
				err == -ELOOP ? " (a symbolic link: give the file itself)" : "");
	return 0;
}

const struct cli_verb cmd_keygen = {
	.name = "keygen",
	.summary = "write a new cluster key file (32 random bytes, mode 0600)",
	.usage = "weft keygen FILE [--force]\n\n"
		 "Writes 32 random bytes to FILE with mode 0600. Refuses to overwrite FILE\n"
		 "unless --force is given. Every weft daemon and mount proves it holds this key.",
	.run = run,
};
