/* meta's LMDB environment: open/close, table handles, mkfs. */
#include "meta/mdb.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "meta/inode.h"
#include "meta/session.h"
#include "meta/super.h"

_Thread_local uint64_t meta_mdb_writes;
_Thread_local bool meta_mdb_map_full;

#define META_MAXDBS 16
#define META_MAXREADERS 512

int meta_mdb_err(int rc)
{
	switch (rc) {
	case 0: return 0;
	case MDB_NOTFOUND: return -ENOENT;
	case MDB_KEYEXIST: return -EEXIST;
	case MDB_MAP_FULL:
		meta_mdb_map_full = true;
		return -ENOSPC;
	case MDB_TXN_FULL: return -ENOSPC;
	case MDB_READERS_FULL: return -EAGAIN;
	default:
		if (rc > 0 && rc < 4096)
			return -rc;
		return -EIO;
	}
}

int64_t meta_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const struct { const char *name; size_t off; } tables[] = {
	{ "super", offsetof(struct meta_db, super) },
	{ "inodes", offsetof(struct meta_db, inodes) },
	{ "dirents", offsetof(struct meta_db, dirents) },
	{ "cookies", offsetof(struct meta_db, cookies) },
	{ "xattrs", offsetof(struct meta_db, xattrs) },
	{ "targets", offsetof(struct meta_db, targets) },
	{ "chains", offsetof(struct meta_db, chains) },
	{ "sessions", offsetof(struct meta_db, sessions) },
	{ "opens", offsetof(struct meta_db, opens) },
	{ "sess_opens", offsetof(struct meta_db, sess_opens) },
	{ "pending", offsetof(struct meta_db, pending) },
	{ "nodes", offsetof(struct meta_db, nodes) },
	{ "replies", offsetof(struct meta_db, replies) },
};

/* Opens the env and every table (creating missing ones). */
static int env_open(const char *dir, uint64_t mapsize, struct meta_db **out)
{
	struct meta_db *db = calloc(1, sizeof(*db));
	MDB_txn *txn = NULL;
	int rc;
	if (!db)
		return -ENOMEM;
	/* writer preference: a map growth waiting for readers is not starved by new ones */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&db->map_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	rc = mdb_env_create(&db->env);
	if (rc)
		goto fail_free;
	if ((rc = mdb_env_set_mapsize(db->env, mapsize ? mapsize : META_MAPSIZE_DEFAULT)) ||
	    (rc = mdb_env_set_maxdbs(db->env, META_MAXDBS)) ||
	    (rc = mdb_env_set_maxreaders(db->env, META_MAXREADERS)))
		goto fail_env;
	/* MDB_NOMETASYNC: a commit syncs the pages it wrote before it writes the meta page
	 * that makes them current, so no power loss can leave a meta page on disk ahead of
	 * its tree. (With MDB_NOSYNC the kernel may write them back in any order, and one
	 * sync after the commit flushes them in no particular order either: a corrupt
	 * database after a power cut.) The meta page is made durable by the group commit's
	 * mdb_env_sync, or by the next commit's sync. */
	rc = mdb_env_open(db->env, dir, MDB_NOMETASYNC | MDB_NOTLS, 0600);
	if (rc) {
		log_error("mdb_env_open %s: %s", dir, mdb_strerror(rc));
		goto fail_env;
	}
	/* LMDB opens with the map asked for, or just what the data needs if that is more:
	 * give a database that outgrew the asked map room to write (the first write is
	 * the epoch bump, before meta's space management runs; space.c grows it later) */
	MDB_envinfo ei;
	MDB_stat est;
	mdb_env_info(db->env, &ei);
	mdb_env_stat(db->env, &est);
	uint64_t used = ((uint64_t)ei.me_last_pgno + 1) * est.ms_psize;
	if (used > ei.me_mapsize / 2) {
		uint64_t want = (2 * used + (1 << 20) - 1) & ~(uint64_t)((1 << 20) - 1);
		if ((rc = mdb_env_set_mapsize(db->env, want)))
			goto fail_env;
	}
	rc = mdb_txn_begin(db->env, NULL, 0, &txn);
	if (rc)
		goto fail_env;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		MDB_dbi *dbi = (MDB_dbi *)((char *)db + tables[i].off);
		rc = mdb_dbi_open(txn, tables[i].name, MDB_CREATE, dbi);
		if (rc) {
			log_error("mdb_dbi_open %s/%s: %s", dir, tables[i].name, mdb_strerror(rc));
			goto fail_txn;
		}
	}
	rc = mdb_txn_commit(txn);
	if (rc)
		goto fail_env;
	if (!(db->live = meta_live_new())) {
		rc = ENOMEM;
		goto fail_env;
	}
	*out = db;
	return 0;
fail_txn:
	mdb_txn_abort(txn);
fail_env:
	mdb_env_close(db->env);
fail_free:
	pthread_rwlock_destroy(&db->map_lock);
	free(db);
	return meta_mdb_err(rc);
}

void meta_db_close(struct meta_db *db)
{
	if (!db)
		return;
	mdb_env_close(db->env);
	pthread_rwlock_destroy(&db->map_lock);
	meta_live_free(db->live);
	free(db);
}

int meta_db_write(struct meta_db *db, int (*apply)(MDB_txn *txn, void *arg), void *arg)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
	if (rc)
		return meta_mdb_err(rc);
	rc = apply(txn, arg);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = mdb_txn_commit(txn);
	if (rc)
		return meta_mdb_err(rc);
	return meta_mdb_err(mdb_env_sync(db->env, 1));
}

int meta_db_read_begin(struct meta_db *db, MDB_txn **txn)
{
	pthread_rwlock_rdlock(&db->map_lock);
	int rc = meta_mdb_err(mdb_txn_begin(db->env, NULL, MDB_RDONLY, txn));
	if (rc)
		pthread_rwlock_unlock(&db->map_lock);
	return rc;
}

void meta_db_read_end(struct meta_db *db, MDB_txn *txn)
{
	mdb_txn_abort(txn);
	pthread_rwlock_unlock(&db->map_lock);
}

void meta_db_map_rdlock(struct meta_db *db)
{
	pthread_rwlock_rdlock(&db->map_lock);
}

void meta_db_map_unlock(struct meta_db *db)
{
	pthread_rwlock_unlock(&db->map_lock);
}

static int bump_epoch(MDB_txn *txn, void *arg)
{
	struct meta_db *db = arg;
	struct meta_super sb;
	int rc = meta_super_get(db, txn, &sb);
	if (rc)
		return rc;
	sb.epoch++;
	return meta_super_put(db, txn, &sb);
}

static bool has_env(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return stat(path, &st) == 0;
}

int meta_db_open(const char *dir, uint64_t mapsize, struct meta_db **out)
{
	struct meta_db *db;
	if (!has_env(dir))
		return -ENOENT;
	int rc = env_open(dir, mapsize, &db);
	if (rc)
		return rc;
	rc = meta_db_write(db, bump_epoch, db);
	if (rc) {
		log_error("meta open %s: superblock: %s", dir, strerror(-rc));
		meta_db_close(db);
		return rc;
	}
	*out = db;
	return 0;
}

struct mkfs_arg {
	struct meta_db *db;
	const struct meta_mkfs_opts *opts;
};

static int mkfs_apply(MDB_txn *txn, void *arg)
{
	struct mkfs_arg *a = arg;
	struct meta_super sb;
	struct meta_inode root;
	int64_t now = meta_now_ns();
	int rc;

	memset(&sb, 0, sizeof(sb));
	sb.format = META_FORMAT_VERSION;
	if (getrandom(sb.uuid, sizeof(sb.uuid), 0) != (ssize_t)sizeof(sb.uuid))
		return errno ? -errno : -EIO;
	sb.uuid[6] = (sb.uuid[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	sb.uuid[8] = (sb.uuid[8] & 0x3f) | 0x80;
	sb.options = a->opts->options;
	sb.next_ino = WEFT_ROOT_INO + 1;
	sb.epoch = 1;
	sb.next_session = 1;
	sb.next_target = 1;
	sb.created_ns = now;
	sb.layout.stripe_unit = a->opts->stripe_unit ? a->opts->stripe_unit : WEFT_STRIPE_UNIT_DEFAULT;
	sb.layout.stripe_count = a->opts->stripe_count;
	sb.layout.replicas = a->opts->replicas ? a->opts->replicas : 1;
	if ((rc = meta_super_put(a->db, txn, &sb)))
		return rc;

	memset(&root, 0, sizeof(root));
	root.attr.ino = WEFT_ROOT_INO;
	root.attr.gen = sb.epoch;
	root.attr.mode = S_IFDIR | 0755;
	root.attr.nlink = 2;
	root.attr.atime_ns = root.attr.mtime_ns = root.attr.ctime_ns = now;
	root.layout = sb.layout;
	root.parent = WEFT_ROOT_INO;
	root.next_cookie = 3;
	return meta_inode_put(a->db, txn, &root);
}

static bool layout_ok(const struct meta_mkfs_opts *o)
{
	uint32_t u = o->stripe_unit;
	if (u && (u < WEFT_STRIPE_UNIT_MIN || u > WEFT_STRIPE_UNIT_MAX || (u & (u - 1))))
		return false;
	return o->replicas <= WEFT_REPLICAS_MAX;
}

static int remove_env(const char *dir)
{
	const char *files[] = { "data.mdb", "lock.mdb" };
	char path[PATH_MAX];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (unlink(path) && errno != ENOENT) {
			int err = -errno;
			log_error("unlink %s: %s", path, strerror(errno));
			return err;
		}
	}
	return 0;
}

int meta_mkfs(const char *dir, const struct meta_mkfs_opts *opts)
{
	struct meta_db *db;
	int rc;
	if (!layout_ok(opts))
		return -EINVAL;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		rc = -errno;
		log_error("mkdir %s: %s", dir, strerror(errno));
		return rc;
	}
	if (has_env(dir)) {
		if (!opts->force)
			return -EEXIST;
		if ((rc = remove_env(dir)))
			return rc;
	}
	if ((rc = env_open(dir, opts->mapsize, &db)))
		return rc;
	struct mkfs_arg a = { db, opts };
	rc = meta_db_write(db, mkfs_apply, &a);
	if (rc)
		log_error("mkfs %s: %s", dir, strerror(-rc));
	meta_db_close(db);
	return rc;
}
