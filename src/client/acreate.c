/* Asynchronous creates: a file created in a directory this client claimed is answered
 * here, and its CREATE_OPEN goes to meta behind the application's back.
 *
 * DESIGN: tar, cp -r and unpackers create files one at a time, each waiting for meta's
 * commit (a data sync) of its CREATE_OPEN. A directory this client made with MKDIR
 * WEFT_CREATE_CLAIM is claimed at meta (meta/lease.h, meta_leases_claim): while the claim
 * lasts, no other session caches the directory, and another session's read of it, or
 * change in it, first takes the claim back with a RECALL that this client answers once
 * its creates there are answered. In such a directory, while it is also complete here
 * (cdir.h: every name in it is known), the create of a name it does not hold is
 * certain to succeed at meta but for a full metadata disk: weft_create gives the file
 * an inode number of its own session's (types.h, WEFT_INO_CLIENT), the attributes meta
 * would give it, and returns; a worker thread sends the CREATE_OPEN with that number
 * and time, and meta imposes both. A mkdir there is answered the same way
 * (client_acreate_mkdir): the new directory starts empty, complete and claimed here, and
 * every job in it is set aside until meta answered its MKDIR (must_wait).
 *
 * Until the reply the winode is "pending" (no layout, no capability): whatever needs the
 * stores or meta's view of the file waits for it (client_acreate_settle: a flush,
 * which a close or fsync makes, a read, a block of writes sent). Every other request to
 * meta first waits for the creates posted before it (client_acreate_barrier, from
 * client_meta_call), so that this client's own later requests see them. Meta's reply
 * arrives later as the same reply a synchronous create gets: lease, capability, layout.
 * A create meta refuses (ENOSPC, or a claim lost to a restart) is reported by the
 * file's next flush, write or fsync, and the kernel's entry is invalidated; the name is
 * gone. A close that returned before that (close-behind) does not see it: as on a local
 * file system whose write-back fails after close, weft_sync then reports it.
 *
 * Threads: ACREATE_THREADS workers; lock guards the queue and the list of posted jobs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/client_int.h"
#include "common/changes.h"
#include "common/log.h"
#include "common/loop.h"
#include "net/stats.h"
#include "weft/err.h"

/* jobs in flight at once, each a worker's round trip: enough to fill a group commit at
 * meta (with 8, an rm -rf of drivers/ kept the queue full and took 10.2-10.6 s against
 * 8.0-9.8 s with 32) */
#define ACREATE_THREADS 32
/* and up to this many more while meta's answers are slow (a slow disk under its commits:
 * at 10 ms a commit, 32 in flight bounded rm -rf of drivers/ to 28-30 s, 128 made it
 * 9.7-9.9 s; on this disk 128 cost tar 6 %, so they work only while the round trips of
 * the last jobs averaged ACREATE_SLOW_US or more) */
#define ACREATE_EXTRA_THREADS 96
#define ACREATE_SLOW_US 12000
/* posted and not answered: a creator past it waits (memory, and what a recall drains) */
#define ACREATE_MAX_POSTED 512
/* how long a recall waits for the creates in a directory before it answers anyway */
#define ACREATE_DRAIN_MS 3000

struct acreate_job {
	uint16_t op;                    /* CREATE_OPEN, MKDIR, UNLINK, RMDIR or SETATTR */
	struct acreate_job *next_q;     /* the send queue */
	struct acreate_job *next, *prev; /* posted and not answered, oldest first */
	uint64_t seq, dir;
	uint64_t removes;               /* RMDIR: the directory it removes */
	uint64_t makes;                 /* MKDIR: the directory it makes */
	uint64_t after_dir;             /* set aside until the jobs posted before it in this
					 * directory, or to remove it, are answered: RMDIR's
					 * removes, SETATTR's own dir; 0 for none */
	bool after_name;                /* set aside until the jobs posted before it on its
					 * name are answered: an UNLINK or RMDIR behind the
					 * create of a scratch file, a create behind the
					 * unlink of the file it replaces */
	uint32_t valid;                 /* SETATTR: what it sets, from attr */
	struct winode *wi;              /* a reference (CREATE_OPEN) */
	struct weft_cred cred;
	char name[WEFT_NAME_MAX + 1];
	char newname[WEFT_NAME_MAX + 1]; /* RENAME: what name becomes, in the same dir */
	uint32_t mode, open_flags;
	int64_t time_ns;
	uint64_t gen;                   /* the recall generation when posted */
	struct weft_attr attr;          /* what the kernel was told (CREATE_OPEN, SETATTR) */
};

struct client_acreate {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct acreate_job *q, **qtail;
	struct acreate_job *deferred;   /* RMDIRs taken before their directory's removals
					 * were answered (next_q), back in q once they are */
	struct acreate_job *oldest, *newest;
	size_t posted;
	size_t mkdirs_posted;           /* MKDIRs among them */
	atomic_size_t setattrs_posted;  /* SETATTRs among them */
	struct changes setattrs_done;   /* the directories of the SETATTRs answered, for
					 * replies sent before them (client_acreate_attr_stale) */
	uint64_t next_seq;
	uint64_t count_session, count; /* the session whose numbers are given, the last one */
	bool stopping;
	pthread_t threads[ACREATE_THREADS + ACREATE_EXTRA_THREADS];
	int nthreads, started;
	pthread_cond_t extra;           /* the extra workers wait here */
	uint64_t rtt_us;                /* the jobs' round trips, a moving average */
};

/* A refusal after the answer is logged, at most 10 lines in 10 s: a full metadata disk
 * refuses every job of a tar (the async_*_failed counters count them all). */
static struct log_limit refused_lines = LOG_LIMIT_INIT;

static bool refusal_logged(const char **more)
{
	unsigned dropped;
	bool ok = log_limit_ok(&refused_lines, 10, 10000, &dropped);
	*more = dropped ? " (more refusals not logged)" : "";
	return ok;
}

/* log_warn of a refusal through refused_lines (fmt a literal) */
#define refusal_warn(fmt, ...) \
	do { \
		const char *more_; \
		if (refusal_logged(&more_)) \
			log_warn(fmt "%s", __VA_ARGS__, more_); \
	} while (0)

static bool busy_in(const struct client_acreate *a, uint64_t dir, uint64_t upto);
static bool name_busy(const struct client_acreate *a, uint64_t dir, const char *name,
		      uint64_t upto);
static void queue_front_locked(struct client_acreate *a, struct acreate_job *j);
static void queue_job(struct client_acreate *a, struct acreate_job *j);

/* The MKDIR of dir, posted up to upto, is not answered (lock held). */
static bool made_posted(const struct client_acreate *a, uint64_t dir, uint64_t upto)
{
	if (!a->mkdirs_posted)
		return false;
	for (const struct acreate_job *j = a->oldest; j && j->seq <= upto; j = j->next)
		if (j->makes == dir)
			return true;
	return false;
}

/* j must not go to meta yet (lock held): an RMDIR before the removals in the directory
 * it removes are answered, a SETATTR before the jobs in its directory, a removal before
 * the jobs on its name, and any job in a directory made here before meta answered its
 * MKDIR. */
static bool must_wait(const struct client_acreate *a, const struct acreate_job *j)
{
	return (j->after_dir && busy_in(a, j->after_dir, j->seq - 1)) ||
	       (j->after_name && name_busy(a, j->dir, j->name, j->seq - 1)) ||
	       made_posted(a, j->dir, j->seq - 1);
}

/* j was answered (lock held): a job set aside for the directory j was in, removed or
 * made goes back to the queue once nothing it waits for is left. */
static void release_deferred(struct client_acreate *a, const struct acreate_job *j)
{
	for (struct acreate_job **pp = &a->deferred; *pp;) {
		struct acreate_job *d = *pp;
		bool related = (d->after_dir && (d->after_dir == j->dir ||
						 d->after_dir == j->removes ||
						 d->after_dir == j->makes)) ||
			       (d->after_name && d->dir == j->dir) || /* must_wait says which */
			       (j->makes && d->dir == j->makes);
		if (related && !must_wait(a, d)) {
			*pp = d->next_q;
			queue_front_locked(a, d);
		} else {
			pp = &d->next_q;
		}
	}
}

/* The job was answered: off the posted list, freed; waiters woken. */
static void job_finish(struct client_acreate *a, struct acreate_job *j)
{
	pthread_mutex_lock(&a->lock);
	if (j->prev)
		j->prev->next = j->next;
	else
		a->oldest = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		a->newest = j->prev;
	a->posted--;
	if (j->op == WEFT_OP_MKDIR)
		a->mkdirs_posted--;
	if (j->op == WEFT_OP_SETATTR) {
		changes_add(&a->setattrs_done, j->dir);
		atomic_fetch_sub(&a->setattrs_posted, 1);
	}
	if (a->deferred)
		release_deferred(a, j);
	pthread_cond_broadcast(&a->done);
	pthread_mutex_unlock(&a->lock);
	free(j);
}

/* A job on name in dir, posted up to seq upto, is not answered (lock held): a create
 * and an unlink of one name must reach meta in order, which the workers do not keep. */
static bool name_busy(const struct client_acreate *a, uint64_t dir, const char *name,
		      uint64_t upto)
{
	for (const struct acreate_job *j = a->oldest; j && j->seq <= upto; j = j->next)
		if (j->dir == dir && (strcmp(j->name, name) == 0 ||
				      (j->op == WEFT_OP_RENAME && strcmp(j->newname, name) == 0)))
			return true;
	return false;
}

/* A SETATTR of dir, posted up to upto, is not answered (lock held): a create or removal in dir
 * goes the synchronous way behind it, since meta checks them against dir's mode. */
static bool setattr_posted(const struct client_acreate *a, uint64_t dir, uint64_t upto)
{
	for (const struct acreate_job *j = a->oldest; j && j->seq <= upto; j = j->next)
		if (j->op == WEFT_OP_SETATTR && j->dir == dir)
			return true;
	return false;
}

/* Appends j to the posted list and the send queue (lock held). */
static void post_locked(struct client_acreate *a, struct acreate_job *j)
{
	j->seq = ++a->next_seq;
	j->prev = a->newest;
	if (a->newest)
		a->newest->next = j;
	else
		a->oldest = j;
	a->newest = j;
	a->posted++;
	if (j->op == WEFT_OP_SETATTR)
		atomic_fetch_add(&a->setattrs_posted, 1);
}

/* meta answers slowly: the extra workers take jobs too (lock held) */
static bool slow(const struct client_acreate *a)
{
	return a->rtt_us >= ACREATE_SLOW_US;
}

static void queue_locked(struct client_acreate *a, struct acreate_job *j)
{
	j->next_q = NULL;
	*a->qtail = j;
	a->qtail = &j->next_q;
	pthread_cond_signal(&a->work);
	if (slow(a))
		pthread_cond_signal(&a->extra);
}

static void queue_front_locked(struct client_acreate *a, struct acreate_job *j)
{
	j->next_q = a->q;
	a->q = j;
	if (!j->next_q)
		a->qtail = &j->next_q;
	pthread_cond_signal(&a->work);
	if (slow(a))
		pthread_cond_signal(&a->extra);
}

/* The oldest posted job's sequence number, or UINT64_MAX (lock held). */
static uint64_t oldest_seq(const struct client_acreate *a)
{
	return a->oldest ? a->oldest->seq : UINT64_MAX;
}

/* Set in the workers and around a replay: what they send may be what the creates wait
 * for (a replay after a meta restart), so they never wait for the creates. */
static __thread int no_barrier;

void client_acreate_no_barrier(int delta)
{
	no_barrier += delta;
}

void client_acreate_barrier(struct weft_client *c)
{
	struct client_acreate *a = c->acreate;
	if (!a || no_barrier)
		return;
	pthread_mutex_lock(&a->lock);
	uint64_t upto = a->next_seq;
	while (oldest_seq(a) <= upto)
		pthread_cond_wait(&a->done, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

/* A job posted up to seq is in dir, removes it or makes it (lock held). */
static bool busy_in(const struct client_acreate *a, uint64_t dir, uint64_t upto)
{
	for (const struct acreate_job *j = a->oldest; j && j->seq <= upto; j = j->next)
		if (j->dir == dir || j->removes == dir || j->makes == dir)
			return true;
	return false;
}

void client_acreate_dirs_scope(struct weft_client *c, uint64_t dir, uint64_t dir2)
{
	struct client_acreate *a = c->acreate;
	if (a && !no_barrier) {
		pthread_mutex_lock(&a->lock);
		uint64_t upto = a->next_seq;
		while (busy_in(a, dir, upto) || (dir2 && busy_in(a, dir2, upto)))
			pthread_cond_wait(&a->done, &a->lock);
		pthread_mutex_unlock(&a->lock);
	}
	no_barrier++;
}

void client_acreate_dir_scope(struct weft_client *c, uint64_t dir)
{
	client_acreate_dirs_scope(c, dir, 0);
}

void client_acreate_name_scope(struct weft_client *c, uint64_t dir, const char *name)
{
	struct client_acreate *a = c->acreate;
	if (a && !no_barrier) {
		pthread_mutex_lock(&a->lock);
		uint64_t upto = a->next_seq;
		while (name_busy(a, dir, name, upto) || setattr_posted(a, dir, upto) ||
		       made_posted(a, dir, upto))
			pthread_cond_wait(&a->done, &a->lock);
		pthread_mutex_unlock(&a->lock);
	}
	no_barrier++;
}

void client_acreate_scope_end(void)
{
	no_barrier--;
}

uint64_t client_acreate_attr_mark(struct weft_client *c)
{
	struct client_acreate *a = c->acreate;
	if (!a || atomic_load(&a->setattrs_posted) == 0)
		return 0;
	pthread_mutex_lock(&a->lock);
	uint64_t mark = a->setattrs_done.n + 1;
	pthread_mutex_unlock(&a->lock);
	return mark;
}

bool client_acreate_attr_stale(struct weft_client *c, uint64_t ino, uint64_t mark)
{
	struct client_acreate *a = c->acreate;
	if (!a || mark-- == 0)
		return false;
	pthread_mutex_lock(&a->lock);
	bool stale = setattr_posted(a, ino, UINT64_MAX) ||
		     changes_since(&a->setattrs_done, mark, ino);
	pthread_mutex_unlock(&a->lock);
	return stale;
}

void client_acreate_setattr_wait(struct weft_client *c, uint64_t ino)
{
	struct client_acreate *a = c->acreate;
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	while (setattr_posted(a, ino, UINT64_MAX))
		pthread_cond_wait(&a->done, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

void client_acreate_drain(struct weft_client *c, uint64_t dir)
{
	struct client_acreate *a = c->acreate;
	if (!a)
		return;
	struct timespec until = loop_deadline_ms(ACREATE_DRAIN_MS);
	pthread_mutex_lock(&a->lock);
	uint64_t upto = a->next_seq;
	while (busy_in(a, dir, upto)) {
		if (pthread_cond_timedwait(&a->done, &a->lock, &until) != 0) {
			log_warn("recall of directory %llu: creates sent in it not answered after "
				 "%d ms; answered anyway", (unsigned long long)dir, ACREATE_DRAIN_MS);
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
}

int client_acreate_settle(struct weft_client *c, struct winode *wi)
{
	(void)c;
	pthread_mutex_lock(&wi->lock);
	while (wi->acreate_pending)
		pthread_cond_wait(&wi->cond, &wi->lock);
	int err = wi->acreate_err;
	pthread_mutex_unlock(&wi->lock);
	return err;
}

/* A job op on name in dir, stamped now, or NULL. */
static struct acreate_job *new_job(struct weft_client *c, uint16_t op,
				   const struct weft_cred *cr, uint64_t dir, const char *name,
				   size_t len)
{
	struct acreate_job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->op = op;
	j->dir = dir;
	j->cred = *cr;
	memcpy(j->name, name, len + 1);
	j->time_ns = loop_wall_ns();
	j->gen = client_recall_gen(c);
	return j;
}

/* Waits while the posted jobs are at their bound (bounded, before sess_lock is taken:
 * a worker may need it for writing, a session renewal). */
static void wait_for_room(struct client_acreate *a)
{
	pthread_mutex_lock(&a->lock);
	while (a->posted >= ACREATE_MAX_POSTED && !a->stopping)
		pthread_cond_wait(&a->done, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

/* A job meta refused after the mount answered it: kept for weft_sync to report, as a
 * close's that went behind. */
static void report_behind(struct weft_client *c, int err)
{
	pthread_mutex_lock(&c->cb_lock);
	if (!c->cb_err)
		c->cb_err = err;
	pthread_mutex_unlock(&c->cb_lock);
}

/* A number of session sid's for j, a new inode named j->name in parent, which is claimed
 * and complete here with no setattr of parent posted (lock held): *ino, and the stripe
 * unit of parent's files in *su; false if not. The name goes into parent's known names
 * with the check, so that a recall after it waits for the job (client_acreate_drain).
 * Behind a removal of the same name still posted (tar extracting over a tree: unlink,
 * then create), j is set aside until that one is answered. */
static bool claim_name_locked(struct weft_client *c, uint64_t sid, uint64_t parent,
			      struct acreate_job *j, uint64_t *ino, uint32_t *su)
{
	struct client_acreate *a = c->acreate;
	if (a->count_session != sid) {
		a->count_session = sid;
		a->count = 0;
	}
	if (a->stopping || !sid || sid > WEFT_INO_SESSION_MAX || a->count >= WEFT_INO_COUNT_MAX ||
	    setattr_posted(a, parent, UINT64_MAX) ||
	    !(*su = client_cdir_claim_name(c, parent, j->name, j->op != WEFT_OP_MKDIR)))
		return false;
	j->after_name = name_busy(a, parent, j->name, UINT64_MAX);
	*ino = WEFT_INO_CLIENT | sid << WEFT_INO_SESSION_SHIFT | ++a->count;
	return true;
}

/* The attributes meta will give the file (meta's make_node and meta_perm_new_owner for
 * a directory without S_ISGID, which client_cdir_claim_name checked). */
static void fill_attr(const struct acreate_job *j, uint64_t ino, struct weft_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->gen = 1;
	a->mode = S_IFREG | (j->mode & 07777 & ~j->cred.umask);
	a->uid = j->cred.uid;
	a->gid = j->cred.gid;
	a->nlink = 1;
	a->atime_ns = a->mtime_ns = a->ctime_ns = j->time_ns;
}

int client_acreate_try(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
		       const char *name, uint32_t mode, int flags, struct weft_file **out,
		       struct weft_attr *attr)
{
	struct client_acreate *a = c->acreate;
	size_t len = strlen(name);
	/* a setgid file would need the caller's groups checked as meta checks them; a
	 * metadata disk (nearly) full refuses creates, which must then be seen at once */
	if (!a || len > WEFT_NAME_MAX || (mode & S_ISGID) || !client_space_to_spare(c, true))
		return 1;
	struct acreate_job *j = new_job(c, WEFT_OP_CREATE_OPEN, cr, parent, name, len);
	struct weft_file *f = calloc(1, sizeof(*f));
	if (!j || !f) {
		free(j);
		free(f);
		return 1;
	}
	j->mode = mode;
	j->open_flags = (uint32_t)flags;
	wait_for_room(a);
	pthread_rwlock_rdlock(&c->sess_lock);
	uint64_t sid = c->session, ino;
	pthread_mutex_lock(&a->lock);
	uint32_t su = 0;
	bool ok = claim_name_locked(c, sid, parent, j, &ino, &su);
	if (ok)
		post_locked(a, j);
	pthread_mutex_unlock(&a->lock);
	if (!ok) {
		pthread_rwlock_unlock(&c->sess_lock);
		free(j);
		free(f);
		return 1;
	}
	client_emptied_forget(c, parent); /* a name its listing did not show */
	struct weft_attr at;
	fill_attr(j, ino, &at);
	at.blksize = su;
	j->attr = at;
	/* writes are gathered by stripe unit before the layout comes: the directory's */
	struct weft_layout none = {.stripe_unit = su};
	struct winode *wi = client_winode_get(c, &at, &none);
	if (!wi) {
		pthread_rwlock_unlock(&c->sess_lock);
		client_cdir_unclaim(c, parent); /* the name was noted: not certain now */
		job_finish(a, j);
		free(f);
		return -ENOMEM;
	}
	pthread_mutex_lock(&wi->lock);
	wi->acreate_pending = true;
	if ((flags & O_ACCMODE) != O_RDONLY)
		wi->writers++;
	pthread_mutex_unlock(&wi->lock);
	pthread_rwlock_unlock(&c->sess_lock);
	client_winode_hold(c, wi); /* the job's */
	j->wi = wi;
	f->c = c;
	f->wi = wi;
	f->cred = *cr;
	f->flags = flags;
	f->session = sid;
	client_winode_mark_nocap(c, wi, true); /* a new inode has no xattrs */
	client_wbattr_created(c, wi, &at);
	/* nobody else can see the file before meta has it, and meta's lease on it runs
	 * from then: the kernel may cache it as long as a lease lasts */
	client_lease_note(c, ino, c->lease_ms_seen, j->gen);
	client_dirattr_touch(c, parent, j->time_ns); /* as meta will stamp the parent */
	atomic_fetch_add(&c->create_gen, 1); /* after the post: a listing's READDIR waits */
	stats_add(STATS_ASYNC_CREATES, 1);
	pthread_mutex_lock(&a->lock);
	queue_locked(a, j);
	pthread_mutex_unlock(&a->lock);
	*out = f;
	*attr = at;
	return 0;
}

int client_acreate_mkdir(struct weft_client *c, const struct weft_cred *cr, uint64_t parent,
			 const char *name, uint32_t mode, struct weft_attr *attr)
{
	struct client_acreate *a = c->acreate;
	size_t len = strlen(name);
	/* setuid and setgid bits follow meta's rules; a metadata disk (nearly) full refuses
	 * mkdirs, which must then be seen at once */
	if (!a || len > WEFT_NAME_MAX || (mode & (S_ISUID | S_ISGID)) ||
	    !client_space_to_spare(c, true))
		return 1;
	struct acreate_job *j = new_job(c, WEFT_OP_MKDIR, cr, parent, name, len);
	if (!j)
		return 1;
	j->mode = mode;
	wait_for_room(a);
	pthread_rwlock_rdlock(&c->sess_lock);
	uint64_t sid = c->session, ino;
	uint32_t su = 0;
	pthread_mutex_lock(&a->lock);
	bool ok = claim_name_locked(c, sid, parent, j, &ino, &su);
	if (ok) {
		j->makes = ino;
		post_locked(a, j);
		a->mkdirs_posted++;
	}
	pthread_mutex_unlock(&a->lock);
	pthread_rwlock_unlock(&c->sess_lock);
	if (!ok) {
		free(j);
		return 1;
	}
	client_emptied_forget(c, parent); /* a name its listing did not show */
	/* what meta's make_node gives a directory in a parent without S_ISGID */
	struct weft_attr at = {.ino = ino, .gen = 1, .nlink = 2, .blksize = 4096,
			       .mode = S_IFDIR | (mode & 07777 & ~cr->umask),
			       .uid = cr->uid, .gid = cr->gid, .atime_ns = j->time_ns,
			       .mtime_ns = j->time_ns, .ctime_ns = j->time_ns};
	j->attr = at;
	client_dirattr_mkdired(c, parent, j->time_ns); /* as meta will stamp the parent */
	/* it starts empty, complete and claimed, as after a MKDIR with CLAIM that meta
	 * answered: nobody else can see it before meta has it, and meta's claim on it runs
	 * from then. Jobs in it wait for its MKDIR (must_wait). */
	client_cdir_created(c, ino, c->lease_ms_seen, j->gen, &at, su);
	client_lease_note(c, ino, c->lease_ms_seen, j->gen);
	client_dirattr_note(c, &at, j->gen, atomic_load(&c->attr_gen), atomic_load(&c->dir_gen));
	stats_add(STATS_ASYNC_MKDIRS, 1);
	queue_job(a, j);
	*attr = at;
	return 0;
}

/* Sends j's MKDIR with the number and time the kernel was told. A refusal is reported
 * as a create's; the jobs in the directory then fail at meta in turn. */
static void run_mkdir(struct weft_client *c, struct acreate_job *j)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_create m = {.cred = j->cred, .parent = j->dir,
				    .name = proto_str_of(j->name, strlen(j->name)),
				    .mode = (j->mode & 07777) | S_IFDIR,
				    .flags = WEFT_CREATE_EXCL | WEFT_CREATE_CLAIM,
				    .ino = j->makes, .time_ns = j->time_ns};
	proto_create_encode(&w, &m);
	struct client_entry_lease l;
	struct weft_attr at;
	int err = client_call_entry_lease(c, WEFT_OP_MKDIR, &w, &at, NULL, &l);
	if (err == 0 && at.ino != j->makes)
		err = -EIO; /* meta made another one: not what the kernel was told */
	if (err == 0) {
		client_cdir_renewed(c, j->dir, l.dir_lease, j->gen);
		client_cdir_renewed(c, j->makes, l.lease, j->gen);
		if (at.uid != j->attr.uid || at.gid != j->attr.gid || at.mode != j->attr.mode) {
			/* meta gave it another owner (root squashed): meta's are taken */
			client_attrs_changed(c);
			client_lease_invalidate(c, j->makes, WEFT_RECALL_ATTR, NULL);
		}
	} else {
		stats_add(STATS_ASYNC_MKDIRS_FAILED, 1);
		refusal_warn("mkdir of %s in directory %llu (inode %llx), answered before meta "
			     "had it: %s; the directory and what was made in it are gone",
			     j->name, (unsigned long long)j->dir, (unsigned long long)j->makes,
			     weft_strerror(err));
		client_attrs_changed(c); /* the parent's links in dirattr */
		client_cdir_unclaim(c, j->dir);
		client_cdir_unclaim(c, j->makes);
		client_lease_invalidate(c, j->dir, WEFT_RECALL_NAME, j->name);
		client_lease_invalidate(c, j->makes, WEFT_RECALL_ATTR, NULL);
		report_behind(c, err);
	}
	job_finish(c->acreate, j);
}

/* Meta gave the file another owner or mode than this client told the kernel (meta
 * squashes root for an untrusted node): meta's are taken, the kernel's copy dropped. */
static void owner_differs(struct weft_client *c, struct winode *wi, const struct weft_attr *a)
{
	pthread_mutex_lock(&wi->wb_lock);
	pthread_mutex_lock(&wi->lock);
	wi->wb_base.uid = a->uid;
	wi->wb_base.gid = a->gid;
	wi->wb_base.mode = a->mode;
	pthread_mutex_unlock(&wi->lock);
	pthread_mutex_unlock(&wi->wb_lock);
	client_lease_invalidate(c, wi->ino, WEFT_RECALL_ATTR, NULL);
}

/* Sends j's CREATE_OPEN and completes its winode with the reply. */
static void run_job(struct weft_client *c, struct acreate_job *j)
{
	struct client_acreate *a = c->acreate;
	struct winode *wi = j->wi;
	struct weft_msg_create_open m = {.cred = j->cred, .parent = j->dir,
					 .name = proto_str_of(j->name, strlen(j->name)),
					 .mode = (j->mode & 07777) | S_IFREG,
					 .flags = WEFT_CREATE_EXCL | (c->wb_attrs ? WEFT_CREATE_WB : 0),
					 .open_flags = j->open_flags, .ino = wi->ino,
					 .time_ns = j->time_ns};
	struct weft_msg_opened o;
	uint8_t written[WEFT_WRITTEN_MAX];
	uint32_t wlen = 0;
	uint64_t sid;
	int err = client_open_rpc(c, WEFT_OP_CREATE_OPEN, &m, &o, written, &wlen, &sid);
	if (err == 0) {
		if (!o.created || o.attr.ino != wi->ino) {
			/* meta opened something else: not ours to keep open */
			struct wbuf w;
			wbuf_init(&w);
			struct weft_msg_release r = {.ino = o.attr.ino, .session = sid};
			proto_release_encode(&w, &r);
			client_meta_post(c, WEFT_OP_RELEASE, &w);
			err = -EEXIST;
		} else {
			client_lease_note(c, wi->ino, o.lease, j->gen);
			client_cdir_renewed(c, j->dir, o.dir_lease, j->gen);
			if (o.attr.uid != j->attr.uid || o.attr.gid != j->attr.gid ||
			    o.attr.mode != j->attr.mode)
				owner_differs(c, wi, &o.attr);
			client_cap_note(wi, o.cap);
			pthread_mutex_lock(&c->inodes_lock);
			wi->opens++;
			pthread_mutex_unlock(&c->inodes_lock);
		}
		pthread_rwlock_unlock(&c->sess_lock);
	}
	pthread_mutex_lock(&wi->lock);
	if (err == 0 && o.layout.stripe_unit != wi->layout.stripe_unit && wi->dirty) {
		/* writes were gathered by another stripe unit (the directory's layout changed
		 * unseen: a SETSTRIPE recalls the claim, so it should not) */
		log_error("create of %s in directory %llu: stripe unit %u, not the directory's %u; "
			  "its writes so far are refused", j->name, (unsigned long long)j->dir,
			  o.layout.stripe_unit, wi->layout.stripe_unit);
		wi->acreate_err = -EIO; /* set below only on an error */
	}
	if (err == 0)
		wi->layout = o.layout;
	if (err)
		wi->acreate_err = err;
	wi->acreate_pending = false;
	pthread_cond_broadcast(&wi->cond);
	pthread_mutex_unlock(&wi->lock);
	if (err) {
		stats_add(STATS_ASYNC_CREATES_FAILED, 1);
		refusal_warn("create of %s in directory %llu (inode %llx), answered before meta "
			     "had it: %s; the file is gone", j->name, (unsigned long long)j->dir,
			     (unsigned long long)wi->ino, weft_strerror(err));
		client_cdir_unclaim(c, j->dir);
		client_lease_invalidate(c, j->dir, WEFT_RECALL_NAME, j->name);
		client_lease_invalidate(c, wi->ino, WEFT_RECALL_ATTR, NULL);
	}
	client_winode_put(c, wi);
	job_finish(a, j);
}

/* Sends j's UNLINK or RMDIR; a refusal puts the name back in the kernel's sight. An
 * RMDIR comes here only once what was posted in the directory it removes was answered
 * (worker_main sets it aside until then). */
static void run_removal(struct weft_client *c, struct acreate_job *j)
{
	struct client_acreate *a = c->acreate;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_name m = {.cred = j->cred, .parent = j->dir,
				  .name = proto_str_of(j->name, strlen(j->name)),
				  .time_ns = j->time_ns};
	proto_name_encode(&w, &m);
	int err = client_meta_call(c, j->op, &w, NULL, 0, NULL);
	if (err) {
		bool rmdir = j->op == WEFT_OP_RMDIR;
		stats_add(rmdir ? STATS_ASYNC_RMDIRS_FAILED : STATS_ASYNC_UNLINKS_FAILED, 1);
		refusal_warn("%s of %s in directory %llu, answered before meta had it: %s; the "
			     "name is back", rmdir ? "rmdir" : "unlink", j->name,
			     (unsigned long long)j->dir, weft_strerror(err));
		client_cdir_unclaim(c, j->dir);
		client_emptied_forget(c, j->dir);
		client_lease_invalidate(c, j->dir, WEFT_RECALL_NAME, j->name);
		report_behind(c, err);
	}
	job_finish(a, j);
}

/* Asks meta for a claim on dir (DIR_CLAIM): its length in ms, 0 refused; *renewed: it
 * continues a lease this client held without a break (the reply's dir_lease), so no
 * other client changed dir unseen since; *attr: dir's attributes at meta; *stripe_unit:
 * the stripe unit of its files' layout. */
static uint32_t dir_claim_rpc(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			      bool *renewed, struct weft_attr *attr, uint32_t *stripe_unit)
{
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_ino m = {.cred = *cr, .ino = dir};
	proto_ino_encode(&w, &m);
	struct frame *f = NULL;
	struct weft_msg_entry e;
	uint32_t lease = 0;
	*renewed = false;
	if (client_meta_call(c, WEFT_OP_DIR_CLAIM, &w, NULL, 0, &f) == 0 &&
	    proto_entry_decode(f->payload, f->h.payload_len, &e, NULL) == 0 && e.attr.ino == dir) {
		lease = e.lease;
		*renewed = e.dir_lease != 0;
		*attr = e.attr;
		*stripe_unit = e.layout.stripe_unit;
	}
	frame_free(f);
	return lease;
}

/* A job posted so far is in dir, removes it or makes it; *unmade: makes it. */
static bool jobs_in(struct client_acreate *a, uint64_t dir, bool *unmade)
{
	pthread_mutex_lock(&a->lock);
	bool busy = busy_in(a, dir, a->next_seq);
	*unmade = made_posted(a, dir, a->next_seq);
	pthread_mutex_unlock(&a->lock);
	return busy;
}

/* dir is claimed here for removals, asked of meta (DIR_CLAIM, one round trip per
 * directory) if it was not, and renewed once half its lease is gone.
 *
 * A claim granted anew carries dir's attributes, which are kept: the kernel's checks
 * before each unlink in dir are answered from them. They must not be older than this
 * client's own removals in dir, so the request does not wait for those only when
 * it cannot matter: none are on their way, or meta renewed a lease that never lapsed
 * (then nobody else changed dir, and the attributes kept here, which the removals
 * updated as they were posted, stay right; the reply's are not taken, and meta renews
 * while this client's own removals there are under way). Otherwise it waits for them
 * and asks again. An rm -rf stalled 30-120 ms whenever a directory's
 * claim ran out behind the rmdir of a subdirectory that was still queued behind that
 * subdirectory's own removals. */
static uint32_t claim_dir_ask(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			      uint32_t *mode, uint32_t *stripe_unit)
{
	bool waited = false;
	for (;;) {
		uint64_t gen = client_recall_gen(c), agen = atomic_load(&c->attr_gen),
			 dgen = atomic_load(&c->dir_gen);
		bool unmade, mine = jobs_in(c->acreate, dir, &unmade), renewed;
		struct weft_attr attr = {0};
		/* meta does not have dir yet: its MKDIR first */
		waited = waited || unmade;
		if (waited)
			client_acreate_dir_scope(c, dir); /* what this client sent in it first */
		else
			client_acreate_no_barrier(1);
		uint32_t su = 0;
		uint32_t lease = dir_claim_rpc(c, cr, dir, &renewed, &attr, &su);
		client_acreate_scope_end();
		if (lease && mine && !renewed && !waited) {
			waited = true; /* granted anew: asked again after those jobs */
			continue;
		}
		client_uclaim_note(c, dir, lease, gen);
		if (lease)
			client_lease_note(c, dir, lease, gen);
		/* a renewal may come while this client's own changes there are under way at
		 * meta, so its attributes are never taken (those kept here stay right) */
		if (lease && !renewed && (!mine || waited))
			client_dirattr_note(c, &attr, gen, agen, dgen);
		if (lease && renewed) {
			/* nobody changed dir's names meanwhile: what its listing showed holds */
			client_emptied_renewed(c, dir, lease);
			stats_add(STATS_CLAIM_RENEWALS, 1);
		}
		if (mode)
			*mode = attr.mode;
		if (stripe_unit)
			*stripe_unit = su;
		return lease;
	}
}

static bool claim_dir(struct weft_client *c, const struct weft_cred *cr, uint64_t dir)
{
	int held = client_uclaim_held(c, dir);
	if (held == -1 || (held == 1 && !client_uclaim_due(c, dir)))
		return held == 1;
	return claim_dir_ask(c, cr, dir, NULL, NULL) != 0;
}

/* A listing's names, packed as client_cdir_fill wants them; stops (1) past max. */
struct fill_names {
	struct wbuf w;
	size_t n, max;
};

static int fill_name(void *arg, const struct weft_dirent_out *d)
{
	struct fill_names *fn = arg;
	if ((d->namelen == 1 && d->name[0] == '.') ||
	    (d->namelen == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (++fn->n > fn->max || d->namelen > WEFT_NAME_MAX)
		return 1;
	wbuf_u8(&fn->w, d->type != DT_DIR && d->type != DT_UNKNOWN);
	wbuf_u8(&fn->w, (uint8_t)d->namelen);
	wbuf_put(&fn->w, d->name, d->namelen);
	return fn->w.err ? 1 : 0;
}

bool client_acreate_fill(struct weft_client *c, const struct weft_cred *cr, uint64_t dir)
{
	size_t max;
	if (!c->acreate || !(max = client_cdir_fill_due(c, dir, client_uclaim_held(c, dir) == 1)) ||
	    !client_cdir_fill_begin(c, dir))
		return false;
	struct client_cdir_fill f = {0};
	struct fill_names fn = {.max = max};
	wbuf_init(&fn.w);
	/* the claim first: from then on another session's change there recalls it, so the
	 * listing that follows holds every name until the claim is lost */
	f.lease_ms = claim_dir_ask(c, cr, dir, &f.mode, &f.stripe_unit);
	if (f.lease_ms)
		f.listed = weft_readdir(c, cr, dir, 0, false, 0, fill_name, &fn) == 0;
	f.names = fn.w.data;
	f.names_len = fn.w.len;
	bool ok = client_cdir_fill_end(c, dir, &f);
	wbuf_free(&fn.w);
	if (ok)
		stats_add(STATS_DIRS_LISTED_COMPLETE, 1);
	return ok;
}

/* Posts j (an UNLINK or RMDIR of j->name in j->dir) if the directories it needs are
 * still claimed; false if not. Behind a job on the same name still posted (a scratch
 * file's create), it is set aside until that one is answered: the workers do not keep
 * the order, meta must see the create first. */
static bool post_removal(struct weft_client *c, struct acreate_job *j)
{
	struct client_acreate *a = c->acreate;
	pthread_mutex_lock(&a->lock);
	while (a->posted >= ACREATE_MAX_POSTED && !a->stopping)
		pthread_cond_wait(&a->done, &a->lock);
	j->after_name = name_busy(a, j->dir, j->name, UINT64_MAX);
	/* checked with the job's registration: a recall after this waits for it */
	bool ok = !a->stopping && !setattr_posted(a, j->dir, UINT64_MAX) &&
		  client_uclaim_held(c, j->dir) == 1 &&
		  (!j->removes || client_uclaim_held(c, j->removes) == 1);
	if (ok)
		post_locked(a, j);
	pthread_mutex_unlock(&a->lock);
	return ok;
}

static void queue_job(struct client_acreate *a, struct acreate_job *j)
{
	pthread_mutex_lock(&a->lock);
	queue_locked(a, j);
	pthread_mutex_unlock(&a->lock);
}

int client_acreate_unlink(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			  const char *name)
{
	struct client_acreate *a = c->acreate;
	size_t len = strlen(name);
	/* a buffered chown goes first, the synchronous way (ns.c, settle_owners) */
	if (!a || len > WEFT_NAME_MAX || client_wbattr_owner_pending(c) || !claim_dir(c, cr, dir))
		return 1;
	struct acreate_job *j = new_job(c, WEFT_OP_UNLINK, cr, dir, name, len);
	if (!j)
		return 1;
	if (!post_removal(c, j)) {
		free(j);
		return 1;
	}
	client_cdir_unlinked(c, dir, name); /* a complete directory's names */
	client_dirattr_unlinked(c, dir, j->time_ns); /* as meta will stamp it */
	client_emptied_removed(c, dir);
	stats_add(STATS_ASYNC_UNLINKS, 1);
	queue_job(a, j);
	return 0;
}

int client_acreate_rmdir(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			 const char *name)
{
	struct client_acreate *a = c->acreate;
	size_t len = strlen(name);
	uint64_t child;
	/* the removed directory's claim too: its removals may still be on their way */
	if (!a || len > WEFT_NAME_MAX || !(child = client_emptied_child(c, dir, name)) ||
	    client_wbattr_owner_pending(c) || !claim_dir(c, cr, dir) || !claim_dir(c, cr, child))
		return 1;
	struct acreate_job *j = new_job(c, WEFT_OP_RMDIR, cr, dir, name, len);
	if (!j)
		return 1;
	j->removes = j->after_dir = child;
	if (!post_removal(c, j)) {
		free(j);
		return 1;
	}
	client_emptied_drop(c, child); /* gone: its record is of no more use */
	client_emptied_removed(c, dir);
	client_cdir_unlinked(c, dir, name);
	client_dirattr_rmdired(c, dir, j->time_ns); /* as meta will stamp it, one link less */
	stats_add(STATS_ASYNC_RMDIRS, 1);
	queue_job(a, j);
	return 0;
}

/* Sends j's RENAME; a refusal puts both names back in the kernel's sight (meta's). */
static void run_rename(struct weft_client *c, struct acreate_job *j)
{
	struct client_acreate *a = c->acreate;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_rename m = {.cred = j->cred, .parent = j->dir,
				    .name = proto_str_of(j->name, strlen(j->name)),
				    .newparent = j->dir,
				    .newname = proto_str_of(j->newname, strlen(j->newname)),
				    .time_ns = j->time_ns};
	proto_rename_encode(&w, &m);
	int err = client_meta_call(c, WEFT_OP_RENAME, &w, NULL, 0, NULL);
	if (err) {
		stats_add(STATS_ASYNC_RENAMES_FAILED, 1);
		refusal_warn("rename of %s to %s in directory %llu, answered before meta had "
			     "it: %s; the names are meta's again", j->name, j->newname,
			     (unsigned long long)j->dir, weft_strerror(err));
		client_attrs_changed(c); /* the directory's times in dirattr */
		client_cdir_unclaim(c, j->dir);
		client_emptied_forget(c, j->dir);
		client_lease_invalidate(c, j->dir, WEFT_RECALL_NAME, j->name);
		client_lease_invalidate(c, j->dir, WEFT_RECALL_NAME, j->newname);
		report_behind(c, err);
	}
	job_finish(a, j);
}

int client_acreate_rename(struct weft_client *c, const struct weft_cred *cr, uint64_t dir,
			  const char *name, const char *newname)
{
	struct client_acreate *a = c->acreate;
	size_t len = strlen(name), newlen = strlen(newname);
	/* a buffered chown goes first, the synchronous way (ns.c, settle_owners) */
	if (!a || len > WEFT_NAME_MAX || newlen > WEFT_NAME_MAX || strcmp(name, newname) == 0 ||
	    client_wbattr_owner_pending(c))
		return 1;
	struct acreate_job *j = new_job(c, WEFT_OP_RENAME, cr, dir, name, len);
	if (!j)
		return 1;
	memcpy(j->newname, newname, newlen + 1);
	wait_for_room(a);
	pthread_mutex_lock(&a->lock);
	/* the names move with the check, under the lock: a recall after it waits for the
	 * job (client_acreate_drain), as for a create */
	bool ok = !a->stopping && !setattr_posted(a, dir, UINT64_MAX) &&
		  client_cdir_rename_name(c, dir, name, newname);
	if (ok) {
		j->after_name = name_busy(a, dir, name, UINT64_MAX) ||
				name_busy(a, dir, newname, UINT64_MAX);
		post_locked(a, j);
	}
	pthread_mutex_unlock(&a->lock);
	if (!ok) {
		free(j);
		return 1;
	}
	client_emptied_forget(c, dir); /* its listing's names */
	client_dirattr_unlinked(c, dir, j->time_ns); /* as meta will stamp it; the file's
						       * ctime moves too */
	atomic_fetch_add(&c->create_gen, 1); /* kept listings of dir show the old name */
	stats_add(STATS_ASYNC_RENAMES, 1);
	queue_job(a, j);
	return 0;
}

/* Sends j's SETATTR of directory j->dir, behind like a buffered chmod at close (lazy at
 * meta: durable with the next sync, weft sync or an unmount); a refusal drops what the
 * kernel and dirattr were told. It comes here only once what was posted in the
 * directory before it was answered (worker_main sets it aside until then). */
static void run_setattr(struct weft_client *c, struct acreate_job *j)
{
	struct client_acreate *a = c->acreate;
	struct wbuf w;
	wbuf_init(&w);
	struct weft_msg_setattr m = {.cred = j->cred, .ino = j->dir,
				     .valid = j->valid | WEFT_SET_CTIME | WEFT_SET_DEFERRED |
					      WEFT_SET_BEHIND,
				     .mode = j->attr.mode, .uid = j->attr.uid, .gid = j->attr.gid,
				     .atime_ns = j->attr.atime_ns, .mtime_ns = j->attr.mtime_ns,
				     .ctime_ns = j->time_ns};
	proto_setattr_encode(&w, &m);
	int err = client_meta_call(c, WEFT_OP_SETATTR, &w, NULL, 0, NULL);
	if (err) {
		stats_add(STATS_ASYNC_SETATTRS_FAILED, 1);
		refusal_warn("setattr of directory %llu, answered before meta had it: %s; its "
			     "attributes are meta's again", (unsigned long long)j->dir,
			     weft_strerror(err));
		client_attrs_changed(c); /* dirattr's copy of them is wrong */
		client_cdir_unclaim(c, j->dir);
		client_lease_invalidate(c, j->dir, WEFT_RECALL_ATTR, NULL);
		report_behind(c, err);
	}
	job_finish(a, j);
}

/* dir is claimed at meta by this client: made here (and claimed with its MKDIR), or
 * claimed for removals; no round trip either way */
static bool claimed(struct weft_client *c, uint64_t dir)
{
	return client_cdir_claimed(c, dir) || client_uclaim_held(c, dir) == 1;
}

/* What a directory's setattr may carry to be answered here: no size, no "now" (meta's
 * clock), nothing but what tar, cp -a and rsync set. */
#define ASYNC_SETATTR_VALID \
	(WEFT_SET_MODE | WEFT_SET_UID | WEFT_SET_GID | WEFT_SET_ATIME | WEFT_SET_MTIME)

int client_acreate_setattr(struct weft_client *c, const struct weft_cred *cr, uint64_t ino,
			   uint32_t valid, const struct weft_attr *in, struct weft_attr *out)
{
	struct client_acreate *a = c->acreate;
	struct weft_attr cur;
	if (!a || !valid || (valid & ~(uint32_t)ASYNC_SETATTR_VALID) ||
	    ((valid & WEFT_SET_MODE) && (in->mode & S_ISGID)) || !claimed(c, ino) ||
	    !client_dirattr_get(c, ino, &cur) || !S_ISDIR(cur.mode) ||
	    (cur.mode & (S_ISUID | S_ISGID)) ||
	    !client_setattr_allowed(cr, &cur, valid, in))
		return 1;
	struct acreate_job *j = new_job(c, WEFT_OP_SETATTR, cr, ino, "", 0);
	if (!j)
		return 1;
	j->after_dir = ino;
	j->valid = valid;
	j->attr = *in;
	pthread_mutex_lock(&a->lock);
	while (a->posted >= ACREATE_MAX_POSTED && !a->stopping)
		pthread_cond_wait(&a->done, &a->lock);
	/* checked with the job's registration: a recall after this waits for it */
	bool ok = !a->stopping && claimed(c, ino);
	if (ok)
		post_locked(a, j);
	pthread_mutex_unlock(&a->lock);
	if (!ok) {
		free(j);
		return 1;
	}
	/* what meta will make of it (meta_setattr), shown to the kernel now */
	if (valid & WEFT_SET_MODE)
		cur.mode = (cur.mode & S_IFMT) | (in->mode & 07777);
	if (valid & WEFT_SET_UID)
		cur.uid = in->uid;
	if (valid & WEFT_SET_GID)
		cur.gid = in->gid;
	if (valid & WEFT_SET_ATIME)
		cur.atime_ns = in->atime_ns;
	if (valid & WEFT_SET_MTIME)
		cur.mtime_ns = in->mtime_ns;
	cur.ctime_ns = j->time_ns;
	/* the directory stays claimed for creates: with no setgid bit before or after, a
	 * new file's owner and group are its creator's, and a create in it goes the
	 * synchronous way while this is posted (setattr_posted), so meta checks it against
	 * the new mode as the kernel does */
	client_dirattr_set(c, &cur);
	if (out)
		*out = cur;
	stats_add(STATS_ASYNC_SETATTRS, 1);
	queue_job(a, j);
	return 0;
}

static void *worker_main(void *arg)
{
	struct weft_client *c = arg;
	struct client_acreate *a = c->acreate;
	no_barrier = 1;
	pthread_mutex_lock(&a->lock);
	bool extra = a->started++ >= ACREATE_THREADS;
	for (;;) {
		while ((!a->q || (extra && !slow(a))) && !a->stopping)
			pthread_cond_wait(extra ? &a->extra : &a->work, &a->lock);
		struct acreate_job *j = a->q;
		if (!j)
			break;
		if (!(a->q = j->next_q))
			a->qtail = &a->q;
		/* an RMDIR whose directory's removals are still on their way, or a SETATTR
		 * whose directory's creates are, waits aside, not in a worker: eight RMDIRs
		 * of a deep tree waiting in all eight workers for one unlink at a time made
		 * rm -rf of the kernel tree three times slower */
		if (must_wait(a, j)) {
			j->next_q = a->deferred;
			a->deferred = j;
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		if (extra)
			stats_add(STATS_ASYNC_EXTRA_SENT, 1);
		uint64_t t0 = loop_now_us();
		if (j->op == WEFT_OP_UNLINK || j->op == WEFT_OP_RMDIR)
			run_removal(c, j);
		else if (j->op == WEFT_OP_SETATTR)
			run_setattr(c, j);
		else if (j->op == WEFT_OP_MKDIR)
			run_mkdir(c, j);
		else if (j->op == WEFT_OP_RENAME)
			run_rename(c, j);
		else
			run_job(c, j);
		uint64_t rtt = loop_now_us() - t0;
		pthread_mutex_lock(&a->lock);
		a->rtt_us = a->rtt_us - a->rtt_us / 8 + rtt / 8;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int client_acreate_start(struct weft_client *c)
{
	struct client_acreate *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->done, NULL);
	pthread_cond_init(&a->extra, NULL);
	a->qtail = &a->q;
	c->acreate = a;
	for (int i = 0; i < ACREATE_THREADS + ACREATE_EXTRA_THREADS; i++) {
		int err = pthread_create(&a->threads[i], NULL, worker_main, c);
		if (err) {
			client_acreate_stop(c);
			return -err;
		}
		pthread_setname_np(a->threads[i], "weft-acreate");
		a->nthreads++;
	}
	return 0;
}

void client_acreate_stop(struct weft_client *c)
{
	struct client_acreate *a = c->acreate;
	if (!a)
		return;
	/* what was posted goes first (the workers take the queue before they stop) */
	client_acreate_barrier(c);
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	pthread_cond_broadcast(&a->work);
	pthread_cond_broadcast(&a->extra);
	pthread_cond_broadcast(&a->done);
	pthread_mutex_unlock(&a->lock);
	for (int i = 0; i < a->nthreads; i++)
		pthread_join(a->threads[i], NULL);
	c->acreate = NULL;
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->done);
	free(a);
}
