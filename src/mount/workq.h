/* A FIFO of jobs run by a few threads of the mount's own: for requests whose answer the
 * kernel does not wait for (RELEASE), so that the FUSE thread that read one goes back to
 * /dev/fuse at once. A FUSE thread that waited for a RELEASE's work (the flush a close
 * left behind, meta's RELEASE: milliseconds) left libfuse with no idle thread, and it
 * started a new one for the next request: 1,845 thread starts while tar extracted 2,175
 * entries (docs/PERFORMANCE.md, "RELEASE off the FUSE threads"). */
#ifndef WEFT_MOUNT_WORKQ_H
#define WEFT_MOUNT_WORKQ_H

struct workq_job {
	struct workq_job *next;
	void (*run)(struct workq_job *job); /* owns the job: frees it */
};

/* Starts n workers; returns 0 or -errno (jobs then run in the caller, as before). */
int workq_start(unsigned n);
/* Queues job; runs it in the caller if the workers are not running. */
void workq_push(struct workq_job *job);
/* Runs every job queued, then ends the workers. */
void workq_stop(void);

#endif
