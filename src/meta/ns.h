/* The namespace operations of weft meta: everything FUSE asks of a file system that is
 * not reading or writing bytes. Each is a function on one LMDB txn with POSIX rules and
 * Linux's errno choices.
 *
 * DESIGN: the RPC layer decodes a request, applies meta_perm_squash when the file system
 * has root_squash, and calls one of these inside a group-commit mutation (write ops,
 * commit.h) or a read txn (lookup, getattr, readlink, readdir, getxattr, listxattr,
 * access, statfs). A write op that fails has changed nothing visible: ops check
 * everything they can before their first write, and the group commit rolls back an op
 * that fails after writing (commit.h). All writes go through meta_mdb_put/del (mdb.h).
 *
 * Common rules:
 *  - Inodes are named by struct meta_ref {ino, gen}; gen 0 skips the generation check.
 *    A missing inode or a generation mismatch is -ESTALE.
 *  - Names are (bytes, len). Empty: -ENOENT (as Linux for ""); containing '/' or NUL:
 *    -EINVAL; over WEFT_NAME_MAX bytes: -ENAMETOOLONG. '.' and '..' get Linux's errno per
 *    op (see each function).
 *  - A parent that is not a directory: -ENOTDIR. Search (x) permission on a parent is
 *    checked before the entry is looked up (-EACCES), write+search before it is changed.
 *  - New inodes get mode & ~cred->umask (a client whose kernel already applied the umask
 *    sends umask 0), uid/gid per meta_perm_new_owner, times = ctx->now_ns.
 *  - Every out-param attr is the inode's state after the op. Out-params may be NULL.
 *  - Any op may also return -EIO (malformed record) or -ENOSPC (LMDB map full).
 *
 * Threads: a ctx and its txn are used by one thread at a time (LMDB's rule). */
#ifndef WEFT_META_NS_H
#define WEFT_META_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta/inode.h"

struct meta_ctx {
	struct meta_db *db;
	MDB_txn *txn;
	const struct weft_cred *cred;
	int64_t now_ns;  /* time stamped on changes; 0 = meta_now_ns() at each call */
	/* a replayed create takes the inode number (and generation) it had: 0 = allocate */
	uint64_t impose_ino, impose_gen;
};

struct meta_ref {
	uint64_t ino;
	uint64_t gen; /* 0 = any */
};

/* Validates a name as the rules above (no '.'/'..' check). Returns 0 or -errno. */
int meta_ns_check_name(const char *name, size_t len);

/* Looks name up in dir ('.' is dir, '..' its parent). Needs x on dir.
 * Errors: -ENOENT, -ENOTDIR, -EACCES, -ESTALE, name errors. */
int meta_ns_lookup(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		   size_t len, struct weft_attr *out);
/* Attributes of ref. Errors: -ESTALE. */
int meta_ns_getattr(const struct meta_ctx *c, struct meta_ref ref, struct weft_attr *out);
/* Layout of a regular file, or the default of a directory. Errors: -ESTALE; -ENODATA
 * for other types. */
int meta_ns_getlayout(const struct meta_ctx *c, struct meta_ref ref, struct weft_layout *out);
/* The same, and the first byte of a file's written-stripes mask in *written0 (stripes
 * 0-7; 0 for a directory), from one read of the inode. */
int meta_ns_getlayout_written0(const struct meta_ctx *c, struct meta_ref ref,
			       struct weft_layout *out, uint8_t *written0);

/* setattr valid bits. */
#define META_SET_MODE      0x001u
#define META_SET_UID       0x002u
#define META_SET_GID       0x004u
#define META_SET_SIZE      0x008u
#define META_SET_ATIME     0x010u /* to sa->atime_ns */
#define META_SET_MTIME     0x020u /* to sa->mtime_ns */
#define META_SET_ATIME_NOW 0x040u
#define META_SET_MTIME_NOW 0x080u
#define META_SET_CTIME     0x100u /* to sa->ctime_ns (owner or root) */
#define META_SET_HANDLE    0x200u /* size change through a handle opened for writing:
                                   * no permission check (done at open) */
#define META_SET_KILL_PRIV 0x400u /* a write: clear S_ISUID (S_ISGID if S_IXGRP) unless
                                   * root; needs write permission or META_SET_HANDLE */

struct meta_setattr {
	uint32_t valid;
	uint32_t mode; /* permission bits incl. suid/sgid/sticky; the type is kept */
	uint32_t uid, gid;
	uint64_t size;
	int64_t atime_ns, mtime_ns, ctime_ns;
};

/* Changes attributes of ref, as Linux notify_change/setattr_prepare:
 *  - uid: root only, or an owner "changing" to its own uid; else -EPERM.
 *  - gid: root, or the owner to the current gid or a group it is in; else -EPERM.
 *  - mode: owner or root, else -EPERM; a non-root caller outside the file's (new)
 *    group loses S_ISGID. A non-directory's chown/chgrp clears S_ISUID, and S_ISGID
 *    if S_IXGRP is set.
 *  - size: regular files only (-EISDIR directory, -EINVAL others); needs write
 *    permission unless META_SET_HANDLE (-EACCES); -EFBIG over WEFT_FILE_SIZE_MAX; sets
 *    mtime (unless given); a non-root caller's change clears S_ISUID (and S_ISGID if
 *    S_IXGRP). Only the size is recorded: the client trims the objects
 *    itself before it reports a smaller size (a queued trim would race with its later
 *    writes), so nothing is queued for the stores.
 *  - atime/mtime explicit, ctime: owner or root (-EPERM); *_NOW: owner, root, or write
 *    permission (-EACCES).
 *  - kill_priv: regular files (-EINVAL others); write permission or META_SET_HANDLE
 *    (-EACCES); a non-root caller clears S_ISUID, and S_ISGID if S_IXGRP, as a write
 *    does on Linux (file_remove_privs).
 *  - ctime = now after any change.
 * Errors also: -ESTALE, -EINVAL unknown valid bits. */
int meta_ns_setattr(const struct meta_ctx *c, struct meta_ref ref,
		    const struct meta_setattr *sa, struct weft_attr *out);

/* create flags */
#define META_CREATE_EXCL 0x1u /* O_EXCL: an existing name is -EEXIST */

/* Creates a regular file name in dir with mode's permission bits and a layout chosen
 * from dir's default (layout.h). Without META_CREATE_EXCL an existing name is returned
 * instead (*created = false); then a directory is -EISDIR and permission to open it is
 * the caller's business (meta_ns_access). Errors: -EEXIST ('.', '..', or EXCL and
 * present), -ENOENT dir is being removed (nlink 0), -EACCES, -ENOTDIR, -EINVAL layout
 * impossible (fewer nodes than the default's replicas), name errors, -ESTALE. */
int meta_ns_create(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		   size_t len, uint32_t mode, uint32_t flags, struct weft_attr *out,
		   struct weft_layout *layout, bool *created);
/* Creates a node of type mode & S_IFMT: S_IFREG (or 0) as create with EXCL, S_IFIFO,
 * S_IFSOCK; S_IFCHR/S_IFBLK only for uid 0 (else -EPERM); S_IFDIR -EPERM (as Linux
 * vfs_mknod); other types -EINVAL. Errors as create. */
int meta_ns_mknod(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		  size_t len, uint32_t mode, uint32_t rdev, struct weft_attr *out);
/* Creates a directory (nlink 2; parent's nlink + 1) inheriting dir's default layout.
 * Errors as create, plus -EMLINK when dir has META_LINK_MAX links. */
int meta_ns_mkdir(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		  size_t len, uint32_t mode, struct weft_attr *out);
/* Creates a symlink to target (1..WEFT_PATH_MAX-1 bytes; "" is -ENOENT, longer
 * -ENAMETOOLONG). Errors as create. */
int meta_ns_symlink(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		    size_t len, const char *target, size_t target_len, struct weft_attr *out);
/* Copies up to size bytes of ref's target into buf (no NUL) and sets *len to the full
 * length. Errors: -EINVAL not a symlink, -ESTALE. */
int meta_ns_readlink(const struct meta_ctx *c, struct meta_ref ref, char *buf, size_t size,
		     size_t *len);
/* Adds a hard link name in dir to ref. Errors: -EPERM ref is a directory, -EEXIST,
 * -EMLINK at META_LINK_MAX, -ENOENT ref has nlink 0, -EACCES, -ENOTDIR, -ESTALE. */
int meta_ns_link(const struct meta_ctx *c, struct meta_ref ref, struct meta_ref dir,
		 const char *name, size_t len, struct weft_attr *out);
/* Removes a non-directory's name. '.'/'..' and directories are -EISDIR (Linux). On the
 * last link the inode becomes an orphan if any session has it open (freed at the last
 * release, session.h), else it is freed and its objects queued for deletion.
 * Errors: -ENOENT, -EACCES, -EPERM (sticky), -ENOTDIR, -ESTALE, name errors. */
int meta_ns_unlink(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		   size_t len);
/* Removes an empty directory. '.' is -EINVAL, '..' -ENOTEMPTY (Linux).
 * Errors: -ENOTDIR not a directory, -ENOTEMPTY, -ENOENT, -EACCES, -EPERM (sticky). */
int meta_ns_rmdir(const struct meta_ctx *c, struct meta_ref dir, const char *name,
		  size_t len);

/* rename flags: RENAME_NOREPLACE, RENAME_EXCHANGE of <stdio.h>. */
/* Renames, as renameat2(2): '.'/'..' on either side -EBUSY (-EEXIST with NOREPLACE on
 * the new side); unknown flags or NOREPLACE|EXCHANGE -EINVAL; a directory moved into its
 * own subtree -EINVAL; NOREPLACE and the target exists -EEXIST; EXCHANGE and no target
 * -ENOENT; dir over non-dir -ENOTDIR; non-dir over dir -EISDIR; over a non-empty dir
 * -ENOTEMPTY; sticky -EPERM; a directory moved to another parent needs write on itself
 * (-EACCES) and the new parent must have room (-EMLINK). Same inode on both sides: 0,
 * nothing changes. A replaced file's last link is handled as unlink. */
int meta_ns_rename(const struct meta_ctx *c, struct meta_ref olddir, const char *oldname,
		   size_t oldlen, struct meta_ref newdir, const char *newname, size_t newlen,
		   uint32_t flags);

/* One readdir entry; pointers valid during the callback only. */
struct meta_ns_dirent {
	const char *name;
	size_t len;
	uint64_t ino;
	uint8_t type;          /* DT_* */
	uint64_t cookie;       /* pass as `after` to continue after this entry */
	const struct weft_attr *attr; /* readdirplus only, else NULL */
};
/* Return nonzero to stop (e.g. reply buffer full): that entry counts as not consumed. */
typedef int (*meta_ns_readdir_cb)(void *arg, const struct meta_ns_dirent *e);
/* Lists dir's entries with cookie > after in cookie order: '.' (cookie 1), '..'
 * (cookie 2), then entries in creation order. Entries added after the cursor was
 * taken appear later in the listing; removed ones disappear; none appears twice unless
 * renamed meanwhile. plus: also load each entry's attributes. Needs read permission.
 * Returns 0 at the end or when the callback stopped, or -ENOTDIR, -EACCES, -ESTALE. */
int meta_ns_readdir(const struct meta_ctx *c, struct meta_ref dir, uint64_t after, bool plus,
		    meta_ns_readdir_cb cb, void *arg);

struct meta_statfs {
	uint64_t bsize, blocks, bfree, bavail; /* blocks in bsize units */
	uint64_t files, ffree;
	uint32_t namemax;
};
/* Fills st from the targets' capacity (total_bytes/free_bytes, summed by the caller,
 * e.g. meta_chains_capacity) and the inode table. Never fails but for -EIO. */
int meta_ns_statfs(const struct meta_ctx *c, uint64_t total_bytes, uint64_t free_bytes,
		   struct meta_statfs *st);
/* Checks mask (R_OK|W_OK|X_OK, or F_OK = 0) on ref. Errors: -EACCES, -ESTALE. */
int meta_ns_access(const struct meta_ctx *c, struct meta_ref ref, uint32_t mask);
/* A writer reports data written: size = max(size, new_size), mtime = ctime = mtime_ns
 * (0 = now). A non-root writer clears S_ISUID (and S_ISGID if S_IXGRP) like Linux
 * file_remove_privs. No permission check: the caller holds a handle opened for writing.
 * blocks (NULL: unchanged): st_blocks as the writer measured it on the stores.
 * Errors: -EINVAL not a regular file, -EFBIG, -ESTALE. */
int meta_ns_extend(const struct meta_ctx *c, struct meta_ref ref, uint64_t new_size,
		   int64_t mtime_ns, const uint64_t *blocks, struct weft_attr *out);
/* EXTEND's part for the written-stripes mask: ORs mask (len bytes) into the inode's, in
 * the same txn. Errors as meta_ns_extend. */
int meta_ns_mark_written(const struct meta_ctx *c, struct meta_ref ref, const uint8_t *mask,
			 size_t len);
/* Copies the inode's written-stripes mask (META_WRITTEN_MAX bytes) into out, *len its
 * length. Errors: -ESTALE. */
int meta_ns_written(const struct meta_ctx *c, struct meta_ref ref, uint8_t *out, uint16_t *len);

/* Internal helpers shared by ns*.c. */
int64_t meta_ns_now(const struct meta_ctx *c);
/* A directory changed by an op stamped now: its mtime and ctime. An op a client
 * answered itself carries its own time (c->now_ns), and the client's workers send such
 * ops in parallel: one stamped before the directory's last change that reaches meta
 * after it leaves the times alone, so they end at the latest stamp, as the client showed
 * them (a directory's ctime only moves forward; a utimes cannot set it). */
void meta_ns_dir_changed(const struct meta_ctx *c, struct weft_attr *dir, int64_t now);
/* Loads dir by ref and checks it is a directory and cred has mask on it. */
int meta_ns_get_dir(const struct meta_ctx *c, struct meta_ref ref, uint32_t mask,
		    struct meta_inode *dir);
/* Drops one link of a non-directory inode (unlink, rename over): orphan or free. */
int meta_ns_drop_link(const struct meta_ctx *c, struct meta_inode *in);

#endif
