/*
 * fixture.h - reading fixture files in the cmocka tests.  Include after
 * <cmocka.h>.  fixture_load() gives the file's bytes in a malloc'd buffer
 * of exactly its size, with no NUL after them, so that a parser reading past
 * its length is caught by ASan.  The caller frees.  fixture_rm_tree()
 * removes a test's temporary directory and everything in it.
 */
#ifndef JOBSCOPE_TEST_FIXTURE_H
#define JOBSCOPE_TEST_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static inline char *fixture_load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open fixture '%s'", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc(n > 0 ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static inline int fixture__rm_entry(const char *path, const struct stat *sb, int type,
				    struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Removes dir and everything under it (symbolic links not followed): 0 or -1. */
static inline int fixture_rm_tree(const char *dir)
{
	return nftw(dir, fixture__rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
