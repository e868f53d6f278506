/* Daemon plumbing shared by meta, store and mount: logging setup, detaching with a
 * readiness pipe (the parent exits only when the child serves or failed), pid files,
 * signal handling, and systemd's notify protocol (READY=1, STOPPING=1, WATCHDOG=1) for
 * units of Type=notify. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/loop.h"
#include "net/metrics.h"

#ifdef WEFT_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#else
static int sd_notify(int unset, const char *state) { (void)unset; (void)state; return 0; }
static int sd_watchdog_enabled(int unset, uint64_t *usec) { (void)unset; (void)usec; return 0; }
#endif

static int ready_fd = -1;
static const char *pid_path;

static int write_pid_file(const char *path)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	int err = write(fd, buf, (size_t)n) == n ? 0 : -EIO;
	close(fd);
	return err;
}

int daemon_start(const char *tag, const struct daemon_opts *o)
{
	int lvl = LOG_INFO;
	if (o->log_level && (lvl = log_level_parse(o->log_level)) < 0) {
		fprintf(stderr, "weft %s: unknown log level '%s' (debug, info, warn, error)\n", tag,
			o->log_level);
		return EXIT_USAGE;
	}
	log_init(tag, (enum log_level)lvl);
	if (o->log_file) {
		int err = log_open_file(o->log_file);
		if (err) {
			fprintf(stderr, "weft %s: log file %s: %s\n", tag, o->log_file, strerror(-err));
			return 1;
		}
	}
	if (!o->foreground) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			fprintf(stderr, "weft %s: pipe: %s\n", tag, strerror(errno));
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "weft %s: fork: %s\n", tag, strerror(errno));
			return 1;
		}
		if (pid > 0) {
			close(p[1]);
			int status = 1;
			ssize_t r = read(p[0], &status, sizeof(status));
			if (r != (ssize_t)sizeof(status)) {
				int ws;
				waitpid(pid, &ws, 0);
				status = WIFEXITED(ws) && WEXITSTATUS(ws) ? WEXITSTATUS(ws) : 1;
			}
			_exit(status);
		}
		close(p[0]);
		ready_fd = p[1];
		setsid();
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			if (nul > 2)
				close(nul);
		}
		/* stderr goes to the log too: what a crash or a sanitizer prints is kept there */
		int lfd = o->log_file ? open(o->log_file, O_WRONLY | O_APPEND | O_CLOEXEC) : -1;
		if (lfd >= 0) {
			dup2(lfd, 2);
			close(lfd);
		}
	}
	if (o->pid_file) {
		int err = write_pid_file(o->pid_file);
		if (err) {
			log_error("pid file %s: %s", o->pid_file, strerror(-err));
			daemon_ready(1);
			return 1;
		}
		pid_path = o->pid_file;
	}
	return 0;
}

void daemon_ready(int status)
{
	if (status == 0)
		sd_notify(0, "READY=1");
	if (ready_fd < 0)
		return;
	ssize_t w = write(ready_fd, &status, sizeof(status));
	(void)w;
	close(ready_fd);
	ready_fd = -1;
}

void daemon_cleanup(void)
{
	sd_notify(0, "STOPPING=1");
	metrics_stop();
	if (pid_path)
		unlink(pid_path);
	pid_path = NULL;
}

int daemon_metrics(const char *listen)
{
	char err[256];
	if (!listen || metrics_start(listen, err, sizeof(err)) == 0)
		return 0;
	log_error("%s", err);
	return 1;
}

static _Atomic uint64_t loop_seen_ms;

static void watchdog_stamp(void *arg)
{
	(void)arg;
	loop_seen_ms = loop_now_ms();
}

void daemon_watchdog(struct loop *loop)
{
	static int enabled = -1;
	static uint64_t period_ms, sent_ms;
	if (enabled < 0) {
		uint64_t usec = 0;
		enabled = sd_watchdog_enabled(0, &usec) > 0 && usec >= 1000;
		period_ms = usec / 1000;
	}
	if (!enabled)
		return;
	uint64_t now = loop_now_ms();
	/* ping at a quarter of the period, only if the loop ran a task within half of it */
	if (loop_seen_ms && now - loop_seen_ms < period_ms / 2 && now - sent_ms >= period_ms / 4) {
		sd_notify(0, "WATCHDOG=1");
		sent_ms = now;
	}
	loop_post(loop, watchdog_stamp, NULL);
}

static volatile int *signal_flag;
static void (*signal_wake)(void *);
static void *signal_arg;

static void on_signal(int sig)
{
	(void)sig;
	if (signal_flag)
		*signal_flag = 1;
	if (signal_wake)
		signal_wake(signal_arg);
}

void daemon_on_signal(volatile int *flag, void (*wake)(void *), void *arg)
{
	signal_flag = flag;
	signal_wake = wake;
	signal_arg = arg;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
