/* posix_diff DIR: runs POSIX scenarios in the empty directory DIR and prints one line per
 * step with its result and errno. Run on a local directory and on a weft mount, the two
 * outputs must be identical (tests/integration/test_posix.sh compares them). Needs root
 * (it switches to uid/gid 65534 for the permission scenarios). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static int dfd;

static const char *ename(int e)
{
	static char buf[32];
	switch (e) {
#define E(x) case x: return #x;
	E(EPERM) E(ENOENT) E(EIO) E(EBADF) E(EACCES) E(EEXIST) E(EXDEV) E(ENOTDIR) E(EISDIR)
	E(EINVAL) E(EFBIG) E(ENOSPC) E(EROFS) E(EMLINK) E(ERANGE) E(ENAMETOOLONG) E(ENOTEMPTY)
	E(ELOOP) E(ENODATA) E(EOPNOTSUPP) E(EBUSY) E(E2BIG)
#undef E
	default: snprintf(buf, sizeof(buf), "errno%d", e); return buf;
	}
}

/* Prints "step: ok" or "step: ERRNO" for a call's return value. */
static long show(const char *step, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", step, ename(errno));
	else
		printf("%s: ok\n", step);
	return rc;
}

static void show_stat(const char *step, const char *path)
{
	struct stat st;
	if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		printf("%s: %s\n", step, ename(errno));
		return;
	}
	printf("%s: mode %o nlink %lu uid %u gid %u size %lld\n", step, st.st_mode,
	       (unsigned long)(S_ISDIR(st.st_mode) ? 0 : st.st_nlink), st.st_uid, st.st_gid,
	       S_ISDIR(st.st_mode) ? 0LL : (long long)st.st_size);
}

static uint32_t sum_file(const char *path, long long *len)
{
	int fd = openat(dfd, path, O_RDONLY);
	if (fd < 0)
		return 0;
	uint32_t h = 2166136261u;
	char buf[65536];
	ssize_t n;
	*len = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ (uint8_t)buf[i]) * 16777619u;
		*len += n;
	}
	close(fd);
	return h;
}

static void show_sum(const char *step, const char *path)
{
	long long len = -1;
	uint32_t h = sum_file(path, &len);
	printf("%s: %lld bytes fnv %08x\n", step, len, h);
}

static void fill(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)((i * 7 + seed * 13) ^ (i >> 11));
}

static void open_flags(void)
{
	int fd = show("create excl", openat(dfd, "f1", O_CREAT | O_EXCL | O_WRONLY, 0644));
	show("write", write(fd, "hello world", 11));
	close(fd);
	show("create excl again", openat(dfd, "f1", O_CREAT | O_EXCL | O_WRONLY, 0644));
	show("open missing", openat(dfd, "nope", O_RDONLY));
	fd = show("open append", openat(dfd, "f1", O_WRONLY | O_APPEND));
	show("write append", write(fd, "!!", 2));
	lseek(fd, 0, SEEK_SET);
	show("write append after seek", write(fd, "??", 2));
	close(fd);
	show_sum("after append", "f1");
	fd = show("open trunc", openat(dfd, "f1", O_WRONLY | O_TRUNC));
	close(fd);
	show_stat("after trunc", "f1");
	show("mkdir d", mkdirat(dfd, "d", 0755));
	show("open dir for write", openat(dfd, "d", O_WRONLY));
	show("O_DIRECTORY on file", openat(dfd, "f1", O_RDONLY | O_DIRECTORY));
	show("create in missing dir", openat(dfd, "nodir/x", O_CREAT | O_WRONLY, 0644));
	show("create through file", openat(dfd, "f1/x", O_CREAT | O_WRONLY, 0644));
}

static void offsets_and_holes(void)
{
	static char buf[3 << 20];
	int fd = openat(dfd, "big", O_CREAT | O_RDWR, 0644);
	fill(buf, sizeof(buf), 1);
	show("pwrite 0", pwrite(fd, buf, 100000, 0));
	show("pwrite 3M-7", pwrite(fd, buf, sizeof(buf), 3 * 1048576 - 7));
	show("pwrite 1M+5", pwrite(fd, buf + 9, 70000, 1048576 + 5));
	show("pwrite 9M hole", pwrite(fd, "x", 1, 9 * 1048576));
	char rb[200000];
	ssize_t n = pread(fd, rb, sizeof(rb), 1048576 - 1000);
	long long len;
	(void)len;
	uint32_t h = 2166136261u;
	for (ssize_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)rb[i]) * 16777619u;
	printf("pread across stripe units: %zd fnv %08x\n", n, h);
	n = pread(fd, rb, 100, 7 * 1048576);
	int zeros = 1;
	for (ssize_t i = 0; i < n; i++)
		zeros &= rb[i] == 0;
	printf("pread in hole: %zd zeros %d\n", n, zeros);
	printf("pread at eof: %zd\n", pread(fd, rb, 100, 9 * 1048576 + 1));
	printf("pread past eof: %zd\n", pread(fd, rb, 100, 20 * 1048576));
	close(fd);
	show_sum("big", "big");
	show_stat("big stat", "big");
	fd = openat(dfd, "big", O_RDWR);
	show("ftruncate down", ftruncate(fd, 1048576 + 1000));
	show_sum("after truncate down", "big");
	show("ftruncate up", ftruncate(fd, 5 * 1048576 + 3));
	show_sum("after truncate up", "big");
	show("write after truncate", pwrite(fd, "abc", 3, 2 * 1048576));
	close(fd);
	show_sum("after write in extended part", "big");
	show("truncate path", truncate("big", 12345));
	show_sum("after truncate path", "big");
	show("ftruncate negative", ({ int f = openat(dfd, "big", O_RDWR); int r = ftruncate(f, -1); close(f); r; }));
}

static void renames(void)
{
	int fd = openat(dfd, "r1", O_CREAT | O_WRONLY, 0644);
	write(fd, "one", 3);
	close(fd);
	fd = openat(dfd, "r2", O_CREAT | O_WRONLY, 0644);
	write(fd, "two!", 4);
	close(fd);
	mkdirat(dfd, "rd1", 0755);
	mkdirat(dfd, "rd2", 0755);
	mkdirat(dfd, "rd3", 0755);
	mkdirat(dfd, "rd3/sub", 0755);
	show("rename plain", renameat(dfd, "r1", dfd, "r1b"));
	show_stat("old name gone", "r1");
	show("rename over file", renameat(dfd, "r1b", dfd, "r2"));
	show_sum("overwritten", "r2");
	show("rename dir over empty dir", renameat(dfd, "rd1", dfd, "rd2"));
	show("rename dir over nonempty dir", renameat(dfd, "rd2", dfd, "rd3"));
	show("rename file over dir", renameat(dfd, "r2", dfd, "rd3"));
	show("rename dir over file", renameat(dfd, "rd3", dfd, "r2"));
	show("rename dir into itself", renameat(dfd, "rd3", dfd, "rd3/sub/x"));
	show("rename missing", renameat(dfd, "zz", dfd, "zz2"));
	show("rename across dirs", renameat(dfd, "r2", dfd, "rd3/sub/r2"));
	show("rename dir across dirs", renameat(dfd, "rd2", dfd, "rd3/sub/moved"));
	show_stat("rd3 after", "rd3");
	show_stat("rd3/sub after", "rd3/sub");
	fd = openat(dfd, "a", O_CREAT | O_WRONLY, 0644);
	write(fd, "AAA", 3);
	close(fd);
	fd = openat(dfd, "b", O_CREAT | O_WRONLY, 0644);
	write(fd, "BBBBB", 5);
	close(fd);
	show("noreplace onto existing", renameat2(dfd, "a", dfd, "b", RENAME_NOREPLACE));
	show("noreplace onto new", renameat2(dfd, "a", dfd, "c", RENAME_NOREPLACE));
	show("exchange", renameat2(dfd, "c", dfd, "b", RENAME_EXCHANGE));
	show_sum("b after exchange", "b");
	show_sum("c after exchange", "c");
	show("exchange with missing", renameat2(dfd, "c", dfd, "nothere", RENAME_EXCHANGE));
	show("exchange file and dir", renameat2(dfd, "c", dfd, "rd3", RENAME_EXCHANGE));
	show_stat("c is now a dir", "c");
	show("rename to same", renameat(dfd, "b", dfd, "b"));
}

static void links_and_symlinks(void)
{
	int fd = openat(dfd, "l1", O_CREAT | O_WRONLY, 0644);
	write(fd, "linked", 6);
	close(fd);
	show("link", linkat(dfd, "l1", dfd, "l2", 0));
	show_stat("l1 nlink", "l1");
	show("link onto existing", linkat(dfd, "l1", dfd, "l2", 0));
	show("unlink l1", unlinkat(dfd, "l1", 0));
	show_sum("l2 keeps data", "l2");
	show_stat("l2 nlink", "l2");
	mkdirat(dfd, "ld", 0755);
	show("link dir", linkat(dfd, "ld", dfd, "ld2", 0));
	show("symlink", symlinkat("l2", dfd, "s1"));
	char buf[256];
	ssize_t n = readlinkat(dfd, "s1", buf, sizeof(buf));
	printf("readlink: %.*s\n", (int)(n > 0 ? n : 0), buf);
	show_stat("lstat symlink", "s1");
	show_sum("read through symlink", "s1");
	show("dangling symlink", symlinkat("missing-target", dfd, "s2"));
	show("open dangling", openat(dfd, "s2", O_RDONLY));
	show("readlink on file", readlinkat(dfd, "l2", buf, sizeof(buf)));
	show("symlink exists", symlinkat("x", dfd, "s1"));
	show("unlink dir", unlinkat(dfd, "ld", 0));
	show("rmdir file", unlinkat(dfd, "l2", AT_REMOVEDIR));
	mkdirat(dfd, "ne", 0755);
	close(openat(dfd, "ne/f", O_CREAT | O_WRONLY, 0644));
	show("rmdir nonempty", unlinkat(dfd, "ne", AT_REMOVEDIR));
	show("mkdir existing", mkdirat(dfd, "ne", 0755));
	char longname[300];
	memset(longname, 'n', sizeof(longname));
	longname[255] = '\0';
	show("create 255-byte name", ({ int f = openat(dfd, longname, O_CREAT | O_WRONLY, 0644); if (f >= 0) close(f); f; }));
	longname[255] = 'n';
	longname[256] = '\0';
	show("create 256-byte name", openat(dfd, longname, O_CREAT | O_WRONLY, 0644));
	show("mkfifo", mkfifoat(dfd, "fifo", 0644));
	show_stat("fifo stat", "fifo");
	show("mknod socket", mknodat(dfd, "sock", S_IFSOCK | 0644, 0));
	show_stat("socket stat", "sock");
	show("mknod char dev", mknodat(dfd, "null", S_IFCHR | 0666, makedev(1, 3)));
	show_stat("chardev stat", "null");
}

static void xattrs(void)
{
	close(openat(dfd, "x", O_CREAT | O_WRONLY, 0644));
	char path[64] = "x";
	int fd = openat(dfd, path, O_RDONLY);
	show("setxattr", fsetxattr(fd, "user.alpha", "1234", 4, 0));
	show("setxattr create existing", fsetxattr(fd, "user.alpha", "5", 1, XATTR_CREATE));
	show("setxattr replace missing", fsetxattr(fd, "user.beta", "5", 1, XATTR_REPLACE));
	show("setxattr beta", fsetxattr(fd, "user.beta", "", 0, 0));
	char buf[256];
	ssize_t n = fgetxattr(fd, "user.alpha", buf, sizeof(buf));
	printf("getxattr: %zd %.*s\n", n, (int)(n > 0 ? n : 0), buf);
	printf("getxattr size query: %zd\n", fgetxattr(fd, "user.alpha", NULL, 0));
	show("getxattr small buffer", fgetxattr(fd, "user.alpha", buf, 2));
	show("getxattr missing", fgetxattr(fd, "user.gamma", buf, sizeof(buf)));
	n = flistxattr(fd, buf, sizeof(buf));
	/* names in any order: print sorted */
	char *names[8];
	int k = 0;
	for (char *p = buf; p < buf + n && k < 8; p += strlen(p) + 1)
		names[k++] = p;
	for (int i = 0; i < k; i++)
		for (int j = i + 1; j < k; j++)
			if (strcmp(names[i], names[j]) > 0) {
				char *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	printf("listxattr: %zd", n);
	for (int i = 0; i < k; i++)
		printf(" %s", names[i]);
	printf("\n");
	show("removexattr", fremovexattr(fd, "user.alpha"));
	show("removexattr again", fremovexattr(fd, "user.alpha"));
	static char big[2000];
	show("setxattr 2000 bytes", fsetxattr(fd, "user.big", big, sizeof(big), 0));
	printf("getxattr 2000 bytes: %zd\n", fgetxattr(fd, "user.big", big, sizeof(big)));
	close(fd);
}

static void times(void)
{
	close(openat(dfd, "t", O_CREAT | O_WRONLY, 0644));
	struct timespec ts[2] = {{.tv_sec = 1000000000, .tv_nsec = 123456789},
				 {.tv_sec = 1200000000, .tv_nsec = 987654321}};
	show("utimensat", utimensat(dfd, "t", ts, 0));
	struct stat st;
	fstatat(dfd, "t", &st, 0);
	printf("times: atime %ld.%09ld mtime %ld.%09ld\n", (long)st.st_atim.tv_sec,
	       st.st_atim.tv_nsec, (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	struct timespec omit[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = 5, .tv_nsec = 0}};
	show("utimensat omit atime", utimensat(dfd, "t", omit, 0));
	fstatat(dfd, "t", &st, 0);
	printf("times: atime %ld mtime %ld\n", (long)st.st_atim.tv_sec, (long)st.st_mtim.tv_sec);
	struct timespec now[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_NOW}};
	show("utimensat now", utimensat(dfd, "t", now, 0));
	fstatat(dfd, "t", &st, 0);
	printf("times: mtime recent %d\n", st.st_mtim.tv_sec > 1700000000);
	show("chmod", fchmodat(dfd, "t", 0600, 0));
	show_stat("after chmod", "t");
	show("chown", fchownat(dfd, "t", 123, 456, 0));
	show_stat("after chown", "t");
}

static void statfs_check(void)
{
	struct statvfs sv;
	if (fstatvfs(dfd, &sv) < 0) {
		printf("statvfs: %s\n", ename(errno));
		return;
	}
	printf("statvfs: namemax %lu bsize>0 %d blocks>0 %d bfree<=blocks %d\n", sv.f_namemax,
	       sv.f_bsize > 0, sv.f_blocks > 0, sv.f_bfree <= sv.f_blocks);
}

static void readdir_changing(void)
{
	mkdirat(dfd, "rdc", 0755);
	int sub = openat(dfd, "rdc", O_RDONLY | O_DIRECTORY);
	char name[32];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "keep%03d", i);
		close(openat(sub, name, O_CREAT | O_WRONLY, 0644));
		snprintf(name, sizeof(name), "gone%03d", i);
		close(openat(sub, name, O_CREAT | O_WRONLY, 0644));
	}
	DIR *d = fdopendir(dup(sub));
	int seen[300] = {0}, dups = 0, n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (++n == 100) {
			/* change the directory in the middle of the listing */
			for (int i = 0; i < 300; i++) {
				snprintf(name, sizeof(name), "gone%03d", i);
				unlinkat(sub, name, 0);
				snprintf(name, sizeof(name), "new%03d", i);
				close(openat(sub, name, O_CREAT | O_WRONLY, 0644));
			}
		}
		int k;
		if (sscanf(e->d_name, "keep%d", &k) == 1 && k >= 0 && k < 300) {
			if (seen[k]++)
				dups++;
		}
	}
	closedir(d);
	int missing = 0;
	for (int i = 0; i < 300; i++)
		missing += !seen[i];
	printf("readdir while changing: kept entries missing %d duplicated %d\n", missing, dups);
	/* a fresh listing shows exactly the final state */
	d = fdopendir(openat(dfd, "rdc", O_RDONLY | O_DIRECTORY));
	close(sub);
	int keep = 0, gone = 0, neu = 0, dots = 0;
	while ((e = readdir(d))) {
		keep += strncmp(e->d_name, "keep", 4) == 0;
		gone += strncmp(e->d_name, "gone", 4) == 0;
		neu += strncmp(e->d_name, "new", 3) == 0;
		dots += strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	}
	closedir(d);
	printf("readdir after: keep %d gone %d new %d dots %d\n", keep, gone, neu, dots);
}

/* Permission scenarios run in a child as uid/gid 65534. */
static void permissions(void)
{
	mkdirat(dfd, "priv", 0755);
	mkdirat(dfd, "open", 0777);
	mkdirat(dfd, "sticky", 01777);
	fchmodat(dfd, "open", 0777, 0);
	fchmodat(dfd, "sticky", 01777, 0);
	close(openat(dfd, "secret", O_CREAT | O_WRONLY, 0600));
	close(openat(dfd, "sticky/rootfile", O_CREAT | O_WRONLY, 0666));
	close(openat(dfd, "readable", O_CREAT | O_WRONLY, 0644));
	fchmodat(dfd, ".", 0755, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
			printf("setuid failed\n");
			_exit(1);
		}
		show("nobody: create in 0755 root dir", openat(dfd, "priv/x", O_CREAT | O_WRONLY, 0644));
		show("nobody: create in 0777 dir", ({ int f = openat(dfd, "open/mine", O_CREAT | O_WRONLY, 0644); if (f >= 0) close(f); f; }));
		show_stat("nobody: owner of new file", "open/mine");
		/* the creator may write a file it creates read-only (git's objects, install -m 444) */
		show("nobody: create 0444 for write", ({ int f = openat(dfd, "open/ro", O_CREAT | O_EXCL | O_WRONLY, 0444); int w = f >= 0 ? (int)write(f, "x", 1) : -1; if (f >= 0) close(f); w; }));
		show("nobody: reopen 0444 for write", openat(dfd, "open/ro", O_WRONLY));
		show("nobody: O_CREAT of the existing 0444 file for write", openat(dfd, "open/ro", O_CREAT | O_WRONLY, 0644));
		show("nobody: open 0600 root file", openat(dfd, "secret", O_RDONLY));
		show("nobody: open 0644 root file for read", ({ int f = openat(dfd, "readable", O_RDONLY); if (f >= 0) close(f); f; }));
		show("nobody: open 0644 root file for write", openat(dfd, "readable", O_WRONLY));
		show("nobody: chmod root file", fchmodat(dfd, "readable", 0777, 0));
		show("nobody: chown own file", fchownat(dfd, "open/mine", 0, 0, 0));
		show("nobody: chmod own file", fchmodat(dfd, "open/mine", 0600, 0));
		struct timespec ts[2] = {{.tv_sec = 5}, {.tv_sec = 6}};
		show("nobody: utimes on root file", utimensat(dfd, "readable", ts, 0));
		show("nobody: unlink in sticky dir", unlinkat(dfd, "sticky/rootfile", 0));
		show("nobody: create in sticky dir", ({ int f = openat(dfd, "sticky/nb", O_CREAT | O_WRONLY, 0644); if (f >= 0) close(f); f; }));
		show("nobody: unlink own in sticky dir", unlinkat(dfd, "sticky/nb", 0));
		show("nobody: rmdir root dir", unlinkat(dfd, "priv", AT_REMOVEDIR));
		show("nobody: truncate root file", truncate("readable", 0));
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: posix_diff DIR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(022);
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fchdir(dfd) < 0) {
		perror(argv[1]);
		return 2;
	}
	open_flags();
	offsets_and_holes();
	renames();
	links_and_symlinks();
	xattrs();
	times();
	statfs_check();
	readdir_changing();
	permissions();
	return 0;
}
