/*
 * rw_relabel.c - parsing and applying --rw-relabel rules (rw_relabel.h).
 */
#include "prom/rw_relabel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool name_ok(const char *s, size_t len, bool metric)
{
	if (len == 0 || len >= RW_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			     (metric && c == ':');

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return metric || len < 2 || s[0] != '_' || s[1] != '_';
}

static bool value_ok(const char *s, size_t len)
{
	if (len == 0 || len >= RW_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* "A=B" after the prefix into a and b. */
static int split_pair(const char *s, struct rw_rule *r, bool metric_b, const char **why)
{
	const char *eq = strchr(s, '=');
	size_t la, lb;

	if (!eq) {
		*why = "expected NAME=VALUE";
		return -EINVAL;
	}
	la = (size_t)(eq - s);
	lb = strlen(eq + 1);
	if (!name_ok(s, la, r->kind == RW_RENAME)) {
		*why = "not a valid name before '='";
		return -EINVAL;
	}
	if (metric_b ? !name_ok(eq + 1, lb, true) : !value_ok(eq + 1, lb)) {
		*why = metric_b ? "not a valid metric name after '='"
				: "a value must be 1-255 bytes without control characters";
		return -EINVAL;
	}
	memcpy(r->a, s, la);
	r->a[la] = '\0';
	memcpy(r->b, eq + 1, lb);
	r->b[lb] = '\0';
	return 0;
}


/*
 * Whether a repetition operator follows another ("a++", "a+*", "a{2}+"),
 * escapes skipped; one '?' after an operator is RE2's non-greedy mark
 * ("a+?"), which Prometheus takes.
 */
static bool stacked_repeats(const char *re)
{
	bool after_repeat = false, lazy = false;

	for (const char *p = re; *p; p++) {
		bool repeat = *p == '*' || *p == '+' || *p == '?' || *p == '{';

		if (*p == '\\' && p[1]) {
			p++;
			after_repeat = lazy = false;
			continue;
		}
		if (*p == '?' && after_repeat && !lazy) {
			lazy = true;
			continue;
		}
		if (repeat && after_repeat)
			return true;
		lazy = false;
		if (*p == '{') {
			const char *close = strchr(p, '}');

			if (close)
				p = close;
		}
		after_repeat = repeat;
	}
	return false;
}

int rw_relabel_parse(const char *text, struct rw_rule *out, const char **why)
{
	char pattern[RW_VALUE_MAX + 8];

	memset(out, 0, sizeof(*out));
	*why = "";
	if (strncmp(text, "rename:", 7) == 0) {
		out->kind = RW_RENAME;
		return split_pair(text + 7, out, true, why);
	}
	if (strncmp(text, "label:", 6) == 0) {
		out->kind = RW_LABEL;
		return split_pair(text + 6, out, false, why);
	}
	if (strncmp(text, "drop:", 5) == 0) {
		out->kind = RW_DROP;
		if (!name_ok(text + 5, strlen(text + 5), true)) {
			*why = "not a valid metric name";
			return -EINVAL;
		}
		snprintf(out->a, sizeof(out->a), "%s", text + 5);
		return 0;
	}
	if (strncmp(text, "drop~:", 6) == 0) {
		size_t len = strlen(text + 6);

		out->kind = RW_DROP_RE;
		if (len == 0 || len >= RW_VALUE_MAX) {
			*why = "a regex of 1-255 bytes";
			return -EINVAL;
		}
		/*
		 * Stacked repetition operators ("a++", "a*{2}") are an error in
		 * Prometheus' RE2 syntax, and glibc's regcomp copies its tree for
		 * each one: a short pattern of them takes gigabytes (fuzz_rw_relabel).
		 */
		if (stacked_repeats(text + 6)) {
			*why = "a regex without stacked repetition operators (a++, a*{2})";
			return -EINVAL;
		}
		/* the whole name, as Prometheus anchors its relabel regexes */
		snprintf(pattern, sizeof(pattern), "^(%s)$", text + 6);
		if (regcomp(&out->re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
			*why = "not a valid POSIX extended regex";
			return -EINVAL;
		}
		out->has_re = true;
		return 0;
	}
	*why = "a rule starts with rename:, drop:, drop~: or label:";
	return -EINVAL;
}

void rw_relabel_free(struct rw_rule *r)
{
	if (r->has_re)
		regfree(&r->re);
	r->has_re = false;
}

const char *rw_relabel_name(const struct rw_rule *rules, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const struct rw_rule *r = &rules[i];

		switch (r->kind) {
		case RW_RENAME:
			if (strcmp(name, r->a) == 0)
				name = r->b;
			break;
		case RW_DROP:
			if (strcmp(name, r->a) == 0)
				return NULL;
			break;
		case RW_DROP_RE:
			if (regexec(&r->re, name, 0, NULL, 0) == 0)
				return NULL;
			break;
		case RW_LABEL:
			break;
		}
	}
	return name;
}
