/* Helpers shared by the meta unit tests: a fresh file system in a temp dir. */
#ifndef WEFT_TEST_META_UTIL_H
#define WEFT_TEST_META_UTIL_H

#include "meta/mdb.h"
#include "weft/types.h"

/* Makes a temp dir, mkfs (replicas as given), opens it. Aborts on failure. */
struct meta_db *tmeta_open(char *dir, size_t dirlen, uint8_t replicas);
/* Closes db and removes dir. */
void tmeta_close(struct meta_db *db, const char *dir);
/* Registers n targets on n distinct nodes "node<i>" (or on nodes i % nodes). */
void tmeta_targets(struct meta_db *db, unsigned n, unsigned nodes);
/* A credential. */
struct weft_cred tmeta_cred(uint32_t uid, uint32_t gid);

#endif
