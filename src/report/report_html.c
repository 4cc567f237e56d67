/* report_html.c - being written (issue 6). */
#include "report.h"

#include <errno.h>

#include "common/log.h"

int report_html(const struct summary *s, const struct jobseries *js, const struct analysis *an,
		struct strbuf *out)
{
	(void)s, (void)js, (void)an, (void)out;
	return log_err(-ENOSYS, "HTML reports are not written yet");
}
