/* perm_diff [--warm] [--settle SEC] CHANGE_DIR ACT_DIR: permission scenarios as several
 * non-root users, one line per step with its result (ok or the errno name) and the modes
 * that matter. Run on a local directory and on weft mounts, the outputs must be identical
 * (tests/integration/test_perm.sh compares them). Needs root: each step runs in a child
 * that switches to its user with setgroups/setresgid/setresuid.
 *
 * Users: A (uid 2001, gid 2001) and B (2002, 2002) share the supplementary group G (3001);
 * C (2003, 2003) has no other group. Changes of mode and owner (by root or an owner) are
 * made in CHANGE_DIR; the other users act at once in ACT_DIR, the same tree (the same
 * directory, or the same directory seen through a second mount). With --settle SEC the
 * program waits SEC after each batch of changes (a second mount may cache attributes for
 * its attribute timeout); with --warm every user stats the whole tree before each batch
 * of changes, so that the kernel's dentry and attribute caches of ACT_DIR are full. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define G 3001u
enum user { ROOT, A, B, C };
static const unsigned uids[] = {0, 2001, 2002, 2003};
static const char *names[] = {"root", "A", "B", "C"};

static int chg_fd, act_fd;
static bool warm;
static double settle;

static const char *ename(int e)
{
	static char buf[32];
	switch (e) {
#define E(x) case x: return #x;
	E(EPERM) E(ENOENT) E(EIO) E(EBADF) E(EACCES) E(EEXIST) E(EXDEV) E(ENOTDIR) E(EISDIR)
	E(EINVAL) E(EFBIG) E(ENOSPC) E(EROFS) E(EMLINK) E(ENOTEMPTY) E(ELOOP) E(EBUSY)
#undef E
	default: snprintf(buf, sizeof(buf), "errno%d", e); return buf;
	}
}

static void show(const char *who, const char *step, long rc)
{
	if (rc < 0)
		printf("%s: %s: %s\n", who, step, ename(errno));
	else
		printf("%s: %s: ok\n", who, step);
}

/* Mode, owner, group and size as root sees them in CHANGE_DIR, asked of the file system
 * itself (AT_STATX_FORCE_SYNC: not from a cache the other mount's changes missed) */
static void show_stat(const char *path)
{
	struct statx st;
	if (statx(chg_fd, path, AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &st) < 0)
		printf("stat %s: %s\n", path, ename(errno));
	else
		printf("stat %s: mode %o uid %u gid %u size %lld\n", path, st.stx_mode & 07777,
		       st.stx_uid, st.stx_gid, S_ISDIR(st.stx_mode) ? 0LL : (long long)st.stx_size);
}

/* Becomes user u (with G for A and B, or the groups given) in this process. */
static void become(enum user u, int ngroups, const gid_t *groups)
{
	gid_t def[1] = {G};
	if (ngroups < 0) {
		ngroups = (u == A || u == B) ? 1 : 0;
		groups = def;
	}
	if (u == ROOT)
		return;
	if (setgroups((size_t)ngroups, groups) < 0 || setresgid(uids[u], uids[u], uids[u]) < 0 ||
	    setresuid(uids[u], uids[u], uids[u]) < 0) {
		printf("cannot become %s: %s\n", names[u], strerror(errno));
		fflush(stdout);
		_exit(1);
	}
}

/* Runs body in a child as user u, in ACT_DIR (act) or CHANGE_DIR. */
#define AS(u, act, body) \
	do { \
		fflush(stdout); \
		pid_t pid_ = fork(); \
		if (pid_ == 0) { \
			umask(022); \
			if (fchdir((act) ? act_fd : chg_fd) < 0) \
				_exit(1); \
			become(u, -1, NULL); \
			const char *who = names[u]; \
			(void)who; \
			body; \
			fflush(stdout); \
			_exit(0); \
		} \
		int st_; \
		waitpid(pid_, &st_, 0); \
	} while (0)

/* A step by user u in ACT_DIR, and a change (chmod, chown) in CHANGE_DIR. */
#define DO(u, step, call) AS(u, true, show(who, step, (call)))
#define CHANGE(u, step, call) AS(u, false, show(who, step, (call)))

static long open_close(const char *path, int flags)
{
	int fd = open(path, flags, 0644);
	if (fd >= 0)
		close(fd);
	return fd;
}

static void walk(int dfd)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY);
			if (sub >= 0)
				walk(sub);
		}
	}
	closedir(d);
}

/* Before a batch of changes: with --warm, every user stats all it can see in ACT_DIR. */
static void batch(void)
{
	if (!warm)
		return;
	for (enum user u = A; u <= C; u++)
		AS(u, true, walk(open(".", O_RDONLY | O_DIRECTORY)));
}

/* After a batch of changes: a second mount's caches may hold the old attributes for
 * its attribute timeout (documented; leases will recall them). */
static void settled(void)
{
	if (settle > 0) {
		struct timespec ts = {(time_t)settle, (long)((settle - (time_t)settle) * 1e9)};
		nanosleep(&ts, NULL);
	}
}

static void mkfile(const char *path, int mode, enum user owner, unsigned gid)
{
	int fd = openat(chg_fd, path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "0123456789", 10) != 10) {
		printf("setup %s: %s\n", path, ename(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (fchownat(chg_fd, path, uids[owner], gid ? gid : uids[owner], 0) < 0 ||
	    fchmodat(chg_fd, path, (mode_t)mode, 0) < 0)
		printf("setup %s: %s\n", path, ename(errno));
}

static void mkdir_(const char *path, int mode, enum user owner, unsigned gid)
{
	if (mkdirat(chg_fd, path, 0700) < 0 ||
	    fchownat(chg_fd, path, uids[owner], gid ? gid : uids[owner], 0) < 0 ||
	    fchmodat(chg_fd, path, (mode_t)mode, 0) < 0)
		printf("setup %s: %s\n", path, ename(errno));
}

/* chmod and chown sequences, each followed at once by opens, truncates, links, renames
 * and unlinks of the other users. */
static void sequences(void)
{
	mkdir_("pub", 0777, ROOT, 0);
	mkfile("pub/f1", 0644, A, 0);
	batch();
	DO(B, "open f1 rdonly (0644 A)", open_close("pub/f1", O_RDONLY));
	DO(B, "open f1 rdwr (0644 A)", open_close("pub/f1", O_RDWR));
	CHANGE(A, "chmod f1 0666", chmod("pub/f1", 0666));
	settled();
	DO(B, "open f1 rdwr (0666)", open_close("pub/f1", O_RDWR));
	DO(B, "truncate f1 to 7 (0666)", truncate("pub/f1", 7));
	batch();
	CHANGE(A, "chmod f1 0600", chmod("pub/f1", 0600));
	settled();
	DO(B, "open f1 rdwr (0600 A)", open_close("pub/f1", O_RDWR));
	DO(B, "open f1 rdonly|nonblock (0600 A)", open_close("pub/f1", O_RDONLY | O_NONBLOCK));
	DO(B, "truncate f1 (0600 A)", truncate("pub/f1", 0));
	DO(B, "link f1 (0600 A)", link("pub/f1", "pub/f1.link"));
	show_stat("pub/f1");
	batch();
	CHANGE(ROOT, "chown f1 to B", chown("pub/f1", uids[B], uids[B]));
	settled();
	DO(A, "open f1 rdwr (0600 B)", open_close("pub/f1", O_RDWR));
	DO(A, "open f1 rdonly|nonblock (0600 B)", open_close("pub/f1", O_RDONLY | O_NONBLOCK));
	DO(B, "open f1 rdwr (0600 B)", open_close("pub/f1", O_RDWR));
	DO(A, "chmod f1 (owner B)", chmod("pub/f1", 0666));
	batch();
	CHANGE(ROOT, "chown f1 to A:G", chown("pub/f1", uids[A], G));
	CHANGE(A, "chmod f1 0660", chmod("pub/f1", 0660));
	settled();
	DO(B, "open f1 rdwr (0660 A:G)", open_close("pub/f1", O_RDWR));
	DO(C, "open f1 rdonly (0660 A:G)", open_close("pub/f1", O_RDONLY));
	DO(C, "truncate f1 (0660 A:G)", truncate("pub/f1", 1));
	batch();
	CHANGE(A, "chown f1 -1 2001 (own gid)", chown("pub/f1", (uid_t)-1, uids[A]));
	settled();
	DO(B, "open f1 rdwr (0660 A:A)", open_close("pub/f1", O_RDWR));
	DO(A, "chown f1 -1 G (own group)", chown("pub/f1", (uid_t)-1, G));
	DO(A, "chown f1 -1 2002 (not a member)", chown("pub/f1", (uid_t)-1, uids[B]));
	DO(B, "chown f1 to B (not owner)", chown("pub/f1", uids[B], (gid_t)-1));
	DO(B, "chown f1 -1 G (not owner)", chown("pub/f1", (uid_t)-1, G));
	DO(B, "open f1 rdwr (0660 A:G again)", open_close("pub/f1", O_RDWR));
	show_stat("pub/f1");
	/* renames and unlinks right after the directory's mode changes */
	mkdir_("pub/d", 0755, A, 0);
	mkfile("pub/d/x", 0666, B, 0);
	batch();
	DO(B, "rename in 0755 A dir", rename("pub/d/x", "pub/d/y"));
	DO(B, "unlink in 0755 A dir", unlink("pub/d/x"));
	CHANGE(A, "chmod d 0777", chmod("pub/d", 0777));
	settled();
	DO(B, "rename in 0777 dir", rename("pub/d/x", "pub/d/y"));
	DO(C, "link in 0777 dir", link("pub/d/y", "pub/d/z"));
	batch();
	CHANGE(A, "chmod d 0775", chmod("pub/d", 0775));
	settled();
	DO(B, "unlink in 0775 A:A dir", unlink("pub/d/y"));
	DO(B, "create in 0775 A:A dir", open_close("pub/d/new", O_CREAT | O_WRONLY));
	batch();
	CHANGE(ROOT, "chgrp d G", chown("pub/d", (uid_t)-1, G));
	settled();
	DO(B, "unlink in 0775 A:G dir", unlink("pub/d/y"));
	DO(C, "create in 0775 A:G dir", open_close("pub/d/new", O_CREAT | O_WRONLY));
	show_stat("pub/d");
}

/* A directory without search permission in the path. */
static void no_search(void)
{
	mkdir_("nx", 0755, A, 0);
	mkfile("nx/f", 0666, A, 0);
	mkfile("nx/bf", 0644, B, 0);
	mkdir_("nx/sub", 0777, A, 0);
	mkfile("nx/sub/g", 0666, A, 0);
	DO(B, "open nx/f rdwr (nx 0755)", open_close("nx/f", O_RDWR));
	batch();
	CHANGE(A, "chmod nx 0766 (no x for others)", chmod("nx", 0766));
	settled();
	const enum user who_[] = {B, C};
	for (int i = 0; i < 2; i++) {
		enum user u = who_[i];
		DO(u, "open nx/f rdonly", open_close("nx/f", O_RDONLY));
		DO(u, "open nx/f rdwr", open_close("nx/f", O_RDWR));
		DO(u, "open nx/f rdonly|nonblock", open_close("nx/f", O_RDONLY | O_NONBLOCK));
		DO(u, "truncate nx/f", truncate("nx/f", 1));
		DO(u, "chmod nx/bf (own file)", chmod("nx/bf", 0666));
		DO(u, "chown nx/bf -1 G (own file, own group)", chown("nx/bf", (uid_t)-1, G));
		DO(u, "lchown nx/bf -1 G", lchown("nx/bf", (uid_t)-1, G));
		DO(u, "link nx/f", link("nx/f", "pub/nxlink"));
		DO(u, "rename nx/sub/g", rename("nx/sub/g", "pub/nxg"));
		DO(u, "unlink nx/sub/g", unlink("nx/sub/g"));
		DO(u, "open nx/sub/g (deeper)", open_close("nx/sub/g", O_RDWR));
		DO(u, "create nx/sub/new", open_close("nx/sub/new", O_CREAT | O_WRONLY));
		DO(u, "access nx/f", access("nx/f", R_OK));
		struct stat st;
		DO(u, "stat nx/f", stat("nx/f", &st));
	}
	DO(A, "owner: open nx/f rdwr", open_close("nx/f", O_RDWR));
	show_stat("nx/f");
	show_stat("nx/bf");
	batch();
	CHANGE(A, "chmod nx 0711", chmod("nx", 0711));
	settled();
	DO(B, "open nx/f rdwr (nx 0711)", open_close("nx/f", O_RDWR));
	DO(B, "chown nx/bf -1 G (nx 0711)", chown("nx/bf", (uid_t)-1, G));
	DO(B, "create nx/new (nx 0711)", open_close("nx/new", O_CREAT | O_WRONLY));
	show_stat("nx/bf");
	batch();
	CHANGE(ROOT, "chown nx to C", chown("nx", uids[C], uids[C]));
	CHANGE(C, "chmod nx 0700", chmod("nx", 0700));
	settled();
	DO(A, "open nx/f rdwr (nx 0700 C)", open_close("nx/f", O_RDWR));
	DO(C, "open nx/f rdwr (nx 0700 C)", open_close("nx/f", O_RDWR));
}

/* Sticky directories. */
static void sticky(void)
{
	mkdir_("stk", 01777, ROOT, 0);
	mkfile("stk/a", 0666, A, 0);
	mkfile("stk/b", 0666, B, 0);
	mkdir_("stk/ad", 0777, A, 0);
	batch();
	DO(B, "unlink A's file in sticky dir", unlink("stk/a"));
	DO(B, "rename A's file in sticky dir", rename("stk/a", "stk/x"));
	DO(B, "rename own file over A's in sticky dir", rename("stk/b", "stk/a"));
	DO(B, "rmdir A's dir in sticky dir", rmdir("stk/ad"));
	DO(B, "open A's 0666 file rdwr", open_close("stk/a", O_RDWR));
	DO(B, "rename own file in sticky dir", rename("stk/b", "stk/b2"));
	DO(A, "unlink own file in sticky dir", unlink("stk/a"));
	CHANGE(ROOT, "chown stk to A", chown("stk", uids[A], uids[A]));
	settled();
	DO(A, "dir owner unlinks B's file", unlink("stk/b2"));
	mkfile("stk/c", 0666, C, 0);
	batch();
	CHANGE(A, "chmod stk 0777 (sticky off)", chmod("stk", 0777));
	settled();
	DO(B, "unlink C's file, sticky off", unlink("stk/c"));
	show_stat("stk");
}

/* setuid/setgid files written, truncated and chowned. */
static void suid(void)
{
	mkdir_("s", 0777, ROOT, 0);
	mkfile("s/w", 06777, A, G);
	mkfile("s/t", 06777, A, G);
	mkfile("s/ft", 06777, A, G);
	mkfile("s/otrunc", 06777, A, G);
	mkfile("s/nogx", 02767, A, G);
	mkfile("s/own", 06775, A, G);
	mkfile("s/root", 06777, A, G);
	mkfile("s/chown", 06755, A, G);
	mkfile("s/chgrp", 06775, A, G);
	mkfile("s/rchgrp", 06775, A, G);
	batch();
	AS(B, true, {
		int fd = open("s/w", O_WRONLY);
		show(who, "open s/w 06777 A", fd);
		show(who, "write s/w", write(fd, "x", 1));
		struct stat st;
		fstat(fd, &st);
		printf("%s: s/w mode before close %o\n", who, st.st_mode & 07777);
		close(fd);
	});
	show_stat("s/w");
	DO(B, "truncate s/t", truncate("s/t", 3));
	show_stat("s/t");
	AS(B, true, {
		int fd = open("s/ft", O_RDWR);
		show(who, "ftruncate s/ft", ftruncate(fd, 2));
		close(fd);
	});
	show_stat("s/ft");
	DO(B, "open s/otrunc O_TRUNC", open_close("s/otrunc", O_WRONLY | O_TRUNC));
	show_stat("s/otrunc");
	AS(B, true, {
		int fd = open("s/nogx", O_WRONLY);
		show(who, "write s/nogx 02767", write(fd, "x", 1));
		close(fd);
	});
	show_stat("s/nogx");
	AS(A, true, {
		int fd = open("s/own", O_WRONLY);
		show(who, "owner writes s/own", write(fd, "x", 1));
		close(fd);
	});
	show_stat("s/own");
	AS(ROOT, false, {
		int fd = open("s/root", O_WRONLY);
		show(who, "root writes s/root", write(fd, "x", 1));
		close(fd);
	});
	show_stat("s/root");
	CHANGE(ROOT, "chown s/chown to B", chown("s/chown", uids[B], (gid_t)-1));
	show_stat("s/chown");
	CHANGE(A, "chown s/chgrp -1 2001", chown("s/chgrp", (uid_t)-1, uids[A]));
	show_stat("s/chgrp");
	CHANGE(ROOT, "chown s/rchgrp -1 G (root, same group)", chown("s/rchgrp", (uid_t)-1, G));
	show_stat("s/rchgrp");
	DO(B, "chmod s/w u+s (not owner)", chmod("s/w", 04777));
	CHANGE(A, "chmod s/w 02777 as owner in G", chmod("s/w", 02777));
	show_stat("s/w");
	CHANGE(C, "C writes s/w (no write: 02777 is rw for all)", open_close("s/w", O_WRONLY));
}

/* An open file's access counts, not a fresh check. */
static void open_access(void)
{
	mkdir_("o", 0777, ROOT, 0);
	AS(B, true, {
		int fd = open("o/m0", O_CREAT | O_RDWR | O_EXCL, 0);
		show(who, "create o/m0 O_RDWR mode 0", fd);
		show(who, "ftruncate o/m0", ftruncate(fd, 10));
		show(who, "write o/m0", pwrite(fd, "abc", 3, 0));
		show(who, "fchmod o/m0 0640", fchmod(fd, 0640));
		close(fd);
		fd = open("o/w0", O_CREAT | O_WRONLY | O_EXCL, 0);
		show(who, "create o/w0 O_WRONLY mode 0", fd);
		show(who, "ftruncate o/w0", ftruncate(fd, 5));
		close(fd);
		show(who, "reopen o/w0 rdwr", open_close("o/w0", O_RDWR));
		show(who, "truncate o/w0 by path", truncate("o/w0", 1));
	});
	show_stat("o/m0");
	show_stat("o/w0");
	mkfile("o/held", 0666, ROOT, 0);
	AS(A, true, {
		int fd = open("o/held", O_RDWR);
		show(who, "open o/held rdwr (0666)", fd);
		show(who, "ftruncate o/held", ftruncate(fd, 4));
		show(who, "fchmod o/held (not owner)", fchmod(fd, 0600));
		close(fd);
	});
	/* held across a chmod by root: the open's access still counts */
	fflush(stdout);
	int sync_[2], done_[2];
	if (pipe(sync_) < 0 || pipe(done_) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		if (fchdir(act_fd) < 0)
			_exit(1);
		become(A, -1, NULL);
		int fd = open("o/held", O_RDWR);
		char c = 'r';
		if (write(sync_[1], &c, 1) != 1 || read(done_[0], &c, 1) != 1)
			_exit(1);
		show("A", "ftruncate o/held after chmod 0600", ftruncate(fd, 2));
		show("A", "pwrite o/held after chmod 0600", pwrite(fd, "zz", 2, 0));
		close(fd);
		show("A", "reopen o/held rdwr after chmod 0600", open_close("o/held", O_RDWR));
		fflush(stdout);
		_exit(0);
	}
	char c;
	if (read(sync_[0], &c, 1) != 1)
		return;
	show("root", "chmod o/held 0600", fchmodat(chg_fd, "o/held", 0600, 0));
	settled();
	if (write(done_[1], &c, 1) != 1)
		return;
	waitpid(pid, NULL, 0);
	show_stat("o/held");
}

/* One process whose supplementary groups change while its uid and gid stay: the mount
 * caches groups per (pid, uid, gid) for a second; a request must never be granted or
 * refused on groups the process no longer has or does not yet have. */
static void setgroups_same_pid(void)
{
	mkdir_("g", 0755, ROOT, 0);
	mkfile("g/grp", 0640, C, G);   /* readable through G only */
	mkfile("g/oth", 0604, C, G);   /* readable by others, not by G */
	mkfile("g/any", 0644, C, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (fchdir(act_fd) < 0)
			_exit(1);
		gid_t none[1] = {0}, withg[1] = {G};
		const char *w = "A/same pid";
		/* keep real and saved uid 0 so the groups can change; act through euid/egid */
		struct step {
			int ng;
			const gid_t *g;
			const char *label;
			const char *path;
		} steps[] = {
			{0, none, "no groups: read g/any", "g/any"},
			{0, none, "no groups: read g/grp", "g/grp"},
			{0, none, "no groups: read g/oth", "g/oth"},
			{1, withg, "G added: read g/grp", "g/grp"},
			{1, withg, "G added: read g/oth", "g/oth"},
			{0, none, "G dropped: read g/grp", "g/grp"},
			{0, none, "G dropped: read g/oth", "g/oth"},
			{1, withg, "G again: read g/grp", "g/grp"},
		};
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			if (setresuid((uid_t)-1, 0, (uid_t)-1) < 0 || setresgid((gid_t)-1, 0, (gid_t)-1) < 0 ||
			    setgroups((size_t)steps[i].ng, steps[i].g) < 0 ||
			    setresgid((gid_t)-1, uids[A], (gid_t)-1) < 0 ||
			    setresuid((uid_t)-1, uids[A], (uid_t)-1) < 0) {
				printf("cannot switch: %s\n", strerror(errno));
				_exit(1);
			}
			show(w, steps[i].label, open_close(steps[i].path, O_RDONLY));
		}
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
}

/* A user in more groups than a request carries (32), with the file's group past them:
 * what the mount cannot send must not turn a group member into "other". */
static void many_groups(void)
{
	mkdir_("mg", 0755, ROOT, 0);
	mkfile("mg/oth", 0604, C, G);  /* others may read, members of G may not */
	mkfile("mg/grp", 0640, C, G);  /* members of G may read */
	mkfile("mg/own", 0644, A, 0);
	gid_t groups[40];
	for (int i = 0; i < 39; i++)
		groups[i] = 2100 + (gid_t)i; /* below G: the kernel keeps groups sorted */
	groups[39] = G;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (fchdir(act_fd) < 0)
			_exit(1);
		become(A, 40, groups);
		show("A/40 groups", "read mg/oth (0604, G is the 40th group)", open_close("mg/oth", O_RDONLY));
		show("A/40 groups", "read mg/grp (0640, G is the 40th group)", open_close("mg/grp", O_RDONLY));
		show("A/40 groups", "chown mg/own -1 G (G is the 40th group)", chown("mg/own", (uid_t)-1, G));
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--warm"))
			warm = true;
		else if (!strcmp(argv[i], "--settle") && i + 1 < argc)
			settle = atof(argv[++i]);
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: perm_diff [--warm] [--settle SEC] CHANGE_DIR ACT_DIR\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(022);
	chg_fd = open(argv[i], O_RDONLY | O_DIRECTORY);
	act_fd = open(argv[i + 1], O_RDONLY | O_DIRECTORY);
	if (chg_fd < 0 || act_fd < 0 || fchdir(chg_fd) < 0) {
		perror("perm_diff: open directories");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "perm_diff: needs root (switches to uids 2001-2003)\n");
		return 2;
	}
	sequences();
	no_search();
	sticky();
	suid();
	open_access();
	setgroups_same_pid();
	many_groups();
	return 0;
}
