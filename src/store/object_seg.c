/* Objects larger than a local file may be: segments.
 *
 * ext4 (4 KiB blocks) limits a file to 16 TiB, but an object may hold bytes up to
 * 2^63 - 1. So an object is cut into segments of OBJ_SEG_SIZE (1 TiB): bytes
 * [k*SEG, (k+1)*SEG) live in segment k, at offset - k*SEG. Segment 0 is the object file
 * itself (objects/XX/YY/<ino>.<stripe>), so objects under 1 TiB are exactly as before;
 * segment k >= 1 is "<ino>.<stripe>.s<k>" in the same directory, created only when
 * something is written (or truncated) into it. Sidecar entries follow their chunks:
 * segment k's entries are in "<ino>.<stripe>.s<k>.crc" at 4 * (chunk - k*SEG/CHUNK).
 * A marker file "<ino>.<stripe>.segs" exists once an object has had a segment past the
 * first, so opening an ordinary object costs one failed openat, and only marked objects
 * have their directory scanned for segments.
 *
 * Reading: an absent segment, or bytes past the end of a segment that is not the last,
 * are holes (zeros; sidecar entries 0). Size: the last existing data segment k with
 * file size z gives k*SEG + z; every truncate leaves the segment holding the new last
 * byte at exactly its share of the size, so the size is always found this way.
 *
 * Threads: every function is called with the object's lock held, like the rest of
 * object.c (exclusive for anything that changes files). */
#include "store/object_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "store/iov.h"

#define ENTRIES_PER_SEG (OBJ_SEG_SIZE / STORE_CHUNK)

struct seg_file {
	uint32_t k;
	int fd, crc_fd;
};

struct seg_set {
	uint32_t n, cap;
	struct seg_file *v;
};

static void seg_path(const struct store_objs *s, char *buf, uint64_t ino, uint32_t stripe,
		     uint32_t k, const char *suffix)
{
	char base[OBJ_PATH_LEN];
	store_obj_path(s, base, ino, stripe, false);
	if (k)
		snprintf(buf, OBJ_PATH_LEN + 16, "%s.s%" PRIu32 "%s", base, k, suffix);
	else
		snprintf(buf, OBJ_PATH_LEN + 16, "%s%s", base, suffix);
}

static void close_segs(struct store_fdc_entry *e)
{
	struct seg_set *ss = e->segs;
	if (!ss)
		return;
	for (uint32_t i = 0; i < ss->n; i++) {
		if (ss->v[i].fd >= 0)
			close(ss->v[i].fd);
		if (ss->v[i].crc_fd >= 0)
			close(ss->v[i].crc_fd);
	}
	free(ss->v);
	free(ss);
	e->segs = NULL;
}

bool store_obj_seg_marked(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	char p[OBJ_PATH_LEN + 16];
	seg_path(s, p, ino, stripe, 0, ".segs");
	return faccessat(s->root_fd, p, F_OK, 0) == 0;
}

/* Calls fn for every segment k >= 1 of the object found in its directory (data: crc
 * false, sidecar: crc true). */
static int scan(struct store_objs *s, uint64_t ino, uint32_t stripe,
		void (*fn)(void *arg, uint32_t k, bool crc, const char *name), void *arg)
{
	char base[OBJ_PATH_LEN], dir[8], prefix[OBJ_PATH_LEN];
	store_obj_path(s, base, ino, stripe, false);
	memcpy(dir, base, 5);
	dir[5] = 0;
	snprintf(prefix, sizeof(prefix), "%s.s", base + 6);
	size_t pl = strlen(prefix);
	int dfd = openat(s->root_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, pl) != 0)
			continue;
		char *end;
		unsigned long k = strtoul(de->d_name + pl, &end, 10);
		if (k == 0 || k > UINT32_MAX)
			continue;
		if (*end == 0)
			fn(arg, (uint32_t)k, false, de->d_name);
		else if (strcmp(end, ".crc") == 0)
			fn(arg, (uint32_t)k, true, de->d_name);
	}
	closedir(d);
	return 0;
}

struct last_arg {
	uint32_t k;
};

static void find_last(void *arg, uint32_t k, bool crc, const char *name)
{
	struct last_arg *a = arg;
	if (!crc && k > a->k)
		a->k = k;
}

int store_obj_seg_size(struct store_objs *s, struct store_fdc_entry *e)
{
	if (!store_obj_seg_marked(s, e->ino, e->stripe))
		return 0;
	struct last_arg a = {0};
	int rc = scan(s, e->ino, e->stripe, find_last, &a);
	if (rc || a.k == 0)
		return rc;
	char p[OBJ_PATH_LEN + 16];
	seg_path(s, p, e->ino, e->stripe, a.k, "");
	struct stat st;
	if (fstatat(s->root_fd, p, &st, 0) < 0)
		return -errno;
	e->size = (uint64_t)a.k * OBJ_SEG_SIZE + (uint64_t)st.st_size;
	return 0;
}

/* The files of segment k (k >= 1): opened on first use; *fd = -1 when absent and
 * !create. */
static int seg_get(struct store_objs *s, struct store_fdc_entry *e, uint32_t k, bool create,
		   int *fd, int *crc_fd)
{
	if (k == 0) {
		*fd = e->fd;
		*crc_fd = e->crc_fd;
		return 0;
	}
	struct seg_set *ss = e->segs;
	for (uint32_t i = 0; ss && i < ss->n; i++) {
		if (ss->v[i].k == k) {
			*fd = ss->v[i].fd;
			*crc_fd = ss->v[i].crc_fd;
			return 0;
		}
	}
	*fd = *crc_fd = -1;
	char p[OBJ_PATH_LEN + 16];
	if (create) {
		seg_path(s, p, e->ino, e->stripe, 0, ".segs");
		int m = openat(s->root_fd, p, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
		if (m < 0)
			return -errno;
		close(m);
	}
	seg_path(s, p, e->ino, e->stripe, k, "");
	int f = openat(s->root_fd, p, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0640);
	if (f < 0)
		return errno == ENOENT && !create ? 0 : -errno;
	int cf = -1;
	if (s->checksums) {
		seg_path(s, p, e->ino, e->stripe, k, ".crc");
		cf = openat(s->root_fd, p, O_RDWR | O_CLOEXEC | O_CREAT, 0640);
		if (cf < 0) {
			int rc = -errno;
			close(f);
			return rc;
		}
	}
	if (!ss) {
		ss = calloc(1, sizeof(*ss));
		if (!ss)
			goto nomem;
		e->segs = ss;
		e->close_extra = close_segs;
	}
	if (ss->n == ss->cap) {
		uint32_t cap = ss->cap ? 2 * ss->cap : 4;
		struct seg_file *v = realloc(ss->v, cap * sizeof(*v));
		if (!v)
			goto nomem;
		ss->v = v;
		ss->cap = cap;
	}
	ss->v[ss->n++] = (struct seg_file){k, f, cf};
	*fd = f;
	*crc_fd = cf;
	return 0;
nomem:
	close(f);
	if (cf >= 0)
		close(cf);
	return -ENOMEM;
}

/* Forgets (closes) the files of segment k >= 1. */
static void seg_forget(struct store_fdc_entry *e, uint32_t k)
{
	struct seg_set *ss = e->segs;
	for (uint32_t i = 0; ss && i < ss->n; i++) {
		if (ss->v[i].k == k) {
			if (ss->v[i].fd >= 0)
				close(ss->v[i].fd);
			if (ss->v[i].crc_fd >= 0)
				close(ss->v[i].crc_fd);
			ss->v[i] = ss->v[--ss->n];
			return;
		}
	}
}

static void zero_iov(const struct iovec *v, int n)
{
	for (int i = 0; i < n; i++)
		memset(v[i].iov_base, 0, v[i].iov_len);
}

int store_obj_seg_io(struct store_objs *s, struct store_fdc_entry *e, bool write,
	       const struct iovec *iov, int cnt, uint64_t off, size_t *done)
{
	size_t len = store_iov_len(iov, cnt);
	if (off + len <= OBJ_SEG_SIZE)
		return store_obj_data_io(s, e, write, iov, cnt, off, done);
	*done = 0;
	struct iovec *v = malloc((size_t)(cnt + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	int rc = 0;
	size_t pos = 0;
	while (pos < len && rc == 0) {
		uint64_t a = off + pos;
		uint32_t k = (uint32_t)(a / OBJ_SEG_SIZE);
		size_t n = (size_t)((uint64_t)(k + 1) * OBJ_SEG_SIZE - a);
		if (n > len - pos)
			n = len - pos;
		int m = store_iov_slice(iov, cnt, pos, n, v, cnt + 2);
		int fd, cfd;
		rc = seg_get(s, e, k, write, &fd, &cfd);
		if (rc)
			break;
		size_t got = 0;
		if (fd >= 0)
			rc = store_obj_io(write, fd, v, m, a - (uint64_t)k * OBJ_SEG_SIZE, &got);
		if (rc)
			break;
		if (!write && got < n) { /* a hole up to the end of this piece */
			int mm = store_iov_slice(v, m, got, n - got, v + m, 2 + cnt - m);
			if (mm > 0)
				zero_iov(v + m, mm);
			else
				zero_iov(v, m); /* cannot happen: slices need at most m + 2 */
			got = n;
		}
		*done += got;
		if (got < n)
			break;
		pos += n;
	}
	free(v);
	return rc;
}

int store_obj_seg_pread(struct store_objs *s, struct store_fdc_entry *e, void *buf, size_t len,
		  uint64_t off)
{
	if (off + len <= OBJ_SEG_SIZE)
		return store_obj_pread(e->fd, buf, len, off);
	struct iovec v = {buf, len};
	size_t done;
	int rc = store_obj_seg_io(s, e, false, &v, 1, off, &done);
	if (rc == 0 && done < len)
		memset((char *)buf + done, 0, len - done);
	return rc;
}

/* Segment 0's sidecar, opened (created) when an entry past the inline ones is written
 * (object lock held exclusively). */
static int seg0_sidecar(struct store_objs *s, struct store_fdc_entry *e)
{
	if (e->crc_fd >= 0)
		return 0;
	char p[OBJ_PATH_LEN];
	store_obj_path(s, p, e->ino, e->stripe, true);
	e->crc_fd = openat(s->root_fd, p, O_RDWR | O_CLOEXEC | O_CREAT, 0640);
	return e->crc_fd < 0 ? -errno : 0;
}

/* Entries [first, first+n) of segment 0: the inline ones from the data file's attribute,
 * the rest from the sidecar (absent: zeros). */
static int seg0_crc(struct store_objs *s, struct store_fdc_entry *e, bool write, uint64_t first,
		    size_t n, uint32_t *p)
{
	if (!e->crc_inline) {
		if (e->crc_fd < 0)
			return -EBADF;
		return write ? store_crc_write(e->crc_fd, first, n, p) :
			       store_crc_read(e->crc_fd, first, n, p);
	}
	if (first < STORE_CRC_INLINE) {
		size_t m = STORE_CRC_INLINE - first < n ? STORE_CRC_INLINE - first : n;
		int rc = write ? store_crc_xattr_write(e->fd, first, m, p) :
				 store_crc_xattr_read(e->fd, first, m, p);
		if (rc)
			return rc;
		first += m;
		p += m;
		n -= m;
	}
	if (n == 0)
		return 0;
	if (!write && e->crc_fd < 0) {
		memset(p, 0, n * sizeof(*p));
		return 0;
	}
	int rc = write ? seg0_sidecar(s, e) : 0;
	if (rc)
		return rc;
	return write ? store_crc_write(e->crc_fd, first, n, p) : store_crc_read(e->crc_fd, first, n, p);
}

/* Entries [rel, rel+m) of segment k >= 1's sidecar (absent: zeros). */
static int segk_crc(struct store_objs *s, struct store_fdc_entry *e, uint32_t k, bool write,
		    uint64_t rel, size_t m, uint32_t *p)
{
	int fd, cfd, rc = seg_get(s, e, k, write, &fd, &cfd);
	if (rc)
		return rc;
	if (cfd < 0 && !write) {
		memset(p, 0, m * sizeof(*p));
		return 0;
	}
	if (cfd < 0)
		return -EBADF;
	return write ? store_crc_write(cfd, rel, m, p) : store_crc_read(cfd, rel, m, p);
}

static int crc_rw(struct store_objs *s, struct store_fdc_entry *e, bool write, uint64_t first,
		  size_t n, uint32_t *p)
{
	while (n) {
		uint32_t k = (uint32_t)(first / ENTRIES_PER_SEG);
		uint64_t rel = first - (uint64_t)k * ENTRIES_PER_SEG;
		size_t m = (size_t)(ENTRIES_PER_SEG - rel);
		if (m > n)
			m = n;
		int rc = k == 0 ? seg0_crc(s, e, write, rel, m, p) : segk_crc(s, e, k, write, rel, m, p);
		if (rc)
			return rc;
		first += m;
		p += m;
		n -= m;
	}
	return 0;
}

int store_obj_crc_read(struct store_objs *s, struct store_fdc_entry *e, uint64_t first, size_t n,
		 uint32_t *out)
{
	if (first + n <= ENTRIES_PER_SEG)
		return seg0_crc(s, e, false, first, n, out);
	return crc_rw(s, e, false, first, n, out);
}

int store_obj_crc_write(struct store_objs *s, struct store_fdc_entry *e, uint64_t first, size_t n,
		  const uint32_t *in)
{
	if (first + n <= ENTRIES_PER_SEG)
		return seg0_crc(s, e, true, first, n, (uint32_t *)in);
	return crc_rw(s, e, true, first, n, (uint32_t *)in);
}

struct cut_arg {
	struct store_objs *s;
	struct store_fdc_entry *e;
	uint32_t above;
	bool crc;
	int err;
};

static void cut_one(void *arg, uint32_t k, bool crc, const char *name)
{
	struct cut_arg *a = arg;
	if (crc != a->crc || k <= a->above)
		return;
	char p[OBJ_PATH_LEN + 16];
	seg_path(a->s, p, a->e->ino, a->e->stripe, k, crc ? ".crc" : "");
	if (unlinkat(a->s->root_fd, p, 0) < 0 && errno != ENOENT && !a->err)
		a->err = errno;
	if (!crc)
		seg_forget(a->e, k);
}

/* Segment 0's entries from nentries on are dropped: 0, or -1 with errno. */
static int seg0_trunc_crc(struct store_fdc_entry *e, uint64_t nentries)
{
	if (e->crc_inline) {
		int rc = store_crc_xattr_truncate(e->fd, nentries);
		if (rc) {
			errno = -rc;
			return -1;
		}
	}
	if (e->crc_fd < 0) /* inline only: nothing past the attribute */
		return 0;
	return ftruncate(e->crc_fd, (off_t)(nentries * 4));
}

/* Sets the length of a segmented file (data, or sidecar with `crc`) to `bytes` bytes,
 * where seg is the size of one segment of it; 0 or -1 with errno, like ftruncate. */
static int seg_truncate(struct store_objs *s, struct store_fdc_entry *e, bool crc,
			uint64_t bytes, uint64_t seg)
{
	uint32_t K = bytes == 0 ? 0 : (uint32_t)((bytes - 1) / seg);
	if (store_obj_seg_marked(s, e->ino, e->stripe)) {
		struct cut_arg a = {s, e, K, crc, 0};
		int rc = scan(s, e->ino, e->stripe, cut_one, &a);
		if (rc || a.err) {
			errno = rc ? -rc : a.err;
			return -1;
		}
	}
	if (K == 0 && crc)
		return seg0_trunc_crc(e, bytes / 4);
	if (K == 0)
		return ftruncate(e->fd, (off_t)bytes);
	int fd, cfd, rc = seg_get(s, e, K, !crc, &fd, &cfd);
	if (rc) {
		errno = -rc;
		return -1;
	}
	int f = crc ? cfd : fd;
	if (f < 0) /* an absent sidecar segment already reads as zero entries */
		return 0;
	return ftruncate(f, (off_t)(bytes - (uint64_t)K * seg));
}

int store_obj_seg_trunc_data(struct store_objs *s, struct store_fdc_entry *e, uint64_t size)
{
	if (size <= OBJ_SEG_SIZE && !e->segs && e->size <= OBJ_SEG_SIZE)
		return ftruncate(e->fd, (off_t)size);
	return seg_truncate(s, e, false, size, OBJ_SEG_SIZE);
}

int store_obj_seg_trunc_crc(struct store_objs *s, struct store_fdc_entry *e, uint64_t nentries)
{
	if (nentries <= ENTRIES_PER_SEG && !e->segs && e->size <= OBJ_SEG_SIZE)
		return seg0_trunc_crc(e, nentries);
	return seg_truncate(s, e, true, nentries * 4, ENTRIES_PER_SEG * 4);
}

struct each_arg {
	struct store_objs *s;
	struct store_fdc_entry *e;
	uint64_t blocks;
	int err;
	bool sync;
};

static void each_one(void *arg, uint32_t k, bool crc, const char *name)
{
	struct each_arg *a = arg;
	if (crc)
		return;
	int fd, cfd, rc = seg_get(a->s, a->e, k, false, &fd, &cfd);
	struct stat st;
	if (rc == 0 && fd >= 0 && a->sync &&
	    (fdatasync(fd) < 0 || (cfd >= 0 && fdatasync(cfd) < 0)))
		rc = -errno;
	if (rc == 0 && fd >= 0 && !a->sync && fstat(fd, &st) == 0)
		a->blocks += (uint64_t)st.st_blocks;
	if (rc && !a->err)
		a->err = rc;
}

int store_obj_seg_sync(struct store_objs *s, struct store_fdc_entry *e)
{
	/* inline entries are inode metadata, which fdatasync need not write */
	if ((e->crc_inline ? fsync(e->fd) : fdatasync(e->fd)) < 0 ||
	    (e->crc_fd >= 0 && fdatasync(e->crc_fd) < 0))
		return -errno;
	if (!store_obj_seg_marked(s, e->ino, e->stripe))
		return 0;
	struct each_arg a = {s, e, 0, 0, true};
	int rc = scan(s, e->ino, e->stripe, each_one, &a);
	return rc ? rc : a.err;
}

uint64_t store_obj_seg_allocated(struct store_objs *s, struct store_fdc_entry *e)
{
	struct stat st;
	struct each_arg a = {s, e, 0, 0, false};
	if (fstat(e->fd, &st) == 0)
		a.blocks = (uint64_t)st.st_blocks;
	if (store_obj_seg_marked(s, e->ino, e->stripe))
		scan(s, e->ino, e->stripe, each_one, &a);
	return a.blocks * 512;
}

struct unlink_arg {
	struct store_objs *s;
	uint64_t ino;
	uint32_t stripe;
	int err;
};

static void unlink_one(void *arg, uint32_t k, bool crc, const char *name)
{
	struct unlink_arg *a = arg;
	char p[OBJ_PATH_LEN + 16];
	seg_path(a->s, p, a->ino, a->stripe, k, crc ? ".crc" : ""); /* from numbers, not the name */
	if (unlinkat(a->s->root_fd, p, 0) < 0 && errno != ENOENT && !a->err)
		a->err = errno;
}

int store_obj_seg_unlink(struct store_objs *s, uint64_t ino, uint32_t stripe)
{
	if (!store_obj_seg_marked(s, ino, stripe))
		return 0;
	struct unlink_arg ua = {s, ino, stripe, 0};
	int rc = scan(s, ino, stripe, unlink_one, &ua);
	char p[OBJ_PATH_LEN + 16];
	seg_path(s, p, ino, stripe, 0, ".segs");
	if (rc == 0 && !ua.err && unlinkat(s->root_fd, p, 0) < 0 && errno != ENOENT)
		ua.err = errno;
	return rc ? rc : -ua.err;
}

struct next_arg {
	uint32_t after, best;
};

static void find_next(void *arg, uint32_t k, bool crc, const char *name)
{
	struct next_arg *a = arg;
	if (!crc && k > a->after && (a->best == 0 || k < a->best))
		a->best = k;
}

int64_t store_obj_seg_next_data(struct store_objs *s, struct store_fdc_entry *e, uint64_t off)
{
	while (off < e->size) {
		uint32_t k = (uint32_t)(off / OBJ_SEG_SIZE);
		int fd, cfd;
		if (seg_get(s, e, k, false, &fd, &cfd) == 0 && fd >= 0) {
			off_t r = lseek(fd, (off_t)(off - (uint64_t)k * OBJ_SEG_SIZE), SEEK_DATA);
			if (r >= 0)
				return (int64_t)((uint64_t)k * OBJ_SEG_SIZE + (uint64_t)r);
			if (errno != ENXIO)
				return (int64_t)off; /* no SEEK_DATA: treat as data */
		}
		/* the next segment that exists */
		struct next_arg a = {k, 0};
		if (!store_obj_seg_marked(s, e->ino, e->stripe) || scan(s, e->ino, e->stripe, find_next, &a) ||
		    a.best == 0)
			break;
		off = (uint64_t)a.best * OBJ_SEG_SIZE;
	}
	return (int64_t)e->size;
}

int64_t store_obj_seg_next_hole(struct store_objs *s, struct store_fdc_entry *e, uint64_t off)
{
	if (off >= e->size)
		return (int64_t)e->size;
	uint32_t k = (uint32_t)(off / OBJ_SEG_SIZE);
	int fd, cfd;
	if (seg_get(s, e, k, false, &fd, &cfd) != 0 || fd < 0)
		return (int64_t)off; /* an absent segment is a hole */
	off_t r = lseek(fd, (off_t)(off - (uint64_t)k * OBJ_SEG_SIZE), SEEK_HOLE);
	if (r < 0)
		return errno == ENXIO ? (int64_t)off : (int64_t)e->size; /* past its end: hole */
	uint64_t h = (uint64_t)k * OBJ_SEG_SIZE + (uint64_t)r;
	return (int64_t)(h < e->size ? h : e->size);
}
