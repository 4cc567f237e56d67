/*
 * prommatrix.c - Prometheus' range query answers, parsed (prom_matrix_parse:
 * no I/O, every length and number checked), and the libcurl transport that
 * asks for them (prom/promsrc.h).
 */
#include "prom/promsrc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/log.h"
#include "http/curl_dl.h"
/* ---- the answer ---------------------------------------------------------------------- */

#define LABEL_MAX 1024
/* Sample times Prometheus can hold and jobscope accepts (see JOB_REPORT_MAX_MS). */
#define TS_MAX_S ((double)JOB_REPORT_MAX_MS / 1000.0)

static int fail(char *err, size_t size, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t size, int ret, const char *fmt, ...)
{
	va_list ap;

	if (size) {
		va_start(ap, fmt);
		vsnprintf(err, size, fmt, ap);
		va_end(ap);
	}
	return ret;
}

void prom_matrix_release(struct prom_matrix *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct prom_series *s = &m->series[i];

		for (size_t k = 0; k < s->nlabels; k++) {
			free(s->labels[k].name);
			free(s->labels[k].value);
		}
		free(s->labels);
		free(s->ts_ms);
		free(s->v);
	}
	free(m->series);
	m->series = NULL;
	m->n = 0;
}

const char *prom_series_label(const struct prom_series *s, const char *name)
{
	for (size_t k = 0; k < s->nlabels; k++)
		if (strcmp(s->labels[k].name, name) == 0)
			return s->labels[k].value;
	return NULL;
}

/* A copy of a label's text, without control characters (they reach a terminal). */
static char *label_dup(const char *s)
{
	size_t n = strnlen(s, LABEL_MAX + 1);
	char *d;

	if (n > LABEL_MAX)
		return NULL;
	d = malloc(n + 1);
	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++)
		d[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	d[n] = '\0';
	return d;
}

static int parse_labels(const cJSON *metric, struct prom_series *s, char *err, size_t errsize)
{
	const cJSON *l;
	size_t n = 0;

	if (!cJSON_IsObject(metric))
		return fail(err, errsize, -EPROTO, "a series without its \"metric\" labels");
	cJSON_ArrayForEach(l, metric) n++;
	if (n > PROMSRC_MAX_LABELS)
		return fail(err, errsize, -EPROTO, "a series with %zu labels (at most %d)", n,
			    PROMSRC_MAX_LABELS);
	s->labels = calloc(n ? n : 1, sizeof(*s->labels));
	if (!s->labels)
		return fail(err, errsize, -ENOMEM, "out of memory");
	cJSON_ArrayForEach(l, metric)
	{
		struct prom_label *d = &s->labels[s->nlabels];

		if (!cJSON_IsString(l) || !l->string || !l->valuestring)
			return fail(err, errsize, -EPROTO, "a label that is not a string");
		d->name = label_dup(l->string);
		d->value = label_dup(l->valuestring);
		s->nlabels++;
		if (!d->name || !d->value)
			return fail(err, errsize, -EPROTO, "a label longer than %d bytes",
				    LABEL_MAX);
	}
	return 0;
}

/* One [ts, "value"] pair; the value NAN when Prometheus says NaN or an infinity. */
static int parse_point(const cJSON *p, int64_t *ts_ms, double *v)
{
	const cJSON *t = cJSON_GetArrayItem(p, 0), *x = cJSON_GetArrayItem(p, 1);
	char *end;

	if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(t) ||
	    !cJSON_IsString(x) || !x->valuestring)
		return -EPROTO;
	if (!(t->valuedouble >= 0 && t->valuedouble <= TS_MAX_S))
		return -EPROTO;
	*ts_ms = (int64_t)llround(t->valuedouble * 1000.0);
	errno = 0;
	*v = strtod(x->valuestring, &end);
	if (end == x->valuestring || *end)
		return -EPROTO;
	if (!isfinite(*v))
		*v = NAN;
	return 0;
}

static int parse_values(const cJSON *values, struct prom_series *s, char *err, size_t errsize)
{
	const cJSON *p;
	int n;

	if (!cJSON_IsArray(values))
		return fail(err, errsize, -EPROTO, "a series without its \"values\"");
	n = cJSON_GetArraySize(values);
	if (n > PROMSRC_MAX_POINTS)
		return fail(err, errsize, -EPROTO, "a series of %d points (at most %d)", n,
			    PROMSRC_MAX_POINTS);
	s->ts_ms = malloc((size_t)(n ? n : 1) * sizeof(*s->ts_ms));
	s->v = malloc((size_t)(n ? n : 1) * sizeof(*s->v));
	if (!s->ts_ms || !s->v)
		return fail(err, errsize, -ENOMEM, "out of memory");
	cJSON_ArrayForEach(p, values)
	{
		if (parse_point(p, &s->ts_ms[s->n], &s->v[s->n]))
			return fail(err, errsize, -EPROTO,
				    "a point that is not [seconds, \"value\"] in range");
		if (s->n && s->ts_ms[s->n] <= s->ts_ms[s->n - 1])
			return fail(err, errsize, -EPROTO, "points out of time order");
		s->n++;
	}
	return 0;
}

/* Prometheus' own error text, control characters replaced. */
static int remote_error(const cJSON *doc, char *err, size_t errsize)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(doc, "errorType");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(doc, "error");
	char *m = cJSON_IsString(msg) && msg->valuestring ? label_dup(msg->valuestring) : NULL;

	fail(err, errsize, 0, "%s: %s",
	     cJSON_IsString(type) && type->valuestring && strlen(type->valuestring) < 64
		 ? type->valuestring
		 : "error",
	     m ? m : "(no message)");
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	free(m);
	return -EREMOTEIO;
}

int prom_matrix_parse(const char *body, size_t len, struct prom_matrix *m, char *err,
		      size_t errsize)
{
	const cJSON *status, *data, *type, *result, *item;
	cJSON *doc;
	int n, ret = 0;

	m->series = NULL;
	m->n = 0;
	if (errsize)
		err[0] = '\0';
	doc = body ? cJSON_ParseWithLength(body, len) : NULL;
	if (!cJSON_IsObject(doc)) {
		ret = fail(err, errsize, -EPROTO, "the answer is not a JSON object");
		goto out_delete;
	}
	status = cJSON_GetObjectItemCaseSensitive(doc, "status");
	if (cJSON_IsString(status) && status->valuestring &&
	    strcmp(status->valuestring, "error") == 0) {
		ret = remote_error(doc, err, errsize);
		goto out_delete;
	}
	data = cJSON_GetObjectItemCaseSensitive(doc, "data");
	type = cJSON_GetObjectItemCaseSensitive(data, "resultType");
	result = cJSON_GetObjectItemCaseSensitive(data, "result");
	if (!cJSON_IsString(status) || strcmp(status->valuestring, "success") != 0 ||
	    !cJSON_IsString(type) || strcmp(type->valuestring, "matrix") != 0 ||
	    !cJSON_IsArray(result)) {
		ret = fail(err, errsize, -EPROTO,
			   "the answer is not a successful range query's matrix");
		goto out_delete;
	}
	n = cJSON_GetArraySize(result);
	if (n > PROMSRC_MAX_SERIES) {
		ret = fail(err, errsize, -EPROTO, "%d series in one answer (at most %d)", n,
			   PROMSRC_MAX_SERIES);
		goto out_delete;
	}
	m->series = calloc((size_t)(n ? n : 1), sizeof(*m->series));
	if (!m->series) {
		ret = fail(err, errsize, -ENOMEM, "out of memory");
		goto out_delete;
	}
	cJSON_ArrayForEach(item, result)
	{
		struct prom_series *s = &m->series[m->n++];

		ret =
		    parse_labels(cJSON_GetObjectItemCaseSensitive(item, "metric"), s, err, errsize);
		if (!ret)
			ret = parse_values(cJSON_GetObjectItemCaseSensitive(item, "values"), s, err,
					   errsize);
		if (ret)
			break;
	}
out_delete:
	cJSON_Delete(doc);
	return ret;
}

/* ---- the transport --------------------------------------------------------------------- */

static int curl_get(void *ctx, const char *url, struct strbuf *answer, long *status)
{
	CURLcode rc;
	CURL *c;

	(void)ctx;
	if (curl_dl_load())
		return -ENOENT;
	c = curl_dl_handle(url, answer, NULL, 30L, false);
	if (!c)
		return log_err(-ENOMEM, "cannot set up libcurl");
	curl_fn.easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	rc = curl_fn.easy_perform(c);
	if (rc == CURLE_OK)
		curl_fn.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_fn.easy_cleanup(c);
	if (rc == CURLE_WRITE_ERROR && strbuf_error(answer) == -E2BIG)
		return log_err(-E2BIG,
			       "Prometheus' answer is larger than %zu MiB: a shorter window "
			       "or a longer --step",
			       answer->max_len >> 20);
	if (rc != CURLE_OK)
		return log_err(0, "cannot reach Prometheus at %s: %s", url,
			       curl_fn.easy_strerror(rc)),
		       -EIO;
	return 0;
}

const struct promsrc_transport promsrc_curl = {curl_get, NULL};
