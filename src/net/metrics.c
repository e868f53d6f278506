/* The Prometheus endpoint (see metrics.h). */
#include "net/metrics.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/addr.h"
#include "common/log.h"
#include "net/stats.h"

static struct MHD_Daemon *daemon_h;
static int bound_port;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	struct MHD_Response *r;
	unsigned status = MHD_HTTP_OK;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "only GET /metrics\n";
		r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		static const char msg[] = "weft: metrics are at /metrics\n";
		r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_FOUND;
	} else {
		char *text = stats_prometheus();
		if (!text)
			return MHD_NO;
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	}
	if (!r)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

int metrics_start(const char *listen, char *err, size_t errlen)
{
	struct weft_addr a;
	int rc = addr_parse(listen, 9100, &a);
	if (rc) {
		snprintf(err, errlen, "metrics address '%s': want HOST:PORT", listen);
		return rc;
	}
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	if (a.ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	daemon_h = MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL,
				    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a.ss,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	if (!daemon_h) {
		snprintf(err, errlen, "metrics endpoint %s: cannot listen (address in use?)", listen);
		return -EADDRINUSE;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_h, MHD_DAEMON_INFO_BIND_PORT);
	bound_port = info ? info->port : 0;
	log_info("Prometheus metrics on http://%s/metrics (port %d)", listen, bound_port);
	return 0;
}

int metrics_port(void)
{
	return bound_port;
}

void metrics_stop(void)
{
	if (daemon_h)
		MHD_stop_daemon(daemon_h);
	daemon_h = NULL;
	bound_port = 0;
}
