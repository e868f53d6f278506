/* Confirming a TARGET_FAILED report before acting on it.
 *
 * DESIGN: a store or client that cannot reach a target reports it; meta does not take
 * the report's word (the reporter may be the one cut off). It probes the target itself:
 * an authenticated connection and a PING, each within META_PROBE_MS. Only if that
 * fails is the target marked offline (a group-commit mutation); if it answers, the
 * report is logged and dropped, and the reporter's own I/O fails over or waits. One
 * probe per target at a time (later reports meanwhile are folded in). A silent host
 * costs one probe timeout; a dead process, one refused connection.
 * A target that reports itself (its disk failed a write) is taken at its word, with no
 * probe: it is marked offline and must rebuild its chains when it returns.
 *
 * Threads: meta_probe_target from the loop thread; each probe runs on its own
 * detached thread (blocking rpc calls on the server's loop) and ends with a mutation. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/rpc.h"
#include "meta/chains.h"
#include "meta/server_int.h"
#include "weft/err.h"

#define META_PROBE_MS 2000

struct probe {
	struct meta_mutation mut;
	struct meta_server *s;
	uint32_t target, reporter;
	bool self; /* the target reported its own disk failing */
	char addr[WEFT_ADDR_MAX + 1];
	int why; /* the probe's error */
};

static pthread_mutex_t probes_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t probing[64]; /* targets with a probe in flight (0: free slot) */

static void probe_end(struct probe *p)
{
	pthread_mutex_lock(&probes_lock);
	for (int i = 0; i < 64; i++)
		if (probing[i] == p->target)
			probing[i] = 0;
	pthread_mutex_unlock(&probes_lock);
	atomic_fetch_sub(&p->s->probes, 1);
	free(p);
}

static int offline_apply(MDB_txn *txn, void *arg)
{
	struct probe *p = arg;
	if (p->self)
		return meta_chains_target_disk_failed(p->s->db, txn, p->target);
	return meta_chains_target_offline(p->s->db, txn, p->target);
}

static void offline_done(void *arg, int result)
{
	struct probe *p = arg;
	if (result)
		log_warn("marking target %u offline: %s", p->target, weft_strerror(result));
	else if (p->self)
		log_warn("target %u (%s) reports its disk failing a write: offline; it rebuilds "
			 "its chains when it returns", p->target, p->addr);
	else
		log_warn("target %u (%s) reported failed by %s%u and does not answer meta's probe "
			 "(%s): offline", p->target, p->addr, p->reporter ? "target " : "a client ",
			 p->reporter, weft_strerror(p->why));
	probe_end(p);
}

static int probe_once(struct probe *p)
{
	struct rpc_params rp = {.loop = p->s->loop, .key = &p->s->key, .addr = p->addr,
				.default_port = 7071, .role = WEFT_ROLE_META, .name = "meta-probe",
				.connect_timeout_ms = META_PROBE_MS};
	struct rpc *r;
	int rc = rpc_new(&rp, &r);
	if (rc)
		return rc;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ping m = {.token = 1};
	proto_ping_encode(&w, &m);
	struct frame *rep = NULL;
	rc = rpc_call(r, WEFT_OP_PING, &w, NULL, 0, META_PROBE_MS, &rep);
	frame_free(rep);
	rpc_free(r);
	return rc;
}

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	p->why = p->self ? 0 : probe_once(p);
	if (p->why == 0 && !p->self) {
		log_warn("target %u (%s) reported failed by %s%u but answers meta: kept up "
			 "(the reporter's path to it is what failed)", p->target, p->addr,
			 p->reporter ? "target " : "a client ", p->reporter);
		probe_end(p);
		return NULL;
	}
	p->mut = (struct meta_mutation){.apply = offline_apply, .done = offline_done, .arg = p,
					.what = "offline"};
	if (meta_commit_submit(p->s->gc, &p->mut))
		probe_end(p);
	return NULL;
}

int meta_probe_target(struct meta_server *s, uint32_t target, const char *addr,
		      uint32_t reporter)
{
	pthread_mutex_lock(&probes_lock);
	int slot = -1;
	for (int i = 0; i < 64; i++) {
		if (probing[i] == target) {
			pthread_mutex_unlock(&probes_lock);
			return 0; /* already being probed */
		}
		if (probing[i] == 0 && slot < 0)
			slot = i;
	}
	if (slot < 0) {
		pthread_mutex_unlock(&probes_lock);
		return -EAGAIN;
	}
	probing[slot] = target;
	pthread_mutex_unlock(&probes_lock);
	struct probe *p = calloc(1, sizeof(*p));
	if (!p) {
		pthread_mutex_lock(&probes_lock);
		probing[slot] = 0;
		pthread_mutex_unlock(&probes_lock);
		return -ENOMEM;
	}
	p->s = s;
	p->target = target;
	p->reporter = reporter;
	p->self = reporter == target;
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	atomic_fetch_add(&s->probes, 1);
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &a, probe_main, p);
	pthread_attr_destroy(&a);
	if (rc) {
		probe_end(p);
		return -rc;
	}
	return 0;
}
