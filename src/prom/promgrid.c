/*
 * promgrid.c - the pure parts of a report from Prometheus: the grid and
 * its columns, PromQL text, the key, the step's choice (the scrape
 * interval from the samples' own timestamps) and node_exporter's real
 * disks.  No I/O: unit-tested on their own (tests/unit/test_promsrc.c).
 */
#include "prom/promgrid.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/summary.h" /* JOB_REPORT_MAX_MS: the times a report takes */
#include "common/log.h"

void promql_url_encode(struct strbuf *u, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			strbuf_addch(u, (char)*p);
		} else {
			strbuf_addch(u, '%');
			strbuf_addch(u, hex[*p >> 4]);
			strbuf_addch(u, hex[*p & 15]);
		}
	}
}

void promql_add_seconds(struct strbuf *u, int64_t ms)
{
	strbuf_addf(u, "%" PRId64 ".%03d", ms / 1000, (int)(ms % 1000));
}

/* A series' points on the grid: NAN where it has none (or one off the grid). */
void grid_dense(const struct grid *g, const struct prom_series *s, double *out)
{
	for (size_t i = 0; i < g->n; i++)
		out[i] = NAN;
	for (size_t k = 0; k < s->n; k++) {
		int64_t d = s->ts_ms[k] - g->start_ms;

		if (d >= 0 && d % g->step_ms == 0 && (uint64_t)(d / g->step_ms) < g->n)
			out[d / g->step_ms] = s->v[k];
	}
}

/*
 * A counter made monotonic, as rate() does: after a reset (a value below
 * the one before) the run goes on from the value before.  Missing points
 * take the value before them (0 before the first), so that a sum of
 * counters never drops because one of them was not scraped.
 */
void grid_counter_fix(double *v, size_t n)
{
	double offset = 0, prev = NAN;

	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i])) {
			v[i] = isnan(prev) ? 0 : prev;
			continue;
		}
		if (!isnan(prev) && v[i] + offset < prev)
			offset = prev - v[i];
		v[i] += offset;
		prev = v[i];
	}
}

uint64_t grid_u64(double v)
{
	return v > 0 ? (v < 0x1p63 ? (uint64_t)llround(v) : (uint64_t)1 << 63) : 0;
}

/* The last value a column has, NAN when none. */
double grid_last_of(const double *v, size_t n)
{
	for (size_t i = n; i-- > 0;)
		if (!isnan(v[i]))
			return v[i];
	return NAN;
}

double grid_first_of(const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			return v[i];
	return NAN;
}

/* The grid over [from, to], step wide; -EINVAL past Prometheus' points. */
int grid_of(int64_t from, int64_t to, int64_t step, struct grid *g)
{
	if (to < from || step <= 0)
		return -EINVAL;
	g->start_ms = from;
	g->step_ms = step;
	if ((to - from) / step + 1 > PROMSRC_MAX_POINTS)
		return -E2BIG;
	g->n = (size_t)((to - from) / step + 1);
	return 0;
}

/* s as the inside of a PromQL "..." string. */
void promql_str(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			strbuf_addch(b, '\\');
		strbuf_addch(b, *s);
	}
}

/* s as a regular expression matching itself exactly, inside a PromQL "..." string. */
void promql_regex_literal(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		if (strchr(".+*?()|[]{}^$\\", *s))
			strbuf_addstr(b, "\\\\");
		if (*s == '"')
			strbuf_addch(b, '\\');
		strbuf_addch(b, *s);
	}
}

/* The host part of an instance ("10.0.0.5:9100" -> "10.0.0.5"; "[::1]:9100" -> "[::1]"). */
void promql_instance_host(const char *inst, char *host, size_t size)
{
	const char *colon = strrchr(inst, ':');
	size_t n = strlen(inst);

	if (colon && (!strchr(inst, ']') || colon > strchr(inst, ']')) &&
	    strspn(colon + 1, "0123456789") == strlen(colon + 1) && colon[1] &&
	    (inst[0] == '[' || strchr(inst, ':') == colon))
		n = (size_t)(colon - inst);
	snprintf(host, size, "%.*s", (int)n, inst);
}

/* `instance=~"HOST(:PORT)?"` for a node named host. */
void promql_host_matcher(struct strbuf *b, const char *host)
{
	strbuf_addstr(b, "instance=~\"");
	promql_regex_literal(b, host);
	strbuf_addstr(b, "(:[0-9]+)?\"");
}

/* A step that fits span in a third of Prometheus' points: at least want, whole seconds. */
static int64_t step_for(int64_t span_ms, int64_t want_ms)
{
	if (span_ms / want_ms <= PROMSRC_MAX_POINTS / 3)
		return want_ms;
	return (span_ms / (PROMSRC_MAX_POINTS / 3) / 1000 + 1) * 1000;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t promsrc_sample_interval_ms(const struct prom_matrix *m)
{
	size_t n = 0, cap = 0;
	int64_t *gaps = NULL, med = 0;

	for (size_t k = 0; k < m->n; k++)
		cap += m->series[k].n;
	if (cap < 3)
		return 0;
	gaps = malloc(cap * sizeof(*gaps));
	if (!gaps)
		return 0; /* unknown: the caller takes the default */
	for (size_t k = 0; k < m->n; k++) {
		const struct prom_series *s = &m->series[k];
		int64_t prev = INT64_MIN;

		for (size_t i = 0; i < s->n; i++) {
			double t = s->v[i] * 1000.0;
			int64_t ts;

			if (!(t >= 0 && t <= (double)JOB_REPORT_MAX_MS))
				continue; /* NAN, or not a time */
			ts = (int64_t)llround(t);
			if (prev != INT64_MIN && ts > prev)
				gaps[n++] = ts - prev;
			if (prev == INT64_MIN || ts > prev)
				prev = ts;
		}
	}
	if (n >= 2) {
		qsort(gaps, n, sizeof(*gaps), cmp_i64);
		med = gaps[n / 2];
	}
	free(gaps);
	return med;
}

int64_t promsrc_auto_step_ms(int64_t span_ms, int64_t scrape_ms, char *why, size_t size)
{
	int64_t want, step;
	char base[96];

	if (scrape_ms > 0) {
		/* whole seconds, as --step takes them; 1 s at least (Prometheus' floor here) */
		want = (scrape_ms + 500) / 1000 * 1000;
		if (want < 1000)
			want = 1000;
		if (scrape_ms < 1000)
			snprintf(base, sizeof(base),
				 "the finest step (the samples are %" PRId64 " ms apart)",
				 scrape_ms);
		else if (scrape_ms % 1000)
			snprintf(base, sizeof(base),
				 "the scrape interval (%" PRId64
				 " ms), measured from the samples' timestamps",
				 scrape_ms);
		else
			snprintf(base, sizeof(base),
				 "the scrape interval, measured from the samples' timestamps");
	} else {
		want = PROMSRC_DEFAULT_STEP_MS;
		snprintf(base, sizeof(base),
			 "the default: the samples' timestamps gave no scrape interval");
	}
	step = step_for(span_ms > 0 ? span_ms : 0, want);
	if (step == want)
		snprintf(why, size, "%s", base);
	else
		snprintf(why, size,
			 "%s, widened from %" PRId64 " s so that the %.1f h fit in %d points", base,
			 want / 1000, span_ms / 3600e3, PROMSRC_MAX_POINTS / 3);
	return step;
}

bool promsrc_real_disk(const char *dev)
{
	static const char *const virt[] = {"loop", "ram", "zram", "fd", "sr", "nbd",
					   "dm-",  "md",  "drbd", "zd", NULL};
	size_t n = strlen(dev), d = n;

	if (!n)
		return false;
	for (int i = 0; virt[i]; i++)
		if (strncmp(dev, virt[i], strlen(virt[i])) == 0 &&
		    (n == strlen(virt[i]) || strchr("0123456789", dev[strlen(virt[i])])))
			return false;
	while (d > 0 && dev[d - 1] >= '0' && dev[d - 1] <= '9')
		d--;
	if (d == n || d == 0)
		return true; /* no number at the end: a whole disk (or a name unknown) */
	/* nvme0n1p2, mmcblk0p1: a disk's name ends in a number, its partition's in pN */
	if (dev[d - 1] == 'p' && d >= 2 && dev[d - 2] >= '0' && dev[d - 2] <= '9')
		return false;
	/* sda1, vdb2, hda1, xvda1: letters then a number */
	if ((strncmp(dev, "sd", 2) == 0 || strncmp(dev, "vd", 2) == 0 ||
	     strncmp(dev, "hd", 2) == 0 || strncmp(dev, "xvd", 3) == 0) &&
	    dev[d - 1] >= 'a' && dev[d - 1] <= 'z')
		return false;
	return true;
}

int promsrc_parse_key(const struct promsrc_query *q, struct promsrc_key_parts *k)
{
	const char *s = q->key, *colon, *slash;

	memset(k, 0, sizeof(*k));
	if (!s || !*s || strlen(s) > 250)
		return log_err(-EINVAL, "an empty or overlong key");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return log_err(0, "a key with a control character"), -EINVAL;
	switch (q->kind) {
	case PROMSRC_JOB:
		colon = strchr(s, ':');
		if (colon) {
			/* scheduler:id, or scheduler:id:start_ms as `jobscope jobs` lists it */
			const char *end = strchr(colon + 1, ':');
			size_t n = end ? (size_t)(end - colon - 1) : strlen(colon + 1);

			if ((size_t)(colon - s) >= sizeof(k->scheduler) || !n || n >= sizeof(k->id))
				break;
			memcpy(k->scheduler, s, (size_t)(colon - s));
			memcpy(k->id, colon + 1, n);
		} else if (strlen(s) < sizeof(k->id)) {
			memcpy(k->id, s, strlen(s) + 1); /* (snprintf: gcc -O2 warns of the cut) */
		}
		return k->id[0] ? 0 : (log_err(0, "bad job '%s' (scheduler:id or id)", s), -EINVAL);
	case PROMSRC_POD:
		slash = strchr(s, '/');
		if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/') ||
		    (size_t)(slash - s) >= sizeof(k->ns) || strlen(slash + 1) >= sizeof(k->name))
			break;
		memcpy(k->ns, s, (size_t)(slash - s));
		snprintf(k->name, sizeof(k->name), "%s", slash + 1);
		return 0;
	case PROMSRC_NODE:
		snprintf(k->node, sizeof(k->node), "%s", s);
		return 0;
	}
	log_err(0, "bad %s '%s'", q->kind == PROMSRC_POD ? "pod (NAMESPACE/NAME)" : "job", s);
	return -EINVAL;
}