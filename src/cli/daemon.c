/* Daemon plumbing shared by meta, store and mount: logging setup, detaching with a
 * readiness pipe (the parent exits only when the child serves or failed), pid files,
 * signal handling. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/log.h"

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
	if (ready_fd < 0)
		return;
	ssize_t w = write(ready_fd, &status, sizeof(status));
	(void)w;
	close(ready_fd);
	ready_fd = -1;
}

void daemon_cleanup(void)
{
	if (pid_path)
		unlink(pid_path);
	pid_path = NULL;
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
