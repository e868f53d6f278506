/* Objects: open/close, paths, locks, write, truncate, delete, fsync, stat, list (see
 * object.h for the contract and DESIGN; reads in object_read.c, recovery and
 * verification in object_recover.c). */
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

#define STACK_ENTRIES 256

pthread_rwlock_t *store_obj_lock(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	uint64_t h = (ino ^ ((uint64_t)stripe << 32 | stripe)) * 0x9E3779B97F4A7C15ULL;
	return &s->locks[(h >> 32) % OBJ_NLOCKS];
}

void store_obj_path(char *buf, uint64_t ino, uint32_t stripe, bool crc)
{
	snprintf(buf, OBJ_PATH_LEN, "%02x/%02x/%016" PRIx64 ".%" PRIu32 "%s",
		 (unsigned)((ino >> 8) & 0xff), (unsigned)(ino & 0xff), ino, stripe,
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
	store_obj_path(path, e->ino, e->stripe, false);
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

static int fsync_dirat(int dirfd, const char *rel)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Creates objects/XX and objects/XX/YY as needed, each made durable in its parent. */
static int make_dirs(struct store_objs *s, const char *path)
{
	char d1[3] = {path[0], path[1], 0}, d2[6];
	memcpy(d2, path, 5);
	d2[5] = 0;
	if (mkdirat(s->root_fd, d1, 0750) == 0) {
		int rc = fsync_dirat(s->root_fd, ".");
		if (rc)
			return rc;
	} else if (errno != EEXIST) {
		return -errno;
	}
	if (mkdirat(s->root_fd, d2, 0750) == 0) {
		int rc = fsync_dirat(s->root_fd, d1);
		if (rc)
			return rc;
	} else if (errno != EEXIST) {
		return -errno;
	}
	return 0;
}

/* store_fdc_open_fn: opens the data file (and the sidecar with checksums on). */
static int open_object(void *arg, struct store_fdc_entry *e, bool create)
{
	struct store_objs *s = arg;
	char path[OBJ_PATH_LEN], cpath[OBJ_PATH_LEN];
	store_obj_path(path, e->ino, e->stripe, false);
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
	if (s->checksums) {
		store_obj_path(cpath, e->ino, e->stripe, true);
		e->crc_fd = openat(s->root_fd, cpath, O_RDWR | O_CLOEXEC | O_CREAT, 0640);
		if (e->crc_fd < 0) {
			int rc = -errno;
			log_error("open objects/%s: %s", cpath, strerror(errno));
			return rc;
		}
	}
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
	s->checksums = store_target_checksums(t);
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
		store_obj_path(path, recs[i].ino, recs[i].stripe, false);
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
	store_index_close(s->idx);
	store_fdc_destroy(s->fdc);
	close(s->root_fd);
	for (unsigned i = 0; i < OBJ_NLOCKS; i++)
		pthread_rwlock_destroy(&s->locks[i]);
	free(s);
}

void store_obj_piece_crcs(uint64_t off, const struct iovec *iov, int iovcnt, uint32_t *crcs)
{
	proto_crcs_compute(off, iov, iovcnt, crcs);
}

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* New sidecar entries for chunks c0..c1 touched by a write of [off, end) on an object
 * of old size S and new size S2; ent[i] is chunk c0 + i. Full chunks take the piece's
 * (verified) CRC; a partial chunk either continues its old CRC (write at or past its
 * old end: no read needed) or is read, verified, and recomputed around the new bytes. */
static int chunk_entries(struct store_objs *s, struct store_fdc_entry *e, uint64_t off,
			 uint64_t end, const struct iovec *iov, int cnt, const uint32_t *crcs,
			 uint64_t S, uint64_t S2, uint32_t *ent, struct store_obj_result *r)
{
	uint64_t c0 = off / STORE_CHUNK, c1 = (end - 1) / STORE_CHUNK;
	uint8_t *scratch = NULL;
	int rc = 0;
	for (uint64_t c = c0; c <= c1; c++) {
		uint64_t cs = c * STORE_CHUNK, ce = cs + STORE_CHUNK;
		uint64_t ws = max64(cs, off), we = min64(ce, end);
		uint64_t ne = min64(ce, S2), oe = S <= cs ? cs : min64(S, ce);
		uint32_t crc;
		if (c != c0 && c != c1) { /* middle chunk: fully covered */
			ent[c - c0] = store_crc_to_entry(crcs[c - c0], WEFT_CHUNK_SIZE);
			continue;
		}
		if (ws == cs && we == ne) {
			crc = crcs[c - c0];
		} else {
			uint32_t old = 0;
			if (oe > cs) {
				rc = store_obj_crc_read(s, e, c, 1, &old);
				if (rc)
					goto out;
			}
			size_t poff = (size_t)(ws - off), plen = (size_t)(we - ws);
			if (ws >= oe) {
				crc = oe > cs ? store_crc_from_entry(old, (uint32_t)(oe - cs)) : 0;
				crc = store_crc_extend_zeros(crc, ws - oe);
				crc = store_iov_crc(crc, iov, cnt, poff, plen);
				crc = store_crc_extend_zeros(crc, ne - we);
			} else {
				if (!scratch && !(scratch = malloc(STORE_CHUNK))) {
					rc = -ENOMEM;
					goto out;
				}
				size_t olen = (size_t)(oe - cs);
				rc = store_obj_seg_pread(s, e, scratch, olen, cs);
				if (rc)
					goto out;
				if (weft_crc32c(0, scratch, olen) !=
				    store_crc_from_entry(old, (uint32_t)olen)) {
					char path[OBJ_PATH_LEN];
					store_obj_path(path, e->ino, e->stripe, false);
					log_warn("write objects/%s: existing chunk %" PRIu64
						 " fails its checksum; partial write refused", path, c);
					r->bad_chunk = (int64_t)c;
					rc = -WEFT_ECHECKSUM;
					goto out;
				}
				crc = weft_crc32c(0, scratch, (size_t)(ws - cs));
				crc = store_iov_crc(crc, iov, cnt, poff, plen);
				if (we < oe)
					crc = weft_crc32c(crc, scratch + (we - cs), (size_t)(oe - we));
				crc = store_crc_extend_zeros(crc, ne - max64(we, oe));
			}
		}
		ent[c - c0] = store_crc_to_entry(crc, (uint32_t)(ne - cs));
	}
out:
	free(scratch);
	return rc;
}

static void log_damage(struct store_fdc_entry *e, const char *what, uint64_t a, uint64_t b, int err)
{
	char path[OBJ_PATH_LEN];
	store_obj_path(path, e->ino, e->stripe, false);
	log_warn("write objects/%s: %s failed (%s); chunks %" PRIu64 "..%" PRIu64
		 " may fail verification until rewritten", path, what, weft_strerror(err),
		 a / STORE_CHUNK, (b - 1) / STORE_CHUNK);
}

/* The object's committed version is still *expect (0: no object)? 0, -EAGAIN if not.
 * NULL expect: always. Called with the object's lock held exclusively. */
static int expect_ok(struct store_objs *s, uint64_t ino, uint32_t stripe, const uint64_t *expect)
{
	if (!expect)
		return 0;
	struct store_index_rec rec;
	int rc = store_index_get(s->idx, ino, stripe, &rec);
	if (rc && rc != -ENOENT)
		return rc;
	return (rc ? 0 : rec.committed) == *expect ? 0 : -EAGAIN;
}

uint64_t obj_stamp(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return 0;
	return (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
}

/* Before a mutation of e: 0 if its data file is the one the index vouches for (or the
 * index has no stamp for it, or it was damaged in place: see obj_old_copy), else the
 * record's stamp, which the mutation keeps, so that a file put back from an older copy
 * stays stale however it is written to afterwards: a write changes some bytes, and the
 * others would still be old. */
static uint64_t stale_stamp(struct store_objs *s, struct store_fdc_entry *e)
{
	uint64_t recorded = 0;
	return obj_old_copy(s, e, &recorded) ? recorded : 0;
}

static int obj_writev(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		      const struct iovec *iov, int iovcnt, const uint32_t *crcs, size_t ncrcs,
		      const uint64_t *expect, bool verified, struct store_obj_result *res)
{
	struct store_obj_result r = {.bad_piece = -1, .bad_chunk = -1};
	uint32_t stack_ent[STACK_ENTRIES + 1], *ent = stack_ent;
	int rc = 0;
	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	size_t len = store_iov_len(iov, iovcnt);
	if (len > STORE_OBJ_IO_MAX)
		return -EINVAL;
	if (off > STORE_OBJ_SIZE_MAX || len > STORE_OBJ_SIZE_MAX - off)
		return -EFBIG;
	uint64_t np = store_crc_npieces(off, len);
	if (s->checksums) {
		if (ncrcs != np || (np && !crcs))
			return -EINVAL;
		/* Verify every piece before touching anything (no lock needed), unless the
		 * caller already did (a chain member checks before it forwards). */
		int64_t bad = verified ? -1 : proto_crcs_verify(off, iov, iovcnt, crcs);
		if (bad >= 0) {
			r.bad_piece = bad;
			rc = -WEFT_ECHECKSUM;
			goto out_nolock;
		}
	}
	if (len == 0)
		goto out_nolock;

	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct store_fdc_entry *e = NULL;
	uint64_t ver = 0, S = 0, S2 = 0, end = off + len, keep = 0;
	bool began = false, ok = true;
	rc = expect_ok(s, ino, stripe, expect);
	if (rc == 0)
		rc = store_fdc_get(s->fdc, ino, stripe, true, &e);
	if (rc)
		goto out;
	S = e->size;
	S2 = max64(S, end);
	keep = stale_stamp(s, e);
	rc = store_index_begin(s->idx, ino, stripe, &ver);
	if (rc)
		goto out;
	began = true;

	uint64_t c0 = off / STORE_CHUNK, c1 = (end - 1) / STORE_CHUNK, n = c1 - c0 + 1;
	uint64_t L = S / STORE_CHUNK;
	uint32_t old_last = 0;
	bool ext = s->checksums && S % STORE_CHUNK != 0 && S2 > S && L < c0;
	if (s->checksums) {
		if (n > STACK_ENTRIES && !(ent = malloc((n + 1) * sizeof(*ent)))) {
			rc = -ENOMEM;
			goto out;
		}
		rc = chunk_entries(s, e, off, end, iov, iovcnt, crcs, S, S2, ent + 1, &r);
		if (rc)
			goto out; /* nothing written */
		if (ext) { /* the old last chunk now extends with zeros to its full size */
			rc = store_obj_crc_read(s, e, L, 1, &old_last);
			if (rc)
				goto out;
			uint32_t olen = (uint32_t)(S - L * STORE_CHUNK);
			uint32_t crc = store_crc_from_entry(old_last, olen);
			crc = store_crc_extend_zeros(crc, WEFT_CHUNK_SIZE - olen);
			ent[0] = store_crc_to_entry(crc, WEFT_CHUNK_SIZE);
		}
	}

	size_t done = 0;
	rc = store_obj_seg_io(s, e, true, iov, iovcnt, off, &done);
	if (rc) {
		if (end > S && off + done > S && store_obj_seg_trunc_data(s, e, S) < 0)
			log_error("write rollback: ftruncate: %s", strerror(errno));
		if (done > 0 && off < S) {
			log_damage(e, "data write", off, min64(off + done, S), rc);
			ok = false;
		}
		goto out;
	}
	if (s->checksums) {
		if (ext && L + 1 == c0)
			rc = store_obj_crc_write(s, e, L, n + 1, ent);
		else
			rc = store_obj_crc_write(s, e, c0, n, ent + 1);
		if (rc == 0 && ext && L + 1 != c0)
			rc = store_obj_crc_write(s, e, L, 1, ent);
		if (rc) {
			/* Undo the extension; entries past the old end must read as zero. */
			if (end > S && store_obj_seg_trunc_data(s, e, S) < 0)
				log_error("write rollback: ftruncate: %s", strerror(errno));
			if (store_obj_seg_trunc_crc(s, e, store_crc_nchunks(S)) < 0)
				log_error("write rollback: ftruncate sidecar: %s", strerror(errno));
			if (ext && store_obj_crc_write(s, e, L, 1, &old_last) != 0)
				log_error("write rollback: restore entry of chunk %" PRIu64, L);
			if (off < S) {
				log_damage(e, "checksum write", off, min64(end, S), rc);
				ok = false;
			}
			goto out;
		}
	}
	e->size = S2;
	store_target_count_write(s->t, len);

out:
	if (rc && e) { /* the file may have changed under us: trust the disk */
		struct stat st;
		if (fstat(e->fd, &st) == 0) {
			e->size = (uint64_t)st.st_size;
			store_obj_seg_size(s, e);
		}
	}
	if (began)
		store_index_end(s->idx, ino, stripe, ver, e->size, keep ? keep : obj_stamp(e->fd),
				ok, false);
	r.size = e ? e->size : 0;
	r.version = rc == 0 ? ver : 0;
	r.allocated = rc == 0 && e ? store_obj_seg_allocated(s, e) : 0;
	store_fdc_put(s->fdc, e);
	pthread_rwlock_unlock(lk);
	if (ent != stack_ent)
		free(ent);
out_nolock:
	if (res)
		*res = r;
	return rc;
}

int store_obj_writev(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		     const struct iovec *iov, int iovcnt, const uint32_t *crcs, size_t ncrcs,
		     struct store_obj_result *res)
{
	return obj_writev(s, ino, stripe, off, iov, iovcnt, crcs, ncrcs, NULL, false, res);
}

int store_obj_writev_verified(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
			      const struct iovec *iov, int iovcnt, const uint32_t *crcs,
			      size_t ncrcs, struct store_obj_result *res)
{
	return obj_writev(s, ino, stripe, off, iov, iovcnt, crcs, ncrcs, NULL, true, res);
}

int store_obj_write_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe,
		       uint64_t off, const void *buf, size_t len, const uint32_t *crcs,
		       size_t ncrcs, struct store_obj_result *res)
{
	struct iovec v = {(void *)buf, len};
	return obj_writev(s, ino, stripe, off, &v, 1, crcs, ncrcs, &expect, false, res);
}

int store_obj_write(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		    const void *buf, size_t len, const uint32_t *crcs, size_t ncrcs,
		    struct store_obj_result *res)
{
	struct iovec v = {(void *)buf, len};
	return store_obj_writev(s, ino, stripe, off, &v, 1, crcs, ncrcs, res);
}

/* Sidecar changes of a truncate from S to T, computed before the data changes.
 * chunk and entry name the one entry to write (none if *has == false). A bad last chunk
 * is left bad: its old entry no longer matches any coverage (-WEFT_ECHECKSUM). */
static int truncate_entry(struct store_objs *s, struct store_fdc_entry *e, uint64_t S, uint64_t T, bool *has,
			  uint64_t *chunk, uint32_t *entry)
{
	*has = false;
	if (T < S) {
		if (T % STORE_CHUNK == 0)
			return 0;
		uint64_t c = T / STORE_CHUNK, cs = c * STORE_CHUNK;
		size_t olen = (size_t)(min64(S, cs + STORE_CHUNK) - cs), nlen = (size_t)(T - cs);
		uint32_t old;
		int rc = store_obj_crc_read(s, e, c, 1, &old);
		if (rc)
			return rc;
		uint8_t *buf = malloc(STORE_CHUNK);
		if (!buf)
			return -ENOMEM;
		rc = store_obj_seg_pread(s, e, buf, olen, cs);
		if (rc == 0) {
			uint32_t head = weft_crc32c(0, buf, nlen);
			uint32_t full = weft_crc32c(head, buf + nlen, olen - nlen);
			if (full != store_crc_from_entry(old, (uint32_t)olen)) {
				rc = -WEFT_ECHECKSUM;
			} else {
				*has = true;
				*chunk = c;
				*entry = store_crc_to_entry(head, (uint32_t)nlen);
			}
		}
		free(buf);
		return rc;
	}
	if (S % STORE_CHUNK == 0)
		return 0;
	uint64_t c = S / STORE_CHUNK, cs = c * STORE_CHUNK;
	uint32_t olen = (uint32_t)(S - cs), nlen = (uint32_t)(min64(T, cs + STORE_CHUNK) - cs);
	uint32_t old;
	int rc = store_obj_crc_read(s, e, c, 1, &old);
	if (rc)
		return rc;
	uint32_t crc = store_crc_extend_zeros(store_crc_from_entry(old, olen), nlen - olen);
	*has = true;
	*chunk = c;
	*entry = store_crc_to_entry(crc, nlen);
	return 0;
}

static int obj_truncate(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t size,
			const uint64_t *expect, struct store_obj_result *res)
{
	struct store_obj_result r = {.bad_piece = -1, .bad_chunk = -1};
	if (size > STORE_OBJ_SIZE_MAX)
		return -EFBIG;
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct store_fdc_entry *e = NULL;
	uint64_t ver = 0, S = 0, keep = 0;
	bool began = false, ok = true;
	int rc = expect_ok(s, ino, stripe, expect);
	if (rc == 0)
		rc = store_fdc_get(s->fdc, ino, stripe, true, &e);
	if (rc)
		goto out;
	S = e->size;
	if (size > 0) /* to 0: nothing old is left */
		keep = stale_stamp(s, e);
	rc = store_index_begin(s->idx, ino, stripe, &ver);
	if (rc)
		goto out;
	began = true;
	if (size == S)
		goto out;
	bool has = false;
	uint64_t chunk = 0;
	uint32_t entry = 0;
	int bad = 0;
	if (s->checksums) {
		rc = truncate_entry(s, e, S, size, &has, &chunk, &entry);
		if (rc == -WEFT_ECHECKSUM) {
			bad = rc;
			r.bad_chunk = (int64_t)(size / STORE_CHUNK);
			rc = 0;
		}
		if (rc)
			goto out;
	}
	if (store_obj_seg_trunc_data(s, e, size) < 0) {
		rc = -errno;
		char path[OBJ_PATH_LEN];
		store_obj_path(path, ino, stripe, false);
		log_error("ftruncate objects/%s: %s", path, strerror(errno));
		goto out;
	}
	e->size = size;
	if (s->checksums) {
		if (size < S && store_obj_seg_trunc_crc(s, e, store_crc_nchunks(size)) < 0)
			rc = -errno;
		if (rc == 0 && has)
			rc = store_obj_crc_write(s, e, chunk, 1, &entry);
		if (rc) {
			ok = false;
			log_damage(e, "truncate checksum update", size / STORE_CHUNK * STORE_CHUNK,
				   size + 1, rc);
			goto out;
		}
	}
	rc = bad;
	if (bad) {
		char path[OBJ_PATH_LEN];
		store_obj_path(path, ino, stripe, false);
		log_warn("truncate objects/%s: chunk %" PRIu64 " was already bad and stays bad",
			 path, size / STORE_CHUNK);
	}
out:
	if (began)
		store_index_end(s->idx, ino, stripe, ver, e->size, keep ? keep : obj_stamp(e->fd),
				ok, false);
	r.size = e ? e->size : 0;
	r.version = began ? ver : 0;
	store_fdc_put(s->fdc, e);
	pthread_rwlock_unlock(lk);
	if (res)
		*res = r;
	return rc;
}

int store_obj_truncate(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t size,
		       struct store_obj_result *res)
{
	return obj_truncate(s, ino, stripe, size, NULL, res);
}

int store_obj_truncate_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe,
			  uint64_t size, struct store_obj_result *res)
{
	return obj_truncate(s, ino, stripe, size, &expect, res);
}

static int obj_delete(struct store_objs *s, uint64_t ino, uint32_t stripe, const uint64_t *expect)
{
	char path[OBJ_PATH_LEN], cpath[OBJ_PATH_LEN];
	store_obj_path(path, ino, stripe, false);
	store_obj_path(cpath, ino, stripe, true);
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	struct stat st;
	struct store_index_rec rec;
	uint64_t ver;
	int rc = expect_ok(s, ino, stripe, expect);
	if (rc)
		goto out;
	bool exists = fstatat(s->root_fd, path, &st, 0) == 0 ||
		      store_index_get(s->idx, ino, stripe, &rec) == 0;
	if (!exists) {
		rc = -ENOENT;
		goto out;
	}
	rc = store_index_begin(s->idx, ino, stripe, &ver);
	if (rc)
		goto out;
	store_fdc_drop(s->fdc, ino, stripe);
	rc = store_obj_seg_unlink(s, ino, stripe);
	if (rc == 0 && unlinkat(s->root_fd, path, 0) < 0 && errno != ENOENT)
		rc = -errno;
	if (rc == 0 && unlinkat(s->root_fd, cpath, 0) < 0 && errno != ENOENT)
		rc = -errno;
	if (rc)
		log_error("unlink objects/%s: %s", path, strerror(-rc));
	store_index_end(s->idx, ino, stripe, ver, 0, 0, rc == 0, true);
out:
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_delete(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	return obj_delete(s, ino, stripe, NULL);
}

int store_obj_delete_if(struct store_objs *s, uint64_t expect, uint64_t ino, uint32_t stripe)
{
	return obj_delete(s, ino, stripe, &expect);
}

uint64_t store_obj_version(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	struct store_index_rec rec;
	return store_index_get(s->idx, ino, stripe, &rec) == 0 ? rec.committed : 0;
}

int store_obj_delete_inode(struct store_objs *s, uint64_t ino, uint64_t *ndeleted)
{
	struct store_index_rec recs[64];
	uint64_t count = 0;
	uint32_t from = 0;
	int rc = 0;
	for (;;) {
		size_t n;
		rc = store_index_list(s->idx, ino, from, recs, 64, &n);
		if (rc)
			break;
		size_t i;
		for (i = 0; i < n && recs[i].ino == ino; i++) {
			int drc = store_obj_delete(s, ino, recs[i].stripe);
			if (drc == 0)
				count++;
			else if (drc != -ENOENT && rc == 0)
				rc = drc;
		}
		if (i < n || n < 64 || recs[n - 1].stripe == UINT32_MAX)
			break;
		from = recs[n - 1].stripe + 1;
	}
	if (ndeleted)
		*ndeleted = count;
	return rc;
}

int store_obj_fsync(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		rc = store_obj_seg_sync(s, e);
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	char path[OBJ_PATH_LEN];
	store_obj_path(path, ino, stripe, false);
	if (rc == 0) {
		path[5] = 0; /* "XX/YY" */
		rc = fsync_dirat(s->root_fd, path);
	}
	if (rc == 0)
		rc = store_index_sync(s->idx);
	if (rc && rc != -ENOENT)
		log_error("fsync objects/%s: %s", path, strerror(-rc));
	return rc;
}

/* Size, allocation and, with the index's record, committed version of an open object. */
static void stat_entry(struct store_objs *s, struct store_fdc_entry *e, bool version,
		       struct store_obj_stat *st)
{
	struct store_index_rec rec;
	st->size = e->size;
	st->allocated = store_obj_seg_allocated(s, e);
	st->version = version && store_index_get(s->idx, e->ino, e->stripe, &rec) == 0 ?
		      rec.committed : 0;
}

int store_obj_stat(struct store_objs *s, uint64_t ino, uint32_t stripe,
		   struct store_obj_stat *st)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		stat_entry(s, e, true, st);
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_on_disk(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	char path[OBJ_PATH_LEN];
	struct stat st;
	store_obj_path(path, ino, stripe, false);
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_wrlock(lk);
	int rc = fstatat(s->root_fd, path, &st, 0) == 0 ? 0 : -errno;
	if (rc == -ENOENT)
		store_fdc_drop(s->fdc, ino, stripe); /* a descriptor of a file removed behind us */
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_extent(struct store_objs *s, uint64_t ino, uint32_t stripe, uint64_t off,
		     struct store_obj_stat *st, uint64_t *data, uint64_t *hole)
{
	pthread_rwlock_t *lk = store_obj_lock(s, ino, stripe);
	pthread_rwlock_rdlock(lk);
	struct store_fdc_entry *e;
	int rc = store_fdc_get(s->fdc, ino, stripe, false, &e);
	if (rc == 0) {
		stat_entry(s, e, false, st);
		*data = off < e->size ? (uint64_t)store_obj_seg_next_data(s, e, off) : e->size;
		*hole = *data < e->size ? (uint64_t)store_obj_seg_next_hole(s, e, *data) : e->size;
		store_fdc_put(s->fdc, e);
	}
	pthread_rwlock_unlock(lk);
	return rc;
}

int store_obj_list(struct store_objs *s, uint64_t ino, uint32_t stripe,
		   struct store_index_rec *out, size_t max, size_t *n)
{
	return store_index_list(s->idx, ino, stripe, out, max, n);
}

const struct store_torn *store_obj_torn(struct store_objs *s, size_t *n)
{
	return store_index_torn(s->idx, n);
}

struct store_index *store_obj_index(struct store_objs *s) { return s->idx; }

size_t store_obj_open_files(struct store_objs *s) { return store_fdc_count(s->fdc); }

uint64_t store_obj_direct_bytes(struct store_objs *s) { return atomic_load(&s->direct_bytes); }
