/* libweft: the client core of weft, with no FUSE in it. The mount, the CLI tools and the
 * tests all go through this API.
 *
 * A struct weft_client is a session with meta (registered, kept alive by heartbeats,
 * reconnected when the connection drops) plus connections to every store and the chain
 * tables. Namespace calls are inode-based and take the caller's credentials; they return
 * 0 or -errno. File I/O goes through struct weft_file: reads are split by stripe and all
 * pieces are in flight at once, checked against their CRC32C (a mismatch tries another
 * replica, else -EIO); writes are gathered per file into stripe-unit buffers and sent
 * behind the caller's back, bounded by the pagepool; weft_file_flush, weft_file_fsync and
 * weft_file_release wait for them and return the first error.
 *
 * Conventions (as lmdb.h states them for its calls; each function below says what
 * differs):
 *  - Errors: every int function returns 0 or a negative errno (weft's own codes are in
 *    weft/err.h; weft_strerror names both). Calls that go to meta may also return what
 *    the connection gives: -ETIMEDOUT (no reply in time), -ECONNRESET/-ENOTCONN (meta
 *    unreachable; the session reconnects behind the call), -ESTALE (the inode is gone),
 *    -EACCES/-EPERM (cr may not), -ENOMEM. Names longer than WEFT_NAME_MAX are refused
 *    with -ENAMETOOLONG before anything is sent.
 *  - Ownership: the caller owns every buffer it passes and every struct filled for it;
 *    nothing is kept after a call returns, except where said (a weft_file until
 *    weft_file_release; a read view until weft_read_view_release). Strings in callbacks
 *    are valid during the callback only.
 *  - Threads: every function may be called from any thread, concurrently, and blocks
 *    until its replies are in (never call one from a callback of another). One
 *    weft_file may be used by several threads at once; weft_file_release and
 *    weft_client_close must be the last call on their object. */
#ifndef WEFT_CLIENT_H
#define WEFT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "weft/types.h"

struct weft_client;
struct weft_file;

struct weft_client_opts {
	const char *meta_addr;     /* "host:port" of weft meta */
	const char *key_file;      /* cluster key */
	const char *node_name;     /* this client's name in meta's session table */
	uint64_t pagepool;         /* bytes of write-behind and readahead buffers; 0: 256 MiB */
	bool checksums_off;        /* skip CRC32C (for comparison only) */
	uint32_t readahead_units;  /* stripe units fetched ahead of a sequential reader; 0: 8,
				    * WEFT_READAHEAD_OFF: none */
	uint32_t attr_timeout_ms;  /* how long what this client learned of an inode may be
				    * trusted without asking meta again (the mount's
				    * attr_timeout); 0: ask every time */
	bool wb_attrs;             /* attribute write-back: chmod, chown and utimes of a file
				    * this client created, while a handle of that create is
				    * open, stay here until close, fsync, a recall or a
				    * namespace change (client_int.h, winode.c) */
	bool open_prefetch_off;    /* do not read a listed file's first stripe unit with its
				    * OPEN (prefetch.c; for comparison) */
	bool sync_close;           /* weft_file_close always flushes; else a file created
				    * here with wb_attrs is flushed behind the close
				    * (closebehind.c) */
	bool dir_ahead_off;        /* do not read subdirectories' listings ahead (dirahead.c;
				    * for comparison) */
	bool complete_dirs_off;    /* do not answer lookups of absent names in directories
				    * this client created and holds a lease on (lease.c; for
				    * comparison) */
	bool async_create_off;     /* creates always wait for meta (else a new file in a
				    * directory this client made and claimed is answered
				    * here and sent behind: acreate.c) */
	bool local_open_off;       /* opens always wait for meta (else an open for reading
				    * of a listed file under its lease is answered here and
				    * sent behind: prefetch.c) */
};
#define WEFT_READAHEAD_OFF UINT32_MAX

/* Connects to meta, authenticates, opens a session and fetches the chain tables.
 * Returns 0 or -errno; *err (may be NULL) gets a one-line reason. Errors: the key
 * file's (-ENOENT, -EACCES, -EINVAL malformed), -EINVAL meta_addr not HOST:PORT,
 * -WEFT_EAUTH the key is not the cluster's, -ECONNREFUSED/-ETIMEDOUT meta unreachable,
 * -ENOMEM. Ownership: *out is the caller's until weft_client_close; o's strings are
 * copied. */
int weft_client_open(const struct weft_client_opts *o, struct weft_client **out, char *err,
		     size_t errlen);
/* Closes the session (meta drops its opens) and frees c, after sending what it buffers
 * (attributes) and making every change it had acknowledged durable at meta (as
 * weft_sync). Every weft_file of c must have been released. NULL-safe. Last call on c;
 * no other thread may be using it. */
void weft_client_close(struct weft_client *c);

/* ---- namespace ---- */

/* The entry name in directory parent: *attr (may be NULL) gets its attributes, with the
 * size and mtime this client's buffered writes give. Errors: -ENOENT, -ENOTDIR,
 * -EACCES (no search permission on parent), -ENAMETOOLONG. */
int weft_lookup(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, struct weft_attr *attr);
/* Attributes of ino (size and mtime as this client's buffered writes make them).
 * Errors: -ESTALE no such inode. */
int weft_getattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 struct weft_attr *attr);
/* Sets the attributes of in that valid names (WEFT_SET_* bits, weft/types.h); *out (may
 * be NULL) gets the result. A size change first lands this client's buffered writes,
 * then truncates the file's objects on the stores, then records the size at meta.
 * Errors: -EPERM/-EACCES, -EFBIG (size past WEFT_FILE_SIZE_MAX), -EISDIR or -EINVAL
 * (size of a directory or of a non-regular file), a store's error while truncating. */
int weft_setattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 uint32_t valid, const struct weft_attr *in, struct weft_attr *out);
/* Regular files, fifos, sockets and device nodes (mode carries the type). excl: fail
 * with -EEXIST if the name exists. Errors (these and the calls below that make a name):
 * -EEXIST, -ENOENT/-ENOTDIR (parent), -EACCES (no write permission on parent),
 * -ENAMETOOLONG, -ENOSPC (meta's disk is full), -EMLINK. */
int weft_mknod(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name, uint32_t mode, uint32_t rdev, bool excl, struct weft_attr *attr);
int weft_mkdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name, uint32_t mode, struct weft_attr *attr);
int weft_unlink(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name);
int weft_rmdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name);
/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE. Errors as rename(2): -ENOENT, -EEXIST
 * (NOREPLACE), -ENOTEMPTY, -EISDIR/-ENOTDIR, -EINVAL (a directory into itself),
 * -EACCES. */
int weft_rename(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint64_t newparent, const char *newname, uint32_t flags);
int weft_link(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
	      uint64_t newparent, const char *newname, struct weft_attr *attr);
int weft_symlink(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		 const char *name, const char *target, struct weft_attr *attr);
/* Writes the target, NUL-terminated, into buf (cap bytes, the caller's). Errors:
 * -EINVAL not a symlink, -ENAMETOOLONG the target does not fit in cap. */
int weft_readlink(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, char *buf,
		  size_t cap);

struct weft_dirent_out {
	const char *name;    /* valid during the callback */
	size_t namelen;
	uint64_t ino;
	uint8_t type;        /* DT_* */
	uint64_t next_cookie;
	const struct weft_attr *attr; /* readdirplus only, else NULL */
};
/* Lists entries from cookie (0 = start, including "." and ".."); calls fn for each until
 * fn returns non-zero or the directory ends (max_bytes: the size of each batch asked of
 * meta; 0: 64 KiB). d and its strings are valid during the call of fn only; fn runs in the
 * calling thread and must not call libweft for the same directory. Returns 0 or -errno
 * (-ENOTDIR, -EACCES, -ESTALE). */
int weft_readdir(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 uint64_t cookie, bool plus, size_t max_bytes,
		 int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg);

struct weft_statfs {
	uint64_t blocks, bfree, bavail, files, ffree;
	uint32_t bsize, namemax;
};
/* Space and inodes of the file system (meta's figures, stores summed). */
int weft_statfs(struct weft_client *c, struct weft_statfs *st);
/* sync(1) for this client: flushes what closes left behind (weft_file_close) and
 * returns the first error of one since the last weft_sync; sends every attribute change it buffers (wb_attrs), then
 * asks meta to sync (FSYNC of ino, which must exist: the root, 1, always does) and
 * returns once everything meta acknowledged to anyone before is on its stable storage.
 * Data that open files buffer is not included: weft_file_fsync each. Any thread.
 * Errors: meta's (-ESTALE ino gone, -EIO), -WEFT_EPROTO. */
int weft_sync(struct weft_client *c, const struct weft_cred *cr, uint64_t ino);

/* flags: XATTR_CREATE / XATTR_REPLACE. Errors: -EEXIST, -ENODATA, -ERANGE (name or value
 * over its limit), -EPERM/-EACCES, -ENOTSUP (a namespace weft does not keep). value is
 * copied. */
int weft_setxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		  const char *name, const void *value, size_t size, uint32_t flags);
/* Returns the value's size (copied into buf when cap > 0), -ERANGE if cap is too small,
 * -ENODATA no such attribute. weft_listxattr: the NUL-separated names, likewise. */
ssize_t weft_getxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      const char *name, void *buf, size_t cap);
ssize_t weft_listxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		       void *buf, size_t cap);
int weft_removexattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		     const char *name);
/* access(2) at meta: mask of R_OK, W_OK, X_OK. 0 or -EACCES (-ESTALE). */
int weft_access(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, uint32_t mask);

/* The layout of a file, or the default a directory gives new files (*is_default: it
 * inherits the file system's). weft_setstripe sets a directory's default, or an empty
 * file's layout: -EINVAL bad layout (or no chains of that replica count), -EBUSY (a
 * file with data), -EPERM (not the owner), -ENOTSUP (neither file nor directory). */
int weft_getstripe(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		   struct weft_layout *l, bool *is_default);
int weft_setstripe(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		   const struct weft_layout *l);

/* What weft_migrate did: the layout the file had and the one it has now, and the
 * bytes copied. */
struct weft_migrate_result {
	struct weft_layout from, to;
	uint64_t bytes;
};
/* Restripes regular file ino to want's stripe unit, stripe count and replicas (stripe
 * unit or replicas 0: keep the file's) while other mounts may have it open: their I/O
 * on it waits during the copy and goes on with the new layout, with no error. Copies
 * the data into objects of the layout's next generation, checks it reads back the
 * same, and only then has meta switch the layout; the old objects are then deleted by
 * meta. Blocks for the copy. detail (may be NULL) gets meta's reason for a refusal.
 * Errors: -EPERM not the owner; -EISDIR; -EINVAL not a regular file or an impossible
 * layout (more replicas than storage nodes: detail says so); -EBUSY another migration
 * of the file is in progress; -EIO the copy did not read back the same; errors of the
 * stores and meta. On error the file keeps its layout. */
int weft_migrate(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 const struct weft_layout *want, struct weft_migrate_result *res,
		 char *detail, size_t dcap);

/* ---- files ---- */

/* Creates a regular file (mode: permission bits) and opens it (flags as open(2) without
 * O_CREAT, O_EXCL and O_TRUNC), in one round trip to meta (CREATE_OPEN), committed as
 * one transaction. Without excl an existing file of that name is opened instead (its
 * attributes in attr; nothing truncated). attr (may be NULL): the file's. Errors: as
 * weft_mknod, and as weft_file_open for an existing file. Ownership: *out is the
 * caller's until weft_file_release. */
int weft_create(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint32_t mode, int flags, bool excl, struct weft_file **out,
		struct weft_attr *attr);
/* Opens ino (flags as open(2); O_TRUNC of a regular file opened for writing truncates
 * it, as weft_setattr of size 0). attr (may be NULL) receives fresh attributes. Errors:
 * -EACCES, -EISDIR (a directory for writing), -EINVAL bad access mode, -ESTALE, and
 * weft_setattr's for O_TRUNC (the file is then not left open). Ownership: *out is the
 * caller's until weft_file_release. */
int weft_file_open(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, int flags,
		   struct weft_file **out, struct weft_attr *attr);
/* A regular file listed with READDIRPLUS is opened for reading with its first stripe
 * unit read at the same time as the OPEN (docs/ARCHITECTURE.md, "Small files in one
 * round trip"). A caller whose own cache may still hold the file as `was` shows it (the
 * mount: the kernel's pages, kept across opens while meta shows the file as at the last
 * open) says so first: if the listing showed the same size, mtime and ctime, the next
 * open of was->ino reads nothing early. Any thread. */
void weft_prefetch_cached(struct weft_client *c, const struct weft_attr *was);
/* Reads up to len bytes at off into buf (the caller's); returns bytes read (short at
 * EOF; this client's buffered writes included) or -errno: -EIO when no replica of a
 * piece could be read intact (-WEFT_ECHECKSUM is never returned: a bad piece is read
 * from another replica), -ETIMEDOUT. Any number of threads may read one file at once. */
ssize_t weft_file_read(struct weft_file *f, void *buf, size_t len, uint64_t off);
/* A read handed out without a copy (weft_file_read_view): pieces pointing into
 * libweft's readahead buffers, already checked against their CRC32C, or into buf (a
 * copy, when readahead did not hold the range), valid until weft_read_view_release. */
#define WEFT_VIEW_IOV 16
struct weft_read_view {
	struct iovec iov[WEFT_VIEW_IOV];
	int niov;
	void *buf;                 /* the copy's buffer, or NULL */
	void *pins[WEFT_VIEW_IOV]; /* readahead blocks held */
	int npins;
};
/* As weft_file_read (returns bytes or -errno; v->iov holds them); then always
 * weft_read_view_release, from any thread, before the file is released. The bytes are
 * libweft's until then: read them, do not write them. */
ssize_t weft_file_read_view(struct weft_file *f, size_t len, uint64_t off,
			    struct weft_read_view *v);
void weft_read_view_release(struct weft_file *f, struct weft_read_view *v);
/* Buffers len bytes at off for writing behind (copied: buf is the caller's again on
 * return); returns len or -errno (-EFBIG past the largest file size, or an earlier
 * write's error). Blocks while the pagepool is full. */
ssize_t weft_file_write(struct weft_file *f, const void *buf, size_t len, uint64_t off);
/* Waits for every buffered write, then records the file's size and mtime at meta.
 * Returns the first error since the last flush. */
int weft_file_flush(struct weft_file *f);
/* close(2) of a handle (FUSE FLUSH): weft_file_flush, or, for a file this client created
 * and still holds unshared (wb_attrs, not sync_close), nothing: its flush runs behind
 * the close, at the release, at a recall by meta (before another client's stat or
 * open sees the file) or at weft_sync, and its error is logged and returned by the next
 * weft_sync, as a local file system reports write-back errors at syncfs. */
int weft_file_close(struct weft_file *f);
/* flush, then makes the data durable on every replica. */
int weft_file_fsync(struct weft_file *f);
/* flush and close; returns the first error not yet reported. Frees f whatever it
 * returns: the last call on f (no other thread may be using it). */
int weft_file_release(struct weft_file *f);
/* lseek's SEEK_DATA (data true) and SEEK_HOLE over the file's stripe objects, after
 * its buffered writes reached the stores: *out is the first offset >= off in data (in a
 * hole; the end of the file counts as one). -ENXIO when off is at or past the end, or
 * (SEEK_DATA) only holes follow. */
int weft_file_seek(struct weft_file *f, uint64_t off, bool data, uint64_t *out);
/* Whether a flush since the last call gave meta a new st_blocks (measured on the
 * stores after the data reached them): attributes cached before it are out of date. */
bool weft_file_blocks_changed(struct weft_file *f);
/* Current size as this client knows it (meta's size at open plus local writes). */
uint64_t weft_file_size(struct weft_file *f);
/* True when this client holds ino open for writing (any handle). */
bool weft_open_for_write(struct weft_client *c, uint64_t ino);
/* True when f was opened for writing. */
bool weft_file_writable(struct weft_file *f);

/* ---- leases (coherence between clients) ---- */

/* How long this client may still cache ino's attributes (and, for a directory, the names
 * under it), in ms: what is left of the lease meta granted with its last answer; 0 none. */
uint32_t weft_lease_left_ms(struct weft_client *c, uint64_t ino);
/* Meta recalled a lease: the caller drops its cached copy (what: WEFT_RECALL_* bits of
 * weft/types.h; name/namelen: with WEFT_RECALL_NAME, the entry under directory ino). Called
 * on libweft's notifier thread, never from a caller's request. */
typedef void (*weft_recall_fn)(void *arg, uint64_t ino, uint32_t what, const char *name,
			       size_t namelen);
void weft_client_on_recall(struct weft_client *c, weft_recall_fn fn, void *arg);

/* Counters for `weft stat` style reporting (copied into *st; any thread). */
struct weft_client_stats {
	uint64_t bytes_read, bytes_written, ops_read, ops_written, checksum_retries;
};
void weft_client_stats(struct weft_client *c, struct weft_client_stats *st);

#endif
