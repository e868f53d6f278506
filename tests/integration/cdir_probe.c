/* cdir_probe: drives libweft directly (no kernel between: the kernel's own GETATTR of a
 * directory after each create would renew its lease too) to check that the creates'
 * replies alone keep a directory this client made complete (test_complete_dirs.sh).
 *
 * usage: cdir_probe META_ADDR KEY_FILE NAME N PAUSE_MS WAIT_MS
 * Makes directory NAME under the root, N files in it PAUSE_MS apart, waits WAIT_MS,
 * then looks up a name that does not exist there. Prints "absent" when the lookup said
 * ENOENT; the caller counts the LOOKUPs meta served meanwhile (none if the directory was
 * still complete). Exits 1 on any other outcome. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "weft/client.h"
#include "weft/err.h"

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: cdir_probe META_ADDR KEY_FILE NAME N PAUSE_MS WAIT_MS\n");
		return 2;
	}
	struct weft_client_opts o = {.meta_addr = argv[1], .key_file = argv[2],
				     .node_name = "cdir_probe",
				     .readahead_units = WEFT_READAHEAD_OFF};
	int n = atoi(argv[4]);
	long pause = atol(argv[5]), wait = atol(argv[6]);
	char err[256];
	struct weft_client *c;
	if (weft_client_open(&o, &c, err, sizeof(err))) {
		fprintf(stderr, "cdir_probe: %s\n", err);
		return 1;
	}
	struct weft_cred cr = {0};
	struct weft_attr d, a;
	int rc = weft_mkdir(c, &cr, WEFT_ROOT_INO, argv[3], 0755, &d);
	for (int i = 0; rc == 0 && i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		rc = weft_mknod(c, &cr, d.ino, name, S_IFREG | 0644, 0, true, &a);
		sleep_ms(pause);
	}
	if (rc) {
		fprintf(stderr, "cdir_probe: mkdir or mknod: %s\n", weft_strerror(rc));
		weft_client_close(c);
		return 1;
	}
	sleep_ms(wait);
	rc = weft_lookup(c, &cr, d.ino, "absent", &a);
	weft_client_close(c);
	if (rc != -ENOENT) {
		fprintf(stderr, "cdir_probe: lookup of an absent name: %s\n", weft_strerror(rc));
		return 1;
	}
	printf("absent\n");
	return 0;
}
