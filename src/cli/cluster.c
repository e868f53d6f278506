/* Resolving the cluster key and meta's address for the CLI verbs. */
#include "cli/cluster.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/loop.h"
#include "net/conn.h"
#include "net/rpc.h"
#include "proto/chainset.h"
#include "weft/err.h"

const char *cluster_key_path(const struct cluster_opts *o, char *buf, size_t cap)
{
	const char *env = getenv("WEFT_KEY");
	if (o->key)
		snprintf(buf, cap, "%s", o->key);
	else if (o->dir)
		snprintf(buf, cap, "%s/cluster.key", o->dir);
	else if (env && *env)
		snprintf(buf, cap, "%s", env);
	else
		snprintf(buf, cap, "%s", WEFT_DEFAULT_KEY);
	return buf;
}

int cluster_load_key(const char *verb, const struct cluster_opts *o, struct weft_key *key)
{
	char path[4096], err[512];
	cluster_key_path(o, path, sizeof(path));
	if (auth_key_load(path, key, err, sizeof(err)) < 0) {
		fprintf(stderr, "weft %s: %s\n", verb, err);
		return 1;
	}
	return 0;
}

const char *cluster_meta_addr(const struct cluster_opts *o, char *buf, size_t cap)
{
	if (o->meta) {
		snprintf(buf, cap, "%s", o->meta);
		return buf;
	}
	if (o->dir) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/meta.addr", o->dir);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(buf, (int)cap, f)) {
				buf[strcspn(buf, "\r\n")] = '\0';
				fclose(f);
				return buf;
			}
			fclose(f);
		}
	}
	snprintf(buf, cap, "127.0.0.1:%d", WEFT_META_PORT);
	return buf;
}

int cluster_connect(const char *verb, const struct cluster_opts *o, struct weft_key *key,
		    char *addr, size_t addrcap, struct loop **loop, struct rpc **meta)
{
	if (cluster_load_key(verb, o, key))
		return 1;
	cluster_meta_addr(o, addr, addrcap);
	log_init(verb, LOG_WARN);
	if (loop_new(loop) || loop_start(*loop))
		return cli_fail(verb, "cannot start event loop");
	char name[64];
	snprintf(name, sizeof(name), "weft-%s", verb);
	struct rpc_params p = {.loop = *loop, .key = key, .addr = addr,
			       .default_port = WEFT_META_PORT, .role = WEFT_ROLE_ADMIN,
			       .name = name};
	if (rpc_new(&p, meta)) {
		loop_free(*loop);
		return cli_usage_error(verb, "bad meta address '%s'", addr);
	}
	return 0;
}

unsigned cluster_each_store(const char *verb, struct loop *loop, const struct weft_key *key,
			    const struct weft_chain_set *set, uint16_t op, const void *payload,
			    size_t len, unsigned *done)
{
	char name[64];
	snprintf(name, sizeof(name), "weft-%s", verb);
	unsigned failed = 0, ok = 0;
	for (uint32_t i = 0; i < set->ntargets; i++) {
		const struct weft_chain_target *t = &set->targets[i];
		if (t->state == WEFT_MEMBER_OFFLINE)
			continue;
		struct rpc_params sp = {.loop = loop, .key = key, .addr = t->addr,
					.default_port = WEFT_STORE_PORT, .role = WEFT_ROLE_ADMIN,
					.name = name, .connect_timeout_ms = 3000};
		struct rpc *r;
		if (rpc_new(&sp, &r)) {
			failed++;
			continue;
		}
		struct wbuf w;
		wbuf_init(&w);
		wbuf_put(&w, payload, len);
		struct frame *f = NULL;
		int e = rpc_call(r, op, &w, NULL, 0, 10000, &f); /* frees w */
		frame_free(f);
		rpc_free(r);
		if (e) {
			fprintf(stderr, "weft %s: target %u (%s): %s\n", verb, t->id, t->addr,
				weft_strerror(e));
			failed++;
		} else {
			ok++;
		}
	}
	if (done)
		*done = ok;
	return failed;
}

/* meta's address from the weft mount holding path. */
int cluster_meta_of_path(const char *path, char *out, size_t cap)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		return -errno;
	FILE *f = fopen("/proc/self/mounts", "r");
	if (!f)
		return -errno;
	char line[4096];
	size_t best = 0;
	while (fgets(line, sizeof(line), f)) {
		char dev[1024], dir[PATH_MAX], type[64];
		if (sscanf(line, "%1023s %4095s %63s", dev, dir, type) != 3 ||
		    strcmp(type, "fuse.weft") != 0 || strncmp(dev, "weft:", 5) != 0)
			continue;
		size_t n = strlen(dir);
		if (strncmp(real, dir, n) == 0 && (real[n] == '/' || real[n] == '\0' || n == 1) &&
		    n >= best) {
			if (strlen(dev + 5) >= cap)
				continue;
			best = n;
			memcpy(out, dev + 5, strlen(dev + 5) + 1);
		}
	}
	fclose(f);
	return best ? 0 : -ENOENT;
}

void cluster_cred_self(struct weft_cred *cr)
{
	memset(cr, 0, sizeof(*cr));
	cr->uid = getuid();
	cr->gid = getgid();
	gid_t g[WEFT_GROUPS_MAX];
	int n = getgroups(WEFT_GROUPS_MAX, g);
	for (int i = 0; i < n; i++)
		cr->groups[i] = g[i];
	cr->ngroups = n > 0 ? (uint32_t)n : 0;
}

bool cluster_opt(struct cluster_opts *o, int ch, const char *arg)
{
	switch (ch) {
	case 'd': o->dir = arg; return true;
	case 'm': o->meta = arg; return true;
	case 'k': o->key = arg; return true;
	}
	return false;
}
