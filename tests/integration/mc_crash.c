/* metaclient: the modes crash (a workload until meta dies, its intents and acks logged) and
 * verify (every acknowledged op of the log is there, nothing half-applied). */
#include "mc_test.h"

/* ---- crash workload and its verification ---- */

static int logfd;
static atomic_bool crash_stop;

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* one write per line: O_APPEND keeps lines whole between threads */
	if (write(logfd, buf, (size_t)n) != n)
		abort();
}

struct crash_arg {
	int round, tid;
	uint64_t dir;
	struct mc m;
};

static void *crash_main(void *arg)
{
	struct crash_arg *a = arg;
	int r = a->round, t = a->tid;
	char f[64], g[64];
	for (int i = 0; !atomic_load(&crash_stop); i++) {
		snprintf(f, sizeof(f), "f%d.%d", t, i);
		snprintf(g, sizeof(g), "g%d.%d", t, i);
		logline("I %d %d C %s\n", r, t, f);
		if (mc_create(&a->m, &root, a->dir, f, S_IFREG | 0644, WEFT_CREATE_EXCL, NULL))
			break;
		logline("A %d %d\n", r, t);
		logline("I %d %d R %s %s\n", r, t, f, g);
		if (mc_rename(&a->m, &root, a->dir, f, a->dir, g, 0))
			break;
		logline("A %d %d\n", r, t);
		if (i % 3 == 0) {
			logline("I %d %d U %s\n", r, t, g);
			if (mc_name_op(&a->m, WEFT_OP_UNLINK, &root, a->dir, g))
				break;
			logline("A %d %d\n", r, t);
		}
	}
	atomic_store(&crash_stop, true);
	return NULL;
}

int run_crash(const char *log, int round, int threads)
{
	logfd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (logfd < 0)
		return 1;
	struct loop *loop;
	if (loop_new(&loop) || loop_start(loop))
		return 1;
	struct crash_arg *a = calloc((size_t)threads, sizeof(*a));
	for (int t = 0; t < threads; t++) {
		if (mc_open(&a[t].m, loop, &g_key, g_addr)) {
			fprintf(stderr, "crash: cannot connect\n");
			return 1;
		}
	}
	struct weft_attr d;
	char dn[32];
	snprintf(dn, sizeof(dn), "r%d", round);
	if (round == 0) {
		uint32_t id;
		if (mc_register(&a[0].m, 0xd4, "crash-node", "127.0.0.1:1", &id))
			return 1;
	}
	if (mc_create(&a[0].m, &root, 1, dn, S_IFDIR | 0755, WEFT_CREATE_EXCL, &d)) {
		fprintf(stderr, "crash: mkdir %s failed\n", dn);
		return 1;
	}
	logline("D %d %llu\n", round, (unsigned long long)d.ino);
	fprintf(stdout, "ready\n");
	fflush(stdout);
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	for (int t = 0; t < threads; t++) {
		a[t].round = round;
		a[t].tid = t;
		a[t].dir = d.ino;
		pthread_create(&th[t], NULL, crash_main, &a[t]);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < threads; t++)
		mc_close(&a[t].m);
	loop_free(loop);
	close(logfd);
	free(th);
	free(a);
	return 0;
}

/* Expected state of one name: 1 present, 0 absent, 2 either (an unacknowledged op). */
struct want {
	char name[32];
	int state;
	char pair[32]; /* unacknowledged rename: exactly one of name/pair */
};

struct thr {
	char op, a[32], b[32];
	bool pending;
};

static struct want *want_get(struct want **w, size_t *n, const char *name)
{
	for (size_t i = *n; i-- > 0;)
		if (strcmp((*w)[i].name, name) == 0)
			return &(*w)[i];
	*w = realloc(*w, (*n + 1) * sizeof(**w));
	struct want *x = &(*w)[(*n)++];
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", name);
	return x;
}

int run_verify(struct mc *m, const char *log)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return 1;
	enum { MAXR = 64, MAXT = 64 };
	uint64_t dirs[MAXR] = {0};
	struct want *w[MAXR] = {0};
	size_t nw[MAXR] = {0};
	static struct thr th[MAXR][MAXT];
	char line[256];
	int acked = 0;
	while (fgets(line, sizeof(line), f)) {
		int r, t;
		char op, a[32], b[32];
		unsigned long long ino;
		if (sscanf(line, "D %d %llu", &r, &ino) == 2 && r >= 0 && r < MAXR) {
			dirs[r] = ino;
		} else if (sscanf(line, "I %d %d %c %31s %31s", &r, &t, &op, a, b) >= 4 &&
			   r >= 0 && r < MAXR && t >= 0 && t < MAXT) {
			TRUE(!th[r][t].pending); /* one op in flight per thread */
			th[r][t] = (struct thr){.op = op, .pending = true};
			snprintf(th[r][t].a, 32, "%s", a);
			if (op == 'R')
				snprintf(th[r][t].b, 32, "%s", b);
		} else if (sscanf(line, "A %d %d", &r, &t) == 2 && r >= 0 && r < MAXR && t >= 0 &&
			   t < MAXT) {
			struct thr *x = &th[r][t];
			TRUE(x->pending);
			x->pending = false;
			acked++;
			if (x->op == 'C')
				want_get(&w[r], &nw[r], x->a)->state = 1;
			else if (x->op == 'U')
				want_get(&w[r], &nw[r], x->a)->state = 0;
			else if (x->op == 'R') {
				want_get(&w[r], &nw[r], x->a)->state = 0;
				want_get(&w[r], &nw[r], x->b)->state = 1;
			}
		}
	}
	fclose(f);
	int unacked = 0;
	for (int r = 0; r < MAXR; r++)
		for (int t = 0; t < MAXT; t++) {
			struct thr *x = &th[r][t];
			if (!x->pending)
				continue;
			unacked++;
			struct want *p = want_get(&w[r], &nw[r], x->a);
			p->state = 2;
			if (x->op == 'R') {
				snprintf(p->pair, sizeof(p->pair), "%s", x->b);
				want_get(&w[r], &nw[r], x->b)->state = 2;
			}
		}
	int rounds = 0, present = 0;
	for (int r = 0; r < MAXR; r++) {
		if (!dirs[r])
			continue;
		rounds++;
		struct ent *e;
		size_t n;
		int rc = list_all(m, &root, dirs[r], 65536, true, &e, &n);
		OK(rc);
		if (rc)
			continue;
		/* every listed entry is expected (or possible), with a sound inode */
		for (size_t i = 2; i < n; i++) {
			struct want *x = NULL;
			for (size_t k = 0; k < nw[r]; k++)
				if (strcmp(w[r][k].name, e[i].name) == 0)
					x = &w[r][k];
			if (!x || x->state == 0) {
				failures++;
				fprintf(stderr, "round %d: %s present but %s\n", r, e[i].name,
					x ? "its removal was acknowledged" : "never created");
			}
			if (!e[i].has_attr || e[i].attr.nlink != 1 || !S_ISREG(e[i].attr.mode)) {
				failures++;
				fprintf(stderr, "round %d: %s has a bad inode (nlink %u)\n", r,
					e[i].name, e[i].attr.nlink);
			}
			present++;
		}
		for (size_t k = 0; k < nw[r]; k++) {
			struct want *x = &w[r][k];
			bool here = find_ent(e + 2, n - 2, x->name) != NULL;
			if (x->state == 1 && !here) {
				failures++;
				fprintf(stderr, "round %d: %s missing but its creation was acknowledged\n",
					r, x->name);
			}
			if (x->pair[0]) {
				bool there = find_ent(e + 2, n - 2, x->pair) != NULL;
				if (here == there) {
					failures++;
					fprintf(stderr, "round %d: rename %s -> %s half-applied (%s)\n", r,
						x->name, x->pair, here ? "both" : "neither");
				}
			}
		}
		struct weft_attr da = {0};
		OK(mc_getattr(m, &root, dirs[r], 0, &da));
		EXPECT(da.nlink, 2);
		free(e);
		free(w[r]);
	}
	printf("verify: %d rounds, %d acknowledged ops, %d in flight at the kills, %d files "
	       "present\n", rounds, acked, unacked, present);
	return 0;
}
