/* fsx FILE [OPS] [MAXLEN] [SEED]: random writes of random sizes at random offsets,
 * truncates, reads, fsyncs and reopens against an in-memory model of the file; every read
 * and a final full read are compared byte for byte with the model. Exit 1 on the first
 * difference, printing the operation log tail. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define LOG 32
static char oplog[LOG][96];
static long nops;

static void logop(const char *what, long a, long b)
{
	snprintf(oplog[nops % LOG], sizeof(oplog[0]), "%s %ld %ld", what, a, b);
	nops++;
}

static void die(const char *what)
{
	fprintf(stderr, "fsx: %s after %ld operations; last operations:\n", what, nops);
	for (long i = nops > LOG ? nops - LOG : 0; i < nops; i++)
		fprintf(stderr, "  %ld %s\n", i, oplog[i % LOG]);
	exit(1);
}

static void check(int fd, const uint8_t *model, long size, long off, long len)
{
	static uint8_t buf[4 << 20];
	if (len > (long)sizeof(buf))
		len = sizeof(buf);
	ssize_t n = pread(fd, buf, (size_t)len, off);
	long want = off >= size ? 0 : (off + len > size ? size - off : len);
	if (n != want) {
		char m[128];
		snprintf(m, sizeof(m), "read at %ld len %ld returned %zd, expected %ld (errno %d)",
			 off, len, n, want, errno);
		die(m);
	}
	for (long i = 0; i < want; i++) {
		if (buf[i] != model[off + i]) {
			char m[128];
			snprintf(m, sizeof(m), "byte %ld is %u, expected %u", off + i, buf[i],
				 model[off + i]);
			die(m);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fsx FILE [OPS] [MAXLEN] [SEED]\n");
		return 2;
	}
	long ops = argc > 2 ? atol(argv[2]) : 2000;
	long maxlen = argc > 3 ? atol(argv[3]) : 8 << 20;
	rng = argc > 4 ? strtoull(argv[4], NULL, 10) : 42;
	if (!rng)
		rng = 1;
	uint8_t *model = calloc(1, (size_t)maxlen);
	static uint8_t wbuf[4 << 20];
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	long size = 0;
	for (long i = 0; i < ops; i++) {
		int op = (int)(rnd() % 100);
		long off = (long)(rnd() % (uint64_t)maxlen);
		long len = (long)(rnd() % 3 == 0 ? rnd() % (4 << 20) : rnd() % 70000) + 1;
		if (off + len > maxlen)
			len = maxlen - off;
		if (op < 45) { /* write */
			for (long k = 0; k < len; k++)
				wbuf[k] = (uint8_t)(rnd() >> 20);
			logop("write off,len", off, len);
			if (pwrite(fd, wbuf, (size_t)len, off) != len)
				die("short write");
			memcpy(model + off, wbuf, (size_t)len);
			if (off + len > size)
				size = off + len;
		} else if (op < 80) { /* read */
			logop("read off,len", off, len);
			check(fd, model, size, off, len);
		} else if (op < 90) { /* truncate */
			long ns = (long)(rnd() % (uint64_t)maxlen);
			logop("truncate to,from", ns, size);
			if (ftruncate(fd, ns) < 0)
				die("ftruncate failed");
			if (ns < size)
				memset(model + ns, 0, (size_t)(size - ns));
			size = ns;
		} else if (op < 95) {
			logop("fsync", 0, 0);
			if (fsync(fd) < 0)
				die("fsync failed");
		} else {
			logop("close and reopen", 0, 0);
			if (close(fd) < 0)
				die("close failed");
			fd = open(argv[1], O_RDWR);
			if (fd < 0)
				die("reopen failed");
		}
		struct stat st;
		if (i % 50 == 0 && (fstat(fd, &st) < 0 || st.st_size != size)) {
			char m[96];
			snprintf(m, sizeof(m), "size is %lld, expected %ld", (long long)st.st_size, size);
			die(m);
		}
	}
	for (long off = 0; off < size; off += 4 << 20)
		check(fd, model, size, off, 4 << 20);
	if (close(fd) < 0)
		die("final close failed");
	printf("fsx: %ld operations, final size %ld, all reads matched\n", ops, size);
	free(model);
	return 0;
}
