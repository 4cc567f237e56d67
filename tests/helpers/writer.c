/* writer.c - js-writer: write a known number of bytes to a file.
 *
 * Writes --mib MiB of non-zero data in chunks, optionally fsyncing so the
 * bytes reach the disk (and /proc/PID/io write_bytes), then removes the file.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PROG_NAME "js-writer"
#include "helper.h"

#define MAX_MIB	      (1UL << 24) /* 16 TiB */
#define MAX_CHUNK_KIB (1UL << 20) /* 1 GiB */
#define FSYNC_EVERY   (64ULL << 20)

static const char *out_path;
static bool keep_file;

static void usage(FILE *out, int status)
{
	print_usage(out, status,
		    "usage: js-writer --mib M --path P [--chunk-kib K] [--fsync] [--keep]\n",
		    "\n"
		    "  --mib M         write M MiB of non-zero data\n"
		    "  --path P        file to create (truncated if it exists)\n"
		    "  --chunk-kib K   size of each write(2) in KiB (default 1024)\n"
		    "  --fsync         fsync every 64 MiB and at the end\n"
		    "  --keep          leave the file in place (default: unlink it)\n"
		    "\n"
		    "Prints {\"bytes_written\":N}.\n");
}

/* Reports a failed call and removes the half-written file unless --keep. */
static void die(const char *what)
{
	int saved = errno;

	if (!keep_file)
		unlink(out_path);
	errno = saved;
	err(1, "%s '%s'", what, out_path);
}

static void write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("cannot write");
		buf += n;
		len -= (size_t)n;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"mib", required_argument, NULL, 'm'},
	    {"path", required_argument, NULL, 'p'},
	    {"chunk-kib", required_argument, NULL, 'c'},
	    {"fsync", no_argument, NULL, 'f'},
	    {"keep", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned long long total, written = 0, since_sync = 0;
	unsigned long mib = 0, chunk_kib = 1024;
	bool do_fsync = false, have_mib = false;
	size_t chunk, n, i;
	char *buf;
	int c, fd;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mib = parse_count("mib", optarg, 0, MAX_MIB);
			have_mib = true;
			break;
		case 'p':
			out_path = optarg;
			break;
		case 'c':
			chunk_kib = parse_count("chunk-kib", optarg, 1, MAX_CHUNK_KIB);
			break;
		case 'f':
			do_fsync = true;
			break;
		case 'k':
			keep_file = true;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 2);
		}
	}
	if (optind < argc || !have_mib || !out_path || !*out_path)
		usage(stderr, 2);

	chunk = (size_t)chunk_kib << 10;
	buf = malloc(chunk);
	if (!buf)
		err(1, "cannot allocate a %lu KiB buffer", chunk_kib);
	for (i = 0; i < chunk; i++)
		buf[i] = (char)('a' + i % 26);

	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		err(1, "cannot open '%s'", out_path);
	total = (unsigned long long)mib << 20;
	while (written < total) {
		n = total - written < chunk ? (size_t)(total - written) : chunk;
		write_all(fd, buf, n);
		written += n;
		since_sync += n;
		if (do_fsync && since_sync >= FSYNC_EVERY) {
			if (fsync(fd))
				die("cannot fsync");
			since_sync = 0;
		}
	}
	if (do_fsync && fsync(fd))
		die("cannot fsync");
	if (close(fd))
		die("cannot close");
	if (!keep_file && unlink(out_path))
		err(1, "cannot remove '%s'", out_path);
	free(buf);

	printf("{\"bytes_written\":%llu}\n", written);
	if (fflush(stdout))
		err(1, "stdout");
	return 0;
}
