/*
 * test_options.c - option tables (common/options.h): each type's value and
 * its errors (malformed, out of range, below a minimum said as such), the
 * order the command line and a --config file apply in, operands, and the
 * --help block laid out from the rows.  Messages go to stderr; stdout is
 * captured into a file for the help text.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/exitcode.h"
#include "common/fmt.h"
#include "common/options.h"

struct vals {
	const char *name, *path;
	bool flag;
	int64_t every_ms;
	int count, format, calls;
	const char *seen;
};

static int record(const struct opt *opt, const char *arg)
{
	struct vals *v = opt->value;

	v->calls++;
	v->seen = arg;
	return strcmp(arg, "refuse") == 0 ? usage_error(opt_command(), "refused") : 0;
}

static const char *const formats[] = {"text", "json", "none", NULL};

#define TABLE(v)                                                                                   \
	const struct opt opts[] = {                                                                \
	    OPT_STRING('n', "name", &(v).name, "NAME", "a name"),                                  \
	    OPT_PATH(0, "db", &(v).path, "PATH", "a path", "the store"),                           \
	    OPT_FLAG(0, "flag", &(v).flag, "a flag"),                                              \
	    OPT_DURATION_MIN('i', "interval", &(v).every_ms, 50, "e.g. 1s", "time between"),       \
	    OPT_INT(0, "count", &(v).count, "N", 1, 16, "how many"),                               \
	    OPT_CHOICE('f', "format", &(v).format, "FORMAT", formats, "text, json or none"),       \
	    OPT_CALLBACK(0, "call", &(v), "X", "a callback", record),                              \
	    OPT_HIDDEN_DURATION("secret", &(v).every_ms),                                          \
	    OPT_END(),                                                                             \
	}

static const struct opt_cmd cmd = {"t", "usage: jobscope t [OPTIONS] [ARG]\n\n", "\nTail.\n", 20, 0,
				   1};

/* Parses a NULL-terminated argv (argv[0] "t") against the table. */
static int parse(struct vals *v, int *first, ...)
{
	char *argv[32] = {"t"};
	int argc = 1;
	va_list ap;
	TABLE(*v);

	va_start(ap, first);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	return opt_parse(&cmd, opts, argc, argv, first);
}

static void test_values(void **state)
{
	struct vals v = {0};
	int first;

	(void)state;
	assert_int_equal(parse(&v, &first, "-n", "x", "--db", "s.db", "--flag", "-i", "2s",
			       "--count=16", "-f", "json", "--call", "ok", "--secret", "100ms",
			       "arg", NULL),
			 0);
	assert_string_equal(v.name, "x");
	assert_string_equal(v.path, "s.db");
	assert_true(v.flag);
	assert_int_equal(v.every_ms, 100); /* --secret came last */
	assert_int_equal(v.count, 16);
	assert_int_equal(v.format, 1);
	assert_int_equal(v.calls, 1);
	assert_string_equal(v.seen, "ok");
	assert_int_equal(first, 15);
}

static void test_errors(void **state)
{
	struct vals v = {0};
	int first;

	(void)state;
	assert_int_equal(parse(&v, &first, "--db", "", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "-i", "fast", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "-i", "10ms", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "-i", "50ms", NULL), 0);
	assert_int_equal(v.every_ms, 50);
	assert_int_equal(parse(&v, &first, "--count", "0", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "--count", "17", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "--count", "3x", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "--count", "", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "-f", "xml", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "--call", "refuse", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "--bogus", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "--name", NULL), EXIT_USAGE);
	assert_int_equal(parse(&v, &first, "a", "b", NULL), EXIT_USAGE); /* one operand at most */
	assert_int_equal(parse(&v, &first, "a", NULL), 0);
	assert_int_equal(first, 1);
}

/* Runs fn with stdout in a file; returns what it printed (malloc'd). */
static char *captured(int (*fn)(void))
{
	char path[] = "/tmp/test_options.XXXXXX";
	int fd = mkstemp(path), saved;
	char *text = calloc(1, 8192);
	FILE *f;

	assert_true(fd >= 0 && text);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fd, STDOUT_FILENO);
	assert_int_equal(fn(), OPT_DONE);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(text, 1, 8191, f) > 0);
	text[8191] = '\0';
	fclose(f);
	close(fd);
	unlink(path);
	return text;
}

static int ask_help(void)
{
	struct vals v = {0};
	int first;

	return parse(&v, &first, "-i", "bad", "--help", NULL); /* help wins over what follows */
}

static void test_help(void **state)
{
	char *text;

	(void)state;
	text = captured(ask_help);
	assert_string_equal(text, "usage: jobscope t [OPTIONS] [ARG]\n"
				  "\n"
				  "Options:\n"
				  "  -n, --name NAME   a name\n"
				  "      --db PATH     the store\n"
				  "      --flag        a flag\n"
				  "  -i, --interval DUR\n"
				  "                    time between\n"
				  "      --count N     how many\n"
				  "  -f, --format FORMAT\n"
				  "                    text, json or none\n"
				  "      --call X      a callback\n"
				  "  -h, --help        show this help\n"
				  "\n"
				  "Tail.\n");
	free(text);
}

static void test_config(void **state)
{
	char path[] = "/tmp/test_options_cfg.XXXXXX";
	int fd = mkstemp(path);
	const char *name = NULL;
	bool flag = false;
	int64_t every_ms = 0;
	const struct opt opts[] = {
	    OPT_STRING(0, "name", &name, "NAME", "a name"),
	    OPT_FLAG(0, "flag", &flag, "a flag"),
	    OPT_DURATION(0, "every", &every_ms, 0, 0, NULL, "time"),
	    OPT_CONFIG("config", "a file"),
	    OPT_END(),
	};
	static const struct opt_cmd ccmd = {"c", "usage\n", NULL, 20, 0, 0};
	const char text[] = "# a comment\n  name = from-file  \nflag = true\nevery=5s\n";
	char arg[64];
	char *argv[] = {"c", "--every", "1s", "--config", arg, NULL};
	int first;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	snprintf(arg, sizeof(arg), "%s", path);
	/* the file first, the command line after it: --every 1s wins */
	assert_int_equal(opt_parse(&ccmd, opts, 5, argv, &first), 0);
	assert_string_equal(name, "from-file");
	assert_true(flag);
	assert_int_equal(every_ms, 1000);
	/* an unknown setting, and a flag that is neither true nor false */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "nosuch = 1\n", 11), 11);
	close(fd);
	assert_int_equal(opt_parse(&ccmd, opts, 5, argv, &first), EXIT_USAGE);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "flag = yes\n", 11), 11);
	close(fd);
	assert_int_equal(opt_parse(&ccmd, opts, 5, argv, &first), EXIT_USAGE);
	unlink(path);
	snprintf(arg, sizeof(arg), "/nonexistent/cfg");
	assert_int_equal(opt_parse(&ccmd, opts, 5, argv, &first), EXIT_USAGE);
}

static void test_sizes(void **state)
{
	uint64_t b;

	(void)state;
	assert_int_equal(parse_size_bytes("4096", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(parse_size_bytes("500M", &b), 0);
	assert_int_equal(b, 500ULL << 20);
	assert_int_equal(parse_size_bytes("1.5GiB", &b), 0);
	assert_int_equal(b, 3ULL << 29);
	assert_int_equal(parse_size_bytes("2t", &b), 0);
	assert_int_equal(b, 2ULL << 40);
	assert_int_equal(parse_size_bytes("20GB", &b), 0);
	assert_int_equal(b, 20ULL << 30);
	assert_int_equal(parse_size_bytes("0", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(parse_size_bytes("", &b), -EINVAL);
	assert_int_equal(parse_size_bytes("-1M", &b), -EINVAL);
	assert_int_equal(parse_size_bytes("5X", &b), -EINVAL);
	assert_int_equal(parse_size_bytes("5MiBB", &b), -EINVAL);
	assert_int_equal(parse_size_bytes("nan", &b), -EINVAL);
	assert_int_equal(parse_size_bytes("1e30", &b), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values), cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_help),   cmocka_unit_test(test_config),
	    cmocka_unit_test(test_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
