/* Address parsing and socket setup. */
#include "common/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int addr_parse(const char *s, int default_port, struct weft_addr *out)
{
	char host[256] = "", port[16];
	snprintf(port, sizeof(port), "%d", default_port);
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || (size_t)(end - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		if (end[1] == ':')
			snprintf(port, sizeof(port), "%s", end + 2);
		else if (end[1] != '\0')
			return -EINVAL;
	} else {
		const char *colon = strrchr(s, ':');
		if (colon && strchr(s, ':') != colon)
			return -EINVAL; /* bare IPv6 needs brackets */
		if (colon) {
			if ((size_t)(colon - s) >= sizeof(host))
				return -EINVAL;
			memcpy(host, s, (size_t)(colon - s));
			snprintf(port, sizeof(port), "%s", colon + 1);
		} else if (s[0] && strspn(s, "0123456789") == strlen(s)) {
			snprintf(port, sizeof(port), "%s", s);
		} else {
			snprintf(host, sizeof(host), "%s", s);
		}
	}
	char *endp;
	long p = strtol(port, &endp, 10);
	if (*endp || p < 0 || p > 65535 || port[0] == '\0')
		return -EINVAL;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | (host[0] ? 0 : AI_PASSIVE)};
	struct addrinfo *res;
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0)
		return -ENOENT;
	memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void addr_format(const struct sockaddr *sa, char *out, size_t cap)
{
	char h[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, h, sizeof(h));
		snprintf(out, cap, "%s:%u", h, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, h, sizeof(h));
		snprintf(out, cap, "[%s]:%u", h, ntohs(in6->sin6_port));
	} else {
		snprintf(out, cap, "?");
	}
}

void addr_tune(int fd)
{
	/* user timeout: data sent and not acknowledged for this long (a host gone silent,
	 * a path cut without RST) closes the connection with ETIMEDOUT, so a request on it
	 * fails over instead of waiting out TCP's retransmissions (about 15 minutes) */
	int one = 1, idle = 10, intvl = 5, cnt = 3, user_ms = 15000;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}

int addr_listen(const struct weft_addr *a)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&a->ss, a->len) < 0 || listen(fd, 512) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int addr_connect(const struct weft_addr *a, int timeout_ms)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
		if (errno != EINPROGRESS) {
			int e = -errno;
			close(fd);
			return e;
		}
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int n = poll(&p, 1, timeout_ms);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (n == 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
			int e = soerr ? -soerr : -errno;
			close(fd);
			return e;
		}
	}
	addr_tune(fd);
	return fd;
}

int addr_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}
