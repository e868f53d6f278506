/* metaclient: the mode bad, malformed and hostile input. */
#include "mc_test.h"

/* ---- bad input ---- */

static int raw_auth(void)
{
	struct weft_addr a;
	if (addr_parse(g_addr, 7070, &a))
		return -1;
	int fd = addr_connect(&a, 3000);
	if (fd < 0)
		return -1;
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	uint8_t nonce_c[WEFT_NONCE_LEN], hdr[WEFT_HDR_SIZE];
	auth_random(nonce_c, sizeof(nonce_c));
	struct weft_msg_hello h = {.ver_min = WEFT_PROTO_MIN, .ver_max = WEFT_PROTO_MAX, .role = WEFT_ROLE_CLIENT,
				   .name = MC_STR("raw")};
	memcpy(h.nonce, nonce_c, sizeof(nonce_c));
	struct wbuf w;
	wbuf_init(&w);
	proto_hello_encode(&w, &h);
	struct weft_hdr hh = {.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = WEFT_OP_HELLO,
			      .reqid = 1, .payload_len = (uint32_t)w.len};
	proto_hdr_encode(hdr, &hh);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, w.data, w.len) != (ssize_t)w.len)
		goto fail;
	wbuf_free(&w);
	uint8_t buf[4096];
	if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t)sizeof(hdr))
		goto fail;
	struct weft_hdr rh;
	if (proto_hdr_decode(hdr, &rh, NULL) || rh.payload_len > sizeof(buf) ||
	    recv(fd, buf, rh.payload_len, MSG_WAITALL) != (ssize_t)rh.payload_len)
		goto fail;
	struct weft_msg_hello_reply hr;
	if (proto_hello_reply_decode(buf, rh.payload_len, &hr, NULL))
		goto fail;
	struct weft_msg_auth am;
	char sname[WEFT_NODE_MAX + 1];
	proto_str_copy(sname, sizeof(sname), hr.name);
	struct auth_bind b = {.version = hr.version, .client_role = WEFT_ROLE_CLIENT,
			      .client_name = "raw", .server_role = hr.role, .server_name = sname,
			      .nonce_c = nonce_c, .nonce_s = hr.nonce};
	b.wire_s = hr.wire;
	auth_mac(g_key.k, "weft-client", &b, am.mac);
	wbuf_init(&w);
	proto_auth_encode(&w, &am);
	hh = (struct weft_hdr){.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = WEFT_OP_AUTH,
			       .reqid = 2, .payload_len = (uint32_t)w.len};
	proto_hdr_encode(hdr, &hh);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, w.data, w.len) != (ssize_t)w.len)
		goto fail;
	wbuf_free(&w);
	if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t)sizeof(hdr) ||
	    proto_hdr_decode(hdr, &rh, NULL) || rh.status != 0 || rh.payload_len > sizeof(buf) ||
	    recv(fd, buf, rh.payload_len, MSG_WAITALL) != (ssize_t)rh.payload_len)
		goto fail;
	return fd;
fail:
	wbuf_free(&w);
	close(fd);
	return -1;
}

/* After authenticating: garbage bytes -> the server closes this connection. */
static void t_garbage_after_auth(void)
{
	int fd = raw_auth();
	TRUE(fd >= 0);
	if (fd < 0)
		return;
	char junk[256];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 37 + 11);
	ssize_t wr = write(fd, junk, sizeof(junk));
	(void)wr;
	char b[64];
	ssize_t r;
	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	EXPECT(r, 0); /* EOF: closed by the server, not a timeout */
	close(fd);
	/* a header announcing more payload than allowed */
	fd = raw_auth();
	TRUE(fd >= 0);
	if (fd < 0)
		return;
	uint8_t hdr[WEFT_HDR_SIZE];
	struct weft_hdr h = {.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX, .opcode = WEFT_OP_LOOKUP,
			     .reqid = 9, .payload_len = WEFT_PAYLOAD_MAX + 1};
	proto_hdr_encode(hdr, &h);
	wr = write(fd, hdr, sizeof(hdr));
	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	EXPECT(r, 0);
	close(fd);
}

int run_bad(struct mc *m)
{
	struct weft_attr x;
	uint32_t t;
	/* a target so that files can be made (a second run registers the same uuid) */
	OK(mc_register(m, 0xc3, "bad-node", "127.0.0.1:1", &t));
	int rc = mc_create(m, &root, 1, "badroot", S_IFDIR | 0755, 0, &x);
	if (rc == -EEXIST) /* a second run on the same fs */
		rc = mc_lookup(m, &root, 1, "badroot", &x);
	OK(rc);
	uint64_t d = x.ino;
	/* malformed payloads of every meta opcode: an errno each, never a dead server */
	static const uint16_t ops[] = {
		0x0101, 0x0102, 0x0103, 0x0104, 0x0105, 0x0106, 0x0107, 0x0108, 0x0109, 0x010a,
		0x010b, 0x010c, 0x010e, 0x010f, 0x0110, 0x0111, 0x0112, 0x0113, 0x0114, 0x0115,
		0x0116, 0x0117, 0x0118, 0x0201, 0x0202, 0x0203, 0x0301, 0x0302, 0x0303, 0x0304};
	uint8_t junk[600];
	unsigned seed = 12345;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (int k = 0; k < 20; k++) {
			size_t len = (size_t)(rand_r(&seed) % 3 ? rand_r(&seed) % 40 : rand_r(&seed) % 600);
			for (size_t j = 0; j < len; j++)
				junk[j] = (uint8_t)rand_r(&seed);
			int r2 = mc_call_raw(m, ops[i], junk, len, NULL);
			/* random bytes rarely decode; when they do, any errno or success is fine */
			TRUE(r2 <= 0 && r2 != -ENOTCONN && r2 != -ETIMEDOUT);
		}
		/* truncated: empty payload is malformed for every request with fields */
		if (ops[i] != WEFT_OP_STATFS) {
			EXPECT(mc_call_raw(m, ops[i], NULL, 0, NULL), -WEFT_EPROTO);
			TRUE(m->detail[0] != '\0');
		}
	}
	/* names */
	EXPECT(mc_create(m, &root, d, "x/y", S_IFREG | 0644, 0, &x), -EINVAL);
	EXPECT(mc_create(m, &root, d, "/", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -EINVAL);
	struct weft_msg_name nq = {.cred = root, .parent = d, .name = proto_str_of("\0", 1)};
	EXPECT(mc_call(m, WEFT_OP_UNLINK, &nq, NULL, 0, NULL), -EINVAL);
	EXPECT(mc_create(m, &root, d, "", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -ENOENT);
	EXPECT(mc_create(m, &root, d, ".", S_IFREG | 0644, 0, &x), -EEXIST);
	EXPECT(mc_create(m, &root, d, "..", S_IFDIR | 0755, WEFT_CREATE_EXCL, &x), -EEXIST);
	EXPECT(mc_rename(m, &root, 1, "badroot", d, "..", 0), -EBUSY);
	EXPECT(mc_name_op(m, WEFT_OP_RMDIR, &root, 1, "."), -EINVAL);
	struct weft_msg_link lq = {.cred = root, .ino = d, .newparent = d, .newname = MC_STR(".")};
	EXPECT(mc_entry(m, WEFT_OP_LINK, &lq, NULL, NULL), -EEXIST);
	/* inodes that never existed, and an old generation */
	EXPECT(mc_getattr(m, &root, 0, 0, &x), -ESTALE);
	EXPECT(mc_getattr(m, &root, UINT64_MAX, 0, &x), -ESTALE);
	EXPECT(mc_lookup(m, &root, 1ULL << 40, "x", &x), -ESTALE);
	EXPECT(mc_create(m, &root, 1ULL << 40, "x", S_IFREG | 0644, 0, &x), -ESTALE);
	OK(mc_create(m, &root, d, "gen", S_IFREG | 0644, 0, &x));
	OK(mc_name_op(m, WEFT_OP_UNLINK, &root, d, "gen"));
	EXPECT(mc_getattr(m, &root, x.ino, x.gen, &x), -ESTALE);
	/* bad flags */
	EXPECT(mc_rename(m, &root, 1, "badroot", 1, "b2", 0x80), -EINVAL);
	struct weft_msg_access aq = {.cred = root, .ino = 1, .mask = 0x40};
	EXPECT(mc_call(m, WEFT_OP_ACCESS, &aq, NULL, 0, NULL), -EINVAL);
	struct weft_msg_open oq = {.cred = root, .ino = 1, .flags = 3};
	EXPECT(mc_call(m, WEFT_OP_OPEN, &oq, NULL, 0, NULL), -EINVAL);
	/* garbage after authentication closes that connection only */
	t_garbage_after_auth();
	/* the server still serves, on this connection and a new one */
	OK(mc_getattr(m, &root, d, 0, &x));
	struct mc m2;
	OK(mc_open(&m2, NULL, &g_key, g_addr));
	OK(mc_getattr(&m2, &root, 1, 0, &x));
	mc_close(&m2);
	return 0;
}
