/* weft node add|list|revoke: node credentials (net/auth.h, meta/nodes.c). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster.h"
#include "common/loop.h"
#include "net/rpc.h"
#include "weft/err.h"

/* One call to meta on a connection of our own, so that its keys can unwrap the reply. */
static int node_call(struct rpc *r, uint16_t op, struct wbuf *w, struct conn **conn,
		     struct frame **rep, char *detail, size_t cap)
{
	int rc = rpc_conn(r, conn);
	if (rc) {
		wbuf_free(w);
		return rc;
	}
	rc = conn_call_sync(*conn, op, w, NULL, 0, 10000, rep);
	if (rc && *rep)
		conn_error_detail(*rep, detail, cap);
	return rc;
}

/* A client node's policy as the options gave it. */
struct node_policy_opts {
	bool trusted;
	uint32_t uid_lo, uid_hi, gid_lo, gid_hi;
};

/* "LO-HI" or "ID" into a range; 0 or -1. */
static int parse_range(const char *s, uint32_t *lo, uint32_t *hi)
{
	char *end;
	unsigned long a = strtoul(s, &end, 10), b = a;
	if (end == s || a > UINT32_MAX)
		return -1;
	if (*end == '-') {
		const char *t = end + 1;
		b = strtoul(t, &end, 10);
		if (end == t || b > UINT32_MAX)
			return -1;
	}
	if (*end || a > b)
		return -1;
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return 0;
}

static int node_add(struct rpc *r, const char *name, uint8_t role, const char *out, bool force,
		    const struct node_policy_opts *po, bool policy_only)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_node_add m = {.name = proto_str_of(name, strlen(name)), .role = role,
				      .uid_lo = po->uid_lo, .uid_hi = po->uid_hi,
				      .gid_lo = po->gid_lo, .gid_hi = po->gid_hi};
	m.flags = (po->trusted ? WEFT_NODE_TRUSTED : 0) | (policy_only ? WEFT_NODE_POLICY_ONLY : 0);
	proto_node_add_encode(&w, &m);
	struct conn *c = NULL;
	struct frame *f = NULL;
	char detail[256] = "";
	int rc = node_call(r, WEFT_OP_NODE_ADD, &w, &c, &f, detail, sizeof(detail));
	struct weft_msg_node_cred rep;
	if (rc == 0 && proto_node_cred_decode(f->payload, f->h.payload_len, &rep, NULL))
		rc = -WEFT_EPROTO;
	if (rc == 0 && policy_only) {
		printf("node %s: %s, uids %u-%u, gids %u-%u\n", name,
		       po->trusted ? "trusted" : "root squashed", po->uid_lo, po->uid_hi, po->gid_lo,
		       po->gid_hi);
	} else if (rc == 0) {
		struct weft_key cred = {.serial = rep.serial, .role = role, .has_svc = rep.has_service};
		snprintf(cred.name, sizeof(cred.name), "%s", name);
		memcpy(cred.k, rep.meta_key, WEFT_KEY_LEN);
		memcpy(cred.store_k, rep.store_key, WEFT_KEY_LEN);
		memcpy(cred.svc, rep.service_key, WEFT_KEY_LEN);
		conn_wrap(c, "meta-key", cred.k);
		conn_wrap(c, "store-key", cred.store_k);
		conn_wrap(c, "service-key", cred.svc);
		if (!cred.has_svc)
			memset(cred.svc, 0, sizeof(cred.svc));
		rc = auth_cred_write(out, &cred, force);
		memset(&cred, 0, sizeof(cred));
		if (rc) {
			frame_free(f);
			conn_put(c);
			return cli_fail("node", "writing %s: %s%s", out, weft_strerror(rc),
					rc == -EEXIST ? " (--force replaces it)" : "");
		}
		if (strcmp(out, "-") != 0)
			printf("node %s: %s credential, serial %u, written to %s\n", name,
			       auth_role_name(role), rep.serial, out);
	}
	frame_free(f);
	if (c)
		conn_put(c);
	if (rc)
		return cli_fail("node", "%s %s: %s", policy_only ? "set" : "add", name,
				detail[0] ? detail : weft_strerror(rc));
	return 0;
}

static int node_simple(struct rpc *r, uint16_t op, const char *name)
{
	struct wbuf w;
	wbuf_init(&w);
	if (name) {
		struct weft_msg_node_name m = {.name = proto_str_of(name, strlen(name))};
		proto_node_name_encode(&w, &m);
	}
	struct conn *c = NULL;
	struct frame *f = NULL;
	char detail[256] = "";
	int rc = node_call(r, op, &w, &c, &f, detail, sizeof(detail));
	if (rc == 0 && op == WEFT_OP_NODE_LIST) {
		struct weft_msg_nodes m;
		if (proto_nodes_decode(f->payload, f->h.payload_len, &m, NULL))
			rc = -WEFT_EPROTO;
		else
			fwrite(m.text.p, 1, m.text.len, stdout);
	} else if (rc == 0) {
		printf("node %s: revoked; its connections to meta and the stores are closed\n", name);
	}
	frame_free(f);
	if (c)
		conn_put(c);
	if (rc)
		return cli_fail("node", "%s%s%s: %s", op == WEFT_OP_NODE_LIST ? "list" : "revoke ",
				name ? name : "", "", detail[0] ? detail : weft_strerror(rc));
	return 0;
}

static int node_run(int argc, char **argv)
{
	struct cluster_opts co = {0};
	const char *role = NULL, *out = NULL;
	bool force = false, policy = false;
	struct node_policy_opts po = {false, 0, UINT32_MAX, 0, UINT32_MAX};
	static const struct option opts[] = {
		CLUSTER_LONGOPTS, {"role", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'}, {"force", no_argument, NULL, 'F'},
		{"trusted", no_argument, NULL, 't'}, {"squash", no_argument, NULL, 's'},
		{"uids", required_argument, NULL, 'u'}, {"gids", required_argument, NULL, 'g'}, {0}};
	int ch;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (cluster_opt(&co, ch, optarg))
			continue;
		switch (ch) {
		case 'r': role = optarg; break;
		case 'o': out = optarg; break;
		case 'F': force = true; break;
		case 't': po.trusted = true; policy = true; break;
		case 's': po.trusted = false; policy = true; break;
		case 'u':
			if (parse_range(optarg, &po.uid_lo, &po.uid_hi))
				return cli_usage_error("node", "--uids %s: LO-HI or one uid", optarg);
			policy = true;
			break;
		case 'g':
			if (parse_range(optarg, &po.gid_lo, &po.gid_hi))
				return cli_usage_error("node", "--gids %s: LO-HI or one gid", optarg);
			policy = true;
			break;
		default: return cli_usage_error("node", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("node", "expects add, list or revoke");
	const char *verb = argv[optind];
	int nargs = argc - optind - 1;
	const char *name = nargs > 0 ? argv[optind + 1] : NULL;
	uint8_t r = 0;
	if (strcmp(verb, "add") == 0) {
		if (nargs != 1 || !role)
			return cli_usage_error("node", "expects: add NAME --role client|store|admin");
		r = auth_role_parse(role);
		if (!r || r == WEFT_ROLE_META)
			return cli_usage_error("node", "--role is client, store or admin, not '%s'", role);
		if (policy && r != WEFT_ROLE_CLIENT)
			return cli_usage_error("node", "--trusted, --squash, --uids and --gids are for clients");
	} else if (strcmp(verb, "set") == 0) {
		if (nargs != 1 || !policy)
			return cli_usage_error("node", "expects: set NAME [--trusted | --squash] "
					       "[--uids LO-HI] [--gids LO-HI]");
	} else if (strcmp(verb, "revoke") == 0) {
		if (nargs != 1)
			return cli_usage_error("node", "expects: revoke NAME");
	} else if (strcmp(verb, "list") == 0) {
		if (nargs != 0)
			return cli_usage_error("node", "list takes no argument");
	} else {
		return cli_usage_error("node", "unknown command '%s' (add, set, list, revoke)", verb);
	}
	struct weft_key key;
	char addr[256];
	struct loop *loop;
	struct rpc *rp;
	int st = cluster_connect("node", &co, &key, addr, sizeof(addr), &loop, &rp);
	if (st)
		return st;
	if (strcmp(verb, "add") == 0)
		st = node_add(rp, name, r, out ? out : "-", force, &po, false);
	else if (strcmp(verb, "set") == 0)
		st = node_add(rp, name, WEFT_ROLE_CLIENT, NULL, false, &po, true);
	else if (strcmp(verb, "revoke") == 0)
		st = node_simple(rp, WEFT_OP_NODE_REVOKE, name);
	else
		st = node_simple(rp, WEFT_OP_NODE_LIST, NULL);
	rpc_free(rp);
	loop_free(loop);
	return st;
}

const struct cli_verb cmd_node = {
	.name = "node",
	.summary = "issue, list and revoke node credentials",
	.usage = "weft node add NAME --role client|store|admin [-o FILE] [--force]\n"
		 "                [--trusted | --squash] [--uids LO-HI] [--gids LO-HI]\n"
		 "       weft node set NAME [--trusted | --squash] [--uids LO-HI] [--gids LO-HI]\n"
		 "       weft node list\n"
		 "       weft node revoke NAME\n"
		 "  (each also takes [--dir STATE | --meta HOST:PORT] [--key FILE])\n\n"
		 "add: issues the credential of node NAME for one role and writes it to FILE\n"
		 "(mode 0600; standard output without -o). Give it to that node as its key\n"
		 "(--key FILE, or /etc/weft/cluster.key): a client mounts with it, a store\n"
		 "serves with it, an admin runs the cluster verbs with it. Adding a name again\n"
		 "issues a new serial and refuses the old credential (rotation).\n"
		 "A client node's policy, checked by meta on each of its requests: its root is\n"
		 "squashed to nobody (--squash, the default) unless --trusted; --uids and --gids\n"
		 "limit the ids its requests may carry (nobody, 65534, always passes). set\n"
		 "changes the policy of a listed client without a new credential.\n"
		 "list: prints the registry, a line a node: NAME ROLE SERIAL active|revoked,\n"
		 "then for a client trusted|squashed and any uid and gid ranges.\n"
		 "revoke: refuses NAME from now on: meta and every store close its connections\n"
		 "within a second and refuse new ones. weft node add NAME issues it anew.\n"
		 "Only the cluster key or an admin credential may run these.",
	.run = node_run,
};
