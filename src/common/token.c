/* token.c - bearer tokens read from files (token.h). */
#include "common/token.h"

#include <errno.h>
#include <stdio.h>

#include "common/log.h"

int token_load(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return n == 0 ? -EINVAL : 0;
}

int token_read_file(const char *path, char *buf, size_t size)
{
	int ret = token_load(path, buf, size);

	if (ret == -EINVAL)
		return log_err(ret, "the token file '%s' is empty", path);
	if (ret)
		return log_err(ret, "cannot read the token file '%s'", path);
	return 0;
}
