/*
 * expo.h - writing the Prometheus text exposition format (0.0.4), for the
 * agent's and the head's /metrics.  Appends to a strbuf; no state.
 */
#ifndef JOBSCOPE_PROM_EXPO_H
#define JOBSCOPE_PROM_EXPO_H

#include "common/strbuf.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* "# HELP name help" and "# TYPE name type" */
void prom_family(struct strbuf *o, const char *name, const char *type, const char *help);
/* A label value with \, " and newline escaped. */
void prom_label_value(struct strbuf *o, const char *v);
/* A sample value: integers without a decimal point, others to 15 digits. */
void prom_value(struct strbuf *o, double v);

#endif
