/*
 * rw_relabel.h - the relabelling rules of --rw-relabel (docs/remote-write.md):
 *
 *   rename:OLD=NEW     the metric OLD is sent as NEW
 *   drop:NAME          the metric NAME is not sent
 *   drop~:REGEX        no metric whose whole name matches REGEX (POSIX ERE) is sent
 *   label:NAME=VALUE   every series gets the label NAME="VALUE" (it replaces
 *                      one of ours of that name)
 *
 * Rules apply in the order given; a drop that matches ends the list.  Names
 * are checked as Prometheus does ([a-zA-Z_:][a-zA-Z0-9_:]* for metrics,
 * [a-zA-Z_][a-zA-Z0-9_]* for labels, no "__" prefix on a label); a value is
 * 1 to 255 bytes without control characters.  rw_relabel_parse takes
 * outside input (the command line) and never crashes on it: 0 or -EINVAL
 * with *why set.  Rules own their copies; rw_relabel_free releases them.
 */
#ifndef JOBSCOPE_RW_RELABEL_H
#define JOBSCOPE_RW_RELABEL_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#define RW_RELABEL_MAX 32
#define RW_NAME_MAX    128
#define RW_VALUE_MAX   256

enum rw_rule_kind { RW_RENAME, RW_DROP, RW_DROP_RE, RW_LABEL };

struct rw_rule {
	enum rw_rule_kind kind;
	char a[RW_NAME_MAX];  /* RENAME: old; DROP: name; LABEL: label name */
	char b[RW_VALUE_MAX]; /* RENAME: new; LABEL: value */
	regex_t re;	      /* DROP_RE */
	bool has_re;
};

int rw_relabel_parse(const char *text, struct rw_rule *out, const char **why);
void rw_relabel_free(struct rw_rule *r);

/*
 * The name to send metric name as after rules[0..n) (NULL: dropped); the
 * constant labels are the LABEL rules, which the caller adds.
 */
const char *rw_relabel_name(const struct rw_rule *rules, size_t n, const char *name);

#endif
