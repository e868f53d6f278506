/* Helpers shared by the meta unit tests. */
#include "test_meta_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <errno.h>

#include "check.h"
#include "meta/chains.h"

#define TEST_MAPSIZE (64ULL << 20)

struct meta_ctx C;
MDB_txn *tparent;

struct meta_db *tmeta_open(char *dir, size_t dirlen, uint8_t replicas)
{
	struct meta_db *db;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, dirlen, "%s/weft-meta-XXXXXX", tmp ? tmp : "/tmp");
	CHECK(mkdtemp(dir) != NULL);
	struct meta_mkfs_opts o = { .replicas = replicas, .mapsize = TEST_MAPSIZE };
	CHECK_OK(meta_mkfs(dir, &o));
	CHECK_INT(meta_mkfs(dir, &o), ==, -EEXIST);
	CHECK_OK(meta_db_open(dir, TEST_MAPSIZE, &db));
	return db;
}

void tmeta_close(struct meta_db *db, const char *dir)
{
	char path[512];
	meta_db_close(db);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", dir);
	unlink(path);
	rmdir(dir);
}


struct reg_ctx {
	struct meta_db *db;
	unsigned n, nodes;
};

static int reg_all(MDB_txn *txn, void *arg)
{
	struct reg_ctx *c = arg;
	for (unsigned i = 0; i < c->n; i++) {
		uint8_t uuid[16] = { 0 };
		char node[32], addr[32];
		uint32_t id;
		uuid[0] = (uint8_t)(i + 1);
		uuid[1] = 0xaa;
		snprintf(node, sizeof(node), "node%u", i % c->nodes);
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", 9000 + i);
		int rc = meta_chains_register(c->db, txn, uuid, node, addr, 1ULL << 40, 1000, &id);
		if (rc)
			return rc;
	}
	return 0;
}

void tmeta_targets(struct meta_db *db, unsigned n, unsigned nodes)
{
	struct reg_ctx c = { db, n, nodes ? nodes : n };
	CHECK_OK(meta_db_write(db, reg_all, &c));
}

struct weft_cred tmeta_cred(uint32_t uid, uint32_t gid)
{
	struct weft_cred c;
	memset(&c, 0, sizeof(c));
	c.uid = uid;
	c.gid = gid;
	return c;
}
