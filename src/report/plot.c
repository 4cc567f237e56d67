/* plot.c - being written (issue 6). */
#include "report.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"

bool plot_format_known(const char *path)
{
	(void)path;
	return false;
}

int plot_write(const char *path, const struct summary *s, const struct jobseries *js,
	       const struct analysis *an)
{
	(void)s, (void)js, (void)an;
	return log_err(-ENOSYS, "cannot plot '%s' yet", path);
}
