/* memtouch.c - js-memtouch: grow the resident set by a known amount.
 *
 * Allocates --mib MiB, dirties every page so it is really resident, holds it
 * long enough for a sampler to see, and reports the peak RSS getrusage saw.
 */
#include <err.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROG_NAME "js-memtouch"
#include "helper.h"

#define MAX_MIB (1UL << 20) /* 1 TiB */

static void usage(FILE *out, int status)
{
	print_usage(
	    out, status, "usage: js-memtouch --mib M [--hold S]\n",
	    "\n"
	    "  --mib M    allocate M MiB and write to every page (0 gives the baseline)\n"
	    "  --hold S   keep it resident for S seconds before freeing (default 1.0)\n"
	    "\n"
	    "Prints {\"mib\":M,\"maxrss_bytes\":B,\"hwm_bytes\":W,\"pid\":P,\"cpu_seconds\":C}\n"
	    "with B and C (user + system) from getrusage RUSAGE_SELF, C after the memory\n"
	    "is freed, and W its VmHWM then (/proc/self/status: this image's own peak;\n"
	    "B also holds the image it had from fork to exec, its parent's copy).\n");
}

/* VmHWM of /proc/self/status in bytes, -1 if it cannot be read */
static long long own_hwm(void)
{
	char line[256];
	long long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0 && sscanf(line + 6, "%lld", &kib) == 1)
			break;
	fclose(f);
	return kib < 0 ? -1 : kib * 1024;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"mib", required_argument, NULL, 'm'},
	    {"hold", required_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	volatile unsigned char *buf;
	unsigned long mib = 0;
	double hold_s = 1.0;
	bool have_mib = false;
	size_t bytes, off;
	struct rusage ru;
	long page;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mib = parse_count("mib", optarg, 0, MAX_MIB);
			have_mib = true;
			break;
		case 'H':
			hold_s = parse_seconds("hold", optarg);
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || !have_mib)
		usage(stderr, 2);

	page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		err(1, "sysconf(_SC_PAGESIZE)");
	bytes = (size_t)mib << 20;
	buf = malloc(bytes ? bytes : 1);
	if (!buf)
		err(1, "cannot allocate %lu MiB", mib);
	/*
	 * One non-zero byte per page is enough to fault it in.  The stores go
	 * through a volatile pointer: a memset(0) could be turned into calloc,
	 * and stores to memory that is only freed afterwards could be dropped.
	 */
	for (off = 0; off < bytes; off += (size_t)page)
		buf[off] = (unsigned char)(1 + off / (size_t)page % 255);
	sleep_s(hold_s);
	free((void *)buf);
	/* after the free: its CPU then is all but its exit's */
	if (getrusage(RUSAGE_SELF, &ru))
		err(1, "getrusage");

	printf("{\"mib\":%lu,\"maxrss_bytes\":%lld,\"hwm_bytes\":%lld,\"pid\":%d,"
	       "\"cpu_seconds\":%.6f}\n",
	       mib, (long long)ru.ru_maxrss * 1024, own_hwm(), (int)getpid(),
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
