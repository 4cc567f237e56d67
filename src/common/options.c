/*
 * options.c - option tables (options.h): getopt_long's arrays built from
 * the rows, each value converted and checked by its type, the Options
 * block of --help laid out from the same rows, and --config files.
 */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "timeutil.h"

#define OPT_MAX	      64    /* rows in one table */
#define OPT_LONG_BASE 0x100 /* getopt's value for row i: OPT_LONG_BASE + i */
#define OPT_HELP_VAL  (OPT_LONG_BASE + OPT_MAX)
#define CONFIG_ARENA  16384 /* a --config file's values live here */

static const char *current_cmd;

const char *opt_command(void)
{
	return current_cmd;
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("jobscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'jobscope %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

/* "--name" or "-c", as the user typed it. */
static const char *opt_name(const struct opt *o, char *buf, size_t size)
{
	if (o->long_name)
		snprintf(buf, size, "--%s", o->long_name);
	else
		snprintf(buf, size, "-%c", o->short_name);
	return buf;
}

static int bad_value(const struct opt_cmd *cmd, const struct opt *o, const char *arg,
		     const char *why)
{
	char name[64];

	opt_name(o, name, sizeof(name));
	if (!why)
		return usage_error(cmd->name, "bad %s '%s'", name, arg);
	return usage_error(cmd->name, "bad %s '%s' (%s)", name, arg, why);
}

static int apply(const struct opt_cmd *cmd, const struct opt *o, const char *arg)
{
	char name[64], hint[256];
	long long n;
	int64_t ms;
	char *end;
	size_t len;

	switch (o->type) {
	case OPTION_STRING:
		if ((o->flags & OPT_NONEMPTY) && !arg[0])
			return usage_error(cmd->name, "%s needs %s",
					   opt_name(o, name, sizeof(name)), o->hint);
		*(const char **)o->value = arg;
		return 0;
	case OPTION_FLAG:
		*(bool *)o->value = true;
		return 0;
	case OPTION_DURATION:
		if (parse_duration_ms(arg, &ms) || (o->max && ms > o->max))
			return bad_value(cmd, o, arg, o->hint);
		if (ms < o->min && (o->flags & OPT_SAY_MIN))
			return usage_error(cmd->name, "%s %s is below the minimum, %lldms",
					   opt_name(o, name, sizeof(name)), arg, (long long)o->min);
		if (ms < o->min)
			return bad_value(cmd, o, arg, o->hint);
		*(int64_t *)o->value = ms;
		return 0;
	case OPTION_INT:
		errno = 0;
		n = strtoll(arg, &end, 10);
		if (!*arg || *end || errno || n < o->min || n > o->max) {
			if (o->hint)
				return bad_value(cmd, o, arg, o->hint);
			snprintf(hint, sizeof(hint), "a number, %lld to %lld", (long long)o->min,
				 (long long)o->max);
			return bad_value(cmd, o, arg, hint);
		}
		*(int *)o->value = (int)n;
		return 0;
	case OPTION_CHOICE:
		for (int i = 0; o->choices[i]; i++)
			if (strcmp(o->choices[i], arg) == 0) {
				*(int *)o->value = i;
				return 0;
			}
		/* "text, json or none" */
		len = 0;
		hint[0] = '\0';
		for (int i = 0; o->choices[i] && len < sizeof(hint); i++)
			len += (size_t)snprintf(hint + len, sizeof(hint) - len, "%s%s",
						i == 0		    ? ""
						: o->choices[i + 1] ? ", "
								    : " or ",
						o->choices[i]);
		return bad_value(cmd, o, arg, hint);
	case OPTION_CALLBACK:
		return o->cb(o, arg);
	case OPTION_CONFIG:
	case OPTION_GROUP:
	case OPTION_END:
		break;
	}
	return 0;
}

/* --config FILE: "name = value" lines ('#' comments), names as the long options. */
static int read_config(const struct opt_cmd *cmd, const struct opt *opts, const char *path)
{
	static char arena[CONFIG_ARENA]; /* the values the options point at, for good */
	static size_t used;
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0, ret = 0;

	if (!f)
		return usage_error(cmd->name, "cannot read --config '%s': %s", path,
				   strerror(errno));
	while (!ret && fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *e;
		const struct opt *o;

		lineno++;
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || *k == '\n' || *k == '\0')
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			ret =
			    usage_error(cmd->name, "%s:%d: expected 'name = value'", path, lineno);
			break;
		}
		for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v + strlen(v);
		     e > v && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r');
		     e--)
			;
		*e = '\0';
		for (o = opts; o->type != OPTION_END; o++)
			if (o->long_name && strcmp(o->long_name, k) == 0 &&
			    o->type != OPTION_CONFIG && !(o->flags & OPT_NOARG))
				break;
		if (o->type == OPTION_END) {
			ret =
			    usage_error(cmd->name, "%s:%d: unknown setting '%s'", path, lineno, k);
		} else if (o->type == OPTION_FLAG) {
			/* a flag: "cuda-always = true" */
			if (strcmp(v, "true") && strcmp(v, "false"))
				ret = usage_error(cmd->name, "%s:%d: %s = true or false", path,
						  lineno, k);
			else if (strcmp(v, "true") == 0)
				ret = apply(cmd, o, v);
		} else if (used + strlen(v) + 1 > sizeof(arena)) {
			ret = usage_error(cmd->name, "%s: too long", path);
		} else {
			memcpy(arena + used, v, strlen(v) + 1);
			ret = apply(cmd, o, arena + used);
			used += strlen(v) + 1;
		}
	}
	fclose(f);
	return ret;
}

/* One help row: "  -i, --interval DUR" and the help from the column on. */
static void print_row(FILE *out, const struct opt *o, int col)
{
	char left[160];
	int n;

	if (o->short_name && o->long_name)
		n = snprintf(left, sizeof(left), "  -%c, --%s", o->short_name, o->long_name);
	else if (o->short_name)
		n = snprintf(left, sizeof(left), "  -%c", o->short_name);
	else
		n = snprintf(left, sizeof(left), "      --%s", o->long_name);
	if (o->argh)
		n += snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->argh);
	fputs(left, out);
	if (n + 2 > col) {
		fputc('\n', out);
		n = 0;
	}
	for (const char *line = o->help; line; n = 0) {
		const char *nl = strchr(line, '\n');

		fprintf(out, "%*s%.*s\n", col - n, "", nl ? (int)(nl - line) : (int)strlen(line),
			line);
		line = nl ? nl + 1 : NULL;
	}
}

void opt_usage(const struct opt_cmd *cmd, const struct opt *opts)
{
	static const struct opt help = {
	    .short_name = 'h', .long_name = "help", .help = "show this help"};

	fputs(cmd->head, stdout);
	if (opts->type != OPTION_GROUP)
		fputs("Options:\n", stdout);
	for (const struct opt *o = opts; o->type != OPTION_END; o++)
		if (o->type == OPTION_GROUP)
			printf("%s%s\n", o == opts ? "" : "\n", o->help);
		else if (!(o->flags & OPT_HIDDEN))
			print_row(stdout, o, cmd->col);
	print_row(stdout, &help, cmd->col);
	if (cmd->tail)
		fputs(cmd->tail, stdout);
}

/* getopt_long's arrays for the table, with -h/--help after its rows. */
static int build(const struct opt_cmd *cmd, const struct opt *opts, struct option *longopts,
		 char *shortopts, size_t shortsize)
{
	size_t s = 0, l = 0;

	if (cmd->flags & OPT_STOP_AT_OPERAND)
		shortopts[s++] = '+';
	shortopts[s++] = ':';
	for (const struct opt *o = opts; o->type != OPTION_END; o++, l++) {
		int has_arg;

		if (l >= OPT_MAX - 1 || s + 4 >= shortsize)
			return usage_error(cmd->name, "too many options");
		if (o->type == OPTION_GROUP) { /* a row getopt cannot match */
			longopts[l] = (struct option){"\001", no_argument, NULL, 0};
			continue;
		}
		has_arg = o->type == OPTION_FLAG || (o->flags & OPT_NOARG) ? no_argument
									   : required_argument;
		longopts[l] = (struct option){o->long_name ? o->long_name : "", has_arg, NULL,
					      OPT_LONG_BASE + (int)l};
		if (!o->long_name) /* no long form: a name getopt cannot match */
			longopts[l].name = "\001";
		if (o->short_name) {
			shortopts[s++] = (char)o->short_name;
			if (has_arg == required_argument)
				shortopts[s++] = ':';
		}
	}
	longopts[l++] = (struct option){"help", no_argument, NULL, OPT_HELP_VAL};
	longopts[l] = (struct option){NULL, 0, NULL, 0};
	shortopts[s++] = 'h';
	shortopts[s] = '\0';
	return 0;
}

static const struct opt *find(const struct opt *opts, int c)
{
	if (c >= OPT_LONG_BASE && c < OPT_HELP_VAL)
		return &opts[c - OPT_LONG_BASE];
	for (const struct opt *o = opts; o->type != OPTION_END; o++)
		if (o->short_name && o->short_name == c)
			return o;
	return NULL;
}

/*
 * `jobscope CMD --list-options`: every option a user may type, one line,
 * "--name=" for those that take a value (git's --git-completion-helper),
 * for the shell completions (deploy/completion/).
 */
static void list_options(const struct opt *opts)
{
	for (const struct opt *o = opts; o->type != OPTION_END; o++)
		if (o->type != OPTION_GROUP && !(o->flags & OPT_HIDDEN) && o->long_name)
			printf("--%s%s ", o->long_name,
			       o->type == OPTION_FLAG || (o->flags & OPT_NOARG) ? "" : "=");
	printf("--help\n");
}

int opt_parse(const struct opt_cmd *cmd, const struct opt *opts, int argc, char **argv, int *first)
{
	struct option longopts[OPT_MAX + 1];
	char shortopts[3 * OPT_MAX + 4];
	int c, ret;

	current_cmd = cmd->name;
	if (argc == 2 && strcmp(argv[1], "--list-options") == 0) {
		list_options(opts);
		return OPT_DONE;
	}
	ret = build(cmd, opts, longopts, shortopts, sizeof(shortopts));
	if (ret)
		return ret;
	opterr = 0;
	/* a first pass answers --help wherever it is (before any value is
	 * judged) and reads --config files, so that the command line's options,
	 * applied in the second, win */
	for (int pass = 0; pass < 2; pass++) {
		optind = 0; /* glibc: start afresh, permutation state included */
		while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
			const struct opt *o = find(opts, c);

			if (c == OPT_HELP_VAL || c == 'h') {
				opt_usage(cmd, opts);
				return OPT_DONE;
			}
			if (c == ':')
				return usage_error(cmd->name, "option '%s' needs a value",
						   argv[optind - 1]);
			if (!o)
				return usage_error(cmd->name, "unknown option '%s'",
						   argv[optind - 1]);
			if (o->type == OPTION_CONFIG) {
				ret = pass == 0 ? read_config(cmd, opts, optarg) : 0;
			} else if (pass == 1) {
				ret = apply(cmd, o, optarg);
			}
			if (ret)
				return ret;
		}
	}
	if (cmd->max_operands >= 0 && argc - optind > cmd->max_operands)
		return usage_error(cmd->name, "unexpected argument '%s'",
				   argv[optind + cmd->max_operands]);
	*first = optind;
	return 0;
}
