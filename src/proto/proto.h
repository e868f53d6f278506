/* The weft wire protocol: the frame, every opcode, every message with its fields and
 * limits. Defined once, here; docs/protocol.md describes the same in prose.
 *
 * A frame is a fixed 32-byte little-endian header, then `payload_len` bytes of encoded
 * message, then `bulk_len` bytes of bulk data (file bytes, directory listings, xattr
 * values). Messages are encoded field by field by explicit functions generated from the
 * tables below, never by sending a C struct. Decoders check every length before reading
 * and name the first problem; strings and byte fields in a decoded message borrow from
 * the frame's payload and live as long as it does. */
#ifndef WEFT_PROTO_H
#define WEFT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/buf.h"
#include "weft/types.h"

/* ---- frame ---- */

#define WEFT_MAGIC        0x54464557u /* "WEFT" little-endian */
/* 2: ENTRY carries a lease, SESSION_OPEN flags, TARGETS records flags and memberships,
 * chains up to replicas + 1 members, OBJ_DATA/OBJ_WRITTEN/EXTEND fields of the sparse
 * work; version 1 peers are refused at HELLO with a one-line error.
 * 3: node credentials: HELLO carries the credential's serial, its reply the server's role
 * and name, and the MACs bind roles, names and version (net/auth.h); NODE_* requests; a
 * layout carries its generation (weft migrate); capabilities in OPENED and OBJ_*.
 * 4: HELLO and its reply carry the wire level; every frame after AUTH ends with a 16-byte
 * tag, and at the privacy level its body is encrypted (net/wire.h). Older peers are
 * refused at HELLO.
 * 5: ENTRY and OPENED end with dir_lease (the renewal of the caller's lease on the
 * directory the request named); version 4 peers are refused at HELLO (a 4 client would
 * fail to decode every ENTRY reply).
 * 6: READDIRPLUS entries of kind 2 carry written0 after the capability, and OPEN carries
 * behind (opens answered by the mount); these came first without a new version, so a
 * mount and a meta of different builds misread each other. Older peers are refused at
 * HELLO.
 * 7: CREATE/MKDIR carry ino and time_ns (a mkdir answered by the mount: acreate.c).
 * Older peers are refused at HELLO. */
#define WEFT_PROTO_MIN    7
#define WEFT_PROTO_MAX    7
#define WEFT_HDR_SIZE     32
#define WEFT_PAYLOAD_MAX  (64u * 1024)
#define WEFT_BULK_MAX     (16u * 1024 * 1024)

#define WEFT_F_REPLY   0x1u  /* this frame answers request `reqid` */
#define WEFT_F_ONEWAY  0x2u  /* request expects no reply */

struct weft_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t opcode;
	uint32_t flags;
	int32_t status;      /* replies: 0 or -errno / -WEFT_E*; requests: 0 */
	uint64_t reqid;
	uint32_t payload_len;
	uint32_t bulk_len;
};

void proto_hdr_encode(uint8_t out[WEFT_HDR_SIZE], const struct weft_hdr *h);
/* Decodes and validates a header (magic, version range, lengths within limits, flags
 * known). Returns 0, or -WEFT_EPROTO with *why naming the problem. */
int proto_hdr_decode(const uint8_t in[WEFT_HDR_SIZE], struct weft_hdr *h, const char **why);

/* Largest written-stripes mask (OPENED, EXTEND): one bit per stripe object. */
#define WEFT_WRITTEN_MAX 512

/* ---- field kinds used in message tables ---- */

/* A string or byte field: borrowed pointer and length. Strings are not NUL-terminated. */
struct weft_str {
	const char *p;
	uint32_t len;
};

/* One CRC32C per piece of bulk data split at object-chunk boundaries. */
#define WEFT_CRCS_MAX (WEFT_BULK_MAX / WEFT_CHUNK_SIZE + 2)
struct weft_crcs {
	uint32_t n;
	uint32_t v[WEFT_CRCS_MAX];
};

/* F(kind, name, limit): kinds U8 U16 U32 U64 I64 (limit unused), STR (limit = max bytes),
 * FIX (limit = exact bytes), ATTR, LAYOUT, CRED, CRCS. */

/* ---- handshake (always the first frames of a connection) ---- */

#define WEFT_NONCE_LEN 32
#define WEFT_MAC_LEN   32

enum weft_role { WEFT_ROLE_CLIENT = 1, WEFT_ROLE_STORE = 2, WEFT_ROLE_ADMIN = 3, WEFT_ROLE_META = 4 };

/* client -> server: offer versions and a fresh nonce */
#define MSG_HELLO(F) \
	F(U16, ver_min, 0) F(U16, ver_max, 0) F(U8, role, 0) \
	F(FIX, nonce, WEFT_NONCE_LEN) F(STR, name, WEFT_NODE_MAX) F(U32, serial, 0) \
	F(U8, wire, 0)
/* server -> client: chosen version, the server's fresh nonce, its role and name, and the
 * wire protection of the frames after AUTH (wire: net/wire.h) */
#define MSG_HELLO_REPLY(F) \
	F(U16, version, 0) F(FIX, nonce, WEFT_NONCE_LEN) F(U8, role, 0) \
	F(STR, name, WEFT_NODE_MAX) F(U8, wire, 0)
/* client -> server: proof the client holds its credential; the reply (status 0) carries
 * the server's proof in the same message. MACs: net/auth.h. */
#define MSG_AUTH(F) F(FIX, mac, WEFT_MAC_LEN)

/* ---- generic ---- */

#define MSG_EMPTY(F)
#define MSG_PING(F) F(U64, token, 0)
/* error detail sent with a non-zero status when there is more to say */
#define MSG_ERROR(F) F(U32, target, 0) F(STR, detail, 255)

/* ---- namespace (client -> meta); (ino, gen) pairs let meta refuse stale handles ---- */

#define MSG_LOOKUP(F) F(CRED, cred, 0) F(U64, parent, 0) F(STR, name, WEFT_NAME_MAX)
/* lease: ms the client may cache attr (and for a directory the names under it); 0 none
 * (lease.h in meta). dir_lease: the caller's lease on the directory the request named
 * (LOOKUP's parent, the directory a CREATE, MKDIR, SYMLINK or LINK made the name in)
 * was still live and is renewed for this many ms; 0: not renewed (it may have lapsed,
 * the directory is busy, or the op names none). A client that keeps a directory's
 * names complete under its lease extends it by this only (lease.h, meta_leases_renew). */
#define MSG_ENTRY(F) F(ATTR, attr, 0) F(LAYOUT, layout, 0) F(U32, lease, 0) F(U32, dir_lease, 0)
#define MSG_INO(F) F(CRED, cred, 0) F(U64, ino, 0) F(U64, gen, 0)
#define MSG_ATTR(F) F(ATTR, attr, 0)
/* valid: WEFT_SET_* bits (weft/types.h) */
#define MSG_SETATTR(F) \
	F(CRED, cred, 0) F(U64, ino, 0) F(U64, gen, 0) F(U32, valid, 0) F(U32, mode, 0) \
	F(U32, uid, 0) F(U32, gid, 0) F(U64, size, 0) F(I64, atime_ns, 0) F(I64, mtime_ns, 0) \
	F(I64, ctime_ns, 0)
/* create/mknod/mkdir: flags WEFT_CREATE_EXCL; mode carries the type. ino, time_ns: 0, or
 * (MKDIR with WEFT_CREATE_EXCL) the number and time the client gave a directory it
 * answered the mkdir of itself (a number of its session's, WEFT_INO_CLIENT) */
#define MSG_CREATE(F) \
	F(CRED, cred, 0) F(U64, parent, 0) F(STR, name, WEFT_NAME_MAX) F(U32, mode, 0) \
	F(U32, rdev, 0) F(U32, flags, 0) F(U64, ino, 0) F(I64, time_ns, 0)
/* unlink/rmdir: time_ns, 0 or the time the client answered it at (an asynchronous
 * unlink, stamped on the parent and the file as CREATE_OPEN's time_ns) */
#define MSG_NAME(F) F(CRED, cred, 0) F(U64, parent, 0) F(STR, name, WEFT_NAME_MAX) \
	F(I64, time_ns, 0)
/* flags: RENAME_NOREPLACE (1), RENAME_EXCHANGE (2) as Linux defines them */
#define MSG_RENAME(F) \
	F(CRED, cred, 0) F(U64, parent, 0) F(STR, name, WEFT_NAME_MAX) F(U64, newparent, 0) \
	F(STR, newname, WEFT_NAME_MAX) F(U32, flags, 0) F(I64, time_ns, 0)
#define MSG_LINK(F) \
	F(CRED, cred, 0) F(U64, ino, 0) F(U64, newparent, 0) F(STR, newname, WEFT_NAME_MAX)
#define MSG_SYMLINK(F) \
	F(CRED, cred, 0) F(U64, parent, 0) F(STR, name, WEFT_NAME_MAX) \
	F(STR, target, WEFT_PATH_MAX - 1)
#define MSG_PATH(F) F(STR, path, WEFT_PATH_MAX - 1)
/* readdir: reply is MSG_DIRLIST with entries in bulk (see weft_dirent_*). plus: 0 names,
 * WEFT_READDIR_PLUS (1) with attributes, WEFT_READDIR_PLUS_CAP (2) with attributes and,
 * for each regular file, its layout and a short-lived read capability when cred may read
 * it (libweft reads the first stripe unit at the same time as the OPEN that follows). A
 * meta that knows only 1 answers 2 as 1. WEFT_READDIR_LEASES (bit 0x80, with 1 or 2):
 * meta also grants the caller's session a lease on each entry it lists (and on the
 * directory, for the names), and says so per entry (weft_dirent.lease): the kernel then
 * caches the names and attributes of a listing as it does a LOOKUP's. A meta that does
 * not know the bit answers as 1 (no leases). */
#define WEFT_READDIR_PLUS     1
#define WEFT_READDIR_PLUS_CAP 2
#define WEFT_READDIR_LEASES   0x80
#define MSG_READDIR(F) \
	F(CRED, cred, 0) F(U64, ino, 0) F(U64, cookie, 0) F(U32, max_bytes, 0) F(U8, plus, 0)
#define MSG_DIRLIST(F) F(U32, count, 0) F(U8, eof, 0)
#define MSG_STATFS_REPLY(F) \
	F(U64, blocks, 0) F(U64, bfree, 0) F(U64, bavail, 0) F(U64, files, 0) F(U64, ffree, 0) \
	F(U32, bsize, 0) F(U32, namemax, 0)
/* xattr value travels in bulk; size = 0 asks for the size only */
#define MSG_XATTR(F) \
	F(CRED, cred, 0) F(U64, ino, 0) F(STR, name, WEFT_XATTR_NAME_MAX) F(U32, flags, 0) \
	F(U32, size, 0)
#define MSG_SIZE(F) F(U32, size, 0)
#define MSG_ACCESS(F) F(CRED, cred, 0) F(U64, ino, 0) F(U32, mask, 0)
/* open: flags are the open(2) flags; reply MSG_OPENED. behind: 1 when the client already
 * answered the open itself from a listing under a lease (libweft's prefetch.c) and does
 * not wait for the reply: meta counts the open and pins the lease as for any open, and
 * mints no capability. */
#define MSG_OPEN(F) F(CRED, cred, 0) F(U64, ino, 0) F(U32, flags, 0) F(U64, session, 0) \
	F(U8, behind, 0)
/* created: the file did not exist before this request (CREATE_OPEN); cap: the
 * capability for the file's objects (WEFT_CAP_READ, with WEFT_CAP_WRITE if opened for
 * writing), zeros for a directory; pattr: when created, the parent directory's
 * attributes after the create (else zeros), which a client holding a lease on the
 * parent may answer the kernel's next GETATTR of it with */
#define MSG_OPENED(F) \
	F(ATTR, attr, 0) F(LAYOUT, layout, 0) F(U64, handle, 0) F(U32, lease, 0) F(U8, created, 0) \
	F(STR, written, WEFT_WRITTEN_MAX) F(FIX, cap, WEFT_CAP_LEN) F(ATTR, pattr, 0) \
	F(U32, dir_lease, 0)
#define MSG_RELEASE(F) F(U64, ino, 0) F(U64, handle, 0) F(U64, session, 0)
/* reopen: after meta lost the session (a restart), the client's new session takes back
 * the count opens it holds of ino; no access check (they were checked at open) */
#define MSG_REOPEN(F) F(U64, ino, 0) F(U32, count, 0) F(U64, session, 0)
/* create_open: create a regular file (flags: WEFT_CREATE_EXCL) and open it (open_flags as
 * open(2)) in one op; reply MSG_OPENED. As open(2) with O_CREAT: a file this op created
 * is opened whatever its new mode allows; an existing one is checked as OPEN checks.
 * ino: 0, or the number the client gave the file itself (an asynchronous create: one
 * of its session's, WEFT_INO_CLIENT), with time_ns the time it stamped on it. */
#define MSG_CREATE_OPEN(F) \
	F(CRED, cred, 0) F(U64, parent, 0) F(STR, name, WEFT_NAME_MAX) F(U32, mode, 0) \
	F(U32, flags, 0) F(U32, open_flags, 0) F(U64, session, 0) F(U64, ino, 0) \
	F(I64, time_ns, 0)
/* writer reports size = max(size, new size) and mtime after data is on the stores, and
 * the stripe objects it wrote (written: bit s of byte s/8 = stripe s; meta ORs it in).
 * has_blocks: blocks (512-byte units) is what the stores hold for the file, one copy,
 * measured after the writer's data reached them; meta keeps it as st_blocks. behind: 1
 * when sent behind a close that returned already (WEFT_SET_BEHIND) */
#define MSG_EXTEND(F) F(CRED, cred, 0) F(U64, ino, 0) F(U64, size, 0) F(I64, mtime_ns, 0) \
	F(STR, written, WEFT_WRITTEN_MAX) F(U8, has_blocks, 0) F(U64, blocks, 0) \
	F(U8, behind, 0)
#define MSG_SETSTRIPE(F) F(CRED, cred, 0) F(U64, ino, 0) F(LAYOUT, layout, 0)
/* migrating: 1 while a `weft migrate` of the file is between BEGIN and SWITCH (a client
 * that froze the file's I/O for it waits until this is 0, then takes the layout) */
#define MSG_LAYOUT(F) F(LAYOUT, layout, 0) F(U8, is_default, 0) F(U8, migrating, 0)
/* weft migrate, in steps (WEFT_MIGRATE_*): BEGIN {layout: the stripe unit, stripe count
 * and replicas wanted} freezes the file's I/O on every other mount and answers with the
 * current layout and the new one; SWITCH {layout: BEGIN's new one, written: the new
 * layout's written-stripes mask} makes it the file's layout; ABORT gives up. */
#define WEFT_MIGRATE_BEGIN 1
#define WEFT_MIGRATE_SWITCH 2
#define WEFT_MIGRATE_ABORT 3
#define MSG_MIGRATE(F) \
	F(CRED, cred, 0) F(U64, ino, 0) F(U8, step, 0) F(LAYOUT, layout, 0) \
	F(STR, written, WEFT_WRITTEN_MAX)
#define MSG_MIGRATE_REPLY(F) F(LAYOUT, from, 0) F(LAYOUT, to, 0)

/* ---- sessions and leases (client <-> meta) ---- */

/* flags: WEFT_SESSION_RECALLS, the client answers RECALL (it gets leases only then) */
#define MSG_SESSION_OPEN(F) F(STR, node, WEFT_NODE_MAX) F(U32, flags, 0)
#define WEFT_SESSION_RECALLS 0x1u
/* A client's replay, after meta restarted, of a mutation meta had answered (op, its
 * request payload; its request bulk as this frame's bulk) with transaction number
 * transno; ino and gen: the inode a create-like op was given, imposed again. Meta
 * answers 0 at once (payload empty) if its database holds transno, else applies op and
 * replies as to op. Every reply to a namespace mutation, FSYNC, REPLAY, SESSION_OPEN and
 * SESSION_BEAT carries a DURABLE record as its bulk (WEFT_DURABLE_LEN bytes, and no
 * other bulk): transno u64 (the mutation's, 0 for none), synced u64 (the last
 * transaction number on meta's stable storage), boot u64 (meta's incarnation). */
#define MSG_REPLAY(F) \
	F(U64, transno, 0) F(U64, ino, 0) F(U64, gen, 0) F(U16, op, 0) \
	F(STR, payload, WEFT_REPLAY_PAYLOAD_MAX)
/* A client's namespace mutation tagged for meta's reply cache (meta/replies.h): client
 * (random per libweft instance) and xid (kept when the request is sent again after its
 * connection died) name it; done_below: the client has every reply below that xid.
 * Meta applies op once: a copy whose reply it recorded is answered from the record, one
 * still being applied gets WEFT_ERECOVERING (ask again). Reply: op's. */
#define MSG_TAGGED(F) \
	F(U64, client, 0) F(U64, xid, 0) F(U64, done_below, 0) F(U16, op, 0) \
	F(STR, payload, WEFT_REPLAY_PAYLOAD_MAX)
#define WEFT_DURABLE_LEN 24
#define WEFT_REPLAY_PAYLOAD_MAX 60000 /* a mutation's request is far smaller */
#define MSG_SESSION(F) F(U64, session, 0) F(U32, lease_ms, 0) F(FIX, fsid, 16)
#define MSG_SESSION_ID(F) F(U64, session, 0)
/* meta -> client over the client's connection: give back the lease on ino. what:
 * WEFT_RECALL_* bits; name: with WEFT_RECALL_NAME, the entry under directory ino that
 * changes. The client invalidates its cache of them, then replies (EMPTY). */
#define MSG_RECALL(F) F(U64, ino, 0) F(U32, what, 0) F(STR, name, WEFT_NAME_MAX)
/* WEFT_RECALL_* bits: include/weft/types.h (the public API passes them on) */

/* ---- targets and chains (store/admin <-> meta) ---- */

#define MSG_TARGET_REGISTER(F) \
	F(FIX, uuid, 16) F(STR, node, WEFT_NODE_MAX) F(STR, addr, WEFT_ADDR_MAX) \
	F(U64, capacity, 0) F(U64, free, 0) F(U64, incarnation, 0) F(U64, wseq, 0)
/* untrusted: meta cannot vouch for the target's directory (another incarnation, or an
 * older write sequence than it reported): the store sets its objects aside, starts
 * empty, and registers again with a new incarnation */
#define MSG_TARGET_REGISTERED(F) F(U32, target, 0) F(FIX, fsid, 16) F(U32, lease_ms, 0) \
	F(U8, checksums, 0) F(U8, untrusted, 0)
#define MSG_TARGET_HEARTBEAT(F) \
	F(U32, target, 0) F(U64, capacity, 0) F(U64, free, 0) F(U64, bytes_read, 0) \
	F(U64, bytes_written, 0) F(U64, ops_read, 0) F(U64, ops_written, 0) F(U64, wseq, 0)
#define MSG_HEARTBEAT_REPLY(F) F(U32, lease_ms, 0) F(U64, chains_version, 0)
/* reply: MSG_CHAINS with the encoded tables in bulk (src/proto/chainset.h) */
#define MSG_CHAINS_GET(F) F(U64, known_version, 0)
#define MSG_CHAINS(F) F(U64, version, 0)
#define MSG_TARGET_FAILED(F) F(U32, reporter, 0) F(U32, target, 0) F(U32, chain, 0) \
	F(U8, replicas, 0)
/* reply to TARGETS_GET (weft status): count records in bulk, each: u32 id, u8 state
 * (enum weft_member_state), u16 len + node, u16 len + addr, u64 capacity, u64 free,
 * u64 bytes_read, u64 bytes_written, u64 ops_read, u64 ops_written, u64 silent_ms (time
 * since the last heartbeat or registration), then resync progress as the target last
 * reported it: u64 objects_left, u64 bytes_left, u64 rate (bytes/s; all 0: not syncing) */
#define MSG_TARGETS(F) F(U32, count, 0)

/* ---- capabilities (meta -> client -> store; net/auth.h, docs/SECURITY.md) ---- */

/* A capability: what a client node may do to one file's objects, minted by meta, checked
 * by every store without asking meta. WEFT_CAP_LEN bytes, little-endian:
 *   0 ino u64 | 8 session u64 | 16 expiry u64 (ms since the epoch, CLOCK_REALTIME) |
 *   24 period u32 (the key's rotation period) | 28 rights u8 (WEFT_CAP_*) | 29 3 zero bytes |
 *   32 mac: the first 16 bytes of HMAC-SHA256(cap key of period, "weft-cap" | bytes 0..31 |
 *      node name), node = the name the client's connection authenticated as.
 * A client role's OBJ_WRITE, OBJ_TRUNCATE, OBJ_FSYNC (rw) and OBJ_READ, OBJ_STAT,
 * OBJ_EXTENT (r) must carry a valid one for the object's inode; stores and meta send
 * zeros (they are exempt). */
#define WEFT_CAP_LEN    48
#define WEFT_CAP_READ   0x1u
#define WEFT_CAP_WRITE  0x2u /* always with READ */
/* client -> meta: a capability for ino in session. With has_old, the renewal of a
 * capability meta issued to this node (its MAC is checked, it may have expired): the
 * same rights, if the session still holds ino open and was not evicted; without, rights
 * as asked (WEFT_CAP_*), checked as an open with them would be (cred). Reply MSG_CAP. */
#define MSG_CAP_GET(F) F(CRED, cred, 0) F(U64, ino, 0) F(U64, session, 0) F(U8, rights, 0) \
	F(U8, has_old, 0) F(FIX, old, WEFT_CAP_LEN)
#define MSG_CAP(F) F(FIX, cap, WEFT_CAP_LEN)

/* ---- objects (client/store -> store) ---- */

/* chain: (replicas, chain id, version) the sender believes; a stale version is refused */
#define MSG_OBJ_WRITE(F) \
	F(U64, ino, 0) F(U32, stripe, 0) F(U8, replicas, 0) F(U32, chain, 0) \
	F(U64, chain_ver, 0) F(U64, offset, 0) F(U32, flags, 0) F(CRCS, crcs, 0) \
	F(FIX, cap, WEFT_CAP_LEN)
/* allocated: bytes the object's data files take on the head's disk after the write */
#define MSG_OBJ_WRITTEN(F) F(U64, size, 0) F(U64, allocated, 0)
/* flags: WEFT_READ_* */
#define MSG_OBJ_READ(F) \
	F(U64, ino, 0) F(U32, stripe, 0) F(U8, replicas, 0) F(U32, chain, 0) \
	F(U64, chain_ver, 0) F(U64, offset, 0) F(U32, len, 0) F(U8, flags, 0) \
	F(FIX, cap, WEFT_CAP_LEN)
/* hole: with WEFT_READ_HOLES, the first `hole` bytes of the range are a hole in the
 * object (not read, not sent: zeros); the bulk and its CRCs cover the bytes after them;
 * anything past the bulk up to len is zeros too (a hole, or the object's end) */
#define MSG_OBJ_DATA(F) F(U64, size, 0) F(CRCS, crcs, 0) F(U64, hole, 0)
#define MSG_OBJ_TRUNCATE(F) \
	F(U64, ino, 0) F(U32, stripe, 0) F(U8, replicas, 0) F(U32, chain, 0) \
	F(U64, chain_ver, 0) F(U64, size, 0) F(FIX, cap, WEFT_CAP_LEN)
#define MSG_OBJ_ID(F) F(U64, ino, 0) F(U32, stripe, 0) F(FIX, cap, WEFT_CAP_LEN)
/* fsync goes to the head and down the chain like a write */
#define MSG_OBJ_SYNC(F) \
	F(U64, ino, 0) F(U32, stripe, 0) F(U8, replicas, 0) F(U32, chain, 0) F(U64, chain_ver, 0) \
	F(FIX, cap, WEFT_CAP_LEN)
/* delete every stripe of ino held by this target */
#define MSG_OBJ_DELETE(F) F(U64, ino, 0)
#define MSG_OBJ_SIZE(F) F(U64, size, 0)
/* list objects from a cursor; reply MSG_OBJ_LIST_REPLY with (ino u64, stripe u32,
 * size u64) triples in bulk */
#define MSG_OBJ_LIST(F) F(U64, ino, 0) F(U32, stripe, 0) F(U32, max, 0)
#define MSG_OBJ_LIST_REPLY(F) F(U32, count, 0) F(U8, eof, 0)
/* the object's first data extent at or after offset: [data, hole), both object offsets;
 * data = size when nothing but holes follow; allocated: bytes the object's files take
 * on this target's disk. A missing object is ENOENT (all hole). */
#define MSG_OBJ_EXTENT(F) \
	F(U64, ino, 0) F(U32, stripe, 0) F(U8, replicas, 0) F(U32, chain, 0) \
	F(U64, chain_ver, 0) F(U64, offset, 0) F(FIX, cap, WEFT_CAP_LEN)
#define MSG_OBJ_EXTENT_REPLY(F) F(U64, size, 0) F(U64, allocated, 0) F(U64, data, 0) \
	F(U64, hole, 0)
#define MSG_STORE_STATS(F) \
	F(U32, target, 0) F(U64, capacity, 0) F(U64, free, 0) F(U64, bytes_read, 0) \
	F(U64, bytes_written, 0) F(U64, ops_read, 0) F(U64, ops_written, 0)

/* ---- resync (issue 9; appended) ---- */

/* store -> meta: the sender (target) has caught up in chain (replicas, chain) as of
 * chain_ver; meta makes it SERVING there. ESTALECHAIN if the chain changed since. */
#define MSG_CHAIN_SYNCED(F) F(U32, target, 0) F(U8, replicas, 0) F(U32, chain, 0) \
	F(U64, chain_ver, 0)
/* syncing store -> serving member of the same chain: objects changed while `target`
 * was offline in that chain, from the cursor (ino, stripe) on; entries before the
 * cursor are dropped (the caller has copied them). Reply MSG_OBJ_LIST_REPLY with
 * (ino u64, stripe u32) pairs in bulk. */
#define MSG_OBJ_MISSED(F) \
	F(U8, replicas, 0) F(U32, chain, 0) F(U64, chain_ver, 0) F(U32, target, 0) \
	F(U64, ino, 0) F(U32, stripe, 0) F(U32, max, 0)
/* admin -> meta: take target out of its chains now (re-replication, as after
 * --replace-after); reply: chains changed */
#define MSG_TARGET_OUT(F) F(U32, target, 0)
#define MSG_TARGET_OUT_REPLY(F) F(U32, chains, 0)
/* rebuilding store -> meta: objects of chain (replicas, chain) as the files' layouts
 * place them, from inode `ino` on, scanning at most max inodes. Reply MSG_CHAIN_OBJECTS_REPLY:
 * next = inode to continue from, eof; bulk: (ino u64, stripe u32) pairs */
#define MSG_CHAIN_OBJECTS(F) F(U8, replicas, 0) F(U32, chain, 0) F(U64, ino, 0) F(U32, max, 0)
#define MSG_CHAIN_OBJECTS_REPLY(F) F(U32, count, 0) F(U64, next, 0) F(U8, eof, 0)
/* admin -> store: verify every object's CRCs at up to rate MiB/s (0: the store's
 * --resync-rate), repairing bad ones from another replica; runs in the background */
#define MSG_STORE_SCRUB(F) F(U32, rate, 0)
/* ---- moves (issue 16: drain, remove, rebalance; src/meta/moves.h) ---- */

/* admin -> meta: remove 0: drain target (its chain memberships move to other targets,
 * the replica count kept throughout); remove 1: take the drained target out for good
 * (EBUSY while it is still a member of some chain, EINVAL if it was not drained).
 * Reply TARGET_OUT_REPLY {chains}: memberships it still has. */
#define MSG_TARGET_DRAIN(F) F(U32, target, 0) F(U8, remove, 0)
/* admin -> meta: mode 0 query, 1 rebalance now (until under the threshold), 2 automatic
 * on, 3 automatic off; threshold: percent of capacity (0: unchanged). Reply: the
 * settings, the gap between the fullest and emptiest live target (percent), moves in
 * progress */
#define MSG_REBALANCE(F) F(U8, mode, 0) F(U32, threshold, 0)
#define MSG_REBALANCE_REPLY(F) F(U8, active, 0) F(U8, automatic, 0) F(U32, threshold, 0) \
	F(U32, spread, 0) F(U32, moving, 0)
/* admin -> store: copy (resync, rebuild, moves) at up to rate MiB/s (0: unlimited) */
#define MSG_STORE_RATE(F) F(U32, rate, 0)

/* ---- node credentials (admin -> meta; meta -> stores) ---- */

/* issue (or reissue, with the next serial) the credential of node name for role, with
 * a client's policy: flags WEFT_NODE_*, the uids and gids its requests may carry
 * (meta/nodes.c); WEFT_NODE_POLICY_ONLY changes the policy of a listed node, no serial */
#define WEFT_NODE_TRUSTED     0x1u /* root not squashed (the mount's option decides) */
#define WEFT_NODE_POLICY_ONLY 0x2u
#define MSG_NODE_ADD(F) \
	F(STR, name, WEFT_NODE_MAX) F(U8, role, 0) F(U8, flags, 0) F(U32, uid_lo, 0) \
	F(U32, uid_hi, 0) F(U32, gid_lo, 0) F(U32, gid_hi, 0)
/* the credential's keys, each hidden under the connection's proof key (conn_wrap with
 * purposes "meta-key", "store-key", "service-key"); service only for a store */
#define MSG_NODE_CRED(F) \
	F(U32, serial, 0) F(FIX, meta_key, WEFT_MAC_LEN) F(FIX, store_key, WEFT_MAC_LEN) \
	F(U8, has_service, 0) F(FIX, service_key, WEFT_MAC_LEN)
#define MSG_NODE_NAME(F) F(STR, name, WEFT_NODE_MAX)
/* the node registry as text, a line a node: "NAME ROLE SERIAL active|revoked" */
#define WEFT_NODES_TEXT_MAX 60000
/* NODES_CHANGED also carries fenced: the sessions meta evicted lately (u64 each, LE; at most
 * WEFT_FENCED_MAX, the newest), whose capabilities the stores then refuse; NODE_LIST
 * sends none */
#define WEFT_FENCED_MAX 512
#define MSG_NODES(F) F(STR, text, WEFT_NODES_TEXT_MAX) F(STR, fenced, WEFT_FENCED_MAX * 8)

/* resync progress, syncing store -> meta with each heartbeat (0s when not syncing) */
#define MSG_RESYNC_PROGRESS(F) \
	F(U32, target, 0) F(U64, objects_left, 0) F(U64, bytes_left, 0) F(U64, rate, 0)

/* WEFT_OBJ_WRITE flags */
#define WEFT_WRITE_SYNC 0x1u  /* fsync object before replying */
/* WEFT_OBJ_READ flags */
#define WEFT_READ_WRITTEN 0x1u /* meta records this object as written: absent is an error
                                * (WEFT_EMISSING), not a hole */
#define WEFT_READ_REPAIR  0x2u /* a chain peer copying the object to repair its own: as
                                * WRITTEN, and start no repair here */
#define WEFT_READ_HOLES   0x4u /* the reader takes holes as extents (MSG_OBJ_DATA hole):
                                * holes are neither read from disk nor sent */

/* setattr valid bits (WEFT_SET_*): include/weft/types.h, the public API takes them */

#define WEFT_CREATE_EXCL 0x1u
/* create_open: the client buffers the new file's chmod/chown/utimes while it holds it
 * open (libweft's wbattr.c): meta recalls it before another session's GETATTR or LOOKUP
 * of the file is answered (lease.h, meta_leases_wb_claim) */
#define WEFT_CREATE_WB 0x2u
/* mkdir: the caller will create files in the new directory without waiting for meta
 * (asynchronous creates): until its lease on the directory ends or a RECALL with
 * WEFT_RECALL_CLAIM takes the claim back, another session's read of the directory
 * recalls it first (lease.h, meta_leases_claim) */
#define WEFT_CREATE_CLAIM 0x4u

/* ---- every message type ---- */

#define WEFT_MESSAGES(X) \
	X(hello, MSG_HELLO) X(hello_reply, MSG_HELLO_REPLY) X(auth, MSG_AUTH) \
	X(empty, MSG_EMPTY) X(ping, MSG_PING) X(error, MSG_ERROR) \
	X(lookup, MSG_LOOKUP) X(entry, MSG_ENTRY) X(ino, MSG_INO) X(attr, MSG_ATTR) \
	X(setattr, MSG_SETATTR) X(create, MSG_CREATE) X(name, MSG_NAME) X(rename, MSG_RENAME) \
	X(link, MSG_LINK) X(symlink, MSG_SYMLINK) X(path, MSG_PATH) X(readdir, MSG_READDIR) \
	X(dirlist, MSG_DIRLIST) X(statfs_reply, MSG_STATFS_REPLY) X(xattr, MSG_XATTR) \
	X(size, MSG_SIZE) X(access, MSG_ACCESS) X(open, MSG_OPEN) X(opened, MSG_OPENED) \
	X(release, MSG_RELEASE) X(reopen, MSG_REOPEN) X(create_open, MSG_CREATE_OPEN) X(replay, MSG_REPLAY) X(tagged, MSG_TAGGED) X(extend, MSG_EXTEND) X(setstripe, MSG_SETSTRIPE) \
	X(migrate, MSG_MIGRATE) X(migrate_reply, MSG_MIGRATE_REPLY) \
	X(layout, MSG_LAYOUT) X(session_open, MSG_SESSION_OPEN) X(session, MSG_SESSION) \
	X(session_id, MSG_SESSION_ID) X(recall, MSG_RECALL) \
	X(target_register, MSG_TARGET_REGISTER) X(target_registered, MSG_TARGET_REGISTERED) \
	X(target_heartbeat, MSG_TARGET_HEARTBEAT) X(heartbeat_reply, MSG_HEARTBEAT_REPLY) \
	X(chains_get, MSG_CHAINS_GET) X(chains, MSG_CHAINS) X(target_failed, MSG_TARGET_FAILED) \
	X(targets, MSG_TARGETS) \
	X(cap_get, MSG_CAP_GET) X(cap, MSG_CAP) \
	X(obj_write, MSG_OBJ_WRITE) X(obj_written, MSG_OBJ_WRITTEN) X(obj_read, MSG_OBJ_READ) \
	X(obj_data, MSG_OBJ_DATA) X(obj_truncate, MSG_OBJ_TRUNCATE) X(obj_id, MSG_OBJ_ID) X(obj_sync, MSG_OBJ_SYNC) \
	X(obj_delete, MSG_OBJ_DELETE) X(obj_size, MSG_OBJ_SIZE) X(obj_list, MSG_OBJ_LIST) \
	X(obj_list_reply, MSG_OBJ_LIST_REPLY) X(store_stats, MSG_STORE_STATS) \
	X(chain_synced, MSG_CHAIN_SYNCED) X(obj_missed, MSG_OBJ_MISSED) \
	X(resync_progress, MSG_RESYNC_PROGRESS) X(target_out, MSG_TARGET_OUT) \
	X(target_out_reply, MSG_TARGET_OUT_REPLY) X(chain_objects, MSG_CHAIN_OBJECTS) \
	X(chain_objects_reply, MSG_CHAIN_OBJECTS_REPLY) X(store_scrub, MSG_STORE_SCRUB) \
	X(obj_extent, MSG_OBJ_EXTENT) X(obj_extent_reply, MSG_OBJ_EXTENT_REPLY) \
	X(target_drain, MSG_TARGET_DRAIN) X(rebalance, MSG_REBALANCE) \
	X(rebalance_reply, MSG_REBALANCE_REPLY) X(store_rate, MSG_STORE_RATE) \
	X(node_add, MSG_NODE_ADD) X(node_cred, MSG_NODE_CRED) X(node_name, MSG_NODE_NAME) \
	X(nodes, MSG_NODES)

/* ---- every opcode: (NAME, number, request message, reply message) ---- */

#define WEFT_OPCODES(X) \
	X(HELLO,        0x0001, hello, hello_reply) \
	X(AUTH,         0x0002, auth, auth) \
	X(PING,         0x0003, ping, ping) \
	X(ECHO,         0x0004, empty, empty)  /* bulk echoed back */ \
	X(SINK,         0x0005, empty, empty)  /* bulk discarded (transport benchmarks) */ \
	X(STATS_GET,    0x0006, empty, empty)  /* counters as JSON (weft.stats/1) in bulk */ \
	X(LOOKUP,       0x0101, lookup, entry) \
	X(GETATTR,      0x0102, ino, entry) \
	X(SETATTR,      0x0103, setattr, attr) \
	X(CREATE,       0x0104, create, entry)  /* regular files, fifos, sockets, devices */ \
	X(MKDIR,        0x0105, create, entry) \
	X(UNLINK,       0x0106, name, attr)  /* the parent's, after */ \
	X(RMDIR,        0x0107, name, attr) \
	X(RENAME,       0x0108, rename, empty) \
	X(LINK,         0x0109, link, entry) \
	X(SYMLINK,      0x010a, symlink, entry) \
	X(READLINK,     0x010b, ino, path) \
	X(READDIR,      0x010c, readdir, dirlist) \
	X(STATFS,       0x010d, empty, statfs_reply) \
	X(SETXATTR,     0x010e, xattr, empty)   /* value in bulk */ \
	X(GETXATTR,     0x010f, xattr, size)    /* value in bulk */ \
	X(LISTXATTR,    0x0110, xattr, size)    /* names in bulk */ \
	X(REMOVEXATTR,  0x0111, xattr, empty) \
	X(ACCESS,       0x0112, access, empty) \
	X(OPEN,         0x0113, open, opened) \
	X(RELEASE,      0x0114, release, empty) \
	X(FSYNC,        0x0115, ino, empty) \
	X(EXTEND,       0x0116, extend, attr) \
	X(SETSTRIPE,    0x0117, setstripe, empty) \
	X(GETSTRIPE,    0x0118, ino, layout) \
	X(CREATE_OPEN,  0x0119, create_open, opened) \
	X(REOPEN,       0x011a, reopen, empty) \
	X(MIGRATE,      0x011b, migrate, migrate_reply) /* weft migrate: BEGIN, SWITCH, ABORT */ \
	X(REPLAY,       0x011c, replay, empty) /* reply: the replayed op's (see MSG_REPLAY) */ \
	X(TAGGED,       0x011d, tagged, empty) /* reply: the tagged op's (see MSG_TAGGED) */ \
	X(DIR_CLAIM,    0x011e, ino, entry) /* claim a directory for asynchronous unlinks */ \
	X(SESSION_OPEN, 0x0201, session_open, session) \
	X(SESSION_BEAT, 0x0202, session_id, heartbeat_reply) /* lease, chains epoch */ \
	X(SESSION_CLOSE, 0x0203, session_id, empty) \
	X(RECALL,       0x0204, recall, empty) \
	X(TARGET_REGISTER, 0x0301, target_register, target_registered) \
	X(TARGET_HEARTBEAT, 0x0302, target_heartbeat, heartbeat_reply) \
	X(CHAINS_GET,   0x0303, chains_get, chains) \
	X(TARGET_FAILED, 0x0304, target_failed, empty) \
	X(TARGETS_GET,  0x0305, empty, targets)  /* per-target records in bulk */ \
	X(CHAINS_CHANGED, 0x030a, chains, empty) /* meta -> clients, one-way: new epoch */ \
	X(OBJ_WRITE,    0x0401, obj_write, obj_written) \
	X(OBJ_READ,     0x0402, obj_read, obj_data) \
	X(OBJ_TRUNCATE, 0x0403, obj_truncate, obj_size) \
	X(OBJ_DELETE,   0x0404, obj_delete, empty) \
	X(OBJ_FSYNC,    0x0405, obj_sync, empty) \
	X(OBJ_STAT,     0x0406, obj_id, obj_size) \
	X(OBJ_LIST,     0x0407, obj_list, obj_list_reply) \
	X(STORE_STATS,  0x0408, empty, store_stats) \
	X(CHAIN_SYNCED, 0x0306, chain_synced, empty) \
	X(RESYNC_PROGRESS, 0x0307, resync_progress, empty) \
	X(OBJ_MISSED,   0x0409, obj_missed, obj_list_reply) \
	X(OBJ_SYNC_READ, 0x040a, obj_read, obj_data)  /* as OBJ_READ; ENOENT if missing */ \
	X(TARGET_OUT,   0x0308, target_out, target_out_reply) \
	X(CHAIN_OBJECTS, 0x0309, chain_objects, chain_objects_reply) \
	X(STORE_SCRUB,  0x040b, store_scrub, empty) \
	X(OBJ_EXTENT,   0x040c, obj_extent, obj_extent_reply) /* SEEK_DATA/HOLE, st_blocks */ \
	X(TARGET_DRAIN, 0x030b, target_drain, target_out_reply) /* drain or remove */ \
	X(REBALANCE,    0x030c, rebalance, rebalance_reply) \
	X(STORE_RATE,   0x040d, store_rate, empty) \
	X(OBJ_REMOVE,   0x040e, obj_id, empty) /* one object, this target only */ \
	X(NODE_ADD,     0x0501, node_add, node_cred) /* admin: issue a credential */ \
	X(NODE_LIST,    0x0502, empty, nodes)        /* admin: the node registry */ \
	X(NODE_REVOKE,  0x0503, node_name, empty)    /* admin: refuse a node from now on */ \
	X(NODES_CHANGED, 0x0504, nodes, empty)       /* meta -> stores, one-way */ \
	X(CAP_GET,      0x0505, cap_get, cap)        /* client: a capability, or its renewal */

enum weft_op {
#define X(NAME, num, req, rep) WEFT_OP_##NAME = num,
	WEFT_OPCODES(X)
#undef X
};

/* ---- generated structs and codecs ---- */

#define WEFT_FIELD_DECL_U8(n, l) uint8_t n;
#define WEFT_FIELD_DECL_U16(n, l) uint16_t n;
#define WEFT_FIELD_DECL_U32(n, l) uint32_t n;
#define WEFT_FIELD_DECL_U64(n, l) uint64_t n;
#define WEFT_FIELD_DECL_I64(n, l) int64_t n;
#define WEFT_FIELD_DECL_STR(n, l) struct weft_str n;
#define WEFT_FIELD_DECL_FIX(n, l) uint8_t n[l];
#define WEFT_FIELD_DECL_ATTR(n, l) struct weft_attr n;
#define WEFT_FIELD_DECL_LAYOUT(n, l) struct weft_layout n;
#define WEFT_FIELD_DECL_CRED(n, l) struct weft_cred n;
#define WEFT_FIELD_DECL_CRCS(n, l) struct weft_crcs n;
#define WEFT_FIELD_DECL(kind, n, l) WEFT_FIELD_DECL_##kind(n, l)

#define X(lname, FIELDS) \
	struct weft_msg_##lname { FIELDS(WEFT_FIELD_DECL) char unused_; }; \
	/* Appends the encoding to w; returns 0, -ENOMEM, or -EINVAL if a field is over its limit. */ \
	int proto_##lname##_encode(struct wbuf *w, const struct weft_msg_##lname *m); \
	/* Decodes exactly len bytes; strings borrow from p. Returns 0 or -WEFT_EPROTO, *why set. */ \
	int proto_##lname##_decode(const void *p, size_t len, struct weft_msg_##lname *m, \
				   const char **why);
WEFT_MESSAGES(X)
#undef X

/* Message-type index, for tables (fuzzing, docs). */
enum weft_msg_type {
#define X(lname, FIELDS) WEFT_MSG_##lname,
	WEFT_MESSAGES(X)
#undef X
	WEFT_MSG_COUNT
};
const char *proto_msg_name(enum weft_msg_type t);
/* Decodes into an untyped buffer of at least proto_msg_size(t) bytes. */
int proto_msg_decode_any(enum weft_msg_type t, const void *p, size_t len, void *m, const char **why);
/* The error a decode failure stands for, from the why a decoder set: -ENAMETOOLONG for a
 * string over its limit (a name too long), else -WEFT_EPROTO. Compares the reason's
 * identity, not its text, so the wording may change. */
int proto_decode_err(const char *why);
int proto_msg_encode_any(enum weft_msg_type t, struct wbuf *w, const void *m);
size_t proto_msg_size(enum weft_msg_type t);

/* Opcode table lookups; NULL / -1 for unknown opcodes. */
const char *proto_op_name(uint16_t op);
int proto_op_req_type(uint16_t op);
int proto_op_rep_type(uint16_t op);

/* ---- bulk encodings ---- */

/* Directory entries in a READDIR reply's bulk: name (u16 len + bytes), ino, gen, type
 * (DT_*), cookie of the next entry, then a byte saying what follows: 0 nothing, 1 the
 * attr (readdirplus), 2 the attr, the file's layout, a read capability for it and the
 * first byte of its written-stripes mask (stripes 0-7, as OPENED's written)
 * (WEFT_READDIR_PLUS_CAP, regular files the caller may read); with bit 0x80 set (only
 * with 1 or 2, only when asked: WEFT_READDIR_LEASES) a u32 lease in ms follows that
 * byte. */
struct weft_dirent {
	struct weft_str name;
	uint64_t ino;
	uint64_t next_cookie;
	uint8_t type;
	bool has_attr;
	bool has_cap;             /* layout and cap are set (implies has_attr) */
	uint32_t lease;           /* ms the caller may cache attr and name; 0 none */
	struct weft_attr attr;
	struct weft_layout layout;
	uint8_t cap[WEFT_CAP_LEN];
	uint8_t written0;         /* with the cap: the first byte of the written-stripes mask */
};
void proto_dirent_encode(struct wbuf *w, const struct weft_dirent *d);
/* Decodes the next entry; returns 0, 1 at the end of the buffer, or -WEFT_EPROTO. */
int proto_dirent_next(struct rbuf *r, struct weft_dirent *d);
/* Largest encoded size of an entry with a name of namelen bytes; plus as READDIR's. */
size_t proto_dirent_size(size_t namelen, unsigned plus);

/* Field helpers, shared with other encodings (chain tables). */
void proto_attr_put(struct wbuf *w, const struct weft_attr *a);
void proto_attr_get(struct rbuf *r, struct weft_attr *a);
void proto_layout_put(struct wbuf *w, const struct weft_layout *l);
void proto_layout_get(struct rbuf *r, struct weft_layout *l);

/* Copies a borrowed string into a NUL-terminated buffer of size cap; returns -ENAMETOOLONG
 * if it does not fit. */
int proto_str_copy(char *out, size_t cap, struct weft_str s);
static inline struct weft_str proto_str_of(const char *s, size_t len)
{
	struct weft_str r = {s, (uint32_t)len};
	return r;
}

/* Pieces of a bulk transfer at object offset `off` of length `len`, split at
 * WEFT_CHUNK_SIZE boundaries: returns how many; the CRC list has one entry per piece. */
uint32_t proto_crc_pieces(uint64_t off, uint64_t len);
/* Fills out with the CRC32C of each such piece of the len bytes at p, which sit at object
 * offset off. len must be at most WEFT_BULK_MAX. */
void proto_crcs_compute_buf(const void *p, uint32_t len, uint64_t off, struct weft_crcs *out);
/* The same over iov[0..iovcnt) at object offset off, into crcs[proto_crc_pieces(off, len)]
 * (store_obj_piece_crcs, a writer with checksums off). */
void proto_crcs_compute(uint64_t off, const struct iovec *iov, int iovcnt, uint32_t *crcs);
/* Checks the bytes against crcs (one per piece): the first piece that does not match, or
 * -1 when all do. The one verification of a write's CRCs (a store checks them once, before
 * forwarding or writing, and tells the write they are verified). */
int64_t proto_crcs_verify(uint64_t off, const struct iovec *iov, int iovcnt, const uint32_t *crcs);

#endif
