/* notify_listen SOCKET SECONDS: binds a unix datagram socket at SOCKET, as systemd's
 * NOTIFY_SOCKET, and prints each message it receives (one line per variable) until
 * SECONDS pass without a message. For testing the daemons' sd_notify protocol. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: notify_listen SOCKET SECONDS\n");
		return 2;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "notify_listen: socket path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("notify_listen: bind");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (poll(&p, 1, atoi(argv[2]) * 1000) > 0) {
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			break;
		buf[n] = '\0';
		printf("%s\n", buf);
	}
	return 0;
}
