/* The verbs of the weft command, in --help order. Each is defined in cmd_<name>.c. */
#ifndef WEFT_VERBS_H
#define WEFT_VERBS_H

#include "cli/cli.h"

#define WEFT_VERBS(X) \
	X(keygen) \
	X(ping) \
	X(mount) \
	X(up) \
	X(down) \
	X(setstripe) \
	X(getstripe) \
	X(migrate) \
	X(mkfs) \
	X(meta) \
	X(status) \
	X(df) \
	X(stat) \
	X(store) \
	X(target) \
	X(scrub) \
	X(rebalance) \
	X(node) \
	X(sync)

#define X(name) extern const struct cli_verb cmd_##name;
WEFT_VERBS(X)
#undef X

#endif
