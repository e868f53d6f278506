/* An opt-in Prometheus endpoint: GET /metrics answers stats_prometheus() (stats.h).
 * Served by libmicrohttpd on a thread of its own, so a scrape never waits on the
 * daemon's event loop or I/O threads. */
#ifndef WEFT_METRICS_H
#define WEFT_METRICS_H

#include <stddef.h>

/* Listens on "host:port" (port 0: a free one). Returns 0 or -errno with a one-line reason
 * in err. One endpoint per process. */
int metrics_start(const char *listen, char *err, size_t errlen);
/* The bound port, or 0 when not serving. */
int metrics_port(void);
void metrics_stop(void);

#endif
