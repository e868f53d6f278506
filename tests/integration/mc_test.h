/* Shared by the parts of metaclient (see metaclient.c for its modes): the check macros,
 * the connection settings and credentials main sets up, and each mode's entry point. */
#ifndef WEFT_TEST_MC_TEST_H
#define WEFT_TEST_MC_TEST_H

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "net/auth.h"
#include "proto/chainset.h"
#include "metacall.h"

extern int failures, checks;
extern const char *g_addr;
extern struct weft_key g_key;
extern struct weft_cred root, user, other;

#define EXPECT(expr, want) do { \
	long got_ = (long)(expr), want_ = (long)(want); \
	checks++; \
	if (got_ != want_) { \
		failures++; \
		fprintf(stderr, "%s:%d: %s: got %ld (%s), want %ld (%s)\n", __FILE__, __LINE__, \
			#expr, got_, weft_strerror((int)got_), want_, weft_strerror((int)want_)); \
	} } while (0)
#define OK(expr) EXPECT(expr, 0)
#define TRUE(cond) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: not true: %s\n", __FILE__, __LINE__, #cond); \
	} } while (0)

/* ---- readdir helpers (mc_readdir.c) ---- */

struct ent {
	char name[WEFT_NAME_MAX + 1];
	uint64_t ino, cookie;
	uint8_t type;
	bool has_attr;
	struct weft_attr attr;
};

/* One READDIR page; returns status, appends to *out (*n entries), sets *eof, and *bytes
 * (may be NULL) to the page's size. */
int readdir_page(struct mc *m, const struct weft_cred *cr, uint64_t ino, uint64_t cookie,
		 uint32_t max, bool plus, struct ent **out, size_t *n, bool *eof,
		 size_t *bytes);
/* Every entry of directory ino, in pages of max bytes; *out is malloc'ed (caller frees). */
int list_all(struct mc *m, const struct weft_cred *cr, uint64_t ino, uint32_t max,
	     bool plus, struct ent **out, size_t *n);
struct ent *find_ent(struct ent *e, size_t n, const char *name);
/* The modes (each returns 0; failed checks count in failures). */
int run_proto(struct mc *m, bool squash);                   /* mc_proto.c */
int run_bad(struct mc *m);                                  /* mc_bad.c */
int run_crash(const char *log, int round, int threads);     /* mc_crash.c */
int run_verify(struct mc *m, const char *log);
int run_fakestore(struct mc *m);                            /* mc_fakestore.c */
int run_unlinkone(struct mc *m);

#endif
