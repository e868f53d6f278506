/* weft mount: the FUSE low-level adapter over libweft. */
#ifndef WEFT_MOUNT_H
#define WEFT_MOUNT_H

#include <stdbool.h>
#include <stdint.h>

struct mount_opts {
	const char *meta;         /* HOST:PORT */
	const char *mountpoint;
	const char *key_file;
	const char *node_name;
	uint64_t pagepool;        /* 0: default */
	bool checksums_off;
	bool read_only;
	bool allow_other;
	bool wb_attrs;            /* attribute write-back for files this mount creates */
	bool sync_close;          /* no close-behind for them */
	bool root_squash;         /* uid/gid 0 of this node act as nobody (65534) at meta */
	double attr_timeout;      /* seconds the kernel may cache attributes and entries */
	uint32_t readahead_kb;    /* kernel read-ahead of the mount (bdi read_ahead_kb) */
	uint32_t readahead_units; /* libweft readahead in stripe units (WEFT_READAHEAD_OFF: none) */
	bool open_prefetch_off;   /* no first stripe unit read with the OPEN */
	bool complete_dirs_off;   /* no lookups answered in directories this mount created */
	bool dir_ahead_off;       /* no listings of subdirectories read ahead */
	bool async_create_off;    /* every create waits for meta */
	bool local_open_off;      /* every open waits for meta */
	const char *fuse_opts;    /* other -o options passed to FUSE as they are, or NULL */
	const char *metrics;      /* HOST:PORT of a Prometheus endpoint, or NULL */
};

/* Connects, mounts and serves until unmounted or signalled (SIGTERM/SIGINT unmount).
 * ready(status) is called once the mount is live (status 0) or failed. Returns 0 or an
 * exit status; prints a one-line reason on failure. */
int mount_run(const struct mount_opts *o, void (*ready)(int status));

#endif
