/*
 * report.h - render a run summary as text for people or JSON for programs.
 *
 * Both append to a strbuf the caller owns and return 0 or -errno (-E2BIG
 * past the buffer's cap).  The JSON schema is documented in
 * docs/report-json.md and versioned by its "schema" field; missing values
 * are null, never 0.
 */
#ifndef JOBSCOPE_REPORT_H
#define JOBSCOPE_REPORT_H

#include <stdbool.h>

#include "common/strbuf.h"
#include "summary.h"

#define REPORT_JSON_SCHEMA 1

struct report_options {
	bool utf8;	  /* sparklines with block characters, else ASCII */
	size_t max_procs; /* text: rows in the process table (0: 10) */
};

int report_text(const struct summary *s, const struct report_options *opt, struct strbuf *out);
int report_json(const struct summary *s, struct strbuf *out);

#endif
