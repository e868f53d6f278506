/* bench_meta: create, stat (lookup), readdir and unlink rates of a running weft meta at
 * several client counts (one connection each, all in one shared directory), beside the
 * same operations on a local directory in the same run.
 *
 * usage: bench_meta KEYFILE ADDR [--local DIR] [--files N] [--clients 1,8,64]
 *                   [--only-create] [--label TEXT]
 * A client is one thread with its own authenticated connection and one request in
 * flight, as a FUSE request thread would be. Local operations are open(O_CREAT|O_EXCL)
 * + close, stat, readdir of the whole directory, unlink, with the same threads; they are
 * not synced (meta's replies are durable). */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "../tests/integration/metacall.h"

static struct weft_key key;
static const char *addr, *local;
static struct weft_cred root;

enum phase { P_CREATE, P_STAT, P_READDIR, P_UNLINK, P_N };

struct worker {
	int id, clients;
	long files;        /* per client */
	uint64_t dir;      /* meta directory */
	char ldir[512];    /* local directory */
	struct mc m;
	long errors;
	long entries;      /* readdir: entries seen */
};

static pthread_barrier_t bar;
static atomic_int phase_now;
static bool use_local;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void meta_phase(struct worker *w, int p)
{
	char name[64];
	if (p == P_READDIR) {
		uint64_t cookie = 0;
		for (;;) {
			struct weft_msg_readdir q = {.cred = root, .ino = w->dir, .cookie = cookie,
						     .max_bytes = 65536, .plus = 1};
			struct frame *f = NULL;
			if (mc_call(&w->m, WEFT_OP_READDIR, &q, NULL, 0, &f)) {
				w->errors++;
				frame_free(f);
				return;
			}
			struct weft_msg_dirlist dl;
			proto_dirlist_decode(f->payload, f->h.payload_len, &dl, NULL);
			struct rbuf r;
			rbuf_init(&r, f->bulk, f->h.bulk_len);
			struct weft_dirent d;
			uint32_t n = 0;
			while (proto_dirent_next(&r, &d) == 0) {
				cookie = d.next_cookie;
				n++;
			}
			w->entries += n;
			frame_free(f);
			if (dl.eof || n == 0)
				return;
		}
	}
	for (long i = 0; i < w->files; i++) {
		snprintf(name, sizeof(name), "c%d_%ld", w->id, i);
		int rc;
		struct weft_attr a;
		switch (p) {
		case P_CREATE:
			rc = mc_create(&w->m, &root, w->dir, name, S_IFREG | 0644, WEFT_CREATE_EXCL, &a);
			break;
		case P_STAT:
			rc = mc_lookup(&w->m, &root, w->dir, name, &a);
			break;
		default:
			rc = mc_name_op(&w->m, WEFT_OP_UNLINK, &root, w->dir, name);
			break;
		}
		if (rc)
			w->errors++;
	}
}

static void local_phase(struct worker *w, int p)
{
	char path[700];
	if (p == P_READDIR) {
		DIR *d = opendir(w->ldir);
		struct dirent *e;
		while (d && (e = readdir(d)))
			w->entries++;
		if (d)
			closedir(d);
		return;
	}
	for (long i = 0; i < w->files; i++) {
		snprintf(path, sizeof(path), "%s/c%d_%ld", w->ldir, w->id, i);
		int rc = 0;
		struct stat st;
		if (p == P_CREATE) {
			int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
			rc = fd < 0;
			if (fd >= 0)
				close(fd);
		} else if (p == P_STAT) {
			rc = stat(path, &st);
		} else {
			rc = unlink(path);
		}
		if (rc)
			w->errors++;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (int p = 0; p < P_N; p++) {
		pthread_barrier_wait(&bar);
		if (atomic_load(&phase_now) < 0)
			break;
		if (use_local)
			local_phase(w, p);
		else
			meta_phase(w, p);
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

static int bench(int clients, long total, bool loc, bool only_create, const char *label)
{
	struct worker *w = calloc((size_t)clients, sizeof(*w));
	pthread_t *th = calloc((size_t)clients, sizeof(*th));
	struct loop *loops[8] = {0};
	int nloops = clients < 8 ? clients : 8;
	uint64_t dir = 0;
	char ldir[512] = "";
	use_local = loc;
	if (!loc) {
		for (int i = 0; i < nloops; i++)
			if (loop_new(&loops[i]) || loop_start(loops[i]))
				return 1;
		for (int i = 0; i < clients; i++)
			if (mc_open(&w[i].m, loops[i % nloops], &key, addr)) {
				fprintf(stderr, "bench_meta: cannot connect to %s\n", addr);
				return 1;
			}
		char dn[64];
		struct weft_attr a;
		snprintf(dn, sizeof(dn), "bench-%d-%ld-%d", clients, total, (int)getpid());
		if (mc_create(&w[0].m, &root, 1, dn, S_IFDIR | 0755, WEFT_CREATE_EXCL, &a)) {
			fprintf(stderr, "bench_meta: mkdir %s failed\n", dn);
			return 1;
		}
		dir = a.ino;
	} else {
		snprintf(ldir, sizeof(ldir), "%s/bench-%d-%d", local, clients, (int)getpid());
		if (mkdir(ldir, 0755)) {
			perror(ldir);
			return 1;
		}
	}
	pthread_barrier_init(&bar, NULL, (unsigned)clients + 1);
	atomic_store(&phase_now, 0);
	for (int i = 0; i < clients; i++) {
		w[i].id = i;
		w[i].clients = clients;
		w[i].files = total / clients;
		w[i].dir = dir;
		snprintf(w[i].ldir, sizeof(w[i].ldir), "%s", ldir);
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	double rate[P_N] = {0};
	long errors = 0;
	for (int p = 0; p < P_N; p++) {
		if (only_create && p > P_CREATE) {
			atomic_store(&phase_now, -1);
			pthread_barrier_wait(&bar);
			break;
		}
		double t0 = now_s();
		pthread_barrier_wait(&bar); /* start */
		pthread_barrier_wait(&bar); /* all done */
		double dt = now_s() - t0;
		long ops = 0;
		for (int i = 0; i < clients; i++) {
			ops += p == P_READDIR ? w[i].entries : w[i].files;
			errors += w[i].errors;
			w[i].errors = 0;
		}
		rate[p] = (double)ops / dt;
	}
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	printf("%-12s %-6s %7d %10ld", label, loc ? "local" : "meta", clients,
	       (total / clients) * clients);
	for (int p = 0; p < P_N; p++) {
		if (only_create && p > P_CREATE)
			printf(" %12s", "-");
		else
			printf(" %12.0f", rate[p]);
	}
	printf(" %7ld\n", errors);
	fflush(stdout);
	if (!loc) {
		for (int i = 0; i < clients; i++)
			mc_close(&w[i].m);
		for (int i = 0; i < nloops; i++)
			loop_free(loops[i]);
	} else if (only_create) {
		/* leave nothing behind */
		for (int i = 0; i < clients; i++)
			for (long k = 0; k < w[i].files; k++) {
				char p[700];
				snprintf(p, sizeof(p), "%s/c%d_%ld", ldir, i, k);
				unlink(p);
			}
	}
	if (loc)
		rmdir(ldir);
	free(w);
	free(th);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_meta KEYFILE ADDR [--local DIR] [--files N] "
				"[--clients 1,8,64] [--only-create] [--label TEXT]\n");
		return 2;
	}
	log_init("bench_meta", LOG_WARN);
	char err[512];
	if (auth_key_load(argv[1], &key, err, sizeof(err))) {
		fprintf(stderr, "bench_meta: %s\n", err);
		return 1;
	}
	addr = argv[2];
	long files = 20000;
	const char *clist = "1,8,64", *label = "weft-meta";
	bool only_create = false;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--local") == 0 && i + 1 < argc)
			local = argv[++i];
		else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc)
			files = atol(argv[++i]);
		else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
			clist = argv[++i];
		else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc)
			label = argv[++i];
		else if (strcmp(argv[i], "--only-create") == 0)
			only_create = true;
		else {
			fprintf(stderr, "bench_meta: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	root = mc_cred(0, 0);
	printf("%-12s %-6s %7s %10s %12s %12s %12s %12s %7s\n", "run", "where", "clients", "files",
	       "create/s", "stat/s", "readdir e/s", "unlink/s", "errors");
	int rc = 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", clist);
	for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
		int c = atoi(s);
		if (c <= 0)
			continue;
		rc |= bench(c, files, false, only_create, label);
		if (local)
			rc |= bench(c, files, true, only_create, "local-dir");
	}
	return rc;
}
