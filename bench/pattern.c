/* A deterministic byte pattern for read benchmarks: every 8-byte word at file offset
 * 8*i is splitmix64(seed + i), so any range can be checked without keeping the data.
 *
 *   pattern gen SIZE [SEED]          writes the pattern to stdout
 *   pattern verify FILE SIZE [SEED]  reads FILE in 1 MiB reads, checks every byte
 *                                    (and its size), prints MB/s; exit 1 on a mismatch */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Fills buf (len a multiple of 8) with the pattern from file offset off (ditto). */
static void fill(uint64_t *buf, size_t len, uint64_t off, uint64_t seed)
{
	for (size_t i = 0; i < len / 8; i++)
		buf[i] = splitmix64(seed + off / 8 + i);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int gen(uint64_t size, uint64_t seed)
{
	static uint64_t buf[CHUNK / 8];
	for (uint64_t off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		fill(buf, (n + 7) & ~7ul, off, seed);
		for (size_t done = 0; done < n;) {
			ssize_t w = write(1, (char *)buf + done, n - done);
			if (w < 0) {
				fprintf(stderr, "pattern: write: %s\n", strerror(errno));
				return 1;
			}
			done += (size_t)w;
		}
	}
	return 0;
}

static int verify(const char *path, uint64_t size, uint64_t seed)
{
	static uint64_t want[CHUNK / 8], got[CHUNK / 8];
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "pattern: %s: %s\n", path, strerror(errno));
		return 1;
	}
	double t0 = now();
	uint64_t off = 0;
	for (;;) {
		size_t have = 0;
		while (have < CHUNK) {
			ssize_t r = read(fd, (char *)got + have, CHUNK - have);
			if (r < 0) {
				fprintf(stderr, "pattern: %s: read at %llu: %s\n", path,
					(unsigned long long)(off + have), strerror(errno));
				return 1;
			}
			if (r == 0)
				break;
			have += (size_t)r;
		}
		if (have == 0)
			break;
		if (off + have > size) {
			fprintf(stderr, "pattern: %s: longer than %llu bytes\n", path,
				(unsigned long long)size);
			return 1;
		}
		fill(want, (have + 7) & ~7ul, off, seed);
		if (memcmp(want, got, have) != 0) {
			size_t i = 0;
			while (((char *)want)[i] == ((char *)got)[i])
				i++;
			fprintf(stderr, "pattern: %s: wrong byte at offset %llu\n", path,
				(unsigned long long)(off + i));
			return 1;
		}
		off += have;
		if (have < CHUNK)
			break;
	}
	double dt = now() - t0;
	close(fd);
	if (off != size) {
		fprintf(stderr, "pattern: %s: %llu bytes, want %llu\n", path,
			(unsigned long long)off, (unsigned long long)size);
		return 1;
	}
	printf("%.0f\n", size / dt / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "gen") == 0)
		return gen(strtoull(argv[2], NULL, 0), argc > 3 ? strtoull(argv[3], NULL, 0) : 1);
	if (argc >= 4 && strcmp(argv[1], "verify") == 0)
		return verify(argv[2], strtoull(argv[3], NULL, 0),
			      argc > 4 ? strtoull(argv[4], NULL, 0) : 1);
	fprintf(stderr, "usage: pattern gen SIZE [SEED] | pattern verify FILE SIZE [SEED]\n");
	return 2;
}
