/* "host:port" parsing, listening and connecting (IPv4 and IPv6, "[v6]:port"). */
#ifndef WEFT_ADDR_H
#define WEFT_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

struct weft_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* Parses and resolves "host:port", "[v6]:port", or ":port"/"port" (any address) with
 * default_port used when the port is missing. Returns 0 or -EINVAL/-ENOENT. */
int addr_parse(const char *s, int default_port, struct weft_addr *out);
/* Formats as "1.2.3.4:5" or "[::1]:5". */
void addr_format(const struct sockaddr *sa, char *out, size_t cap);
/* A non-blocking listening socket (SO_REUSEADDR). Returns fd or -errno. */
int addr_listen(const struct weft_addr *a);
/* Blocking connect with timeout, then sets non-blocking, TCP_NODELAY, keepalive.
 * Returns fd or -errno. */
int addr_connect(const struct weft_addr *a, int timeout_ms);
/* Sets TCP_NODELAY, SO_KEEPALIVE (with short probes) and larger buffers on fd. */
void addr_tune(int fd);
/* Port the socket is bound to. */
int addr_local_port(int fd);

#endif
