/* mdtest-style metadata rates: P processes create, stat and remove N empty files each,
 * every process in a directory of its own, phase by phase (all processes finish one
 * phase before any starts the next, as mdtest's barriers do). With several DIRs the
 * processes take them in turn (process i works under DIR[i % ndirs]), so two mounts of
 * one file system share the work.
 *
 * usage: mdrate NPROC NFILES DIR [DIR...]
 * prints one line per phase: "create|stat|remove NPROC procs N files: T s, R ops/s" */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum phase { CREATE, STAT, REMOVE };
static const char *phase_name[] = {"create", "stat", "remove"};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One process's share of a phase; exits 0 or 1 (with a line on stderr). */
static int work(enum phase ph, const char *dir, int id, long n)
{
	char d[4096], p[4200];
	snprintf(d, sizeof(d), "%s/mdrate.%d", dir, id);
	if (ph == CREATE && mkdir(d, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mdrate: mkdir %s: %s\n", d, strerror(errno));
		return 1;
	}
	for (long i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/f%ld", d, i);
		int rc = 0;
		struct stat st;
		if (ph == CREATE) {
			int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
			rc = fd < 0 ? -1 : close(fd);
		} else if (ph == STAT) {
			rc = stat(p, &st);
		} else {
			rc = unlink(p);
		}
		if (rc < 0) {
			fprintf(stderr, "mdrate: %s %s: %s\n", phase_name[ph], p, strerror(errno));
			return 1;
		}
	}
	if (ph == REMOVE && rmdir(d) < 0) {
		fprintf(stderr, "mdrate: rmdir %s: %s\n", d, strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: mdrate NPROC NFILES DIR [DIR...]\n");
		return 2;
	}
	int nproc = atoi(argv[1]);
	long n = atol(argv[2]);
	int ndirs = argc - 3;
	if (nproc < 1 || n < 1) {
		fprintf(stderr, "mdrate: NPROC and NFILES must be positive\n");
		return 2;
	}
	int bad = 0;
	for (enum phase ph = CREATE; ph <= REMOVE && !bad; ph++) {
		double t0 = now();
		for (int i = 0; i < nproc; i++) {
			pid_t pid = fork();
			if (pid < 0) {
				perror("mdrate: fork");
				return 1;
			}
			if (pid == 0)
				_exit(work(ph, argv[3 + i % ndirs], i, n));
		}
		for (int i = 0; i < nproc; i++) {
			int st;
			if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
		}
		double dt = now() - t0;
		printf("%s %d procs %ld files: %.3f s, %.0f ops/s\n", phase_name[ph], nproc,
		       (long)nproc * n, dt, (double)nproc * (double)n / dt);
		fflush(stdout);
	}
	return bad;
}
