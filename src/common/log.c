/* Leveled, timestamped logging: one line per call, written with one write(2). */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level min_level = LOG_INFO;
static const char *log_tag = "weft";
static int log_fd = 2;

void log_init(const char *tag, enum log_level min)
{
	if (tag)
		log_tag = tag;
	min_level = min;
}

int log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	log_fd = fd;
	return 0;
}

int log_level_parse(const char *s)
{
	static const char *names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *lv[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	if (lvl < min_level)
		return;
	char line[2048];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s: ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, ts.tv_nsec / 1000000, log_tag, (int)getpid(), lv[lvl]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	size_t len = (size_t)n + (size_t)m;
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	line[len++] = '\n';
	ssize_t w = write(log_fd, line, len);
	(void)w;
}

bool log_limit_ok(struct log_limit *l, unsigned burst, uint64_t period_ms, unsigned *dropped)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	pthread_mutex_lock(&l->lock);
	if (now - l->start_ms >= period_ms) {
		l->start_ms = now;
		l->n = 0;
	}
	bool ok = l->n < burst;
	if (ok) {
		l->n++;
		*dropped = l->dropped;
		l->dropped = 0;
	} else {
		l->dropped++;
	}
	pthread_mutex_unlock(&l->lock);
	return ok;
}
