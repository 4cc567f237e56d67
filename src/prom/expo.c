/*
 * expo.c - the Prometheus text format's pieces (see expo.h).
 */
#include "prom/expo.h"

#include <math.h>

void prom_family(struct strbuf *o, const char *name, const char *type, const char *help)
{
	strbuf_addf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_label_value(struct strbuf *o, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			strbuf_add(o, "\\\\", 2);
		else if (*v == '"')
			strbuf_add(o, "\\\"", 2);
		else if (*v == '\n')
			strbuf_add(o, "\\n", 2);
		else
			strbuf_addch(o, *v);
	}
}

void prom_value(struct strbuf *o, double v)
{
	if (v == floor(v) && fabs(v) < 9.0e15)
		strbuf_addf(o, "%.0f", v);
	else
		strbuf_addf(o, "%.15g", v);
}
