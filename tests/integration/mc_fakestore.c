/* metaclient: the modes fakestore (a fake store for the deleter) and unlinkone. */
#include "mc_test.h"

#include <signal.h>
#include "net/server.h"

/* ---- a fake store: registers, heartbeats, answers OBJ_DELETE (for the deleter) ---- */

static volatile sig_atomic_t fake_stop;
static void fake_on_term(int sig) { (void)sig; fake_stop = 1; }

static void fake_request(struct conn *c, struct frame *f)
{
	if (f->h.opcode == WEFT_OP_OBJ_DELETE) {
		struct weft_msg_obj_delete m;
		if (proto_obj_delete_decode(f->payload, f->h.payload_len, &m, NULL) == 0) {
			printf("deleted %llu role %u\n", (unsigned long long)m.ino, conn_peer_role(c));
			fflush(stdout);
			conn_reply(c, f, 0, NULL, NULL, 0, NULL, NULL);
		} else {
			conn_reply(c, f, -WEFT_EPROTO, NULL, NULL, 0, NULL, NULL);
		}
	} else {
		conn_reply(c, f, -ENOSYS, NULL, NULL, 0, NULL, NULL);
	}
	frame_free(f);
}

int run_fakestore(struct mc *m)
{
	static const struct conn_ops ops = {.on_request = fake_request};
	struct loop *loop;
	struct server *srv;
	char err[256], a[64];
	if (loop_new(&loop) || loop_start(loop))
		return 1;
	struct server_params p = {.loop = loop, .key = &g_key, .listen = "127.0.0.1:0",
				  .ops = &ops};
	if (server_new(&p, &srv, err, sizeof(err)))
		return 1;
	snprintf(a, sizeof(a), ":%d", server_port(srv));
	uint32_t id = 0;
	OK(mc_register(m, 0xf0, "fake-store", a, &id));
	printf("registered target %u\n", id);
	fflush(stdout);
	signal(SIGTERM, fake_on_term);
	while (!fake_stop) {
		struct weft_msg_target_heartbeat hb = {.target = id, .capacity = 1ULL << 40,
						       .free = 1ULL << 39};
		mc_call(m, WEFT_OP_TARGET_HEARTBEAT, &hb, NULL, 0, NULL);
		usleep(300000);
	}
	loop_post(loop, (loop_task_cb)server_free, srv);
	loop_free(loop);
	return 0;
}

/* Creates a file, opens it, unlinks it, prints its ino, releases it. */
int run_unlinkone(struct mc *m)
{
	struct weft_attr a = {0};
	struct weft_msg_session_open so = {.node = MC_STR("deleter-test")};
	struct frame *fr = NULL;
	OK(mc_call(m, WEFT_OP_SESSION_OPEN, &so, NULL, 0, &fr));
	struct weft_msg_session s = {0};
	if (fr)
		OK(proto_session_decode(fr->payload, fr->h.payload_len, &s, NULL));
	frame_free(fr);
	char name[64];
	snprintf(name, sizeof(name), "doomed-%d", (int)getpid());
	OK(mc_create(m, &root, 1, name, S_IFREG | 0644, WEFT_CREATE_EXCL, &a));
	struct weft_msg_open q = {.cred = root, .ino = a.ino, .flags = O_RDWR, .session = s.session};
	OK(mc_call(m, WEFT_OP_OPEN, &q, NULL, 0, NULL));
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, 1, name));
	printf("ino %llu\n", (unsigned long long)a.ino);
	fflush(stdout);
	sleep(1); /* open: the deleter must not touch it yet */
	struct weft_msg_release rl = {.ino = a.ino, .session = s.session};
	OK(mc_call(m, WEFT_OP_RELEASE, &rl, NULL, 0, NULL));
	return 0;
}
