/* Options every verb that talks to a cluster shares: --key FILE, --meta HOST:PORT and
 * --dir STATE (a cluster started by weft up keeps its key and addresses there). */
#ifndef WEFT_CLI_CLUSTER_H
#define WEFT_CLI_CLUSTER_H

#include <stdbool.h>
#include "net/auth.h"

#define WEFT_DEFAULT_KEY   "/etc/weft/cluster.key"
#define WEFT_META_PORT     7070
#define WEFT_STORE_PORT    7071

struct cluster_opts {
	const char *key;   /* --key */
	const char *meta;  /* --meta */
	const char *dir;   /* --dir */
};

/* The long options every command that talks to a cluster takes: first in its table. */
#define CLUSTER_LONGOPTS                                                                   \
	{"dir", required_argument, NULL, 'd'}, {"meta", required_argument, NULL, 'm'},     \
	{"key", required_argument, NULL, 'k'}
/* Takes getopt's ch (with its arg) if it is one of CLUSTER_LONGOPTS: true if it was. */
bool cluster_opt(struct cluster_opts *o, int ch, const char *arg);

/* The key file to use: --key, else STATE/cluster.key with --dir, else $WEFT_KEY, else
 * /etc/weft/cluster.key. Writes into buf. */
const char *cluster_key_path(const struct cluster_opts *o, char *buf, size_t cap);
/* Loads the key, printing "weft VERB: reason" on failure. Returns 0 or 1. */
int cluster_load_key(const char *verb, const struct cluster_opts *o, struct weft_key *key);
/* meta's address: --meta, else the one recorded in STATE/meta.addr, else
 * 127.0.0.1:7070. Writes into buf. */
const char *cluster_meta_addr(const struct cluster_opts *o, char *buf, size_t cap);

struct loop;
struct rpc;
struct weft_chain_set;
/* What an admin verb does first: loads the key into *key (which must outlive *meta),
 * resolves meta's address into addr, starts logging and an event loop, and makes an
 * rpc to meta (it connects at the first call). Returns 0, or the verb's exit status
 * after printing "weft VERB: reason". The caller frees *meta, then *loop. */
int cluster_connect(const char *verb, const struct cluster_opts *o, struct weft_key *key,
		    char *addr, size_t addrcap, struct loop **loop, struct rpc **meta);
/* Sends op with payload (len bytes) to every target of set that is not offline, as
 * admin, each with its own short-lived connection; prints "weft VERB: target N (addr):
 * reason" for each that fails. Returns how many failed; *done (if not NULL) how many
 * answered. */
unsigned cluster_each_store(const char *verb, struct loop *loop, const struct weft_key *key,
			    const struct weft_chain_set *set, uint16_t op, const void *payload,
			    size_t len, unsigned *done);

/* meta's address ("HOST:PORT") from the weft mount holding path (its source is
 * weft:HOST:PORT), into out. Errors: -ENOENT path is on no weft mount; -errno of
 * realpath or /proc/self/mounts. */
int cluster_meta_of_path(const char *path, char *out, size_t cap);
struct weft_cred;
/* The caller's uid, gid and groups, as meta checks them. */
void cluster_cred_self(struct weft_cred *cr);

#endif
