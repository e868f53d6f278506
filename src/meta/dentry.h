/* Directory entries: the "dirents" table (parent + name -> child) and its readdir index
 * "cookies" (parent + cookie -> name), kept in step by every function here.
 *
 * Each entry gets a cookie from its directory's next_cookie counter when it is added;
 * cookies only grow, so a readdir cursor ("entries with cookie > c") stays valid while
 * entries are added and removed. Cookies 1 and 2 are '.' and '..'; entries start at 3.
 *
 * Threads: plain functions on a caller's txn. Names are bytes (name, len), already
 * validated by the caller. */
#ifndef WEFT_META_DENTRY_H
#define WEFT_META_DENTRY_H

#include <stdint.h>

#include "meta/inode.h"

#define META_COOKIE_DOT    1
#define META_COOKIE_DOTDOT 2
#define META_COOKIE_FIRST  3

struct meta_dentry_val {
	uint64_t ino;
	uint64_t cookie;
	uint8_t type; /* DT_* of <dirent.h> */
};

/* Looks name up in parent. Errors: -ENOENT; -EIO malformed record. */
int meta_dentry_get(struct meta_db *db, MDB_txn *txn, uint64_t parent, const char *name,
		    size_t len, struct meta_dentry_val *out);
/* Adds name -> (ino, type) to dir, taking a cookie from dir->next_cookie (the caller
 * writes dir back). Errors: -EEXIST name present; -errno from LMDB. */
int meta_dentry_add(struct meta_db *db, MDB_txn *txn, struct meta_inode *dir,
		    const char *name, size_t len, uint64_t ino, uint8_t type);
/* Points an existing entry at (ino, type), keeping its cookie (RENAME_EXCHANGE). */
int meta_dentry_set(struct meta_db *db, MDB_txn *txn, uint64_t parent, const char *name,
		    size_t len, const struct meta_dentry_val *val);
/* Removes name from parent. Errors: -ENOENT. */
int meta_dentry_del(struct meta_db *db, MDB_txn *txn, uint64_t parent, const char *name,
		    size_t len);
/* Returns 1 when parent has no entries, 0 when it has some, or -errno. */
int meta_dentry_empty(struct meta_db *db, MDB_txn *txn, uint64_t parent);
/* Finds the first entry of parent with cookie > after. Copies its name into name
 * (WEFT_NAME_MAX + 1 bytes, NUL-terminated) and its value into *out.
 * Errors: -ENOENT no more entries; -EIO malformed record. */
int meta_dentry_next(struct meta_db *db, MDB_txn *txn, uint64_t parent, uint64_t after,
		     char *name, size_t *len, struct meta_dentry_val *out);

/* DT_* type of a mode. */
uint8_t meta_dentry_type(uint32_t mode);

#endif
