/* Accepting connections and keeping track of them. */
#include "net/server.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/log.h"
#include "weft/err.h"

#define HANDSHAKE_TIMEOUT_MS 5000
/* Limits before trust: connections that have not authenticated yet, at once, in all and
 * from one address. Past them a new connection is closed at once (counted, logged at most
 * every 10 s), so a flood of strangers costs a socket each, not memory or service. */
#define UNAUTH_MAX          256
#define UNAUTH_PER_ADDR_MAX 32
#define LOG_EVERY_MS        10000

struct server {
	struct loop *loop;
	struct loop_watch watch;
	struct weft_key key;
	uint8_t role;
	char name[WEFT_NODE_MAX + 1];
	auth_verify_fn verify;
	void *verify_arg;
	const struct conn_ops *user_ops;
	struct conn_ops ops;   /* wraps user_ops to keep the connection list */
	void *ctx;
	int port;
	struct conn **conns;   /* loop thread only */
	size_t nconns, cap;
	bool accept_paused;    /* out of descriptors: accepting resumes at the next sweep */
	uint64_t refused, fd_waits, last_log_ms;
};

/* One log line per LOG_EVERY_MS for refusals and descriptor shortages, with counts. */
static void log_limits(struct server *s, bool force)
{
	uint64_t now = loop_now_ms();
	if ((!s->refused && !s->fd_waits) || (!force && now - s->last_log_ms < LOG_EVERY_MS))
		return;
	if (s->refused)
		log_warn("refused %llu connections over the limit of unauthenticated peers (%d at "
			 "once, %d per address)", (unsigned long long)s->refused, UNAUTH_MAX,
			 UNAUTH_PER_ADDR_MAX);
	if (s->fd_waits)
		log_warn("out of file descriptors %llu times: accepting paused for a second each "
			 "time (raise the limit: ulimit -n, LimitNOFILE=)",
			 (unsigned long long)s->fd_waits);
	s->refused = s->fd_waits = 0;
	s->last_log_ms = now;
}

/* The host part of "host:port" or "[v6]:port", for counting connections per address. */
static size_t host_len(const char *peer)
{
	const char *colon = strrchr(peer, ':');
	return colon ? (size_t)(colon - peer) : strlen(peer);
}

static bool over_unauth_limit(struct server *s, const char *peer)
{
	size_t all = 0, same = 0, hl = host_len(peer);
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (conn_is_ready(c) || conn_is_closed(c))
			continue;
		all++;
		const char *p = conn_peer(c);
		same += host_len(p) == hl && memcmp(p, peer, hl) == 0;
	}
	return all >= UNAUTH_MAX || same >= UNAUTH_PER_ADDR_MAX;
}

static void srv_on_close(struct conn *c, int err)
{
	struct server *s = conn_owner(c);
	if (s->user_ops->on_close)
		s->user_ops->on_close(c, err);
	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i] == c) {
			s->conns[i] = s->conns[--s->nconns];
			conn_put(c);
			break;
		}
	}
}

static void srv_on_ready(struct conn *c)
{
	struct server *s = conn_owner(c);
	log_debug("connection from %s (%s) authenticated", conn_peer(c), conn_peer_name(c));
	if (s->user_ops->on_ready)
		s->user_ops->on_ready(c);
}

static void srv_on_request(struct conn *c, struct frame *f)
{
	struct server *s = conn_owner(c);
	s->user_ops->on_request(c, f);
}

static void on_accept(struct loop_watch *w, uint32_t events)
{
	struct server *s = w->arg;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(w->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* the listener is level-triggered: stop watching it rather than spin */
				s->fd_waits++;
				s->accept_paused = true;
				loop_watch_mod(s->loop, &s->watch, 0);
				log_limits(s, s->last_log_ms == 0);
			} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				log_warn("accept: %s", strerror(errno));
			}
			return;
		}
		char peer[128];
		addr_format((struct sockaddr *)&ss, peer, sizeof(peer));
		if (over_unauth_limit(s, peer)) {
			close(fd);
			s->refused++;
			log_limits(s, s->last_log_ms == 0);
			continue;
		}
		addr_tune(fd);
		if (s->nconns == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 64;
			struct conn **n = realloc(s->conns, cap * sizeof(*n));
			if (!n) {
				close(fd);
				continue;
			}
			s->conns = n;
			s->cap = cap;
		}
		struct conn_params p = {.loop = s->loop, .key = &s->key, .is_server = true,
					.role = s->role, .name = s->name, .verify = s->verify,
					.verify_arg = s->verify_arg, .ops = &s->ops, .ctx = s->ctx,
					.owner = s};
		struct conn *c = conn_new(fd, &p);
		if (c)
			s->conns[s->nconns++] = c; /* keeps the caller's reference */
	}
}

/* Any credential the cluster secret derives: for servers with no registry of nodes. */
static int verify_derived(void *arg, uint8_t role, const char *name, uint32_t serial,
			  uint8_t out[WEFT_KEY_LEN], char *why, size_t whylen)
{
	struct server *s = arg;
	if (s->role == WEFT_ROLE_STORE) {
		if (!s->key.has_svc) {
			snprintf(why, whylen, "this store has no service key yet");
			return -WEFT_EAUTH;
		}
		auth_store_key(s->key.svc, role, name, serial, out);
	} else if (serial == 0) {
		memcpy(out, s->key.k, WEFT_KEY_LEN);
	} else {
		auth_meta_key(&s->key, role, name, serial, out);
	}
	return 0;
}

unsigned server_close_peer(struct server *s, const char *name, uint32_t below, int err)
{
	/* collected first: a close may take the connection out of s->conns */
	struct conn **hit = calloc(s->nconns + 1, sizeof(*hit));
	unsigned n = 0;
	if (!hit)
		return 0;
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (!conn_is_closed(c) && strcmp(conn_peer_name(c), name) == 0 &&
		    conn_peer_serial(c) != 0 && conn_peer_serial(c) < below) {
			conn_get(c);
			hit[n++] = c;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		conn_close(hit[i], err);
		conn_put(hit[i]);
	}
	free(hit);
	return n;
}

static struct log_limit sweep_lines = LOG_LIMIT_INIT;

static void sweep(void *arg)
{
	struct server *s = arg;
	if (s->accept_paused) {
		s->accept_paused = false;
		loop_watch_mod(s->loop, &s->watch, EPOLLIN);
	}
	log_limits(s, false);
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (!conn_is_ready(c) && !conn_is_closed(c) && conn_age_ms(c) > HANDSHAKE_TIMEOUT_MS) {
			unsigned dropped;
			if (log_limit_ok(&sweep_lines, 10, 10000, &dropped))
				log_error("authentication failed from %s: no handshake within %d s%s",
					  conn_peer(c), HANDSHAKE_TIMEOUT_MS / 1000,
					  dropped ? " (more not logged)" : "");
			conn_close(c, -WEFT_EAUTH);
		}
	}
}

int server_new(const struct server_params *p, struct server **out, char *err, size_t errlen)
{
	struct weft_addr a;
	int rc = addr_parse(p->listen, p->default_port, &a);
	if (rc < 0) {
		snprintf(err, errlen, "listen address %s: not HOST:PORT or [IPv6]:PORT", p->listen);
		return rc;
	}
	int fd = addr_listen(&a);
	if (fd < 0) {
		snprintf(err, errlen, "listen on %s: %s", p->listen, strerror(-fd));
		return fd;
	}
	struct server *s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->loop = p->loop;
	s->key = *p->key;
	s->role = p->role ? p->role : WEFT_ROLE_META;
	snprintf(s->name, sizeof(s->name), "%s", p->name ? p->name : "");
	s->verify = p->verify ? p->verify : verify_derived;
	s->verify_arg = p->verify ? p->verify_arg : s;
	s->user_ops = p->ops;
	s->ops = (struct conn_ops){.on_request = srv_on_request, .on_ready = srv_on_ready,
				   .on_close = srv_on_close};
	s->ctx = p->ctx;
	s->port = addr_local_port(fd);
	s->watch = (struct loop_watch){.fd = fd, .cb = on_accept, .arg = s};
	rc = loop_watch_add(s->loop, &s->watch, EPOLLIN);
	if (rc < 0) {
		snprintf(err, errlen, "epoll: %s", strerror(-rc));
		close(fd);
		free(s);
		return rc;
	}
	loop_every(s->loop, 1000, sweep, s);
	*out = s;
	return 0;
}

int server_port(const struct server *s)
{
	return s->port;
}

void server_foreach(struct server *s, void (*fn)(struct conn *c, void *arg), void *arg)
{
	for (size_t i = 0; i < s->nconns; i++)
		if (conn_is_ready(s->conns[i]) && !conn_is_closed(s->conns[i]))
			fn(s->conns[i], arg);
}

static void free_task(void *arg)
{
	struct server *s = arg;
	loop_cancel(s->loop, sweep, s); /* the sweep timer must not outlive s */
	for (size_t i = 0; i < s->nconns; i++)
		conn_put(s->conns[i]);
	free(s->conns);
	free(s);
}

void server_free(struct server *s)
{
	if (!s)
		return;
	loop_watch_del(s->loop, &s->watch);
	close(s->watch.fd);
	for (size_t i = 0; i < s->nconns; i++)
		conn_close(s->conns[i], -ESHUTDOWN);
	/* tasks run in order: the close tasks above, then the free */
	loop_post(s->loop, free_task, s);
}
