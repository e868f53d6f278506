/* A storage target: one data directory, its identity file and its I/O counters.
 *
 * Layout of the directory (docs/on-disk-format.md, "Storage target"):
 *     weft-target   identity: magic, format version, target UUID, file system UUID,
 *                   target id, flags, incarnation; written once at format, rewritten atomically
 *                   (temp file + rename) when meta assigns the fs UUID and target id
 *     objects/      object files (object.c)
 *     index/        LMDB index (index.c)
 * The identity file is flock()ed for as long as the target is open, so two stores
 * cannot serve one directory.
 *
 * Threads: open/close/set_identity from one thread; the getters, store_target_space
 * and the counters from any thread (counters are relaxed atomics). */
#ifndef WEFT_STORE_TARGET_H
#define WEFT_STORE_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#define STORE_TARGET_MAGIC   "WEFTTGT1"
#define STORE_TARGET_VERSION 2u     /* what a new target gets; 1 is still opened */
#define STORE_TARGET_FILE    "weft-target"
#define STORE_UUID_LEN       16

struct store_target;

struct store_target_opts {
	/* File system this target must belong to; NULL: do not check. A target that has no
	 * fs UUID yet (formatted, never registered) matches any. */
	const uint8_t *fs_uuid;
	/* Checksums on (the default for a new target). Recorded at format; a later open
	 * asking for the other mode fails with -EINVAL. */
	bool no_checksums;
	/* Open a target whatever its recorded checksum mode (store_target_checksums says
	 * which); no_checksums then only applies to a new format. */
	bool any_checksums;
	/* Target UUID to give a new target at format; NULL: a random one. */
	const uint8_t *uuid;
};

struct store_counters {
	uint64_t bytes_read, bytes_written;
	uint64_t ops_read, ops_written;
};

/* Opens the target in dir, formatting it first if dir is missing or empty (a random
 * target UUID from libsodium, format version, flags). *out is the caller's:
 * store_target_close.
 * Errors (each also logged with the path and the reason):
 *   -ENOTEMPTY  dir has files but no weft-target: refuse to format it
 *   -EINVAL     weft-target has a bad magic, length or checksum (not a weft target),
 *               or the checksum mode differs from opts
 *   -ENOTSUP    weft-target has a format version this build does not know
 *   -EXDEV      the target belongs to another file system than opts->fs_uuid
 *   -EBUSY      another process has the target open
 *   -errno      from mkdir/open/read/write/fsync/rename */
int store_target_open(const char *dir, const struct store_target_opts *opts,
		      struct store_target **out);
/* Releases the lock and frees the target. NULL is a no-op. */
void store_target_close(struct store_target *t);

/* Records the file system UUID and the target id meta assigned, durably (temp file,
 * fsync, rename, fsync of dir). Fails with -EXDEV if a different fs UUID is already
 * recorded; otherwise 0 or -errno. */
int store_target_set_identity(struct store_target *t, const uint8_t fs_uuid[STORE_UUID_LEN],
			      uint32_t target_id);

/* Incarnation: a random nonzero number chosen at format and chosen again whenever the
 * store cannot vouch for the directory's contents (objects or index missing, emptied);
 * meta treats a target reporting another incarnation than before as new and empty.
 * 0 for a target formatted before incarnations existed (until the first new one). */
uint64_t store_target_incarnation(const struct store_target *t);
/* Chooses and durably records a new incarnation. 0 or -errno. */
int store_target_new_incarnation(struct store_target *t);

/* The directory path (owned by t). */
const char *store_target_dir(const struct store_target *t);
/* Copies the target's UUID. */
void store_target_uuid(const struct store_target *t, uint8_t out[STORE_UUID_LEN]);
/* Copies the fs UUID and returns true, or returns false if none is recorded yet. */
bool store_target_fs_uuid(const struct store_target *t, uint8_t out[STORE_UUID_LEN]);
/* Target id from meta, or -1 if not assigned yet. */
int64_t store_target_id(const struct store_target *t);
bool store_target_checksums(const struct store_target *t);
/* The target's format version: 1 or 2 (object paths, docs/on-disk-format.md). */
uint32_t store_target_version(const struct store_target *t);

/* Capacity and free bytes (available to unprivileged users) of the file system holding
 * the target, from statvfs. Returns 0 or -errno. */
int store_target_space(const struct store_target *t, uint64_t *capacity, uint64_t *avail);

/* Counts one completed read or write of `bytes` bytes. Any thread. */
void store_target_count_read(struct store_target *t, uint64_t bytes);
void store_target_count_write(struct store_target *t, uint64_t bytes);
/* Snapshot of the counters since open (each field read atomically). */
void store_target_counters(const struct store_target *t, struct store_counters *out);

#endif
