/* flood ADDR:PORT N MODE SECONDS [SOURCE_IP]: opens N connections to a weft daemon from
 * SOURCE_IP (default 127.0.0.2) and holds them for SECONDS, as a stranger without the key
 * would. MODE "bulk": each sends a HELLO header announcing 16 MiB of bulk and nothing
 * more; "idle": each sends nothing. Prints how many connects succeeded. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/proto.h"

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: flood ADDR:PORT N bulk|idle SECONDS [SOURCE_IP]\n");
		return 2;
	}
	char host[64];
	snprintf(host, sizeof(host), "%s", argv[1]);
	char *colon = strrchr(host, ':');
	if (!colon)
		return 2;
	*colon = '\0';
	int n = atoi(argv[2]), secs = atoi(argv[4]);
	bool bulk = strcmp(argv[3], "bulk") == 0;
	struct rlimit rl = {(rlim_t)n + 64, (rlim_t)n + 64};
	setrlimit(RLIMIT_NOFILE, &rl);
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
	struct sockaddr_in src = {.sin_family = AF_INET};
	inet_pton(AF_INET, host, &dst.sin_addr);
	inet_pton(AF_INET, argc > 5 ? argv[5] : "127.0.0.2", &src.sin_addr);
	uint8_t hdr[WEFT_HDR_SIZE];
	struct weft_hdr h = {.magic = WEFT_MAGIC, .version = WEFT_PROTO_MAX,
			     .opcode = WEFT_OP_HELLO, .reqid = 1, .bulk_len = 16u << 20};
	proto_hdr_encode(hdr, &h);
	int *fds = calloc((size_t)n, sizeof(int)), ok = 0;
	for (int i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&src, sizeof(src)) < 0 ||
		    connect(fds[i], (struct sockaddr *)&dst, sizeof(dst)) < 0) {
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
			continue;
		}
		ok++;
		if (bulk && write(fds[i], hdr, sizeof(hdr)) < 0)
			continue;
	}
	printf("%d connected\n", ok);
	fflush(stdout);
	sleep((unsigned)secs);
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return 0;
}
