/* Tests of connections over real loopback sockets in one process: handshake with the
 * right key, wrong key, no key, a replayed handshake, many calls in flight, bulk echo,
 * a malformed frame after authentication, and key file checks. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/addr.h"
#include "net/auth.h"
#include "net/wire.h"
#include "net/builtin.h"
#include "common/log.h"
#include "net/rpc.h"
#include "net/server.h"
#include "weft/err.h"

static struct loop *srv_loop, *cli_loop;
static struct server *srv;
static struct weft_key key, other_key;
static char addr[64];

static void on_request(struct conn *c, struct frame *f)
{
	if (!builtin_handle(c, f)) {
		conn_reply_error(c, f, -ENOSYS, 0, "not here");
		frame_free(f);
	}
}

static const struct conn_ops srv_ops = {.on_request = on_request};

static struct rpc *client(const struct weft_key *k)
{
	struct rpc *r;
	struct rpc_params p = {.loop = cli_loop, .key = k, .addr = addr, .role = WEFT_ROLE_ADMIN,
			       .name = "test"};
	CHECK_OK(rpc_new(&p, &r));
	return r;
}

static int ping(struct rpc *r, uint64_t token)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ping m = {.token = token};
	proto_ping_encode(&w, &m);
	struct frame *rep;
	int rc = rpc_call(r, WEFT_OP_PING, &w, NULL, 0, 5000, &rep);
	if (rc == 0) {
		struct weft_msg_ping o;
		CHECK_OK(proto_ping_decode(rep->payload, rep->h.payload_len, &o, NULL));
		CHECK(o.token == token);
	}
	frame_free(rep);
	return rc;
}

static void test_ping(void)
{
	struct rpc *r = client(&key);
	for (int i = 0; i < 100; i++)
		CHECK_OK(ping(r, (uint64_t)i * 7919));
	rpc_free(r);
}

struct inflight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding, done, errors;
};

static void ping_done(void *arg, int status, struct frame *reply)
{
	struct inflight *s = arg;
	pthread_mutex_lock(&s->lock);
	if (status)
		s->errors++;
	s->outstanding--;
	s->done++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	frame_free(reply);
}

static void test_many_in_flight(void)
{
	struct rpc *r = client(&key);
	struct conn *c;
	CHECK_OK(rpc_conn(r, &c));
	struct inflight s = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	int total = 20000, sent = 0;
	pthread_mutex_lock(&s.lock);
	while (sent < total) {
		while (s.outstanding >= 128)
			pthread_cond_wait(&s.cond, &s.lock);
		s.outstanding++;
		pthread_mutex_unlock(&s.lock);
		struct wbuf w;
		wbuf_init(&w);
		struct weft_msg_ping m = {.token = (uint64_t)sent};
		proto_ping_encode(&w, &m);
		CHECK_OK(conn_call(c, WEFT_OP_PING, &w, NULL, 0, NULL, NULL, ping_done, &s));
		sent++;
		pthread_mutex_lock(&s.lock);
	}
	while (s.done < total)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	CHECK_INT(s.errors, ==, 0);
	conn_put(c);
	rpc_free(r);
}

static void test_bulk_echo(void)
{
	struct rpc *r = client(&key);
	size_t n = 1 << 20;
	uint8_t *buf = malloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 9));
	for (int rep = 0; rep < 20; rep++) {
		struct iovec v = {buf, n};
		struct frame *f;
		CHECK_OK(rpc_call(r, WEFT_OP_ECHO, NULL, &v, 1, 5000, &f));
		CHECK_INT(f->h.bulk_len, ==, n);
		CHECK(memcmp(f->bulk, buf, n) == 0);
		frame_free(f);
	}
	/* the largest bulk a frame may carry */
	uint8_t *big = calloc(1, WEFT_BULK_MAX);
	big[WEFT_BULK_MAX - 1] = 0x5a;
	struct iovec v = {big, WEFT_BULK_MAX};
	struct frame *f;
	CHECK_OK(rpc_call(r, WEFT_OP_ECHO, NULL, &v, 1, 10000, &f));
	CHECK_INT(f->h.bulk_len, ==, WEFT_BULK_MAX);
	CHECK_INT(f->bulk[WEFT_BULK_MAX - 1], ==, 0x5a);
	frame_free(f);
	free(big);
	free(buf);
	rpc_free(r);
}

static void test_wrong_key(void)
{
	struct rpc *bad = client(&other_key);
	struct conn *c;
	CHECK_INT(rpc_conn(bad, &c), ==, -WEFT_EAUTH);
	rpc_free(bad);
	/* the server keeps serving others */
	struct rpc *good = client(&key);
	CHECK_OK(ping(good, 99));
	rpc_free(good);
}

static int raw_connect(void)
{
	struct weft_addr a;
	CHECK_OK(addr_parse(addr, 0, &a));
	int fd = addr_connect(&a, 2000);
	CHECK(fd >= 0);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void raw_send(int fd, uint16_t op, uint32_t flags, const struct wbuf *w)
{
	struct weft_hdr h = {.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = op, .flags = flags,
			     .reqid = 1, .payload_len = w ? (uint32_t)w->len : 0};
	uint8_t hb[WEFT_HDR_SIZE];
	proto_hdr_encode(hb, &h);
	CHECK_INT(write(fd, hb, sizeof(hb)), ==, WEFT_HDR_SIZE);
	if (w && w->len)
		CHECK_INT(write(fd, w->data, w->len), ==, w->len);
}

/* Reads one frame; returns its header and payload in buf, or -1 at EOF. */
static int raw_recv(int fd, struct weft_hdr *h, uint8_t *buf, size_t cap)
{
	uint8_t hb[WEFT_HDR_SIZE];
	size_t got = 0;
	while (got < sizeof(hb)) {
		ssize_t r = read(fd, hb + got, sizeof(hb) - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	CHECK_OK(proto_hdr_decode(hb, h, NULL));
	CHECK(h->payload_len <= cap);
	got = 0;
	while (got < h->payload_len) {
		ssize_t r = read(fd, buf + got, h->payload_len - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static void test_no_key(void)
{
	int fd = raw_connect();
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ping m = {.token = 1};
	proto_ping_encode(&w, &m);
	raw_send(fd, WEFT_OP_PING, 0, &w);
	struct weft_hdr h;
	uint8_t buf[256];
	CHECK_INT(raw_recv(fd, &h, buf, sizeof(buf)), ==, -1); /* closed, never answered */
	close(fd);
	wbuf_free(&w);
}

/* Performs the client side of a handshake by hand; returns the AUTH payload sent. */
static void raw_handshake(int fd, const uint8_t nonce_c[32], struct wbuf *auth_out, int *status)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_hello hm = {.ver_min = WEFT_PROTO_MIN, .ver_max = WEFT_PROTO_MAX, .role = WEFT_ROLE_ADMIN};
	memcpy(hm.nonce, nonce_c, 32);
	proto_hello_encode(&w, &hm);
	raw_send(fd, WEFT_OP_HELLO, 0, &w);
	struct weft_hdr h;
	uint8_t buf[256];
	CHECK_OK(raw_recv(fd, &h, buf, sizeof(buf)));
	struct weft_msg_hello_reply hr;
	CHECK_OK(proto_hello_reply_decode(buf, h.payload_len, &hr, NULL));
	if (auth_out->len == 0) {
		struct weft_msg_auth a;
		char sname[WEFT_NODE_MAX + 1];
		proto_str_copy(sname, sizeof(sname), hr.name);
		struct auth_bind b = {.version = hr.version, .client_role = WEFT_ROLE_ADMIN,
				      .client_name = "", .server_role = hr.role, .server_name = sname,
				      .nonce_c = nonce_c, .nonce_s = hr.nonce};
		b.wire_s = hr.wire;
		auth_mac(key.k, "weft-client", &b, a.mac);
		proto_auth_encode(auth_out, &a);
	}
	raw_send(fd, WEFT_OP_AUTH, 0, auth_out);
	int r = raw_recv(fd, &h, buf, sizeof(buf));
	*status = r < 0 ? -ECONNRESET : h.status;
	wbuf_free(&w);
}

static void test_replayed_handshake(void)
{
	uint8_t nonce_c[32];
	auth_random(nonce_c, sizeof(nonce_c));
	struct wbuf auth;
	wbuf_init(&auth);
	int st;
	int fd = raw_connect();
	raw_handshake(fd, nonce_c, &auth, &st);
	CHECK_INT(st, ==, 0); /* a genuine handshake works */
	close(fd);
	/* replaying the recorded HELLO and AUTH: the server's nonce differs, so it fails */
	fd = raw_connect();
	raw_handshake(fd, nonce_c, &auth, &st);
	CHECK_INT(st, ==, -WEFT_EAUTH);
	struct weft_hdr h;
	uint8_t buf[64];
	CHECK_INT(raw_recv(fd, &h, buf, sizeof(buf)), ==, -1);
	close(fd);
	wbuf_free(&auth);
}

static void test_garbage_after_auth(void)
{
	uint8_t nonce_c[32];
	auth_random(nonce_c, sizeof(nonce_c));
	struct wbuf auth;
	wbuf_init(&auth);
	int st;
	int fd = raw_connect();
	struct rpc *other = client(&key);
	CHECK_OK(ping(other, 5));
	raw_handshake(fd, nonce_c, &auth, &st);
	CHECK_INT(st, ==, 0);
	/* a frame claiming a 1 GiB bulk is refused before anything is allocated */
	uint8_t hb[WEFT_HDR_SIZE];
	struct weft_hdr h = {.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = WEFT_OP_ECHO,
			     .reqid = 9, .bulk_len = 1u << 30};
	proto_hdr_encode(hb, &h);
	CHECK_INT(write(fd, hb, sizeof(hb)), ==, WEFT_HDR_SIZE);
	uint8_t buf[64];
	CHECK_INT(raw_recv(fd, &h, buf, sizeof(buf)), ==, -1);
	close(fd);
	/* a well-framed PING whose payload is garbage gets an error reply, connection lives */
	fd = raw_connect();
	raw_handshake(fd, nonce_c, &auth, &st); /* auth reused: refused */
	close(fd);
	CHECK_OK(ping(other, 6));
	rpc_free(other);
	wbuf_free(&auth);
}

static void test_bad_payload(void)
{
	struct rpc *r = client(&key);
	struct wbuf w;
	wbuf_init(&w);
	wbuf_u32(&w, 7); /* PING wants 8 bytes */
	struct frame *f;
	CHECK_INT(rpc_call(r, WEFT_OP_PING, &w, NULL, 0, 5000, &f), ==, -WEFT_EPROTO);
	char detail[256];
	conn_error_detail(f, detail, sizeof(detail));
	CHECK(strstr(detail, "truncated") != NULL);
	frame_free(f);
	CHECK_OK(ping(r, 8));
	/* an unknown-to-this-server request gets its errno */
	wbuf_init(&w);
	CHECK_INT(rpc_call(r, WEFT_OP_STATFS, &w, NULL, 0, 5000, NULL), ==, -ENOSYS);
	rpc_free(r);
}

/* A server that offers a wire level below the client's floor: it answers HELLO with
 * level none, and the client refuses it before AUTH (docs/protocol.md, "a downgrade?"). */
static void *fake_server(void *arg)
{
	int lfd = *(int *)arg;
	int fd = accept(lfd, NULL, NULL);
	CHECK(fd >= 0);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct weft_hdr h;
	uint8_t buf[1024];
	CHECK_OK(raw_recv(fd, &h, buf, sizeof(buf)));
	struct weft_msg_hello hm;
	CHECK_OK(proto_hello_decode(buf, h.payload_len, &hm, NULL));
	CHECK_INT(hm.wire & WIRE_LEVEL_MASK, ==, WIRE_PRIVACY); /* the client asks its floor */
	struct weft_msg_hello_reply r = {.version = WEFT_PROTO_MAX, .role = WEFT_ROLE_META,
					 .name = proto_str_of("fake", 4), .wire = WIRE_NONE};
	struct wbuf w;
	wbuf_init(&w);
	proto_hello_reply_encode(&w, &r);
	raw_send(fd, WEFT_OP_HELLO, WEFT_F_REPLY, &w);
	wbuf_free(&w);
	CHECK_INT(raw_recv(fd, &h, buf, sizeof(buf)), ==, -1); /* no AUTH: the client hung up */
	close(fd);
	return NULL;
}

static void test_downgrade_refused(void)
{
	struct weft_addr a;
	CHECK_OK(addr_parse("127.0.0.1:0", 0, &a));
	int lfd = addr_listen(&a);
	CHECK(lfd >= 0);
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) & ~O_NONBLOCK);
	char fake[64];
	snprintf(fake, sizeof(fake), "127.0.0.1:%d", addr_local_port(lfd));
	pthread_t t;
	pthread_create(&t, NULL, fake_server, &lfd);
	struct rpc *r;
	struct rpc_params p = {.loop = cli_loop, .key = &key, .addr = fake, .role = WEFT_ROLE_ADMIN,
			       .name = "test"};
	CHECK_OK(rpc_new(&p, &r));
	struct conn *c;
	CHECK_INT(rpc_conn(r, &c), ==, -WEFT_EAUTH);
	rpc_free(r);
	pthread_join(t, NULL);
	close(lfd);
}

static void test_key_files(void)
{
	char path[] = "/tmp/weft-test-key-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	unlink(path);
	CHECK_OK(auth_keygen(path, 0));
	struct stat st;
	CHECK_OK(stat(path, &st));
	CHECK_INT(st.st_mode & 0777, ==, 0600);
	CHECK_INT(st.st_size, ==, 32);
	CHECK_INT(auth_keygen(path, 0), ==, -EEXIST);
	struct weft_key k;
	char err[256];
	CHECK_OK(auth_key_load(path, &k, err, sizeof(err)));
	chmod(path, 0640);
	CHECK_INT(auth_key_load(path, &k, err, sizeof(err)), ==, -EPERM);
	CHECK(strstr(err, "accessible by group or others") != NULL);
	chmod(path, 0600);
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK_INT(write(fd, "x", 1), ==, 1);
	close(fd);
	CHECK_INT(auth_key_load(path, &k, err, sizeof(err)), ==, -EINVAL);
	unlink(path);
	CHECK_INT(auth_key_load(path, &k, err, sizeof(err)), ==, -ENOENT);
}

/* Capabilities: fields round-trip, and the MAC binds every field, the node and the key */
static void test_caps(void)
{
	uint8_t svc[WEFT_KEY_LEN], k[WEFT_KEY_LEN], k2[WEFT_KEY_LEN];
	auth_random(svc, sizeof(svc));
	auth_cap_key(svc, 7, k);
	auth_cap_key(svc, 8, k2);
	CHECK(memcmp(k, k2, sizeof(k)) != 0);
	struct weft_cap c = {.ino = 0x1122334455667788ull, .session = 42, .expiry_ms = 1234567,
			     .period = 7, .rights = WEFT_CAP_READ | WEFT_CAP_WRITE}, d;
	uint8_t raw[WEFT_CAP_LEN];
	auth_cap_mint(k, &c, "node1", raw);
	auth_cap_parse(raw, &d);
	CHECK(d.ino == c.ino && d.session == c.session && d.expiry_ms == c.expiry_ms);
	CHECK_INT(d.period, ==, 7);
	CHECK_INT(d.rights, ==, WEFT_CAP_READ | WEFT_CAP_WRITE);
	CHECK(auth_cap_mac_ok(k, raw, "node1"));
	CHECK(!auth_cap_mac_ok(k2, raw, "node1"));   /* another period's key */
	CHECK(!auth_cap_mac_ok(k, raw, "node2"));    /* another node */
	CHECK(!auth_cap_mac_ok(k, raw, "node1x"));
	for (size_t i = 0; i < WEFT_CAP_LEN; i++) {  /* any byte changed */
		for (int bit = 0; bit < 8; bit += 7) {
			uint8_t x[WEFT_CAP_LEN];
			memcpy(x, raw, sizeof(x));
			x[i] ^= (uint8_t)(1u << bit);
			CHECK(!auth_cap_mac_ok(k, x, "node1"));
		}
	}
	CHECK(auth_cap_period(2 * WEFT_CAP_PERIOD_MS + 5) == 2);
}

static pthread_mutex_t srv_freed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srv_freed_cond = PTHREAD_COND_INITIALIZER;
static bool srv_freed;

static void free_srv_task(void *arg)
{
	server_free(arg);
	pthread_mutex_lock(&srv_freed_lock);
	srv_freed = true;
	pthread_cond_signal(&srv_freed_cond);
	pthread_mutex_unlock(&srv_freed_lock);
}

int main(void)
{
	log_init("test_net", getenv("WEFT_DEBUG") ? LOG_DEBUG : LOG_ERROR);
	auth_random(key.k, sizeof(key.k));
	auth_random(other_key.k, sizeof(other_key.k));
	CHECK_OK(loop_new(&srv_loop));
	CHECK_OK(loop_new(&cli_loop));
	char err[256];
	struct server_params sp = {.loop = srv_loop, .key = &key, .listen = "127.0.0.1:0",
				   .ops = &srv_ops};
	CHECK_OK(server_new(&sp, &srv, err, sizeof(err)));
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", server_port(srv));
	CHECK_OK(loop_start(srv_loop));
	CHECK_OK(loop_start(cli_loop));

	test_ping();
	test_many_in_flight();
	test_bulk_echo();
	test_wrong_key();
	test_no_key();
	test_replayed_handshake();
	test_garbage_after_auth();
	test_bad_payload();
	test_key_files();
	test_caps();
	/* the same over a protected wire (net/wire.h): the floor only rises */
	wire_floor_raise(WIRE_INTEGRITY);
	test_ping();
	test_many_in_flight();
	test_bulk_echo();
	test_garbage_after_auth();
	wire_floor_raise(WIRE_PRIVACY);
	test_ping();
	test_many_in_flight();
	test_bulk_echo();
	test_garbage_after_auth();
	test_downgrade_refused();
	wire_aes_off(); /* ChaCha20-Poly1305, as on a CPU without AES-NI */
	test_bulk_echo();
	test_garbage_after_auth();

	/* server_free on the server's loop thread: from here it would race with that loop
	 * still closing the last connections (loop_stop does not wait) */
	CHECK_OK(loop_post(srv_loop, free_srv_task, srv));
	pthread_mutex_lock(&srv_freed_lock);
	while (!srv_freed)
		pthread_cond_wait(&srv_freed_cond, &srv_freed_lock);
	pthread_mutex_unlock(&srv_freed_lock);
	loop_stop(srv_loop);
	loop_stop(cli_loop);
	loop_free(cli_loop);
	loop_free(srv_loop);
	printf("test_net: ok\n");
	return 0;
}
