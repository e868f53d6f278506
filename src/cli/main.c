/* weft: one binary, one verb per subcommand (weft <verb> [options]). */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/verbs.h"
#include "common/memtune.h"

static const struct cli_verb *const verbs[] = {
#define X(name) &cmd_##name,
	WEFT_VERBS(X)
#undef X
};

const struct cli_verb *cli_find(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i]->name, name) == 0)
			return verbs[i];
	return NULL;
}

static void vreport(const char *verb, const char *fmt, va_list ap, const char *tail)
{
	fprintf(stderr, "weft %s: ", verb);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "%s\n", tail);
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char tail[64];
	snprintf(tail, sizeof(tail), " (see weft %s --help)", verb);
	vreport(verb, fmt, ap, tail);
	va_end(ap);
	return EXIT_USAGE;
}

int cli_fail(const char *verb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(verb, fmt, ap, "");
	va_end(ap);
	return 1;
}

bool cli_want_help(const struct cli_verb *v, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: %s\n", v->usage);
			return true;
		}
	}
	return false;
}

int cli_print_json(const char *verb, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s)
		return cli_fail(verb, "cannot format JSON (out of memory)");
	printf("%s\n", s);
	free(s);
	return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	uint64_t mul = 1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	case 't': case 'T': mul = 1ULL << 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (v && mul > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: weft <verb> [options]    (weft <verb> --help for each)\n\n"
		   "weft is a parallel cluster file system. Verbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %-10s %s\n", verbs[i]->name, verbs[i]->summary);
	fprintf(f, "\n  --version  print the version\n  --help     this text\n");
}

int main(int argc, char **argv)
{
	memtune();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *verb = argv[1];
	if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(verb, "--version") == 0 || strcmp(verb, "version") == 0) {
		printf("weft %s (protocol %d)\n", WEFT_VERSION, 1);
		return 0;
	}
	const struct cli_verb *v = cli_find(verb);
	if (!v && strchr(verb, ':') && argc >= 3 && argv[2][0] != '-') {
		/* mount(8) runs "weft HOST:PORT MOUNTPOINT -o OPTIONS" for fuse.weft entries */
		argv[0] = "mount";
		return cli_find("mount")->run(argc, argv);
	}
	if (!v) {
		fprintf(stderr, "weft: unknown verb '%s' (see weft --help)\n", verb);
		return EXIT_USAGE;
	}
	if (cli_want_help(v, argc - 1, argv + 1))
		return 0;
	return v->run(argc - 1, argv + 1);
}
