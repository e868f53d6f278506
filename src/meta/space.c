/* meta's space: reserve, map growth, growth gate, gauges (see space.h). */
#include "meta/space.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "net/stats.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define FREELIST_EVERY_NS (20 * 1000000ULL) /* walk LMDB's free list at most this often */

struct meta_space {
	struct meta_db *db;
	char path[PATH_MAX];
	int fd;                /* the reserve file */
	uint64_t want, held;   /* reserve configured, and allocated now */
	uint64_t low_water, warn;
	bool warned;           /* writer only: the warning is out, re-armed on recovery */
	uint64_t free_pages;   /* writer only: last walk of the free list */
	uint64_t walked_ns;
	atomic_bool low;
	pthread_mutex_t lock;  /* guards info */
	struct meta_space_info info;
};

static void fmt(uint64_t b, char *out, size_t cap)
{
	if (b >= GiB)
		snprintf(out, cap, "%.1f GiB", (double)b / GiB);
	else if (b >= MiB)
		snprintf(out, cap, "%.1f MiB", (double)b / MiB);
	else
		snprintf(out, cap, "%llu KiB", (unsigned long long)(b >> 10));
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Pages on LMDB's free list (some may still be pinned by a reader: an estimate). */
static uint64_t count_free_pages(struct meta_db *db)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t n = 0;
	if (meta_db_read_begin(db, &txn))
		return 0;
	if (mdb_cursor_open(txn, 0 /* FREE_DBI */, &cur) == 0) {
		while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
			if (v.mv_size >= sizeof(size_t))
				n += *(const size_t *)v.mv_data; /* an IDL: count, then page numbers */
		mdb_cursor_close(cur);
	}
	meta_db_read_end(db, txn);
	return n;
}

/* Fills a fresh measurement (writer thread). walk: count the free list now. */
static int measure(struct meta_space *sp, struct meta_space_info *m, bool walk)
{
	struct statvfs v;
	MDB_envinfo ei;
	MDB_stat st;
	struct stat fs;
	int fd;
	memset(m, 0, sizeof(*m));
	if (fstatvfs(sp->fd, &v))
		return -errno;
	mdb_env_info(sp->db->env, &ei);
	mdb_env_stat(sp->db->env, &st);
	uint64_t ps = st.ms_psize;
	m->disk_bytes = (uint64_t)v.f_blocks * v.f_frsize;
	m->disk_free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
	m->map_bytes = ei.me_mapsize;
	uint64_t used_pages = (uint64_t)ei.me_last_pgno + 1;
	if (mdb_env_get_fd(sp->db->env, &fd) == 0 && fstat(fd, &fs) == 0)
		m->file_bytes = (uint64_t)fs.st_size;
	/* Near the edge, the free list is what decides; far from it, the disk alone does. */
	uint64_t need = 4 * (sp->low_water + sp->want);
	if (m->disk_free_bytes < need &&
	    (walk || now_ns() - sp->walked_ns > FREELIST_EVERY_NS)) {
		sp->free_pages = count_free_pages(sp->db);
		sp->walked_ns = now_ns();
	}
	uint64_t free_pages = m->disk_free_bytes < need ? sp->free_pages : 0;
	uint64_t tail = m->file_bytes > used_pages * ps ? m->file_bytes - used_pages * ps : 0;
	m->db_bytes = (used_pages > free_pages ? used_pages - free_pages : 0) * ps;
	m->room_bytes = m->disk_free_bytes + free_pages * ps + tail;
	m->reserve_bytes = sp->held;
	m->reserve_want = sp->want;
	m->low_water = sp->low_water;
	return 0;
}

static void publish(struct meta_space *sp, const struct meta_space_info *m)
{
	pthread_mutex_lock(&sp->lock);
	sp->info = *m;
	pthread_mutex_unlock(&sp->lock);
	stats_set_gauge(STATS_META_DB_BYTES, m->db_bytes);
	stats_set_gauge(STATS_META_MAP_BYTES, m->map_bytes);
	stats_set_gauge(STATS_META_DISK_BYTES, m->disk_bytes);
	stats_set_gauge(STATS_META_DISK_FREE_BYTES, m->disk_free_bytes);
	stats_set_gauge(STATS_META_RESERVE_BYTES, m->reserve_bytes);
	stats_set_gauge(STATS_META_ROOM_BYTES, m->room_bytes);
	stats_set_gauge(STATS_META_SPACE_LOW, m->low);
}

static int take_reserve(struct meta_space *sp)
{
	int rc = posix_fallocate(sp->fd, 0, (off_t)sp->want);
	if (rc) {
		/* a partial allocation is not a reserve: give it back */
		if (ftruncate(sp->fd, 0) == 0)
			sp->held = 0;
		return -rc;
	}
	sp->held = sp->want;
	return 0;
}

static void release_reserve(struct meta_space *sp)
{
	if (ftruncate(sp->fd, 0)) {
		log_error("meta: release reserve %s: %s", sp->path, strerror(errno));
		return;
	}
	char h[32];
	fmt(sp->held, h, sizeof(h));
	log_warn("meta: metadata disk full: released the %s reserve for deletes; new files "
		 "get ENOSPC until space is freed", h);
	sp->held = 0;
}

/* Grows the map to at least min_bytes: doubling, at most 1 GiB a step, up to the disk
 * (never below what is needed). No write txn may be live; read txns are waited for. */
static int grow_map(struct meta_space *sp, const struct meta_space_info *m, uint64_t min_bytes)
{
	uint64_t cur = m->map_bytes;
	uint64_t next = cur + (cur < GiB ? cur : GiB);
	if (next < min_bytes)
		next = min_bytes;
	uint64_t cap = m->disk_bytes > cur ? m->disk_bytes : cur;
	if (next > cap)
		next = cap;
	next = (next + MiB - 1) & ~(MiB - 1);
	if (next <= cur)
		return -ENOSPC;
	pthread_rwlock_wrlock(&sp->db->map_lock);
	int rc = mdb_env_set_mapsize(sp->db->env, next);
	pthread_rwlock_unlock(&sp->db->map_lock);
	if (rc) {
		log_error("meta: grow LMDB map to %llu bytes: %s", (unsigned long long)next,
			  mdb_strerror(rc));
		return meta_mdb_err(rc);
	}
	log_info("meta: LMDB map grown from %llu to %llu MiB", (unsigned long long)(cur >> 20),
		 (unsigned long long)(next >> 20));
	return 0;
}

/* data.mdb ends at the last page in use (or past it, after a failed commit) */
static bool map_past_half(const struct meta_space_info *m)
{
	return m->file_bytes > m->map_bytes / 2;
}

static void set_low(struct meta_space *sp, struct meta_space_info *m)
{
	uint64_t limit = sp->low_water + (sp->want - sp->held);
	/* hysteresis: once low, growth comes back with a quarter of W more room */
	bool low = m->room_bytes < limit ||
		   (atomic_load(&sp->low) && m->room_bytes < limit + sp->low_water / 4);
	m->low = low;
	bool was = atomic_exchange(&sp->low, low);
	char r[32], l[32];
	fmt(m->room_bytes, r, sizeof(r));
	fmt(limit, l, sizeof(l));
	if (low && !was)
		log_warn("meta: %s left for metadata (under %s): creates, mkdir, rename, link, "
			 "symlink and setxattr get ENOSPC; deletes still work", r, l);
	else if (!low && was)
		log_info("meta: %s free for metadata again: namespace growth accepted", r);
	if (!sp->warned && m->room_bytes < sp->warn) {
		char w[32], d[32];
		fmt(sp->warn, w, sizeof(w));
		fmt(m->disk_free_bytes, d, sizeof(d));
		log_warn("meta: metadata space under the warning threshold %s: %s of room "
			 "(disk free %s, reserve %s)", w, r, d, sp->held ? "held" : "released");
		sp->warned = true;
	} else if (sp->warned && m->room_bytes > sp->warn + sp->warn / 4) {
		sp->warned = false;
		log_info("meta: metadata space back above the warning threshold (%s of room)", r);
	}
}

void meta_space_check(struct meta_space *sp)
{
	struct meta_space_info m;
	if (measure(sp, &m, false))
		return;
	if (map_past_half(&m) && grow_map(sp, &m, 0) == 0)
		measure(sp, &m, false);
	if (sp->held < sp->want && m.disk_free_bytes >= sp->want + 2 * sp->low_water) {
		if (take_reserve(sp) == 0) {
			log_info("meta: reserve for deletes taken again");
			measure(sp, &m, true);
		}
	}
	set_low(sp, &m);
	publish(sp, &m);
}

bool meta_space_relieve(struct meta_space *sp, bool map_full, bool *no_grow)
{
	struct meta_space_info m;
	*no_grow = false;
	if (measure(sp, &m, true))
		return false;
	if (map_full && m.disk_free_bytes > 2 * sp->low_water &&
	    grow_map(sp, &m, m.map_bytes + 2 * sp->low_water) == 0) {
		meta_space_check(sp);
		return true;
	}
	if (sp->held && m.disk_free_bytes < 2 * sp->low_water) {
		release_reserve(sp);
		*no_grow = true;
		meta_space_check(sp);
		return true;
	}
	meta_space_check(sp);
	return false;
}

bool meta_space_low(const struct meta_space *sp)
{
	return sp && atomic_load(&((struct meta_space *)sp)->low);
}

void meta_space_get(struct meta_space *sp, struct meta_space_info *out)
{
	pthread_mutex_lock(&sp->lock);
	*out = sp->info;
	pthread_mutex_unlock(&sp->lock);
}

int meta_space_open(struct meta_db *db, const char *dir, const struct meta_space_opts *o,
		    struct meta_space **out, char *err, size_t errlen)
{
	struct meta_space *sp = calloc(1, sizeof(*sp));
	struct statvfs v;
	int rc;
	if (!sp) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	sp->db = db;
	pthread_mutex_init(&sp->lock, NULL);
	snprintf(sp->path, sizeof(sp->path), "%s/space.reserve", dir);
	sp->fd = open(sp->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (sp->fd < 0 || fstatvfs(sp->fd, &v)) {
		rc = -errno;
		snprintf(err, errlen, "reserve file %s: %s", sp->path, strerror(errno));
		if (sp->fd >= 0)
			close(sp->fd);
		pthread_mutex_destroy(&sp->lock);
		free(sp);
		return rc;
	}
	uint64_t disk = (uint64_t)v.f_blocks * v.f_frsize;
	if (o->no_reserve) {
		sp->want = 0;
	} else if (o->reserve) {
		sp->want = o->reserve;
	} else {
		sp->want = disk / 100;
		if (sp->want < 8 * MiB)
			sp->want = 8 * MiB;
		if (sp->want > 256 * MiB)
			sp->want = 256 * MiB;
		if (sp->want > disk / 8)
			sp->want = disk / 8;
	}
	sp->low_water = sp->want / 4 > MiB ? sp->want / 4 : MiB;
	sp->warn = o->warn ? o->warn : 2 * (sp->low_water + sp->want);
	if (!o->warn && sp->warn < disk / 20)
		sp->warn = disk / 20;
	/* what is allocated already (a restart) counts as held */
	struct stat st;
	if (fstat(sp->fd, &st) == 0 && (uint64_t)st.st_blocks * 512 >= sp->want && sp->want) {
		if (ftruncate(sp->fd, (off_t)sp->want) == 0)
			sp->held = sp->want;
	} else if (sp->want && (rc = take_reserve(sp))) {
		char w[32];
		fmt(sp->want, w, sizeof(w));
		log_warn("meta: could not take the %s reserve for deletes in %s: %s (taken later, "
			 "when the disk has room)", w, sp->path, strerror(-rc));
	} else if (!sp->want && ftruncate(sp->fd, 0)) {
		log_warn("meta: truncate %s: %s", sp->path, strerror(errno));
	}
	meta_space_check(sp);
	*out = sp;
	return 0;
}

void meta_space_close(struct meta_space *sp)
{
	if (!sp)
		return;
	close(sp->fd);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

bool meta_space_disk_full(const struct meta_space *sp)
{
	struct statvfs v;
	if (!sp || sp->fd < 0 || fstatvfs(sp->fd, &v))
		return false;
	return (uint64_t)v.f_bavail * v.f_frsize < sp->low_water;
}
