/* A null low-level FUSE file system: the yardstick for weft's read path. It holds a
 * root directory with files named 0..N-1 (count and size from the command line), every
 * byte of them zero, and answers reads from one static zero buffer; writes are
 * discarded. It negotiates what weft's mount does (1 MiB requests, async reads, the
 * kernel's read-ahead raised through sysfs), so a read through it measures FUSE itself.
 *
 * It also takes creates, mkdir, symlink, setattr and removals and answers them at once:
 * what was created keeps only its name (a hash table, for lookups; a list per
 * directory, for listings) and an inode number from a counter with its type in the low
 * bits; attributes and data are not kept. It
 * answers GETXATTR with ENODATA and FLUSH
 * with success as weft's mount does, so the kernel sends it the requests it sends weft:
 * `tar xf` onto it measures what FUSE alone costs an extraction, and `du -s` and
 * `rm -rf` of what it made a traversal and a removal (bench/tar_floor.sh).
 *
 * usage: nullfuse MOUNTPOINT [--size BYTES] [--files N] [--readahead-kb KB]
 *                 [--idle-threads N (default 4)] [--default-permissions] [-f]
 * Unmount with fusermount3 -u MOUNTPOINT (or umount). */
#define FUSE_USE_VERSION 35
#include <errno.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQ (1u << 20)

static uint64_t file_size = 2ull << 30;
static unsigned nfiles = 64;
static unsigned readahead_kb = 4096;
static unsigned idle_threads = 4; /* as weft's mount: two per core */
static int default_permissions; /* as weft's mount: the kernel checks permissions */
static char mount_real[PATH_MAX];
static char zeros[MAX_REQ];

/* inode numbers of what was created: NEW_BASE + 4 * n + type */
#define NEW_BASE (1ull << 40)
enum { NEW_FILE, NEW_DIR, NEW_LINK };
static uint64_t created;

/* (parent, name) -> inode number of what was created, also in its parent's list */
struct name_ent {
	struct name_ent *next;          /* the hash chain */
	struct name_ent *dnext, **dprev; /* the parent's list */
	uint64_t parent, ino;
	char name[];
};
#define NAME_BUCKETS (1u << 20)
static struct name_ent **names;
/* directory inode number -> the names made in it, newest first; never shrinks */
struct dir_ent {
	struct dir_ent *next;
	uint64_t ino;
	struct name_ent *first;
};
#define DIR_BUCKETS (1u << 16)
static struct dir_ent *dirs[DIR_BUCKETS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned name_hash(uint64_t parent, const char *name)
{
	uint64_t h = parent * 0x9e3779b97f4a7c15ull;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return (unsigned)(h >> 20) & (NAME_BUCKETS - 1);
}

static struct name_ent **name_slot(uint64_t parent, const char *name)
{
	struct name_ent **e = &names[name_hash(parent, name)];
	while (*e && ((*e)->parent != parent || strcmp((*e)->name, name) != 0))
		e = &(*e)->next;
	return e;
}

/* The list of names made in directory ino (names_lock held); NULL without memory. */
static struct dir_ent *dir_of(uint64_t ino, bool make)
{
	struct dir_ent **d = &dirs[(ino * 0x9e3779b97f4a7c15ull) >> 48];
	while (*d && (*d)->ino != ino)
		d = &(*d)->next;
	if (!*d && make && (*d = calloc(1, sizeof(**d))))
		(*d)->ino = ino;
	return *d;
}

static void list_remove(struct name_ent *ne)
{
	if (ne->dprev) {
		*ne->dprev = ne->dnext;
		if (ne->dnext)
			ne->dnext->dprev = ne->dprev;
	}
}

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino >= NEW_BASE) {
		static const mode_t modes[] = {S_IFREG | 0644, S_IFDIR | 0755, S_IFLNK | 0777};
		st->st_mode = modes[(ino - NEW_BASE) % 4 < 3 ? (ino - NEW_BASE) % 4 : 0];
		st->st_nlink = S_ISDIR(st->st_mode) ? 2 : 1;
	} else if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)file_size;
		st->st_blocks = (blkcnt_t)((file_size + 511) / 512);
	}
	st->st_blksize = MAX_REQ;
}

/* Raises the mount's bdi read-ahead once INIT is answered (the INIT reply can only lower
 * it), as weft's mount does; the bdi is named by the mount's device number. */
static void *readahead_thread(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 200000000};
	nanosleep(&ts, NULL);
	char line[4096], dev[32] = "";
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	if (!mi)
		return NULL;
	while (fgets(line, sizeof(line), mi)) {
		char mm[32], root[PATH_MAX], point[PATH_MAX];
		if (sscanf(line, "%*d %*d %31s %4095s %4095s", mm, root, point) == 3 &&
		    strcmp(point, mount_real) == 0)
			snprintf(dev, sizeof(dev), "%s", mm);
	}
	fclose(mi);
	if (!dev[0])
		return NULL;
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "nullfuse: cannot set %s\n", path);
		return NULL;
	}
	fprintf(f, "%u\n", readahead_kb);
	fclose(f);
	return NULL;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	pthread_t t;
	if (readahead_kb && pthread_create(&t, NULL, readahead_thread, NULL) == 0)
		pthread_detach(t);
	conn->max_write = MAX_REQ;
	conn->max_readahead = readahead_kb * 1024u;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	pthread_mutex_lock(&names_lock);
	struct name_ent *ne = *name_slot(parent, name);
	uint64_t known = ne ? ne->ino : 0;
	pthread_mutex_unlock(&names_lock);
	if (known) {
		struct fuse_entry_param e = {.ino = known, .attr_timeout = 3600,
					     .entry_timeout = 3600};
		fill_attr(e.ino, &e.attr);
		fuse_reply_entry(req, &e);
		return;
	}
	char *end;
	unsigned long i = strtoul(name, &end, 10);
	if (parent != FUSE_ROOT_ID || *end || end == name || i >= nfiles) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct fuse_entry_param e = {.ino = i + 2, .attr_timeout = 3600, .entry_timeout = 3600};
	fill_attr(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if ((uint64_t)off >= file_size)
		size = 0;
	else if (size > file_size - (uint64_t)off)
		size = (size_t)(file_size - (uint64_t)off);
	if (size > MAX_REQ)
		size = MAX_REQ;
	fuse_reply_buf(req, zeros, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	fuse_reply_write(req, size);
}

/* The root lists files 0..nfiles-1, then what was made in it; a directory made here
 * what was made in it. The offset is a position in that order. */
static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus);

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, false);
}

/* with the entries' attributes, for every piece of a listing, as weft's mount asks */
static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, true);
}

/* One entry into buf at used; its size, or more than the room left when it is full. */
static size_t add_entry(fuse_req_t req, char *buf, size_t room, const char *name,
			uint64_t ino, off_t next, bool plus)
{
	if (!plus) {
		struct stat st;
		fill_attr(ino, &st);
		return fuse_add_direntry(req, buf, room, name, &st, next);
	}
	struct fuse_entry_param e = {.ino = ino, .attr_timeout = 3600, .entry_timeout = 3600};
	fill_attr(ino, &e.attr);
	return fuse_add_direntry_plus(req, buf, room, name, &e, next);
}

static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	if (ino != FUSE_ROOT_ID && (ino < NEW_BASE || (ino - NEW_BASE) % 4 != NEW_DIR)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	uint64_t pos = (uint64_t)off, fixed = ino == FUSE_ROOT_ID ? nfiles : 0;
	bool full = false;
	for (; pos < fixed && !full; pos++) {
		char name[16];
		snprintf(name, sizeof(name), "%u", (unsigned)pos);
		size_t n = add_entry(req, buf + used, size - used, name, pos + 2, (off_t)pos + 1,
				     plus);
		full = n > size - used;
		used += full ? 0 : n;
	}
	pthread_mutex_lock(&names_lock);
	struct dir_ent *d = dir_of(ino, false);
	struct name_ent *ne = d ? d->first : NULL;
	for (uint64_t i = fixed; ne && i < pos; i++)
		ne = ne->dnext;
	for (; ne && !full; ne = ne->dnext, pos++) {
		size_t n = add_entry(req, buf + used, size - used, ne->name, ne->ino,
				     (off_t)pos + 1, plus);
		full = n > size - used;
		used += full ? 0 : n;
	}
	pthread_mutex_unlock(&names_lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

/* What was created is answered and forgotten. */
static void reply_new(fuse_req_t req, uint64_t parent, const char *name, int type,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e = {.attr_timeout = 3600, .entry_timeout = 3600};
	e.ino = NEW_BASE + 4 * __atomic_add_fetch(&created, 1, __ATOMIC_RELAXED) + (uint64_t)type;
	fill_attr(e.ino, &e.attr);
	size_t len = strlen(name) + 1;
	struct name_ent *ne = malloc(sizeof(*ne) + len);
	if (!ne) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ne->parent = parent;
	ne->ino = e.ino;
	memcpy(ne->name, name, len);
	pthread_mutex_lock(&names_lock);
	struct dir_ent *d = dir_of(parent, true);
	struct name_ent **slot = name_slot(parent, name);
	if (*slot) { /* replaced (tar unlinks first only when asked) */
		ne->next = (*slot)->next;
		list_remove(*slot);
		free(*slot);
	} else {
		ne->next = NULL;
	}
	*slot = ne;
	ne->dprev = NULL;
	ne->dnext = NULL;
	if (d) {
		ne->dnext = d->first;
		if (d->first)
			d->first->dprev = &ne->dnext;
		ne->dprev = &d->first;
		d->first = ne;
	}
	pthread_mutex_unlock(&names_lock);
	if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)mode;
	reply_new(req, parent, name, NEW_FILE, fi);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)mode;
	reply_new(req, parent, name, NEW_DIR, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	reply_new(req, parent, name, NEW_LINK, NULL);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	fill_attr(ino, &st);
	if (to_set & FUSE_SET_ATTR_MODE)
		st.st_mode = (st.st_mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		st.st_uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		st.st_gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_SIZE)
		st.st_size = attr->st_size;
	if (to_set & FUSE_SET_ATTR_ATIME)
		st.st_atim = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME)
		st.st_mtim = attr->st_mtim;
	fuse_reply_attr(req, &st, 3600);
}

static void op_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	pthread_mutex_lock(&names_lock);
	struct name_ent **slot = name_slot(parent, name), *ne = *slot;
	if (ne) {
		*slot = ne->next;
		list_remove(ne);
	}
	pthread_mutex_unlock(&names_lock);
	int err = ne ? 0 : ENOENT;
	free(ne);
	fuse_reply_err(req, err);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
	.create = op_create,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.setattr = op_setattr,
	.unlink = op_remove,
	.rmdir = op_remove,
	.getxattr = op_getxattr,
	.flush = op_flush,
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
};

static int usage(void)
{
	fprintf(stderr, "usage: nullfuse MOUNTPOINT [--size BYTES] [--files N] "
			"[--readahead-kb KB] [--idle-threads N] [--default-permissions] [-f]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *mnt = NULL;
	int foreground = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			file_size = strtoull(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc)
			nfiles = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--readahead-kb") == 0 && i + 1 < argc)
			readahead_kb = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--idle-threads") == 0 && i + 1 < argc)
			idle_threads = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--default-permissions") == 0)
			default_permissions = 1;
		else if (strcmp(argv[i], "-f") == 0)
			foreground = 1;
		else if (argv[i][0] != '-' && !mnt)
			mnt = argv[i];
		else
			return usage();
	}
	if (!mnt)
		return usage();
	if (!(names = calloc(NAME_BUCKETS, sizeof(*names)))) {
		fprintf(stderr, "nullfuse: out of memory\n");
		return 1;
	}
	if (!realpath(mnt, mount_real)) {
		fprintf(stderr, "nullfuse: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	char *fargv[] = {"nullfuse", "-ofsname=nullfuse,subtype=nullfuse", "-odefault_permissions",
			 NULL};
	struct fuse_args args = FUSE_ARGS_INIT(2 + default_permissions, fargv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mnt) != 0) {
		fprintf(stderr, "nullfuse: cannot mount at %s\n", mnt);
		return 1;
	}
	fuse_daemonize(foreground);
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, 64);
	fuse_loop_cfg_set_idle_threads(cfg, idle_threads);
	int rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
