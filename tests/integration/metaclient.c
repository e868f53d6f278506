/* metaclient: protocol-level tests of a running `weft meta`, through the wire protocol
 * alone (src/net/rpc.h + src/proto/proto.h).
 *
 * usage: metaclient KEYFILE ADDR proto          every operation and its errno cases
 *        metaclient KEYFILE ADDR bad            malformed and hostile input
 *        metaclient KEYFILE ADDR crash LOG R T  T threads create/rename/unlink in dir
 *                                               "rR" until meta dies; intents and acks
 *                                               appended to LOG
 *        metaclient KEYFILE ADDR verify LOG     every acknowledged op of LOG is there,
 *                                               nothing is half-applied
 *        metaclient KEYFILE ADDR getstripe INO  one GETSTRIPE; prints its status
 * Exit status 0 when every check passed; each failed check prints file:line.
 * The modes live in mc_proto.c, mc_bad.c, mc_crash.c and mc_fakestore.c; mc_test.h is
 * what they share. */
#include "mc_test.h"

int failures, checks;
const char *g_addr;
struct weft_key g_key;
struct weft_cred root, user, other;

/* tagged XID mkdir NAME | tagged XID rename FROM TO | tagged 0 ...: one request as
 * libweft sends a namespace mutation (TAGGED, client 0x7e57, that xid; xid 0: plain,
 * untagged), on a connection of its own; prints "status ino" (ino of the entry, 0). */
static void run_tagged(struct mc *m, char **a, int n)
{
	uint64_t xid = strtoull(a[0], NULL, 0);
	struct wbuf inner;
	wbuf_init(&inner);
	uint16_t op;
	if (strcmp(a[1], "mkdir") == 0) {
		struct weft_msg_create q = {.cred = root, .parent = 1, .name = MC_STR(a[2]),
					    .mode = S_IFDIR | 0755, .flags = WEFT_CREATE_EXCL};
		proto_create_encode(&inner, &q);
		op = WEFT_OP_MKDIR;
	} else if (strcmp(a[1], "rename") == 0 && n >= 4) {
		struct weft_msg_rename q = {.cred = root, .parent = 1, .name = MC_STR(a[2]),
					    .newparent = 1, .newname = MC_STR(a[3])};
		proto_rename_encode(&inner, &q);
		op = WEFT_OP_RENAME;
	} else {
		failures++;
		return;
	}
	struct frame *f = NULL;
	int rc;
	if (xid) {
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_tagged t = {.client = 0x7e57, .xid = xid, .op = op,
					    .payload = {(const char *)inner.data,
							(uint32_t)inner.len}};
		proto_tagged_encode(&w, &t);
		rc = mc_send(m, WEFT_OP_TAGGED, &w, NULL, 0, &f);
	} else {
		rc = mc_send(m, op, &inner, NULL, 0, &f);
		wbuf_init(&inner);
	}
	uint64_t ino = 0;
	struct weft_msg_entry e;
	if (rc == 0 && op == WEFT_OP_MKDIR &&
	    proto_entry_decode(f->payload, f->h.payload_len, &e, NULL) == 0)
		ino = e.attr.ino;
	printf("%d %llu\n", rc, (unsigned long long)ino);
	frame_free(f);
	wbuf_free(&inner);
}

/* getstripe INO: one GETSTRIPE of INO, not asked again on WEFT_ERECOVERING (mc_send
 * would); prints its status. */
static void run_getstripe(struct mc *m, const char *ino)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino q = {.cred = root, .ino = strtoull(ino, NULL, 0)};
	proto_ino_encode(&w, &q);
	struct frame *f = NULL;
	struct rpc *r = mc_rpc_for(m, WEFT_OP_GETSTRIPE);
	printf("%d\n", r ? rpc_call(r, WEFT_OP_GETSTRIPE, &w, NULL, 0, 20000, &f) : -ENOMEM);
	frame_free(f);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: metaclient KEYFILE ADDR proto|squash|bad|register|crash LOG R T|verify LOG\n");
		return 2;
	}
	log_init("metaclient", LOG_WARN);
	char err[512];
	if (auth_key_load(argv[1], &g_key, err, sizeof(err))) {
		fprintf(stderr, "metaclient: %s\n", err);
		return 1;
	}
	g_addr = argv[2];
	root = mc_cred(0, 0);
	user = mc_cred(1000, 1000);
	other = mc_cred(2000, 2000);
	const char *mode = argv[3];
	if (strcmp(mode, "crash") == 0) {
		if (argc != 7)
			return 2;
		return run_crash(argv[4], atoi(argv[5]), atoi(argv[6]));
	}
	struct mc m;
	int rc = mc_open(&m, NULL, &g_key, g_addr);
	if (rc) {
		fprintf(stderr, "metaclient: connect %s: %s\n", g_addr, weft_strerror(rc));
		return 1;
	}
	if (strcmp(mode, "proto") == 0 || strcmp(mode, "squash") == 0)
		run_proto(&m, strcmp(mode, "squash") == 0);
	else if (strcmp(mode, "bad") == 0)
		run_bad(&m);
	else if (strcmp(mode, "fakestore") == 0)
		run_fakestore(&m);
	else if (strcmp(mode, "unlinkone") == 0)
		run_unlinkone(&m);
	else if (strcmp(mode, "register") == 0) /* a fake target, for benchmarks */
		OK(mc_register(&m, 0xe5, "bench-node", "127.0.0.1:1", NULL));
	else if (strcmp(mode, "verify") == 0 && argc == 5)
		run_verify(&m, argv[4]);
	else if (strcmp(mode, "tagged") == 0 && argc >= 7)
		run_tagged(&m, argv + 4, argc - 4);
	else if (strcmp(mode, "getstripe") == 0 && argc == 5)
		run_getstripe(&m, argv[4]);
	else
		return 2;
	mc_close(&m);
	printf("metaclient %s: %d checks, %d failed\n", mode, checks, failures);
	return failures ? 1 : 0;
}
