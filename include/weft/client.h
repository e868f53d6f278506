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
 * Threads: every function may be called from any thread, concurrently; one weft_file may
 * be used by several threads at once. */
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
};
#define WEFT_READAHEAD_OFF UINT32_MAX

/* Connects to meta, authenticates, opens a session and fetches the chain tables.
 * Returns 0 or -errno; *err (may be NULL) gets a one-line reason. */
int weft_client_open(const struct weft_client_opts *o, struct weft_client **out, char *err,
		     size_t errlen);
/* Closes the session. Files must have been released. */
void weft_client_close(struct weft_client *c);

/* ---- namespace ---- */

int weft_lookup(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, struct weft_attr *attr);
int weft_getattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 struct weft_attr *attr);
/* valid: WEFT_SET_* bits (weft/types.h); a size change truncates the file's objects. */
int weft_setattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 uint32_t valid, const struct weft_attr *in, struct weft_attr *out);
/* Regular files, fifos, sockets and device nodes (mode carries the type). excl: fail
 * with -EEXIST if the name exists. */
int weft_mknod(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name, uint32_t mode, uint32_t rdev, bool excl, struct weft_attr *attr);
int weft_mkdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name, uint32_t mode, struct weft_attr *attr);
int weft_unlink(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name);
int weft_rmdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
	       const char *name);
/* flags: RENAME_NOREPLACE, RENAME_EXCHANGE */
int weft_rename(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint64_t newparent, const char *newname, uint32_t flags);
int weft_link(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
	      uint64_t newparent, const char *newname, struct weft_attr *attr);
int weft_symlink(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		 const char *name, const char *target, struct weft_attr *attr);
/* Writes the target, NUL-terminated, into buf. */
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
 * fn returns non-zero or the directory ends. Returns 0 or -errno. */
int weft_readdir(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		 uint64_t cookie, bool plus, size_t max_bytes,
		 int (*fn)(void *arg, const struct weft_dirent_out *d), void *arg);

struct weft_statfs {
	uint64_t blocks, bfree, bavail, files, ffree;
	uint32_t bsize, namemax;
};
int weft_statfs(struct weft_client *c, struct weft_statfs *st);

/* flags: XATTR_CREATE / XATTR_REPLACE */
int weft_setxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		  const char *name, const void *value, size_t size, uint32_t flags);
/* Returns the value's size (copied when cap > 0), -ERANGE if cap is too small. */
ssize_t weft_getxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		      const char *name, void *buf, size_t cap);
ssize_t weft_listxattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		       void *buf, size_t cap);
int weft_removexattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		     const char *name);
int weft_access(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, uint32_t mask);

int weft_getstripe(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		   struct weft_layout *l, bool *is_default);
int weft_setstripe(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
		   const struct weft_layout *l);

/* ---- files ---- */

/* Creates a regular file (mode: permission bits) and opens it (flags as open(2) without
 * O_CREAT, O_EXCL and O_TRUNC): weft_mknod, then weft_file_open. attr: the new file's. */
int weft_create(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		const char *name, uint32_t mode, int flags, bool excl, struct weft_file **out,
		struct weft_attr *attr);
/* Opens ino (flags as open(2); O_TRUNC truncates). attr receives fresh attributes. */
int weft_file_open(struct weft_client *c, const struct weft_cred *cr, uint64_t ino, int flags,
		   struct weft_file **out, struct weft_attr *attr);
/* Reads up to len bytes at off; returns bytes read (short at EOF) or -errno. */
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
 * weft_read_view_release. */
ssize_t weft_file_read_view(struct weft_file *f, size_t len, uint64_t off,
			    struct weft_read_view *v);
void weft_read_view_release(struct weft_file *f, struct weft_read_view *v);
/* Buffers len bytes at off for writing behind; returns len or -errno (-EFBIG past the
 * largest file size, or an earlier write's error). */
ssize_t weft_file_write(struct weft_file *f, const void *buf, size_t len, uint64_t off);
/* Waits for every buffered write, then records the file's size and mtime at meta.
 * Returns the first error since the last flush. */
int weft_file_flush(struct weft_file *f);
/* flush, then makes the data durable on every replica. */
int weft_file_fsync(struct weft_file *f);
/* flush and close; returns the first error not yet reported. */
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

/* Counters for `weft stat` style reporting. */
struct weft_client_stats {
	uint64_t bytes_read, bytes_written, ops_read, ops_written, checksum_retries;
};
void weft_client_stats(struct weft_client *c, struct weft_client_stats *st);

#endif
