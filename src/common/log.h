/* Leveled, timestamped logging to stderr or a file; safe from any thread. */
#ifndef WEFT_LOG_H
#define WEFT_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <stdarg.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Sets the minimum level printed (default LOG_INFO) and the program tag. */
void log_init(const char *tag, enum log_level min);
/* Appends to path instead of stderr. Returns 0 or -errno. */
int log_open_file(const char *path);
/* Parses "debug", "info", "warn", "error"; returns -1 if unknown. */
int log_level_parse(const char *s);

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A rate limit for one kind of line that strangers can provoke (failed handshakes,
 * malformed frames): at most `burst` lines per `period_ms`. Zero-initialise it. */
struct log_limit {
	pthread_mutex_t lock;
	uint64_t start_ms;
	unsigned n, dropped;
};
#define LOG_LIMIT_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0}
/* True if this line may be logged; *dropped is how many were suppressed since the last
 * one that was (to say so in it). */
bool log_limit_ok(struct log_limit *l, unsigned burst, uint64_t period_ms, unsigned *dropped);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
