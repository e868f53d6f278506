/* Resolving the cluster key and meta's address for the CLI verbs. */
#include "cli/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
