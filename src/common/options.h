/*
 * options.h - a command's options declared once, as a table (git's
 * parse-options): the same rows feed getopt_long, the Options block of
 * --help, the errors for a value that is malformed or out of range, and
 * the "name = value" lines of a --config file.  --help prints "Options:"
 * before the rows unless the table opens with an OPT_GROUP heading.
 *
 *	int64_t interval_ms = 1000;
 *	const char *db = NULL;
 *	const struct opt opts[] = {
 *		OPT_DURATION('i', "interval", &interval_ms, 100, 0, "e.g. 1s, 500ms",
 *			     "time between samples (default 1s)"),
 *		OPT_PATH(0, "db", &db, "PATH", "the store"),
 *		OPT_END(),
 *	};
 *	static const struct opt_cmd cmd = {"agent", usage_head, usage_tail, 27};
 *	int first;
 *	int ret = opt_parse(&cmd, opts, argc, argv, &first);
 *	if (ret) return ret == OPT_DONE ? 0 : ret;
 *
 * Values point into argv (or, for --config, into storage that lives as
 * long as the process).  An error is printed as "jobscope: <why>" and
 * "Try 'jobscope CMD --help'." and opt_parse returns EXIT_USAGE; -h and
 * --help print the help on stdout and return OPT_DONE.  Not thread-safe
 * (getopt's globals).
 */
#ifndef JOBSCOPE_OPTIONS_H
#define JOBSCOPE_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

enum opt_type {
	OPTION_END,
	OPTION_STRING,	 /* const char **: the value as given */
	OPTION_FLAG,	 /* bool *: true (--config: "true" or "false") */
	OPTION_DURATION, /* int64_t * ms (parse_duration_ms), from min to max (0: none) */
	OPTION_INT,	 /* int *: a whole number from min to max */
	OPTION_CHOICE,	 /* int *: the index of the value among choices */
	OPTION_CALLBACK, /* cb(opt, arg): 0, or usage_error's EXIT_USAGE */
	OPTION_CONFIG,	 /* --config FILE: its settings, then the command line's */
	OPTION_GROUP,	 /* no option: a heading in --help ("Sources (one):") */
};

/* flags */
#define OPT_NONEMPTY 0x1 /* STRING: "" is refused with "--NAME needs HINT" */
#define OPT_HIDDEN   0x2 /* not in --help (tests, benchmarks) */
#define OPT_SAY_MIN  0x4 /* DURATION: under min reads "--NAME V is below the minimum, Nms" */
#define OPT_NOARG    0x8 /* CALLBACK: takes no value (arg is NULL) */

struct opt;
typedef int (*opt_cb)(const struct opt *opt, const char *arg);

struct opt {
	enum opt_type type;
	int short_name;	       /* 0: none */
	const char *long_name; /* NULL: none */
	void *value;
	const char *argh; /* the value's name in --help ("DUR"); NULL: no value */
	const char *help; /* lines after the first are indented to the help column */
	unsigned flags;
	int64_t min, max;
	const char *hint;	    /* a bad value's "(...)": what a good one looks like */
	const char *const *choices; /* CHOICE: NULL-terminated */
	opt_cb cb;
};

#define OPT_STRING(s, l, v, a, h)                                                                  \
	{                                                                                          \
		.type = OPTION_STRING, .short_name = (s), .long_name = (l), .value = (v),          \
		.argh = (a), .help = (h)                                                           \
	}
/* a path or name that may not be empty: "--db needs a path" */
#define OPT_PATH(s, l, v, a, need, h)                                                              \
	{                                                                                          \
		.type = OPTION_STRING, .short_name = (s), .long_name = (l), .value = (v),          \
		.argh = (a), .help = (h), .flags = OPT_NONEMPTY, .hint = (need)                    \
	}
#define OPT_FLAG(s, l, v, h)                                                                       \
	{                                                                                          \
		.type = OPTION_FLAG, .short_name = (s), .long_name = (l), .value = (v),            \
		.help = (h)                                                                        \
	}
#define OPT_DURATION(s, l, v, lo, hi, why, h)                                                      \
	{                                                                                          \
		.type = OPTION_DURATION, .short_name = (s), .long_name = (l), .value = (v),        \
		.argh = "DUR", .help = (h), .min = (lo), .max = (hi), .hint = (why)                \
	}
/* under lo: "--NAME V is below the minimum, LOms" */
#define OPT_DURATION_MIN(s, l, v, lo, why, h)                                                      \
	{                                                                                          \
		.type = OPTION_DURATION, .short_name = (s), .long_name = (l), .value = (v),        \
		.argh = "DUR", .help = (h), .flags = OPT_SAY_MIN, .min = (lo), .hint = (why)       \
	}
#define OPT_HIDDEN_DURATION(l, v)                                                                  \
	{                                                                                          \
		.type = OPTION_DURATION, .long_name = (l), .value = (v), .argh = "DUR",            \
		.flags = OPT_HIDDEN                                                                \
	}
#define OPT_HIDDEN_CALLBACK(l, a, fn)                                                              \
	{                                                                                          \
		.type = OPTION_CALLBACK, .long_name = (l), .argh = (a), .flags = OPT_HIDDEN,       \
		.cb = (fn)                                                                         \
	}
/* a callback that takes no value: fn(opt, NULL) */
#define OPT_ACTION(s, l, h, fn)                                                                    \
	{                                                                                          \
		.type = OPTION_CALLBACK, .short_name = (s), .long_name = (l), .help = (h),         \
		.flags = OPT_NOARG, .cb = (fn)                                                     \
	}
#define OPT_INT(s, l, v, a, lo, hi, h)                                                             \
	{                                                                                          \
		.type = OPTION_INT, .short_name = (s), .long_name = (l), .value = (v),             \
		.argh = (a), .help = (h), .min = (lo), .max = (hi)                                 \
	}
#define OPT_CHOICE(s, l, v, a, names, h)                                                           \
	{                                                                                          \
		.type = OPTION_CHOICE, .short_name = (s), .long_name = (l), .value = (v),          \
		.argh = (a), .help = (h), .choices = (names)                                       \
	}
#define OPT_CALLBACK(s, l, v, a, h, fn)                                                            \
	{                                                                                          \
		.type = OPTION_CALLBACK, .short_name = (s), .long_name = (l), .value = (v),        \
		.argh = (a), .help = (h), .cb = (fn)                                               \
	}
#define OPT_CONFIG(l, h)                                                                           \
	{                                                                                          \
		.type = OPTION_CONFIG, .long_name = (l), .argh = "FILE", .help = (h)               \
	}
#define OPT_GROUP(h)                                                                               \
	{                                                                                          \
		.type = OPTION_GROUP, .help = (h)                                                  \
	}
#define OPT_END()                                                                                  \
	{                                                                                          \
		.type = OPTION_END                                                                 \
	}

/* The command around its options: what --help prints before and after them. */
struct opt_cmd {
	const char *name; /* "agent": "Try 'jobscope agent --help'." */
	const char *head; /* the synopsis and description, up to "Options:" */
	const char *tail; /* after the options (may be NULL) */
	int col;	  /* the help column of the Options block */
	unsigned flags;
	int max_operands; /* more is "unexpected argument"; -1: any */
};
#define OPT_STOP_AT_OPERAND 0x1 /* the first operand ends the options (run -- CMD) */

#define OPT_DONE (-1) /* opt_parse printed --help (or --list-options): the command exits 0 */

/*
 * Applies the options of argv[1..] in the order given (a --config file's
 * before all of them).  *first: the index of the first operand.  0,
 * OPT_DONE or EXIT_USAGE.  `CMD --list-options` alone prints the options a
 * shell completion offers ("--db= --json --help") and is OPT_DONE.
 */
int opt_parse(const struct opt_cmd *cmd, const struct opt *opts, int argc, char **argv, int *first);
/* Writes cmd's whole --help text to stdout. */
void opt_usage(const struct opt_cmd *cmd, const struct opt *opts);
/*
 * Prints "jobscope: <msg>" and "Try 'jobscope CMD --help'." on stderr
 * (no CMD: 'jobscope --help') and returns EXIT_USAGE.
 */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The command an OPTION_CALLBACK is parsing for (its errors name it). */
const char *opt_command(void);

#endif
