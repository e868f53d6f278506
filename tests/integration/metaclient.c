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
 * Exit status 0 when every check passed; each failed check prints file:line.
 * The modes live in mc_proto.c, mc_bad.c, mc_crash.c and mc_fakestore.c; mc_test.h is
 * what they share. */
#include "mc_test.h"

int failures, checks;
const char *g_addr;
struct weft_key g_key;
struct weft_cred root, user, other;

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
	else
		return 2;
	mc_close(&m);
	printf("metaclient %s: %d checks, %d failed\n", mode, checks, failures);
	return failures ? 1 : 0;
}
