/* A hostile client node (issue 13): it holds a valid client credential and tries, against
 * a live cluster, what only stores, admins or meta may do, and to pass for another role
 * or node. Every attempt must be refused.
 *
 * usage: hostile CRED META_ADDR STORE_ADDR attacks
 *        hostile CRED META_ADDR policy DIR_INO  (uids and gids outside the node's policy)
 *        hostile CRED ADDR connect   (exit 0 when the credential is accepted, 3 refused)
 * attacks prints one line per attempt ("refused: WHAT (reason)") and exits 0 when all
 * were refused, 1 when any was served. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/rpc.h"
#include "proto/proto.h"
#include "weft/err.h"

static struct loop *loop;
static struct weft_key cred;
static int served;

static struct rpc *endpoint(const char *addr, const struct weft_key *k)
{
	struct rpc_params p = {.loop = loop, .key = k, .addr = addr, .role = WEFT_ROLE_CLIENT,
			       .name = "hostile", .connect_timeout_ms = 3000};
	struct rpc *r = NULL;
	if (rpc_new(&p, &r)) {
		fprintf(stderr, "hostile: bad address %s\n", addr);
		exit(2);
	}
	return r;
}

/* Sends msg as op; an attempt is refused when the reply is an error. */
static void attempt(struct rpc *r, const char *what, uint16_t op, const void *msg)
{
	struct wbuf w;
	wbuf_init(&w);
	if (msg)
		proto_msg_encode_any((enum weft_msg_type)proto_op_req_type(op), &w, msg);
	struct frame *f = NULL;
	int rc = rpc_call(r, op, &w, NULL, 0, 10000, &f);
	char detail[256] = "";
	if (f && rc)
		conn_error_detail(f, detail, sizeof(detail));
	frame_free(f);
	if (rc == 0) {
		printf("SERVED: %s\n", what);
		served++;
	} else {
		printf("refused: %s (%s%s%s)\n", what, weft_strerror(rc), detail[0] ? ": " : "", detail);
	}
}

/* Connecting with key k must fail. */
static void attempt_connect(const char *addr, const struct weft_key *k, const char *what)
{
	struct rpc *r = endpoint(addr, k);
	struct conn *c;
	int rc = rpc_conn(r, &c);
	if (rc == 0) {
		printf("SERVED: %s\n", what);
		served++;
		conn_put(c);
	} else {
		printf("refused: %s (%s)\n", what, weft_strerror(rc));
	}
	rpc_free(r);
}

static void attacks(const char *meta_addr, const char *store_addr)
{
	struct rpc *meta = endpoint(meta_addr, &cred), *store = endpoint(store_addr, &cred);

	/* cluster control, as a client */
	struct weft_msg_target_register reg = {.node = proto_str_of("evil", 4),
					       .addr = proto_str_of("127.0.0.1:9", 11),
					       .capacity = 1ull << 40, .free = 1ull << 40};
	attempt(meta, "TARGET_REGISTER of a store of our own", WEFT_OP_TARGET_REGISTER, &reg);
	struct weft_msg_target_drain dr = {.target = 1};
	attempt(meta, "TARGET_DRAIN of target 1", WEFT_OP_TARGET_DRAIN, &dr);
	struct weft_msg_node_add na = {.name = proto_str_of("evil", 4), .role = WEFT_ROLE_ADMIN};
	attempt(meta, "NODE_ADD of an admin credential", WEFT_OP_NODE_ADD, &na);
	struct weft_msg_node_name nn = {.name = proto_str_of("node0", 5)};
	attempt(meta, "NODE_REVOKE of another node", WEFT_OP_NODE_REVOKE, &nn);
	/* other nodes' sessions: ids are small and sequential */
	for (uint64_t id = 1; id <= 16; id++) {
		struct weft_msg_session_id s = {.session = id};
		char what[64];
		snprintf(what, sizeof(what), "SESSION_CLOSE of session %llu", (unsigned long long)id);
		attempt(meta, what, WEFT_OP_SESSION_CLOSE, &s);
	}

	/* the stores' objects, bypassing meta */
	struct weft_msg_obj_list ol = {.max = 100};
	attempt(store, "OBJ_LIST on a store", WEFT_OP_OBJ_LIST, &ol);
	for (uint64_t ino = 1; ino <= 64; ino++) {
		struct weft_msg_obj_delete od = {.ino = ino};
		char what[64];
		snprintf(what, sizeof(what), "OBJ_DELETE of inode %llu", (unsigned long long)ino);
		attempt(store, what, WEFT_OP_OBJ_DELETE, &od);
	}
	struct weft_msg_obj_id orm = {.ino = 1, .stripe = 0};
	attempt(store, "OBJ_REMOVE of one object", WEFT_OP_OBJ_REMOVE, &orm);
	struct weft_msg_store_scrub sc = {.rate = 1};
	attempt(store, "STORE_SCRUB", WEFT_OP_STORE_SCRUB, &sc);

	/* passing for a store, for another node, for another serial */
	struct weft_key k = cred;
	k.role = WEFT_ROLE_STORE;
	attempt_connect(meta_addr, &k, "HELLO claiming the store role to meta");
	attempt_connect(store_addr, &k, "HELLO claiming the store role to a store");
	k = cred;
	snprintf(k.name, sizeof(k.name), "node0");
	attempt_connect(meta_addr, &k, "HELLO in another node's name to meta");
	attempt_connect(store_addr, &k, "HELLO in another node's name to a store");
	k = cred;
	k.serial++;
	attempt_connect(meta_addr, &k, "HELLO with a serial not issued");
	k = cred;
	k.serial = 0; /* as if it held the cluster key */
	attempt_connect(meta_addr, &k, "HELLO as a holder of the cluster key to meta");
	attempt_connect(store_addr, &k, "HELLO as a holder of the cluster key to a store");
	rpc_free(meta);
	rpc_free(store);
}

/* Requests in uids and gids a client node's policy does not allow (dir: a directory
 * anyone may write). Each must be refused; uid 0 is squashed, so what it makes belongs
 * to nobody. */
static void policy(const char *meta_addr, uint64_t dir)
{
	struct rpc *meta = endpoint(meta_addr, &cred);
	struct weft_msg_ino gi = {.cred = {.uid = 5000, .gid = 1500}, .ino = 1};
	attempt(meta, "GETATTR as uid 5000", WEFT_OP_GETATTR, &gi);
	gi.cred = (struct weft_cred){.uid = 1500, .gid = 5000};
	attempt(meta, "GETATTR as gid 5000", WEFT_OP_GETATTR, &gi);
	gi.cred = (struct weft_cred){.uid = 1500, .gid = 1500, .ngroups = 2, .groups = {1501, 3000}};
	attempt(meta, "GETATTR with group 3000 among 1500's", WEFT_OP_GETATTR, &gi);
	struct weft_msg_create mk = {.cred = {.uid = 0, .gid = 0}, .parent = dir,
				     .name = proto_str_of("made-by-root", 12), .mode = 040755};
	struct wbuf w;
	wbuf_init(&w);
	proto_create_encode(&w, &mk);
	int rc = rpc_call(meta, WEFT_OP_MKDIR, &w, NULL, 0, 10000, NULL);
	printf("mkdir as uid 0: %s\n", rc ? weft_strerror(rc) : "made");
	rpc_free(meta);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: hostile CRED META STORE attacks | hostile CRED ADDR connect\n");
		return 2;
	}
	log_init("hostile", LOG_ERROR);
	char err[256];
	if (auth_key_load(argv[1], &cred, err, sizeof(err))) {
		fprintf(stderr, "hostile: %s\n", err);
		return 2;
	}
	loop_new(&loop);
	loop_start(loop);
	int rc = 0;
	if (strcmp(argv[3], "connect") == 0) {
		struct rpc *r = endpoint(argv[2], &cred);
		struct conn *c;
		int e = rpc_conn(r, &c);
		if (e == 0)
			conn_put(c);
		else
			printf("refused: %s\n", weft_strerror(e));
		rc = e == 0 ? 0 : 3;
		rpc_free(r);
	} else if (argc == 5 && strcmp(argv[3], "policy") == 0) {
		policy(argv[2], strtoull(argv[4], NULL, 10));
		printf("%d attempts served\n", served);
		rc = served ? 1 : 0;
	} else if (argc == 5 && strcmp(argv[4], "attacks") == 0) {
		attacks(argv[2], argv[3]);
		printf("%d attempts served\n", served);
		rc = served ? 1 : 0;
	} else {
		rc = 2;
	}
	loop_free(loop);
	return rc;
}
