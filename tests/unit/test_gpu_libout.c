/*
 * test_gpu_libout.c - catching a GPU library's own output (libout.h):
 * libout_clean()'s one line from any bytes, and a real capture of fds 1
 * and 2 (stdio's buffered stdout, raw write(2) on stderr) that leaves the
 * process's own descriptors as they were.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sample/gpu/libout.h"

static const char rocm_said[] =
    "Failed to open drm root directory /sys/class/drm.: No such file or directory\n"
    "Exception caught: rsmi_init.\n";

static void clean_is(const char *raw, bool cut, size_t size, const char *expect)
{
	char out[512];
	size_t n;

	assert_true(size <= sizeof(out));
	n = libout_clean(raw, strlen(raw), cut, out, size);
	assert_string_equal(out, expect);
	assert_int_equal(n, strlen(expect));
}

static void test_clean_lines(void **state)
{
	(void)state;
	clean_is(rocm_said, false, 512,
		 "Failed to open drm root directory /sys/class/drm.: No such file or directory | "
		 "Exception caught: rsmi_init.");
	clean_is("", false, 512, "");
	clean_is("\n\n  \t\r\n", false, 512, "");
	clean_is("  one  \r\n\n\ttwo\t\n", false, 512, "one | two");
	clean_is("no newline at the end", false, 512, "no newline at the end");
	clean_is("a\tb\x01"
		 "c\xc3\xa9"
		 "d\x7f",
		 false, 512, "a b?c??d?");
	clean_is("one\n", true, 512, "one...");
}

static void test_clean_cut(void **state)
{
	char out[8];

	(void)state;
	/* 16 bytes: 15 of text, or 12 of text and "..." when it does not all fit */
	clean_is("0123456789abcdefghij\n", false, 16, "0123456789ab...");
	clean_is("0123456789\nabc\n", false, 16, "0123456789...");
	clean_is("0123456789\nab\n", false, 16, "0123456789 | ab");
	clean_is("012345678901\n", false, 16, "012345678901");
	clean_is("0123456789012\n", false, 16, "0123456789012");
	clean_is("0123456789012345\n", false, 16, "012345678901...");
	clean_is("abc", false, 4, "abc");
	clean_is("abcd", false, 4, "...");
	clean_is("abcd", false, 3, ""); /* no room even for "..." */
	memset(out, 'X', sizeof(out));
	assert_int_equal(libout_clean("abc", 3, false, out, 0), 0);
	assert_int_equal(out[0], 'X'); /* size 0: nothing written */
	assert_int_equal(libout_clean("abc", 3, false, out, 1), 0);
	assert_string_equal(out, "");
}

/* The descriptor's identity, to check it is the same file after the capture. */
static void fd_id(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	*dev = st.st_dev;
	*ino = st.st_ino;
}

static void test_capture(void **state)
{
	dev_t dev1, dev2, dev1_after, dev2_after;
	ino_t ino1, ino2, ino1_after, ino2_after;
	char text[256];
	struct libout cap;
	int fds_before = 0, fds_after = 0;

	(void)state;
	for (int fd = 0; fd < 64; fd++)
		fds_before += fcntl(fd, F_GETFD) >= 0;
	fd_id(STDOUT_FILENO, &dev1, &ino1);
	fd_id(STDERR_FILENO, &dev2, &ino2);
	fputs("buffered before: ", stdout); /* ours: flushed out before the capture */
	libout_begin(&cap);
	assert_true(cap.fd >= 0);
	printf("from stdout, buffered");
	assert_int_equal(write(STDERR_FILENO, "from stderr\n", 12), 12);
	fputs("more on stderr\n", stderr);
	libout_end(&cap, text, sizeof(text));
	assert_string_equal(text, "from stderr | more on stderr | from stdout, buffered");
	fd_id(STDOUT_FILENO, &dev1_after, &ino1_after);
	fd_id(STDERR_FILENO, &dev2_after, &ino2_after);
	assert_true(dev1 == dev1_after && ino1 == ino1_after);
	assert_true(dev2 == dev2_after && ino2 == ino2_after);
	for (int fd = 0; fd < 64; fd++)
		fds_after += fcntl(fd, F_GETFD) >= 0;
	assert_int_equal(fds_after, fds_before); /* nothing left open */
	printf("\n");

	/* nothing written: "" */
	libout_begin(&cap);
	libout_end(&cap, text, sizeof(text));
	assert_string_equal(text, "");
}

/* More than is read back: the start, cut with "...". */
static void test_capture_long(void **state)
{
	char text[64], line[100];
	struct libout cap;

	(void)state;
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	libout_begin(&cap);
	for (int i = 0; i < 2 * LIBOUT_READ_MAX / (int)sizeof(line); i++)
		assert_int_equal(write(STDERR_FILENO, line, sizeof(line)), (ssize_t)sizeof(line));
	libout_end(&cap, text, sizeof(text));
	assert_int_equal(strlen(text), sizeof(text) - 1);
	assert_memory_equal(text, "xxxxxxxx", 8);
	assert_string_equal(text + sizeof(text) - 4, "...");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_lines),
	    cmocka_unit_test(test_clean_cut),
	    cmocka_unit_test(test_capture),
	    cmocka_unit_test(test_capture_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
