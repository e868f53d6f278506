/* testpeer: a minimal weft server answering PING and ECHO, for transport tests and
 * benchmarks. usage: testpeer KEYFILE LISTEN PORTFILE */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>

#include "net/builtin.h"
#include "common/log.h"
#include "net/server.h"
#include "weft/err.h"

static struct loop *loop;

static void on_request(struct conn *c, struct frame *f)
{
	if (!builtin_handle(c, f)) {
		conn_reply_error(c, f, -ENOSYS, 0, "testpeer answers PING and ECHO only");
		frame_free(f);
	}
}

static void on_term(int sig)
{
	(void)sig;
	loop_stop(loop);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: testpeer KEYFILE LISTEN PORTFILE\n");
		return 2;
	}
	log_init("testpeer", LOG_INFO);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	struct weft_key key;
	char err[512];
	if (auth_key_load(argv[1], &key, err, sizeof(err)) < 0) {
		fprintf(stderr, "testpeer: %s\n", err);
		return 1;
	}
	static const struct conn_ops ops = {.on_request = on_request};
	struct server *s;
	if (loop_new(&loop) < 0)
		return 1;
	struct server_params p = {.loop = loop, .key = &key, .listen = argv[2], .ops = &ops};
	if (server_new(&p, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "testpeer: %s\n", err);
		return 1;
	}
	FILE *f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", server_port(s));
	fclose(f);
	log_info("serving on port %d", server_port(s));
	loop_run(loop);
	server_free(s);
	loop_free(loop);
	return 0;
}
