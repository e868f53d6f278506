/* A mount's counters for local readers (weft stat --mount, the dstat plugin): a JSON
 * snapshot (stats.h, schema weft.stats/1) rewritten every second, atomically (rename), at
 * a path derived from the mount point, and removed at unmount. A mount is not a server,
 * so this file is how a tool on the node reads it without the cluster key. */
#ifndef WEFT_MOUNT_STATSFILE_H
#define WEFT_MOUNT_STATSFILE_H

#include <stddef.h>

/* The directory of mounts' stats files: $WEFT_RUN_DIR, else /run/weft/mounts for root,
 * else $XDG_RUNTIME_DIR/weft/mounts (or /tmp/weft-UID/mounts). */
void statsfile_dir(char *out, size_t cap);
/* The stats file of the mount at mountpoint (an absolute path) within statsfile_dir. */
void statsfile_path(const char *mountpoint, char *out, size_t cap);
/* Starts the writer thread; returns 0 or -errno (the mount goes on without the file). */
int statsfile_start(const char *mountpoint);
/* Stops the writer and removes the file. */
void statsfile_stop(void);

#endif
