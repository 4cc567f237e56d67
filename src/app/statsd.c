/*
 * statsd.c - StatsD / DogStatsD lines (statsd.h): the line parser, tag
 * canonicalisation, and the per-job aggregator (an open-addressing index
 * of the tick's series, the gauges' last values across ticks, the sets'
 * members within a tick).
 *
 * The common path (a known series) allocates nothing: a line is parsed
 * into the caller's struct, found by hash and updated in place.
 */
#include "app/statsd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/hash.h"
#include "common/scan.h"

/* ---- the line parser ---------------------------------------------------- */

static bool has_control(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return true;
	return false;
}

/* A name: not empty, no control character, fits APP_NAME_MAX with its NUL. */
static int copy_name(struct scan s, char *out)
{
	size_t n = span_len(&s);

	if (n == 0 || has_control(s.pos, n) || !span_copy(out, APP_NAME_MAX, &s))
		return -EINVAL;
	return 0;
}

/*
 * A finite decimal number: strtod on a bounded copy, after a check that
 * only digits, '.', exponent and signs are there (strtod would take
 * "nan", "inf" and hex floats).
 */
/*
 * The common case, "[+-]digits[.digits]" with at most 15 digits, without
 * strtod: the digits and the power of ten are exact doubles, so their
 * quotient is correctly rounded, as strtod's result is.  false: not this
 * form (strtod decides).
 */
static bool parse_simple_number(struct scan s, double *out)
{
	static const double pow10[] = {1,   1e1, 1e2,  1e3,  1e4,  1e5,	 1e6,  1e7,
				       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
	size_t i = 0, n = span_len(&s), digits = 0, frac = 0;
	bool neg = false, dot = false;
	int64_t m = 0;

	if (s.pos[0] == '+' || s.pos[0] == '-') {
		neg = s.pos[0] == '-';
		i++;
	}
	for (; i < n; i++) {
		char c = s.pos[i];

		if (c >= '0' && c <= '9') {
			if (++digits > 15)
				return false;
			m = m * 10 + (c - '0');
			frac += dot;
		} else if (c == '.' && !dot) {
			dot = true;
		} else {
			return false;
		}
	}
	if (!digits)
		return false;
	*out = (double)m / pow10[frac];
	if (neg)
		*out = -*out;
	return true;
}

static int parse_number(struct scan s, double *out)
{
	char buf[64], *stop;
	size_t n = span_len(&s);

	if (n == 0 || !span_copy(buf, sizeof(buf), &s))
		return -EINVAL;
	if (parse_simple_number(s, out))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];

		if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' ||
		      c == '-'))
			return -EINVAL;
	}
	*out = strtod(buf, &stop);
	if (stop != buf + n || !isfinite(*out))
		return -EINVAL;
	return 0;
}

/* Unix seconds (1 to 12 digits) as ms. */
static int parse_unix_s(struct scan s, int64_t *out_ms)
{
	int64_t v = 0;

	if (span_len(&s) == 0 || span_len(&s) > 12)
		return -EINVAL;
	for (const char *c = s.pos; c < s.end; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		v = v * 10 + (*c - '0');
	}
	*out_ms = v * 1000;
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct scan *x = a, *y = b;
	size_t nx = span_len(x), ny = span_len(y);
	int c = memcmp(x->pos, y->pos, nx < ny ? nx : ny);

	if (c)
		return c;
	return nx < ny ? -1 : nx > ny;
}

#define STATSD_MAX_TAGS 256

/* "a:b,c,a:b" -> "a:b,c" in out (APP_TAGS_MAX); empty tags skipped. */
static int canon_tags(struct scan s, char *out)
{
	struct scan tags[STATSD_MAX_TAGS];
	size_t n = 0, len = 0;

	if (has_control(s.pos, span_len(&s)))
		return -EINVAL;
	while (!scan_at_end(&s)) {
		struct scan t;

		span_split(&s, ',', &t);
		if (span_len(&t) == 0)
			continue;
		if (n == STATSD_MAX_TAGS)
			return -EINVAL;
		tags[n++] = t;
	}
	if (n > 1)
		qsort(tags, n, sizeof(*tags), span_cmp);
	for (size_t i = 0; i < n; i++) {
		size_t tlen = span_len(&tags[i]);

		if (i && span_cmp(&tags[i], &tags[i - 1]) == 0)
			continue;
		if (len + (len ? 1 : 0) + tlen >= APP_TAGS_MAX)
			return -EINVAL;
		if (len)
			out[len++] = ',';
		memcpy(out + len, tags[i].pos, tlen);
		len += tlen;
	}
	out[len] = '\0';
	return 0;
}

/*
 * A field DogStatsD added later ("e:...", "card:...") is of the form
 * lowercase-letters ':' value: known to be ignorable, so accepted.
 */
static bool is_extension_field(struct scan f)
{
	const char *c = f.pos;

	while (c < f.end && *c >= 'a' && *c <= 'z')
		c++;
	return c > f.pos && c < f.end && *c == ':';
}

static int parse_type(struct scan t, enum app_type *out)
{
	if (span_eq(&t, "c"))
		*out = APP_COUNTER;
	else if (span_eq(&t, "g"))
		*out = APP_GAUGE;
	else if (span_eq(&t, "ms"))
		*out = APP_TIMER;
	else if (span_eq(&t, "h"))
		*out = APP_HISTOGRAM;
	else if (span_eq(&t, "d"))
		*out = APP_DISTRIBUTION;
	else if (span_eq(&t, "s"))
		*out = APP_SET;
	else
		return -EINVAL;
	return 0;
}

static int parse_values(struct scan v, struct statsd_line *out)
{
	if (out->type == APP_SET) { /* one member, which may hold ':' */
		if (scan_at_end(&v) || has_control(v.pos, span_len(&v)))
			return -EINVAL;
		out->member = v.pos;
		out->member_len = span_len(&v);
		return 0;
	}
	for (;;) {
		struct scan one;
		bool more = span_split(&v, ':', &one);
		bool signed_ = span_starts(&one, "+") || span_starts(&one, "-");

		if (out->nvalues == STATSD_MAX_VALUES ||
		    parse_number(one, &out->values[out->nvalues]))
			return -EINVAL;
		if (out->type == APP_GAUGE) {
			if (out->nvalues == 0)
				out->delta = signed_;
			else if (out->delta != signed_) /* "5:+1": set and move at once */
				return -EINVAL;
		}
		out->nvalues++;
		if (!more)
			return 0;
	}
}

static int parse_metric(struct scan s, struct statsd_line *out)
{
	struct scan name, values, type, f;
	bool rate_seen = false, tags_seen = false, more;

	if (!span_split(&s, ':', &name) || memchr(name.pos, '|', span_len(&name)) ||
	    copy_name(name, out->name))
		return -EINVAL;
	if (!span_split(&s, '|', &values))
		return -EINVAL;
	more = span_split(&s, '|', &type);
	if (parse_type(type, &out->type))
		return -EINVAL;
	while (more) {
		more = span_split(&s, '|', &f);
		if (scan_at_end(&f)) /* "||" or a trailing '|' */
			return -EINVAL;
		if (f.pos[0] == '@') {
			if (rate_seen ||
			    parse_number((struct scan){f.pos + 1, f.end}, &out->rate) ||
			    !(out->rate > 0 && out->rate <= 1) || !isfinite(1 / out->rate))
				return -EINVAL;
			rate_seen = true;
		} else if (f.pos[0] == '#') {
			if (tags_seen || canon_tags((struct scan){f.pos + 1, f.end}, out->tags))
				return -EINVAL;
			tags_seen = true;
		} else if (f.pos[0] == 'T') {
			if (parse_unix_s((struct scan){f.pos + 1, f.end}, &out->ts_ms))
				return -EINVAL;
		} else if (span_starts(&f, "c:")) {
			/* the container id: the agent attributes by pid, not by this */
		} else if (!is_extension_field(f)) {
			return -EINVAL;
		}
	}
	return parse_values(values, out);
}

/* "12," in "_e{12,4}": a length of at most 5 digits followed by `end`. */
static int parse_len(struct scan *s, char end, size_t *out)
{
	size_t v = 0, i = 0, n = span_len(s);

	while (i < n && s->pos[i] >= '0' && s->pos[i] <= '9' && i < 5)
		v = v * 10 + (size_t)(s->pos[i++] - '0');
	if (i == 0 || i == n || s->pos[i] != end)
		return -EINVAL;
	s->pos += i + 1;
	*out = v;
	return 0;
}

/* The event's text: "\\n" (two bytes) is a newline. */
static int copy_text(struct scan t, char *out)
{
	size_t n = 0, len = span_len(&t);

	for (size_t i = 0; i < len; i++) {
		char c = t.pos[i];

		if (c == '\\' && i + 1 < len && t.pos[i + 1] == 'n') {
			c = '\n';
			i++;
		} else if (c == '\0') {
			return -EINVAL;
		}
		if (n + 1 >= APP_TAGS_MAX)
			return -EINVAL;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/* _e{title_len,text_len}:title|text[|d:ts][|h:host][|#tags]... */
static int parse_event(struct scan s, struct statsd_line *out)
{
	size_t tlen, xlen;
	struct scan title, text, f;
	bool tags_seen = false;

	s.pos += 3; /* "_e{" */
	if (parse_len(&s, ',', &tlen) || parse_len(&s, '}', &xlen))
		return -EINVAL;
	if (!span_starts(&s, ":"))
		return -EINVAL;
	s.pos++;
	/* exact lengths: title, '|', text, then the end or '|' */
	if (tlen > span_len(&s) || tlen + 1 + xlen > span_len(&s) || s.pos[tlen] != '|')
		return -EINVAL;
	title = (struct scan){s.pos, s.pos + tlen};
	text = (struct scan){s.pos + tlen + 1, s.pos + tlen + 1 + xlen};
	s.pos = text.end;
	if (!scan_at_end(&s) && s.pos[0] != '|')
		return -EINVAL;
	if (memchr(title.pos, '\0', tlen) || copy_name(title, out->name) ||
	    copy_text(text, out->text))
		return -EINVAL;
	out->kind = STATSD_EVENT;
	if (scan_at_end(&s))
		return 0;
	s.pos++;
	for (bool more = true; more;) {
		more = span_split(&s, '|', &f);
		if (scan_at_end(&f))
			return -EINVAL;
		if (f.pos[0] == '#') {
			if (tags_seen || canon_tags((struct scan){f.pos + 1, f.end}, out->tags))
				return -EINVAL;
			tags_seen = true;
		} else if (span_starts(&f, "d:")) {
			if (parse_unix_s((struct scan){f.pos + 2, f.end}, &out->ts_ms))
				return -EINVAL;
		} else if (!is_extension_field(f)) { /* h:, k:, p:, s:, t: and later ones */
			return -EINVAL;
		}
	}
	return 0;
}

/* _sc|name|status[|d:ts][|h:host][|#tags][|m:message]: recognised, not kept. */
static int parse_service_check(struct scan s, struct statsd_line *out)
{
	struct scan name, status;

	s.pos += 4; /* "_sc|" */
	span_split(&s, '|', &name);
	span_split(&s, '|', &status);
	if (copy_name(name, out->name) || span_len(&status) != 1 || status.pos[0] < '0' ||
	    status.pos[0] > '3')
		return -EINVAL;
	out->kind = STATSD_SERVICE_CHECK;
	return 0;
}

int statsd_parse_line(const char *s, size_t len, struct statsd_line *out)
{
	struct scan line = {s, s + len};
	int ret;

	out->kind = STATSD_METRIC;
	out->name[0] = '\0';
	out->tags[0] = '\0';
	out->text[0] = '\0';
	out->type = APP_COUNTER;
	out->rate = 1;
	out->nvalues = 0;
	out->delta = false;
	out->member = NULL;
	out->member_len = 0;
	out->ts_ms = 0;
	if (len >= 3 && memcmp(s, "_e{", 3) == 0)
		ret = parse_event(line, out);
	else if (len >= 4 && memcmp(s, "_sc|", 4) == 0)
		ret = parse_service_check(line, out);
	else
		ret = parse_metric(line, out);
	if (ret) {
		out->kind = STATSD_METRIC;
		out->nvalues = 0;
		out->member = NULL;
		out->member_len = 0;
	}
	return ret;
}

bool statsd_tag_get(const char *tags, const char *key, char *val, size_t size)
{
	size_t klen = strlen(key);
	const char *p = tags;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len >= klen && memcmp(p, key, klen) == 0 && (len == klen || p[klen] == ':')) {
			const char *v = len == klen ? p + len : p + klen + 1;
			size_t vlen = (size_t)(p + len - v);

			if (size) {
				if (vlen >= size)
					vlen = size - 1;
				memcpy(val, v, vlen);
				val[vlen] = '\0';
			}
			return true;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

/* ---- the aggregator ------------------------------------------------------ */

static uint64_t hash_series(const char *name, const char *tags, enum app_type type)
{
	uint64_t h = fnv1a(FNV1A_SEED, name, strlen(name) + 1);

	h = fnv1a(h, tags, strlen(tags) + 1);
	return fnv1a(h, &type, sizeof(type));
}

/*
 * An open-addressing table of entries (hash high 32 bits, index + 1 low
 * 32 bits; 0 is empty; probing starts at the hash's high bits, the only
 * ones kept for a rehash), at most half full, whose keys live in an array
 * the caller owns; lookups compare through `eq`.
 */
struct hidx {
	uint64_t *e;
	size_t cap, n;
};

static int hidx_grow(struct hidx *h)
{
	size_t cap = h->cap ? h->cap * 2 : 64;
	uint64_t *e = calloc(cap, sizeof(*e));

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++) {
		size_t j;

		if (!h->e[i])
			continue;
		for (j = (h->e[i] >> 32) & (cap - 1); e[j]; j = (j + 1) & (cap - 1))
			;
		e[j] = h->e[i];
	}
	free(h->e);
	h->e = e;
	h->cap = cap;
	return 0;
}

/* The index the key of hash h has, or -1. */
static long hidx_find(const struct hidx *h, uint64_t hash, bool (*eq)(const void *, uint32_t),
		      const void *key)
{
	uint32_t h32 = (uint32_t)(hash >> 32);

	if (!h->cap)
		return -1;
	for (size_t i = h32 & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		uint64_t e = h->e[i];

		if (!e)
			return -1;
		if ((uint32_t)(e >> 32) == h32 && eq(key, (uint32_t)e - 1))
			return (long)((uint32_t)e - 1);
	}
}

/* Inserts index idx for hash h: grows first when half full. */
static int hidx_insert(struct hidx *h, uint64_t hash, uint32_t idx)
{
	size_t i;

	if ((h->n + 1) * 2 > h->cap && hidx_grow(h))
		return -ENOMEM;
	for (i = (hash >> 32) & (h->cap - 1); h->e[i]; i = (i + 1) & (h->cap - 1))
		;
	h->e[i] = (hash >> 32) << 32 | (uint64_t)(idx + 1);
	h->n++;
	return 0;
}

static void hidx_reset(struct hidx *h)
{
	if (h->n)
		memset(h->e, 0, h->cap * sizeof(*h->e));
	h->n = 0;
}

static void hidx_release(struct hidx *h)
{
	free(h->e);
	h->e = NULL;
	h->cap = h->n = 0;
}

/* The series index: pts of this tick. */
struct series_index {
	struct hidx h;
	const struct app_point *pts;
};

struct series_key {
	const struct series_index *si;
	const char *name, *tags;
	enum app_type type;
};

static bool series_eq(const void *key, uint32_t idx)
{
	const struct series_key *k = key;
	const struct app_point *p = &k->si->pts[idx];

	return p->type == k->type && strcmp(p->name, k->name) == 0 && strcmp(p->tags, k->tags) == 0;
}

/* A gauge's last value, kept across ticks; key: "name\0tags\0". */
struct gauge {
	char *key;
	double last;
};

struct gauge_table {
	struct hidx h;
	struct gauge *g;
	size_t n, alloc;
};

struct gauge_key {
	const struct gauge_table *gt;
	const char *name, *tags;
};

static bool gauge_eq(const void *key, uint32_t idx)
{
	const struct gauge_key *k = key;
	const char *gk = k->gt->g[idx].key;

	return strcmp(gk, k->name) == 0 && strcmp(gk + strlen(gk) + 1, k->tags) == 0;
}

/*
 * Set members of this tick: 64-bit hashes of (series, member), 0 empty.
 * Distinct members are counted by their hash: two members whose hashes
 * collide (about one chance in 2^64 / n) count once.
 */
struct member_set {
	uint64_t *e;
	size_t cap, n;
};

static bool member_find(const struct member_set *ms, uint64_t h, size_t *slot)
{
	size_t i;

	for (i = h & (ms->cap - 1); ms->e[i]; i = (i + 1) & (ms->cap - 1))
		if (ms->e[i] == h)
			return true;
	*slot = i;
	return false;
}

/* 0 (*added: whether h is new), or -ENOSPC beyond APP_AGG_MAX_SET, -ENOMEM. */
static int member_add(struct member_set *ms, uint64_t h, bool *added)
{
	size_t slot = 0;

	*added = false;
	if (!h)
		h = 1;
	if (ms->cap && member_find(ms, h, &slot))
		return 0;
	if (ms->n >= APP_AGG_MAX_SET)
		return -ENOSPC;
	if ((ms->n + 1) * 2 > ms->cap) {
		size_t cap = ms->cap ? ms->cap * 2 : 256;
		struct member_set grown = {calloc(cap, sizeof(uint64_t)), cap, ms->n};

		if (!grown.e)
			return -ENOMEM;
		for (size_t j = 0; j < ms->cap; j++)
			if (ms->e[j] && !member_find(&grown, ms->e[j], &slot))
				grown.e[slot] = ms->e[j];
		free(ms->e);
		*ms = grown;
	}
	member_find(ms, h, &slot);
	ms->e[slot] = h;
	ms->n++;
	*added = true;
	return 0;
}

void app_agg_init(struct app_agg *a)
{
	memset(a, 0, sizeof(*a));
}

static void release_points(struct app_point *pts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		app_point_release(&pts[i]);
	free(pts);
}

void app_agg_release(struct app_agg *a)
{
	struct series_index *si = a->index;
	struct gauge_table *gt = a->gauges;
	struct member_set *ms = a->sets;

	release_points(a->pts, a->npts);
	free(a->marks);
	if (si) {
		hidx_release(&si->h);
		free(si);
	}
	if (gt) {
		for (size_t i = 0; i < gt->n; i++)
			free(gt->g[i].key);
		free(gt->g);
		hidx_release(&gt->h);
		free(gt);
	}
	if (ms) {
		free(ms->e);
		free(ms);
	}
	app_agg_init(a);
}

/* The private tables, made on first use (app_agg_init cannot fail). */
static int agg_tables(struct app_agg *a)
{
	if (!a->index && !(a->index = calloc(1, sizeof(struct series_index))))
		return -ENOMEM;
	if (!a->gauges && !(a->gauges = calloc(1, sizeof(struct gauge_table))))
		return -ENOMEM;
	if (!a->sets && !(a->sets = calloc(1, sizeof(struct member_set))))
		return -ENOMEM;
	return 0;
}

/* This tick's point for the line's series, made when new; NULL: see *err. */
static struct app_point *agg_point(struct app_agg *a, const struct statsd_line *l, int *err)
{
	struct series_index *si = a->index;
	struct series_key key = {si, l->name, l->tags, l->type};
	uint64_t h = hash_series(l->name, l->tags, l->type);
	struct app_point *p;
	long at;

	si->pts = a->pts;
	at = hidx_find(&si->h, h, series_eq, &key);
	if (at >= 0)
		return &a->pts[at];
	if (a->npts >= APP_AGG_MAX_SERIES) {
		*err = -ENOSPC;
		return NULL;
	}
	if (ARRAY_GROW(a->pts, a->npts, a->alloc, 16) ||
	    hidx_insert(&si->h, h, (uint32_t)a->npts)) {
		*err = -ENOMEM;
		return NULL;
	}
	p = &a->pts[a->npts++];
	app_point_init(p);
	memcpy(p->name, l->name, strlen(l->name) + 1);
	memcpy(p->tags, l->tags, strlen(l->tags) + 1);
	p->type = l->type;
	return p;
}

/* The gauge's remembered value, made (at 0) when new. */
static struct gauge *agg_gauge(struct app_agg *a, const struct statsd_line *l, int *err)
{
	struct gauge_table *gt = a->gauges;
	struct gauge_key key = {gt, l->name, l->tags};
	uint64_t h = hash_series(l->name, l->tags, APP_GAUGE);
	size_t nlen = strlen(l->name), tlen = strlen(l->tags);
	struct gauge *g;
	long at;

	at = hidx_find(&gt->h, h, gauge_eq, &key);
	if (at >= 0)
		return &gt->g[at];
	if (gt->n >= APP_AGG_MAX_SERIES) {
		*err = -ENOSPC;
		return NULL;
	}
	if (ARRAY_GROW(gt->g, gt->n, gt->alloc, 16)) {
		*err = -ENOMEM;
		return NULL;
	}
	g = &gt->g[gt->n];
	g->key = malloc(nlen + tlen + 2);
	if (!g->key || hidx_insert(&gt->h, h, (uint32_t)gt->n)) {
		free(g->key);
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(g->key, l->name, nlen + 1);
	memcpy(g->key + nlen + 1, l->tags, tlen + 1);
	g->last = 0;
	gt->n++;
	return g;
}

static void point_value(struct app_point *p, double v)
{
	if (p->count > 0) {
		p->min = fmin(p->min, v);
		p->max = fmax(p->max, v);
	} else {
		p->min = p->max = v;
	}
	p->last = v;
}

static int agg_mark(struct app_agg *a, const struct statsd_line *l, int32_t pid, int64_t now_ms)
{
	struct app_mark *m;

	if (a->nmarks >= APP_AGG_MAX_MARKS)
		return -ENOSPC;
	if (ARRAY_GROW(a->marks, a->nmarks, a->marks_alloc, 16))
		return -ENOMEM;
	m = &a->marks[a->nmarks++];
	m->ts_ms = l->ts_ms ? l->ts_ms : now_ms;
	memcpy(m->name, l->name, strlen(l->name) + 1);
	memcpy(m->text, l->text, strlen(l->text) + 1);
	m->pid = pid;
	return 0;
}

static int agg_set(struct app_agg *a, struct app_point *p, const struct statsd_line *l)
{
	uint64_t h = hash_series(l->name, l->tags, APP_SET);
	bool added;
	int ret;

	h = fnv1a(h, l->member, l->member_len);
	ret = member_add(a->sets, h, &added);
	if (ret)
		return ret;
	if (added)
		p->last++;
	p->count++;
	p->min = p->max = p->last;
	return 0;
}

static int agg_values(struct app_point *p, struct gauge *g, const struct statsd_line *l)
{
	double w = 1 / l->rate;

	for (size_t i = 0; i < l->nvalues; i++) {
		double v = l->values[i];

		switch (l->type) {
		case APP_GAUGE:
			g->last = l->delta ? g->last + v : v;
			point_value(p, g->last);
			p->sum += g->last;
			p->count++;
			break;
		case APP_COUNTER:
			point_value(p, v);
			p->sum += v * w;
			p->count += w;
			break;
		default: /* timer, histogram, distribution */
			if (app_sketch_add(&p->sk, v, w))
				return -ENOMEM;
			point_value(p, v);
			p->sum += v * w;
			p->count += w;
			break;
		}
	}
	return 0;
}

static int agg_add(struct app_agg *a, const struct statsd_line *l, int32_t pid, int64_t now_ms)
{
	struct gauge *g = NULL;
	struct app_point *p;
	int ret = 0;

	if (l->kind == STATSD_SERVICE_CHECK)
		return 0;
	if (agg_tables(a))
		ret = -ENOMEM;
	else if (l->kind == STATSD_EVENT)
		ret = agg_mark(a, l, pid, now_ms);
	else if (l->type == APP_GAUGE && !(g = agg_gauge(a, l, &ret)))
		; /* the gauge first: no empty point is left behind when it fails */
	else if (!(p = agg_point(a, l, &ret)))
		;
	else if (l->type == APP_SET)
		ret = agg_set(a, p, l);
	else
		ret = agg_values(p, g, l);
	if (ret)
		a->dropped++;
	return ret;
}

int app_agg_add(struct app_agg *a, const struct statsd_line *l, int32_t pid, int64_t now_ms)
{
	a->lines++;
	return agg_add(a, l, pid, now_ms);
}

bool statsd_next_line(const char **pos, const char *end, const char **line, size_t *len)
{
	struct scan rest = {*pos, end}, l;

	while (scan_line(&rest, &l)) {
		if (span_ends(&l, "\r"))
			l.end--;
		if (!scan_at_end(&l)) {
			*pos = rest.pos;
			*line = l.pos;
			*len = span_len(&l);
			return true;
		}
	}
	*pos = end;
	return false;
}

void app_agg_feed(struct app_agg *a, const char *data, size_t len, int32_t pid, int64_t now_ms)
{
	struct statsd_line l;
	const char *pos = data, *end = data + len;
	const char *line;
	size_t n;

	while (statsd_next_line(&pos, end, &line, &n)) {
		a->lines++;
		if (statsd_parse_line(line, n, &l)) {
			a->bad_lines++;
			continue;
		}
		agg_add(a, &l, pid, now_ms);
	}
}

void app_agg_take(struct app_agg *a, struct app_point **pts, size_t *npts, struct app_mark **marks,
		  size_t *nmarks)
{
	struct series_index *si = a->index;
	struct member_set *ms = a->sets;

	*pts = a->pts;
	*npts = a->npts;
	*marks = a->marks;
	*nmarks = a->nmarks;
	a->pts = NULL;
	a->npts = a->alloc = 0;
	a->marks = NULL;
	a->nmarks = a->marks_alloc = 0;
	if (si)
		hidx_reset(&si->h);
	if (ms) {
		if (ms->n)
			memset(ms->e, 0, ms->cap * sizeof(*ms->e));
		ms->n = 0;
	}
}
