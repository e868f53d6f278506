/* The mount's stats file (see statsfile.h). */
#include "mount/statsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "net/stats.h"

static pthread_t writer;
static bool running;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static bool stop_asked;
static char path[4096];

void statsfile_dir(char *out, size_t cap)
{
	const char *env = getenv("WEFT_RUN_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (env && env[0])
		snprintf(out, cap, "%s/mounts", env);
	else if (geteuid() == 0)
		snprintf(out, cap, "/run/weft/mounts");
	else if (xdg && xdg[0])
		snprintf(out, cap, "%s/weft/mounts", xdg);
	else
		snprintf(out, cap, "/tmp/weft-%u/mounts", (unsigned)geteuid());
}

/* "/mnt/weft" becomes "mnt-weft.json", as systemd escapes paths ('-' in a name as \x2d). */
void statsfile_path(const char *mountpoint, char *out, size_t cap)
{
	char dir[2048], name[2048];
	statsfile_dir(dir, sizeof(dir));
	size_t n = 0;
	const char *p = mountpoint;
	while (*p == '/')
		p++;
	for (; *p && n + 5 < sizeof(name); p++) {
		if (*p == '/')
			name[n++] = '-';
		else if (*p == '-' || *p == '\\')
			n += (size_t)snprintf(name + n, sizeof(name) - n, "\\x%02x", (unsigned char)*p);
		else
			name[n++] = *p;
	}
	name[n] = '\0';
	snprintf(out, cap, "%s/%s.json", dir, n ? name : "-");
}

static int mkdirs(const char *dir)
{
	char tmp[2048];
	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *s = tmp + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int write_once(void)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	char *json = stats_json();
	if (!json)
		return -ENOMEM;
	int err = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
	} else {
		size_t len = strlen(json);
		if (write(fd, json, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
			err = -EIO;
		close(fd);
		if (!err && rename(tmp, path) < 0)
			err = -errno;
	}
	free(json);
	return err;
}

static void *writer_main(void *arg)
{
	(void)arg;
	bool warned = false;
	pthread_mutex_lock(&lock);
	while (!stop_asked) {
		pthread_mutex_unlock(&lock);
		int err = write_once();
		if (err && !warned) {
			log_warn("stats file %s: %s (weft stat --mount will not see this mount)", path,
				 strerror(-err));
			warned = true;
		}
		pthread_mutex_lock(&lock);
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 1;
		if (!stop_asked)
			pthread_cond_timedwait(&wake, &lock, &dl);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int statsfile_start(const char *mountpoint)
{
	char dir[2048];
	statsfile_dir(dir, sizeof(dir));
	int err = mkdirs(dir);
	if (err) {
		log_warn("stats directory %s: %s", dir, strerror(-err));
		return err;
	}
	statsfile_path(mountpoint, path, sizeof(path));
	stop_asked = false;
	if ((err = pthread_create(&writer, NULL, writer_main, NULL)))
		return -err;
	running = true;
	return 0;
}

void statsfile_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	stop_asked = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	pthread_join(writer, NULL);
	running = false;
	unlink(path);
}
