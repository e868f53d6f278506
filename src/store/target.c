/* Storage target: format, identity check, lock, capacity, I/O counters (see target.h).
 *
 * weft-target is 64 bytes, little-endian:
 *     0  magic "WEFTTGT1"      8  u32 format version     12 u32 flags
 *    16  target UUID[16]      32  fs UUID[16]            48 u32 target id
 *    52  u64 incarnation (0 in targets formatted before it existed)
 *    60  u32 CRC32C of bytes 0..59
 * flags: bit 0 fs UUID set, bit 1 target id set, bit 2 checksums off. Version 2 differs
 * from 1 only in where objects live (object.c, store_obj_path); a target keeps the
 * version it was formatted with. */
#include "store/target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <dirent.h>

#include "common/buf.h"
#include "common/crc.h"
#include "common/log.h"

#define FILE_LEN 64
#define F_FS_UUID   1u
#define F_TARGET_ID 2u
#define F_NO_CRC    4u

struct store_target {
	char *dir;
	int lock_fd;                 /* weft-target, flock()ed */
	uint32_t flags;
	uint32_t version;
	uint8_t uuid[STORE_UUID_LEN];
	uint8_t fs_uuid[STORE_UUID_LEN];
	uint32_t target_id;
	uint64_t incarnation;
	_Atomic uint64_t bytes_read, bytes_written, ops_read, ops_written;
};

static void encode(const struct store_target *t, uint8_t *b)
{
	memset(b, 0, FILE_LEN);
	memcpy(b, STORE_TARGET_MAGIC, 8);
	put_le32(b + 8, t->version);
	put_le32(b + 12, t->flags);
	memcpy(b + 16, t->uuid, STORE_UUID_LEN);
	memcpy(b + 32, t->fs_uuid, STORE_UUID_LEN);
	put_le32(b + 48, t->target_id);
	put_le64(b + 52, t->incarnation);
	put_le32(b + 60, crc32c(0, b, 60));
}

static int decode(struct store_target *t, const uint8_t *b, size_t len, const char *path)
{
	if (len != FILE_LEN || memcmp(b, STORE_TARGET_MAGIC, 8) != 0) {
		log_error("%s: not a weft target (bad magic or length %zu)", path, len);
		return -EINVAL;
	}
	if (get_le32(b + 60) != crc32c(0, b, 60)) {
		log_error("%s: identity file checksum mismatch (damaged)", path);
		return -EINVAL;
	}
	uint32_t ver = get_le32(b + 8);
	if (ver < 1 || ver > STORE_TARGET_VERSION) {
		log_error("%s: format version %u, this build knows 1 to %u", path, ver,
			  STORE_TARGET_VERSION);
		return -ENOTSUP;
	}
	t->version = ver;
	t->flags = get_le32(b + 12);
	memcpy(t->uuid, b + 16, STORE_UUID_LEN);
	memcpy(t->fs_uuid, b + 32, STORE_UUID_LEN);
	t->target_id = get_le32(b + 48);
	t->incarnation = get_le64(b + 52);
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Writes the identity file atomically: tmp, fsync, rename, fsync dir. */
static int write_identity(const struct store_target *t)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", t->dir, STORE_TARGET_FILE);
	snprintf(path, sizeof(path), "%s/%s", t->dir, STORE_TARGET_FILE);
	uint8_t b[FILE_LEN];
	encode(t, b);
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = -errno;
		log_error("open %s: %s", tmp, strerror(errno));
		return rc;
	}
	ssize_t w = write(fd, b, FILE_LEN);
	if (w < 0 || fsync(fd) < 0)
		rc = -errno;
	else if (w != FILE_LEN)
		rc = -EIO;
	if (rc) {
		log_error("write %s: %s", tmp, strerror(-rc));
		close(fd);
		unlink(tmp);
		return rc;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		rc = -errno;
		log_error("rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return rc;
	}
	rc = fsync_dir(t->dir);
	if (rc)
		log_error("fsync %s: %s", t->dir, strerror(-rc));
	return rc;
}

/* 1 if dir has no entries other than "." and ".." and a weft-target.tmp (left by a
 * format that was killed before its rename: nothing else was written yet), else 0. */
static int dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, STORE_TARGET_FILE ".tmp") != 0) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}

static int format(struct store_target *t, const struct store_target_opts *opts)
{
	int empty = dir_is_empty(t->dir);
	if (empty < 0) {
		log_error("opendir %s: %s", t->dir, strerror(-empty));
		return empty;
	}
	if (!empty) {
		log_error("%s: not empty and has no %s: refusing to format it", t->dir,
			  STORE_TARGET_FILE);
		return -ENOTEMPTY;
	}
	if (sodium_init() < 0)
		return -EIO;
	if (opts && opts->uuid)
		memcpy(t->uuid, opts->uuid, STORE_UUID_LEN);
	else
		randombytes_buf(t->uuid, STORE_UUID_LEN);
	t->flags = opts && opts->no_checksums ? F_NO_CRC : 0;
	t->version = STORE_TARGET_VERSION;
	randombytes_buf(&t->incarnation, sizeof(t->incarnation));
	t->incarnation |= 1; /* never 0 */
	int rc = write_identity(t);
	if (rc == 0)
		log_info("formatted storage target %s", t->dir);
	return rc;
}

int store_target_open(const char *dir, const struct store_target_opts *opts,
		      struct store_target **out)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, STORE_TARGET_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	struct store_target *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->lock_fd = -1;
	int rc = 0;
	t->dir = strdup(dir);
	if (!t->dir) {
		rc = -ENOMEM;
		goto fail;
	}
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		rc = -errno;
		log_error("mkdir %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (access(path, F_OK) < 0) {
		if (errno != ENOENT) {
			rc = -errno;
			log_error("access %s: %s", path, strerror(errno));
			goto fail;
		}
		rc = format(t, opts);
		if (rc)
			goto fail;
	}
	t->lock_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->lock_fd < 0) {
		rc = -errno;
		log_error("open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (flock(t->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		log_error("lock %s: %s", path,
			  rc == -EBUSY ? "target in use by another process" : strerror(errno));
		goto fail;
	}
	uint8_t b[FILE_LEN + 1];
	ssize_t n = pread(t->lock_fd, b, sizeof(b), 0);
	if (n < 0) {
		rc = -errno;
		log_error("read %s: %s", path, strerror(errno));
		goto fail;
	}
	rc = decode(t, b, (size_t)n, path);
	if (rc)
		goto fail;
	bool want_nocrc = opts && opts->no_checksums;
	if (!(opts && opts->any_checksums) && want_nocrc != !!(t->flags & F_NO_CRC)) {
		log_error("%s: formatted with checksums %s, opened with checksums %s", dir,
			  (t->flags & F_NO_CRC) ? "off" : "on", want_nocrc ? "off" : "on");
		rc = -EINVAL;
		goto fail;
	}
	if (opts && opts->fs_uuid && (t->flags & F_FS_UUID) &&
	    memcmp(opts->fs_uuid, t->fs_uuid, STORE_UUID_LEN) != 0) {
		char have[33], want[33];
		for (int i = 0; i < STORE_UUID_LEN; i++) {
			sprintf(have + 2 * i, "%02x", t->fs_uuid[i]);
			sprintf(want + 2 * i, "%02x", opts->fs_uuid[i]);
		}
		log_error("%s: belongs to file system %s, not %s", dir, have, want);
		rc = -EXDEV;
		goto fail;
	}
	*out = t;
	return 0;

fail:
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	free(t->dir);
	free(t);
	return rc;
}

void store_target_close(struct store_target *t)
{
	if (!t)
		return;
	close(t->lock_fd);
	free(t->dir);
	free(t);
}

int store_target_set_identity(struct store_target *t, const uint8_t fs_uuid[STORE_UUID_LEN],
			      uint32_t target_id)
{
	if ((t->flags & F_FS_UUID) && memcmp(t->fs_uuid, fs_uuid, STORE_UUID_LEN) != 0) {
		log_error("%s: already belongs to another file system", t->dir);
		return -EXDEV;
	}
	uint8_t old_fs[STORE_UUID_LEN];
	uint32_t old_id = t->target_id, old_flags = t->flags;
	memcpy(old_fs, t->fs_uuid, STORE_UUID_LEN);
	memcpy(t->fs_uuid, fs_uuid, STORE_UUID_LEN);
	t->target_id = target_id;
	t->flags |= F_FS_UUID | F_TARGET_ID;
	int rc = write_identity(t);
	if (rc) {
		memcpy(t->fs_uuid, old_fs, STORE_UUID_LEN);
		t->target_id = old_id;
		t->flags = old_flags;
	}
	/* The rename replaced the file our lock is on; lock the new one too. */
	if (rc == 0) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", t->dir, STORE_TARGET_FILE);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(t->lock_fd);
			t->lock_fd = fd;
		} else if (fd >= 0) {
			close(fd);
		}
	}
	return rc;
}

uint64_t store_target_incarnation(const struct store_target *t) { return t->incarnation; }

int store_target_new_incarnation(struct store_target *t)
{
	uint64_t old = t->incarnation;
	if (sodium_init() < 0)
		return -EIO;
	do {
		randombytes_buf(&t->incarnation, sizeof(t->incarnation));
		t->incarnation |= 1;
	} while (t->incarnation == old);
	int rc = write_identity(t);
	if (rc) {
		t->incarnation = old;
		return rc;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", t->dir, STORE_TARGET_FILE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
		close(t->lock_fd);
		t->lock_fd = fd;
	} else if (fd >= 0) {
		close(fd);
	}
	return 0;
}

const char *store_target_dir(const struct store_target *t) { return t->dir; }

void store_target_uuid(const struct store_target *t, uint8_t out[STORE_UUID_LEN])
{
	memcpy(out, t->uuid, STORE_UUID_LEN);
}

bool store_target_fs_uuid(const struct store_target *t, uint8_t out[STORE_UUID_LEN])
{
	if (!(t->flags & F_FS_UUID))
		return false;
	memcpy(out, t->fs_uuid, STORE_UUID_LEN);
	return true;
}

int64_t store_target_id(const struct store_target *t)
{
	return (t->flags & F_TARGET_ID) ? (int64_t)t->target_id : -1;
}

bool store_target_checksums(const struct store_target *t) { return !(t->flags & F_NO_CRC); }
uint32_t store_target_version(const struct store_target *t) { return t->version; }

int store_target_space(const struct store_target *t, uint64_t *capacity, uint64_t *avail)
{
	struct statvfs sv;
	if (statvfs(t->dir, &sv) < 0)
		return -errno;
	*capacity = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

void store_target_count_read(struct store_target *t, uint64_t bytes)
{
	atomic_fetch_add_explicit(&t->bytes_read, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->ops_read, 1, memory_order_relaxed);
}

void store_target_count_write(struct store_target *t, uint64_t bytes)
{
	atomic_fetch_add_explicit(&t->bytes_written, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->ops_written, 1, memory_order_relaxed);
}

void store_target_counters(const struct store_target *t, struct store_counters *out)
{
	struct store_target *m = (struct store_target *)t;
	out->bytes_read = atomic_load_explicit(&m->bytes_read, memory_order_relaxed);
	out->bytes_written = atomic_load_explicit(&m->bytes_written, memory_order_relaxed);
	out->ops_read = atomic_load_explicit(&m->ops_read, memory_order_relaxed);
	out->ops_written = atomic_load_explicit(&m->ops_written, memory_order_relaxed);
}
