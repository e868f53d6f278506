/* Complete directories: the directories whose every name this client knows, with the
 * set of those names. Pure data structure; the caller locks (libweft's lease.c keeps one
 * under its lease-slot lock and decides when a directory is complete: docs/ARCHITECTURE.md,
 * "Complete directories").
 *
 * DESIGN: a hash table keyed by directory inode, bounded to max_dirs directories (the
 * oldest added goes when a new one comes) and max_names names per directory (a
 * directory that grows past it is dropped: it is then simply not complete). Each
 * directory has its own small open hash set of names. A directory also counts the
 * mutations of this client in flight in it ("pending"): while one is, a name may be about
 * to appear, and cdir_lookup answers CDIR_UNKNOWN.
 *
 * Threads: none of its own; not thread-safe. */
#ifndef WEFT_CLIENT_CDIR_H
#define WEFT_CLIENT_CDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cdir;

enum cdir_answer {
	CDIR_UNKNOWN, /* the directory is not complete (or a mutation in it is in flight) */
	CDIR_ABSENT,  /* complete, and the name is not in it */
	CDIR_PRESENT, /* complete, and the name is in it */
};

/* Returns NULL when out of memory. Free with cdir_free (NULL-safe). */
struct cdir *cdir_new(size_t max_dirs, size_t max_names);
void cdir_free(struct cdir *t);

/* dir starts complete and empty (a directory this client just created), its lease
 * running until until_ms (the caller's clock); replaces what was known of it. -ENOMEM:
 * not added (then it is simply not complete). */
int cdir_add_dir(struct cdir *t, uint64_t dir, uint64_t until_ms);
/* The lease expiry kept with dir (0: dir is not complete), and its update. */
uint64_t cdir_until(const struct cdir *t, uint64_t dir);
void cdir_set_until(struct cdir *t, uint64_t dir, uint64_t until_ms);
/* dir is no longer complete (no-op if it was not). */
void cdir_drop(struct cdir *t, uint64_t dir);
void cdir_clear(struct cdir *t);
/* Whether dir is complete. */
int cdir_has(const struct cdir *t, uint64_t dir);
size_t cdir_count(const struct cdir *t);

/* name (len bytes, no NUL needed) now exists in dir / no longer does. No-ops when dir is
 * not complete; a name that does not fit (max_names, memory) drops dir. */
void cdir_name_add(struct cdir *t, uint64_t dir, const char *name, size_t len);
void cdir_name_del(struct cdir *t, uint64_t dir, const char *name, size_t len);
/* The same, with what the name is: file, known not to be a directory (a rename over it
 * may then be answered here); cdir_name_add knows nothing (false). A name already there
 * takes the new kind. */
void cdir_name_add_kind(struct cdir *t, uint64_t dir, const char *name, size_t len, bool file);
/* dir is complete, no mutation in flight in it, and name is in it, known not to be a
 * directory. */
bool cdir_name_file(const struct cdir *t, uint64_t dir, const char *name, size_t len);

/* A mutation of this client in dir starts (+1) or ended (-1). */
void cdir_pending(struct cdir *t, uint64_t dir, int delta);

/* dir (complete) is claimed at meta for asynchronous creates (acreate.c), with its mode
 * and its files' stripe unit (not claimed if 0) when claimed; dropped with it.
 * cdir_claimed: true if so and no mutation is in flight in it, with both. */
void cdir_claim(struct cdir *t, uint64_t dir, uint32_t mode, uint32_t stripe_unit);
bool cdir_claimed(const struct cdir *t, uint64_t dir, uint32_t *mode, uint32_t *stripe_unit);

enum cdir_answer cdir_lookup(const struct cdir *t, uint64_t dir, const char *name, size_t len);

#endif
