/* The node registry a server checks credentials against (nodetab.h). */
#include "net/nodetab.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/auth.h"
#include "net/server.h"
#include "weft/err.h"

struct node_entry {
	char name[WEFT_NODE_MAX + 1];
	uint8_t role;
	uint32_t serial;
	bool revoked;
	struct node_policy policy;
};

struct nodetab {
	pthread_mutex_t lock;
	struct node_entry *v;
	size_t n, cap;
};

struct nodetab *nodetab_new(void)
{
	struct nodetab *t = calloc(1, sizeof(*t));
	if (t)
		pthread_mutex_init(&t->lock, NULL);
	return t;
}

void nodetab_free(struct nodetab *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->v);
	free(t);
}

static struct node_entry *find(struct nodetab *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0)
			return &t->v[i];
	return NULL;
}

static int set_locked(struct nodetab *t, const char *name, uint8_t role, uint32_t serial,
		      bool revoked, const struct node_policy *policy)
{
	struct node_entry *e = find(t, name);
	if (!e) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 16;
			struct node_entry *v = realloc(t->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			t->v = v;
			t->cap = cap;
		}
		e = &t->v[t->n++];
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	e->role = role;
	e->serial = serial;
	e->revoked = revoked;
	e->policy = policy ? *policy : NODE_POLICY_ANY;
	return 0;
}

int nodetab_set(struct nodetab *t, const char *name, uint8_t role, uint32_t serial,
		bool revoked, const struct node_policy *policy)
{
	pthread_mutex_lock(&t->lock);
	int rc = set_locked(t, name, role, serial, revoked, policy);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

bool nodetab_get(struct nodetab *t, const char *name, uint8_t *role, uint32_t *serial,
		 bool *revoked, struct node_policy *policy)
{
	pthread_mutex_lock(&t->lock);
	struct node_entry *e = find(t, name);
	if (e) {
		*role = e->role;
		*serial = e->serial;
		*revoked = e->revoked;
		if (policy)
			*policy = e->policy;
	}
	pthread_mutex_unlock(&t->lock);
	return e != NULL;
}

bool nodetab_allows(struct nodetab *t, bool strict, uint8_t role, const char *name,
		    uint32_t serial, char *why, size_t whylen)
{
	uint8_t r;
	uint32_t s;
	bool revoked;
	if (!nodetab_get(t, name, &r, &s, &revoked, NULL)) {
		if (strict)
			snprintf(why, whylen, "no node of that name (weft node add)");
		return !strict;
	}
	/* a store may hear of a reissue after the node uses it: a later serial than a
	 * revoked one can only come from meta */
	if (revoked && (strict || serial <= s)) {
		snprintf(why, whylen, "node %s was revoked", name);
		return false;
	}
	if (serial < s) {
		snprintf(why, whylen, "credential serial %u of %s was replaced by serial %u", serial,
			 name, s);
		return false;
	}
	if (strict && (serial != s || role != r)) {
		snprintf(why, whylen, "node %s holds a %s credential of serial %u", name,
			 auth_role_name(r) ? auth_role_name(r) : "?", s);
		return false;
	}
	return true;
}

void nodetab_format(struct nodetab *t, struct wbuf *w)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		const struct node_entry *e = &t->v[i];
		const struct node_policy *p = &e->policy;
		char line[WEFT_NODE_MAX + 128];
		int n = snprintf(line, sizeof(line), "%s %s %u %s", e->name,
				 auth_role_name(e->role) ? auth_role_name(e->role) : "?", e->serial,
				 e->revoked ? "revoked" : "active");
		if (e->role == WEFT_ROLE_CLIENT)
			n += snprintf(line + n, sizeof(line) - n, " %s",
				      p->trusted ? "trusted" : "squashed");
		if (p->uid_lo != 0 || p->uid_hi != UINT32_MAX || p->gid_lo != 0 ||
		    p->gid_hi != UINT32_MAX)
			n += snprintf(line + n, sizeof(line) - n, " uids=%u-%u gids=%u-%u", p->uid_lo,
				      p->uid_hi, p->gid_lo, p->gid_hi);
		line[n++] = '\n';
		wbuf_put(w, line, (size_t)n);
	}
	pthread_mutex_unlock(&t->lock);
}

int nodetab_parse(struct nodetab *t, const char *text, size_t len)
{
	struct nodetab tmp = {.lock = PTHREAD_MUTEX_INITIALIZER};
	const char *p = text, *end = text + len;
	int rc = 0;
	while (p < end && rc == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[WEFT_NODE_MAX + 64], name[WEFT_NODE_MAX + 1], role[16], state[16];
		unsigned serial;
		if (ll >= sizeof(line)) {
			rc = -EINVAL;
			break;
		}
		memcpy(line, p, ll);
		line[ll] = 0;
		p += ll + 1;
		if (ll == 0)
			continue;
		if (sscanf(line, "%63s %15s %u %15s", name, role, &serial, state) != 4 ||
		    !auth_role_parse(role))
			rc = -EINVAL;
		else
			rc = set_locked(&tmp, name, auth_role_parse(role), serial,
					strcmp(state, "revoked") == 0, NULL);
	}
	if (rc) {
		free(tmp.v);
		return rc;
	}
	pthread_mutex_lock(&t->lock);
	free(t->v);
	t->v = tmp.v;
	t->n = tmp.n;
	t->cap = tmp.cap;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void nodetab_foreach(struct nodetab *t, void (*fn)(void *arg, const char *name, uint8_t role,
						    uint32_t serial, bool revoked), void *arg)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		fn(arg, t->v[i].name, t->v[i].role, t->v[i].serial, t->v[i].revoked);
	pthread_mutex_unlock(&t->lock);
}

static void cut_off(void *arg, const char *name, uint8_t role, uint32_t serial, bool revoked)
{
	(void)role;
	unsigned n = server_close_peer(arg, name, revoked ? UINT32_MAX : serial, -WEFT_EAUTH);
	if (n)
		log_info("closed %u connection%s of node %s: %s", n, n == 1 ? "" : "s", name,
			 revoked ? "revoked" : "its credential was replaced");
}

void nodetab_cut_off(struct nodetab *t, struct server *srv)
{
	nodetab_foreach(t, cut_off, srv);
}
