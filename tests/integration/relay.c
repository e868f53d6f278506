/* relay TARGET [CAPTURE [CONTROL]]: a man in the middle for test_wire.sh. Listens on a free port of
 * 127.0.0.1 (printed as "relay listening on 127.0.0.1:PORT") and forwards every
 * connection to TARGET (HOST:PORT), both ways, following the frames (header, payload,
 * bulk, and after the handshake the 16-byte tag unless the HELLO reply chose level none).
 * On SIGUSR1 it flips one byte in the middle of the bulk of the next frame after the
 * handshake whose bulk is at least 64 KiB, in either direction, and says so on stderr.
 * With CAPTURE, every byte it forwards is appended to that file. CONTROL is a file read at
 * every new connection: "hello" makes the relay set the wire byte of the client's HELLO
 * to 0 (none), "both" that of the HELLO and of the server's reply: a downgrade. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "net/wire.h"
#include "proto/proto.h"

#define FLIP_MIN_BULK (64u * 1024)

static struct weft_addr target;
static FILE *capture;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int flip_pending;
static atomic_int nconn;

struct pair {
	int client, server;
	int id;
	atomic_int level;  /* from the HELLO reply */
	int downgrade;     /* 0, 1 (HELLO), 2 (HELLO and reply) */
	atomic_int alive;  /* directions still running */
};

struct dir {
	struct pair *p;
	int from, to;
	bool s2c;
};

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&flip_pending, 1);
}

static int write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *run_dir(void *arg)
{
	struct dir *d = arg;
	struct pair *p = d->p;
	uint8_t *buf = malloc(1 << 20);
	uint8_t hdr[WEFT_HDR_SIZE], hello[1024];
	size_t hdr_got = 0, body_left = 0, body_off = 0, hello_len = 0;
	long long flip_at = -1;
	uint64_t frame = 0;
	struct weft_hdr h = {0};
	for (;;) {
		ssize_t n = read(d->from, buf, 1 << 20);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t i = 0;
		while (i < (size_t)n) {
			if (body_left == 0) {
				size_t k = WEFT_HDR_SIZE - hdr_got;
				if (k > (size_t)n - i)
					k = (size_t)n - i;
				memcpy(hdr + hdr_got, buf + i, k);
				hdr_got += k;
				i += k;
				if (hdr_got < WEFT_HDR_SIZE)
					break;
				hdr_got = 0;
				if (proto_hdr_decode(hdr, &h, NULL) < 0) {
					fprintf(stderr, "relay: connection %d: undecodable header\n", p->id);
					goto out;
				}
				body_left = (size_t)h.payload_len + h.bulk_len +
					    (frame >= 2 && atomic_load(&p->level) ? WIRE_TAG_LEN : 0);
				body_off = 0;
				hello_len = 0;
				flip_at = -1;
				if (frame >= 2 && h.bulk_len >= FLIP_MIN_BULK &&
				    atomic_exchange(&flip_pending, 0)) {
					flip_at = (long long)h.payload_len + h.bulk_len / 2;
					fprintf(stderr, "relay: connection %d: flipping byte %lld of frame %llu "
						"(opcode 0x%04x%s, %s)\n", p->id, flip_at,
						(unsigned long long)frame - 2, h.opcode,
						h.flags & WEFT_F_REPLY ? " reply" : "",
						d->s2c ? "server to client" : "client to server");
				}
				if (body_left == 0)
					frame++;
				continue;
			}
			size_t k = body_left < (size_t)n - i ? body_left : (size_t)n - i;
			/* the wire byte is the last of HELLO and of its reply */
			size_t wire_at = (size_t)h.payload_len - 1;
			if (frame == 0 && p->downgrade > (d->s2c ? 1 : 0) && h.payload_len &&
			    wire_at >= body_off && wire_at < body_off + k) {
				fprintf(stderr, "relay: connection %d: wire byte 0x%02x of the %s set to 0\n",
					p->id, buf[i + wire_at - body_off], d->s2c ? "HELLO reply" : "HELLO");
				buf[i + wire_at - body_off] = 0;
			}
			if (flip_at >= (long long)body_off && flip_at < (long long)(body_off + k))
				buf[i + (size_t)flip_at - body_off] ^= 0x5a;
			if (d->s2c && frame == 0 && hello_len + k <= sizeof(hello)) {
				memcpy(hello + hello_len, buf + i, k);
				hello_len += k;
			}
			body_off += k;
			body_left -= k;
			i += k;
			if (body_left == 0) {
				if (d->s2c && frame == 0) {
					struct weft_msg_hello_reply r;
					if (proto_hello_reply_decode(hello, hello_len, &r, NULL) == 0)
						atomic_store(&p->level, r.wire & WIRE_LEVEL_MASK);
				}
				frame++;
			}
		}
		if (capture) {
			pthread_mutex_lock(&capture_lock);
			fwrite(buf, 1, (size_t)n, capture);
			fflush(capture);
			pthread_mutex_unlock(&capture_lock);
		}
		if (write_all(d->to, buf, (size_t)n) < 0)
			break;
	}
out:
	shutdown(d->from, SHUT_RDWR);
	shutdown(d->to, SHUT_RDWR);
	free(buf);
	if (atomic_fetch_sub(&p->alive, 1) == 1) {
		close(p->client);
		close(p->server);
		free(p);
	}
	free(d);
	return NULL;
}

static void blocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

static void start_dir(struct pair *p, int from, int to, bool s2c)
{
	struct dir *d = calloc(1, sizeof(*d));
	*d = (struct dir){.p = p, .from = from, .to = to, .s2c = s2c};
	pthread_t t;
	pthread_create(&t, NULL, run_dir, d);
	pthread_detach(t);
}

int main(int argc, char **argv)
{
	if (argc < 2 || addr_parse(argv[1], 0, &target)) {
		fprintf(stderr, "usage: relay TARGET_HOST:PORT [CAPTURE_FILE]\n");
		return 2;
	}
	if (argc > 2 && !(capture = fopen(argv[2], "w"))) {
		perror(argv[2]);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_usr1};
	sigaction(SIGUSR1, &sa, NULL);
	struct weft_addr la;
	addr_parse("127.0.0.1:0", 0, &la);
	int lfd = addr_listen(&la);
	if (lfd < 0) {
		fprintf(stderr, "relay: listen: %s\n", strerror(-lfd));
		return 1;
	}
	printf("relay listening on 127.0.0.1:%d\n", addr_local_port(lfd));
	fflush(stdout);
	for (;;) {
		int cfd = accept(lfd, NULL, NULL);
		if (cfd < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) {
				if (errno == EAGAIN)
					usleep(10000);
				continue;
			}
			perror("accept");
			return 1;
		}
		int sfd = addr_connect(&target, 3000);
		if (sfd < 0) {
			close(cfd);
			continue;
		}
		blocking(cfd);
		blocking(sfd);
		struct pair *p = calloc(1, sizeof(*p));
		p->client = cfd;
		p->server = sfd;
		p->id = atomic_fetch_add(&nconn, 1) + 1;
		if (argc > 3) {
			char ctl[16] = "";
			FILE *cf = fopen(argv[3], "r");
			if (cf) {
				if (!fgets(ctl, sizeof(ctl), cf))
					ctl[0] = '\0';
				fclose(cf);
			}
			p->downgrade = strncmp(ctl, "both", 4) == 0 ? 2 : strncmp(ctl, "hello", 5) == 0;
		}
		atomic_init(&p->alive, 2);
		fprintf(stderr, "relay: connection %d accepted\n", p->id);
		start_dir(p, cfd, sfd, false);
		start_dir(p, sfd, cfd, true);
	}
}
