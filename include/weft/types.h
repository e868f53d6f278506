/* Types shared by every part of weft and carried on the wire: attributes, layouts,
 * credentials, limits. Plain data; no ownership. */
#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

#include <stdint.h>

#define WEFT_NAME_MAX      255          /* bytes in one directory entry name */
#define WEFT_PATH_MAX      4096         /* bytes in a symlink target, incl. NUL */
#define WEFT_XATTR_NAME_MAX 255
#define WEFT_XATTR_SIZE_MAX 65536       /* bytes in one xattr value */
#define WEFT_GROUPS_MAX    32           /* supplementary groups sent per request */
#define WEFT_NODE_MAX      63           /* bytes in a node name */
#define WEFT_ADDR_MAX      63           /* bytes in "host:port" */
#define WEFT_ROOT_INO      1ULL
/* Inode numbers a client gives the files it creates asynchronously: bit 62, its session
 * id above bit 24 (session ids are never reused) and its own count below. Meta hands
 * out numbers below bit 62. */
#define WEFT_INO_CLIENT         (1ULL << 62)
#define WEFT_INO_SESSION_SHIFT  24
#define WEFT_INO_SESSION_MAX    ((1ULL << (62 - WEFT_INO_SESSION_SHIFT)) - 1)
#define WEFT_INO_COUNT_MAX      ((1ULL << WEFT_INO_SESSION_SHIFT) - 1)
#define WEFT_NOBODY        65534u       /* uid and gid of a squashed root */
/* Largest file size: 4 EiB (2^62 bytes). off_t could name up to 2^63 - 1, but the
 * kernel refuses an offset at that edge with EINVAL before weft sees it; a cap one bit
 * lower makes "past the largest size" reachable, answered with EFBIG, and leaves
 * headroom in offset + length arithmetic everywhere. */
#define WEFT_FILE_SIZE_MAX (1LL << 62)
#define WEFT_CHUNK_SIZE    65536u       /* CRC32C chunk of an object (see on-disk-format.md) */
#define WEFT_REPLICAS_MAX  3

/* Attributes of one inode, as meta stores and serves them. Times in ns since epoch. */
struct weft_attr {
	uint64_t ino;
	uint64_t gen;     /* generation: bumped when an inode number is reused */
	uint32_t mode;    /* type and permission bits, as st_mode */
	uint32_t nlink;
	uint32_t uid, gid;
	uint32_t rdev;
	uint32_t blksize;
	uint64_t size;
	uint64_t blocks;  /* 512-byte units */
	int64_t atime_ns, mtime_ns, ctime_ns;
};

/* How a file's bytes are placed. Block b lives in stripe s = b % stripe_count; stripe s is
 * the object (ino, s + gen * WEFT_LAYOUT_GEN_STRIDE) on every member of chain
 * (first_chain + s) % chain_count of the table for `replicas`. chain_count is the table's
 * size when the file was created, so a table that grows later does not move existing
 * files. gen, the layout generation, is 0 at create and + 1 at every `weft migrate`: the
 * new layout's objects have names of their own, so both sets live side by side while
 * the data is copied. */
struct weft_layout {
	uint32_t stripe_unit;   /* bytes, 64 KiB .. 16 MiB, power of two */
	uint32_t stripe_count;  /* 1 .. chain_count; 0 in a directory default = "all chains" */
	uint32_t first_chain;
	uint32_t chain_count;
	uint8_t replicas;       /* 1 .. 3 */
	uint32_t gen;           /* layout generation, 0 .. WEFT_LAYOUT_GEN_MAX */
};

/* Object numbers of a generation: stripe s of generation g is object s + g * stride, so
 * stripe counts stay below the stride and generations below 65536. */
#define WEFT_LAYOUT_GEN_STRIDE 65536u
#define WEFT_LAYOUT_GEN_MAX 65535u

#define WEFT_STRIPE_UNIT_MIN (64u * 1024)
#define WEFT_STRIPE_UNIT_MAX (16u * 1024 * 1024)
#define WEFT_STRIPE_UNIT_DEFAULT (1u * 1024 * 1024)

/* Who is asking: sent with every namespace request. */
struct weft_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[WEFT_GROUPS_MAX];
	uint32_t umask;
	/* 1: the caller is in more supplementary groups than groups[] holds. Meta then
	 * fails closed: a group it cannot see may be the file's, so a caller it does not
	 * find in the file's group gets only what both the group and other bits allow. */
	uint8_t more_groups;
};

/* Member states of a chain. */
/* REBUILDING: a replacement member copying the whole chain from the others (gets new
 * writes, serves no reads), as SYNCING but with no missed log to go by. */
enum weft_member_state { WEFT_MEMBER_SERVING = 0, WEFT_MEMBER_SYNCING = 1, WEFT_MEMBER_OFFLINE = 2,
			 WEFT_MEMBER_REBUILDING = 3 };

/* weft_setattr valid bits (also on the wire, MSG_SETATTR) */
#define WEFT_SET_MODE      0x01u
#define WEFT_SET_UID       0x02u
#define WEFT_SET_GID       0x04u
#define WEFT_SET_SIZE      0x08u
#define WEFT_SET_ATIME     0x10u
#define WEFT_SET_MTIME     0x20u
#define WEFT_SET_ATIME_NOW 0x40u
#define WEFT_SET_MTIME_NOW 0x80u
#define WEFT_SET_CTIME     0x100u
/* the caller holds a handle of this file opened for writing (ftruncate): a size change
 * or WEFT_SET_KILL_PRIV needs no write permission now (the open checked it) */
#define WEFT_SET_HANDLE    0x200u
/* clear S_ISUID, and S_ISGID if S_IXGRP (a write by a caller without CAP_FSETID) */
#define WEFT_SET_KILL_PRIV 0x400u
/* libweft's write-back of buffered attributes (wbattr.c): meta answers once the change
 * is committed, and it is durable with meta's next sync (fsync sends FSYNC after it), as
 * EXTEND's size is. Not accepted with WEFT_SET_SIZE. */
#define WEFT_SET_DEFERRED  0x800u
/* with WEFT_SET_DEFERRED: sent behind a close that returned already (closebehind.c), so
 * nobody waits for the answer: meta may hold it a few ms to share a commit with the next
 * op someone waits for (commit.h, linger). EXTEND's `behind` is the same. */
#define WEFT_SET_BEHIND    0x1000u

/* what a lease recall covers (weft_recall_fn; also on the wire, MSG_RECALL) */
#define WEFT_RECALL_ATTR 0x1u /* attributes */
#define WEFT_RECALL_DATA 0x2u /* cached pages (and attributes) */
#define WEFT_RECALL_NAME 0x4u /* the entry `name` under ino (and ino's attributes) */
/* the file's layout is being migrated: flush its writes, then hold its I/O until meta
 * says the migration is over (GETSTRIPE's migrating 0) and take the layout it gives */
#define WEFT_RECALL_LAYOUT 0x8u
/* the claim on directory ino (WEFT_CREATE_CLAIM) ends: answer once the creates sent in
 * it are answered, and create there through meta from now on */
#define WEFT_RECALL_CLAIM 0x10u

#endif
