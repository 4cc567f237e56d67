/*
 * replay_main.c - runs a libFuzzer target on saved inputs without libFuzzer.
 *
 * Usage: fuzz_X_replay FILE|DIR...  Every file named, and every file in a
 * directory named (sorted, dotfiles skipped, subdirectories walked), is fed
 * to LLVMFuzzerTestOneInput once, in a malloc'd buffer of exactly its size
 * so that a sanitized build catches reads past the end.  Exits 0 when all
 * inputs ran, 1 when one could not be read; a crash is the target's own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long inputs_run;

static int run_file(const char *path)
{
	struct strbuf sb;
	uint8_t *data;
	int fd, ret;

	strbuf_init(&sb, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out_release_buf;
	}
	ret = strbuf_read_fd(&sb, fd);
	close(fd);
	if (ret)
		goto out_release_buf;
	/* exact size, no spare NUL: the target must not read past size */
	data = malloc(sb.len ? sb.len : 1);
	if (!data) {
		ret = -ENOMEM;
		goto out_release_buf;
	}
	memcpy(data, strbuf_str(&sb), sb.len);
	LLVMFuzzerTestOneInput(data, sb.len);
	inputs_run++;
	free(data);
out_release_buf:
	strbuf_release(&sb);
	if (ret)
		fprintf(stderr, "replay: cannot read '%s': %s\n", path, strerror(-ret));
	return ret;
}

static int skip_dotfiles(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static int run_path(const char *path)
{
	struct dirent **names;
	struct stat st;
	int i, n, ret = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: cannot read '%s': %s\n", path, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);

	n = scandir(path, &names, skip_dotfiles, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: cannot list '%s': %s\n", path, strerror(errno));
		return -errno;
	}
	for (i = 0; i < n; i++) {
		char child[4096];
		int r;

		if (snprintf(child, sizeof(child), "%s/%s", path, names[i]->d_name) >=
		    (int)sizeof(child)) {
			fprintf(stderr, "replay: path too long in '%s'\n", path);
			r = -ENAMETOOLONG;
		} else {
			r = run_path(child);
		}
		if (r && !ret)
			ret = r;
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	int i, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (run_path(argv[i]) && !ret)
			ret = 1;
	}
	printf("replay: %lu inputs ran\n", inputs_run);
	return ret;
}
