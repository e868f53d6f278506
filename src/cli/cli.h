/* The weft command: verb table and helpers shared by the cmd_<verb>.c files. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stdbool.h>
#include <stdint.h>

/* Exit codes: 0 ok, 1 the operation failed, 2 usage error. */
#define EXIT_USAGE 2

struct cli_verb {
	const char *name;
	const char *summary;
	const char *usage;      /* full --help text after "usage: " */
	int (*run)(int argc, char **argv);
};

/* Prints "weft VERB: msg" to stderr and returns EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "weft VERB: msg" to stderr and returns 1. */
int cli_fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True if argv has --help or -h; prints the verb's usage. */
bool cli_want_help(const struct cli_verb *v, int argc, char **argv);
/* Parses "1M", "64K", "4G", "512" into bytes; returns 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *out);
const struct cli_verb *cli_find(const char *name);
struct json_t;
/* Prints j (taken) as one line of JSON on stdout; returns 0, or 1 with "weft VERB: ..."
 * when it cannot. For the --json outputs, whose schemas docs/operations.md lists. */
int cli_print_json(const char *verb, struct json_t *j);

/* Daemon plumbing: --foreground/-f, --log FILE, --log-level L, --pid-file F. */
struct daemon_opts {
	bool foreground;
	const char *log_file;
	const char *log_level;
	const char *pid_file;
};
/* Sets up logging, detaches unless foreground, writes the pid file. The detached child
 * returns 0; the parent waits for the child's readiness report (daemon_ready) and exits
 * with its status, so "weft meta ..." returns only once the daemon serves or failed.
 * Returns 0 in the process that continues, or an exit status. */
int daemon_start(const char *tag, const struct daemon_opts *o);
/* Tells a waiting parent that the daemon is serving (status 0) or failed. */
void daemon_ready(int status);
/* Removes the pid file at exit, and tells systemd the daemon is stopping. */
void daemon_cleanup(void);
/* Starts the Prometheus endpoint when listen is not NULL (--metrics HOST:PORT); logs and
 * returns 1 if it cannot. */
int daemon_metrics(const char *listen);
struct loop;
/* Under systemd's watchdog (WatchdogSec=), sends WATCHDOG=1 while the daemon's event loop
 * still runs posted tasks; a loop that hangs stops the pings and systemd restarts the
 * daemon. Call from the main thread every few hundred ms; a no-op without a watchdog. */
void daemon_watchdog(struct loop *loop);
/* Installs SIGTERM/SIGINT handlers that set *flag and call wake(arg). */
void daemon_on_signal(volatile int *flag, void (*wake)(void *), void *arg);

#endif
