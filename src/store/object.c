/* Objects: open/close, paths, locks, the I/O helpers both halves use (see object.h for
 * the contract and DESIGN; writes, truncate, delete and fsync in object_write.c; reads,
 * stat and list in object_read.c; recovery and verification in object_recover.c). */
#include "store/object_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/log.h"
#include "proto/proto.h"
#include "store/iov.h"
#include "weft/err.h"

pthread_rwlock_t *store_obj_lock(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	uint64_t h = (ino ^ ((uint64_t)stripe << 32 | stripe)) * 0x9E3779B97F4A7C15ULL;
	return &s->locks[(h >> 32) % OBJ_NLOCKS];
}

/* objects/XX/YY: in targets of format 2, XX and YY are bits 16-23 and 8-15 of the inode
 * number, so the objects of 256 consecutive inodes (files made one after another) share
 * a directory; format 1 used bits 8-15 and 0-7, one directory per inode of the last
 * 65,536 (docs/on-disk-format.md). */
static unsigned obj_xx(const struct store_objs *s, uint64_t ino)
{
	return (unsigned)((s->grouped ? ino >> 16 : ino >> 8) & 0xff);
}

void store_obj_path(const struct store_objs *s, char *buf, uint64_t ino, uint32_t stripe,
		    bool crc)
{
	snprintf(buf, OBJ_PATH_LEN, "%02x/%02x/%016" PRIx64 ".%" PRIu32 "%s", obj_xx(s, ino),
		 (unsigned)((s->grouped ? ino >> 8 : ino) & 0xff), ino, stripe,
		 crc ? ".crc" : "");
}

int store_obj_io(bool write, int fd, const struct iovec *iov, int cnt, uint64_t off, size_t *done)
{
	struct iovec stackv[64], *v = stackv;
	*done = 0;
	if (cnt > 64) {
		v = malloc((size_t)cnt * sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	memcpy(v, iov, (size_t)cnt * sizeof(*v));
	int rc = 0, i = 0;
	while (i < cnt) {
		if (v[i].iov_len == 0) {
			i++;
			continue;
		}
		int n = cnt - i < IOV_MAX ? cnt - i : IOV_MAX;
		ssize_t r = write ? pwritev(fd, v + i, n, (off_t)(off + *done))
				  : preadv(fd, v + i, n, (off_t)(off + *done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0) {
			if (write)
				rc = -EIO; /* pwrite made no progress */
			break;
		}
		*done += (size_t)r;
		while (i < cnt && (size_t)r >= v[i].iov_len) {
			r -= (ssize_t)v[i].iov_len;
			i++;
		}
		if (i < cnt) {
			v[i].iov_base = (char *)v[i].iov_base + r;
			v[i].iov_len -= (size_t)r;
		}
	}
	if (v != stackv)
		free(v);
	return rc;
}

/* How many leading bytes of a transfer O_DIRECT can take: all of it but a final
 * partial page, when the offset and every buffer are page-aligned, every buffer but the
 * last a whole number of pages, and the transfer large; else 0. */
static size_t direct_span(const struct iovec *iov, int cnt, uint64_t off, size_t len)
{
	const uintptr_t page = 4096;
	if (len < OBJ_DIRECT_MIN || off % page)
		return 0;
	for (int i = 0; i < cnt; i++)
		if ((uintptr_t)iov[i].iov_base % page || (i < cnt - 1 && iov[i].iov_len % page))
			return 0;
	return len - len % page;
}

static void direct_off(struct store_objs *s, int err)
{
	if (atomic_exchange(&s->direct, false))
		log_info("objects: O_DIRECT refused (%s): all I/O through the page cache",
			 strerror(err));
}

/* The entry's O_DIRECT descriptor, opened on first use (readers share the object's lock,
 * so two may race to open it: the loser closes its own). -1 if unavailable. */
static int direct_fd(struct store_objs *s, struct store_fdc_entry *e)
{
	int fd = atomic_load(&e->dfd);
	if (fd >= 0)
		return fd;
	char path[OBJ_PATH_LEN];
	store_obj_path(s, path, e->ino, e->stripe, false);
	fd = openat(s->root_fd, path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EINVAL)
			direct_off(s, errno);
		else
			log_warn("open objects/%s with O_DIRECT: %s", path, strerror(errno));
		return -1;
	}
	int none = -1;
	if (!atomic_compare_exchange_strong(&e->dfd, &none, fd)) {
		close(fd);
		fd = none;
	}
	return fd;
}

/* Why O_DIRECT: a store's large transfers are not asked for again soon from its own page
 * cache (clients cache what they read), and copying them through it (into fresh pages,
 * with writeback later) costs more CPU than the disk's DMA to and from the request's own
 * buffer: on this project's test machine it nearly doubles write and read throughput
 * (docs/PERFORMANCE.md). Small and unaligned transfers, and objects past their first
 * segment, stay buffered; the kernel keeps both views coherent. */
int store_obj_data_io(struct store_objs *s, struct store_fdc_entry *e, bool write,
		const struct iovec *iov, int cnt, uint64_t off, size_t *done)
{
	size_t len = store_iov_len(iov, cnt);
	size_t span = atomic_load_explicit(&s->direct, memory_order_relaxed) &&
			      off + len <= OBJ_SEG_SIZE ? direct_span(iov, cnt, off, len) : 0;
	int dfd = span ? direct_fd(s, e) : -1;
	if (dfd < 0)
		return store_obj_io(write, e->fd, iov, cnt, off, done);
	struct iovec stackv[66], *v = stackv;
	if (cnt + 2 > 66 && !(v = malloc((size_t)(cnt + 2) * sizeof(*v))))
		return -ENOMEM;
	int n = store_iov_slice(iov, cnt, 0, span, v, cnt + 2);
	int rc = store_obj_io(write, dfd, v, n, off, done);
	atomic_fetch_add_explicit(&s->direct_bytes, *done, memory_order_relaxed);
	if (rc == -EINVAL && *done == 0)
		direct_off(s, -rc); /* the device wants stricter alignment */
	/* the rest buffered: a final partial page, or after a refusal; reads stop at EOF */
	bool more = rc == -EINVAL || (rc == 0 && *done == span && span < len);
	if (more) {
		size_t got = 0;
		n = store_iov_slice(iov, cnt, *done, len - *done, v, cnt + 2);
		rc = store_obj_io(write, e->fd, v, n, off + *done, &got);
		*done += got;
	}
	if (v != stackv)
		free(v);
	return rc;
}

int store_obj_pread(int fd, void *buf, size_t len, uint64_t off)
{
	struct iovec v = {buf, len};
	size_t done;
	int rc = store_obj_io(false, fd, &v, 1, off, &done);
	if (rc == 0 && done < len)
		memset((char *)buf + done, 0, len - done);
	return rc;
}

int store_obj_fsync_dirat(int dirfd, const char *rel)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Creates objects/XX and objects/XX/YY as needed. Their entries in their parents are
 * made durable later, before anything below them is (store_obj_sync_dirs): an fsync of
 * the parent at every mkdir cost a fresh format-1 target one fsync per new file (inode
 * numbers are sequential and YY was the low byte, so each of the first 65,536 files
 * made a directory), ~0.4 ms of a small file's ~2 ms write. Nothing is durable at a plain
 * write anyway (the data file is not fsynced either); an fsync of the object syncs the
 * path to it. */
static int make_dirs(struct store_objs *s, const char *path)
{
	char d1[3] = {path[0], path[1], 0}, d2[6];
	memcpy(d2, path, 5);
	d2[5] = 0;
	unsigned xx = (unsigned)strtoul(d1, NULL, 16) & 0xff;
	if (mkdirat(s->root_fd, d1, 0750) == 0) {
		pthread_mutex_lock(&s->dirs_lock);
		s->root_dirty = true;
		pthread_mutex_unlock(&s->dirs_lock);
	} else if (errno != EEXIST) {
		return -errno;
	}
	if (mkdirat(s->root_fd, d2, 0750) == 0) {
		pthread_mutex_lock(&s->dirs_lock);
		s->xx_dirty[xx / 8] |= (uint8_t)(1u << (xx % 8));
		pthread_mutex_unlock(&s->dirs_lock);
	} else if (errno != EEXIST) {
		return -errno;
	}
	return 0;
}

/* Makes the new directories' entries durable: every dirty one (xx < 0), or the root
 * and directory xx (the path to an object). Held under dirs_lock so that a flag is
 * cleared only once its fsync succeeded. */
static int sync_dirs(struct store_objs *s, int xx)
{
	int rc = 0;
	pthread_mutex_lock(&s->dirs_lock);
	if (s->root_dirty) {
		rc = store_obj_fsync_dirat(s->root_fd, ".");
		if (rc == 0)
			s->root_dirty = false;
	}
	for (int i = xx < 0 ? 0 : xx; rc == 0 && i < (xx < 0 ? 256 : xx + 1); i++) {
		if (!(s->xx_dirty[i / 8] & (1u << (i % 8))))
			continue;
		char d1[3];
		snprintf(d1, sizeof(d1), "%02x", (unsigned)i & 0xffu); /* i < 256 */
		rc = store_obj_fsync_dirat(s->root_fd, d1);
		if (rc == 0)
			s->xx_dirty[i / 8] &= (uint8_t)~(1u << (i % 8));
	}
	pthread_mutex_unlock(&s->dirs_lock);
	return rc;
}

int store_obj_sync_dirs(struct store_objs *s)
{
	return sync_dirs(s, -1);
}

int store_obj_sync_path(struct store_objs *s, uint64_t ino)
{
	return sync_dirs(s, (int)obj_xx(s, ino));
}

/* store_fdc_open_fn: opens the data file (and the sidecar with checksums on). */
static int open_object(void *arg, struct store_fdc_entry *e, bool create)
{
	struct store_objs *s = arg;
	char path[OBJ_PATH_LEN], cpath[OBJ_PATH_LEN];
	store_obj_path(s, path, e->ino, e->stripe, false);
	int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
	e->fd = openat(s->root_fd, path, flags, 0640);
	if (e->fd < 0 && errno == ENOENT && create) {
		int rc = make_dirs(s, path);
		if (rc) {
			log_error("mkdir objects/%.5s: %s", path, strerror(-rc));
			return rc;
		}
		e->fd = openat(s->root_fd, path, flags, 0640);
	}
	if (e->fd < 0) {
		int rc = -errno;
		if (rc != -ENOENT)
			log_error("open objects/%s: %s", path, strerror(errno));
		return rc;
	}
	struct stat st;
	if (fstat(e->fd, &st) < 0) {
		int rc = -errno;
		log_error("fstat objects/%s: %s", path, strerror(errno));
		return rc;
	}
	e->size = (uint64_t)st.st_size;
	int src = store_obj_seg_size(s, e);
	if (src) {
		log_error("objects/%s: finding its segments: %s", path, strerror(-src));
		return src;
	}
	if (!s->checksums)
		return 0;
	/* Entries inline unless the object has a sidecar from before inline entries, or
	 * the file system has no user attributes (crcfile.h). Inline, the sidecar is
	 * needed only for entries past the inline ones: past them, an object never longer
	 * has only zero entries, so it is not looked for. */
	int inl = store_crc_xattr_present(e->fd);
	if (inl < 0 && inl != -EOPNOTSUPP) {
		log_error("objects/%s: reading its checksum attribute: %s", path, strerror(-inl));
		return inl;
	}
	store_obj_path(s, cpath, e->ino, e->stripe, true);
	bool wide = e->size > STORE_CRC_INLINE * STORE_CHUNK || e->segs;
	if (inl == 1 && !wide) {
		e->crc_inline = true;
		return 0;
	}
	int flags2 = O_RDWR | O_CLOEXEC | (inl == -EOPNOTSUPP ? O_CREAT : 0);
	e->crc_fd = openat(s->root_fd, cpath, flags2, 0640);
	if (e->crc_fd < 0 && errno == ENOENT) {
		e->crc_inline = true;
		return 0;
	}
	if (e->crc_fd < 0) {
		int rc = -errno;
		log_error("open objects/%s: %s", cpath, strerror(errno));
		return rc;
	}
	e->crc_inline = inl == 1;
	return 0;
}

int store_obj_open(struct store_target *t, const struct store_obj_opts *opts,
		   struct store_objs **out)
{
	struct store_obj_opts o = opts ? *opts : (struct store_obj_opts){0};
	if (o.fd_cache == 0)
		o.fd_cache = 1024;
	if (o.sync_interval_ms == 0)
		o.sync_interval_ms = 1000;
	char path[PATH_MAX];
	struct store_objs *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->t = t;
	s->root_fd = -1;
	pthread_mutex_init(&s->dirs_lock, NULL);
	s->checksums = store_target_checksums(t);
	s->grouped = store_target_version(t) >= 2;
	atomic_init(&s->direct, !o.buffered);
	pthread_rwlockattr_t la;
	pthread_rwlockattr_init(&la);
	pthread_rwlockattr_setkind_np(&la, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (unsigned i = 0; i < OBJ_NLOCKS; i++)
		pthread_rwlock_init(&s->locks[i], &la);
	pthread_rwlockattr_destroy(&la);

	int rc;
	snprintf(path, sizeof(path), "%s/objects", store_target_dir(t));
	if (mkdir(path, 0750) < 0 && errno != EEXIST) {
		rc = -errno;
		log_error("mkdir %s: %s", path, strerror(errno));
		goto fail;
	}
	s->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->root_fd < 0) {
		rc = -errno;
		log_error("open %s: %s", path, strerror(errno));
		goto fail;
	}
	rc = store_fdc_create(o.fd_cache, open_object, s, &s->fdc);
	if (rc)
		goto fail;
	snprintf(path, sizeof(path), "%s/index", store_target_dir(t));
	struct store_index_opts io = {
		.map_size = o.index_map_size,
		.sync_interval_ms = o.no_sync_thread ? 0 : o.sync_interval_ms,
	};
	rc = store_index_open(path, &io, &s->idx);
	if (rc)
		goto fail;
	rc = store_obj_recover(s);
	if (rc)
		goto fail;
	*out = s;
	return 0;

fail:
	store_index_close(s->idx);
	store_fdc_destroy(s->fdc);
	if (s->root_fd >= 0)
		close(s->root_fd);
	for (unsigned i = 0; i < OBJ_NLOCKS; i++)
		pthread_rwlock_destroy(&s->locks[i]);
	pthread_mutex_destroy(&s->dirs_lock);
	free(s);
	return rc;
}

/* True if a regular file lies under dirfd/rel within two levels (objects/XX/YY/file);
 * directories left empty by deletes do not count. */
static bool has_files(int at, const char *rel, int depth)
{
	int fd = openat(at, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type == DT_DIR && depth < 2)
			found = has_files(dirfd(d), de->d_name, depth + 1);
		else if (de->d_type != DT_DIR)
			found = true;
	}
	closedir(d);
	return found;
}

bool store_obj_vouch(struct store_objs *s, char *why, size_t cap)
{
	struct store_index_rec recs[64];
	size_t n = 0, missing = 0;
	if (store_index_list(s->idx, 0, 0, recs, 64, &n) != 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		char path[OBJ_PATH_LEN];
		struct stat st;
		store_obj_path(s, path, recs[i].ino, recs[i].stripe, false);
		if (fstatat(s->root_fd, path, &st, 0) < 0 && errno == ENOENT)
			missing++;
	}
	if (n && missing == n) {
		snprintf(why, cap, "the index lists objects but their files are gone (objects/ "
			 "emptied or replaced)");
		return false;
	}
	if (n == 0 && has_files(s->root_fd, ".", 0)) {
		snprintf(why, cap, "objects/ holds files but the index lists none (index lost or "
			 "replaced)");
		return false;
	}
	return true;
}

void store_obj_close(struct store_objs *s)
{
	if (!s)
		return;
	int rc = store_obj_sync_dirs(s);
	if (rc)
		log_error("fsync of new object directories at close: %s", strerror(-rc));
	store_index_close(s->idx);
	store_fdc_destroy(s->fdc);
	close(s->root_fd);
	for (unsigned i = 0; i < OBJ_NLOCKS; i++)
		pthread_rwlock_destroy(&s->locks[i]);
	pthread_mutex_destroy(&s->dirs_lock);
	free(s);
}

void store_obj_piece_crcs(uint64_t off, const struct iovec *iov, int iovcnt, uint32_t *crcs)
{
	proto_crcs_compute(off, iov, iovcnt, crcs);
}

uint64_t store_obj_stamp(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return 0;
	return (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
}

struct store_index *store_obj_index(struct store_objs *s) { return s->idx; }

size_t store_obj_open_files(struct store_objs *s) { return store_fdc_count(s->fdc); }

uint64_t store_obj_direct_bytes(struct store_objs *s) { return atomic_load(&s->direct_bytes); }
