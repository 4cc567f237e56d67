/*
 * appstat.c - the application metrics' model (appstat.h): metric types,
 * the quantile sketch (bins by log key, merge, quantile, text form and its
 * strict parser) and app_point's lifecycle and merge.
 */
#include "app/appstat.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[APP_TYPES] = {
    [APP_COUNTER] = "counter",
    [APP_GAUGE] = "gauge",
    [APP_TIMER] = "timer",
    [APP_HISTOGRAM] = "histogram",
    [APP_DISTRIBUTION] = "distribution",
    [APP_SET] = "set",
};

const char *app_type_name(enum app_type t)
{
	return (unsigned int)t < APP_TYPES ? type_names[t] : "unknown";
}

int app_type_parse(const char *s, enum app_type *out)
{
	for (int t = 0; t < APP_TYPES; t++) {
		if (strcmp(s, type_names[t]) == 0) {
			*out = (enum app_type)t;
			return 0;
		}
	}
	return -EINVAL;
}

bool app_type_has_sketch(enum app_type t)
{
	return t == APP_TIMER || t == APP_HISTOGRAM || t == APP_DISTRIBUTION;
}

/*
 * Keys.  gamma = (1 + a) / (1 - a); v > 0 goes to key ceil(log(v) /
 * log(gamma)), whose bucket (gamma^(k-1), gamma^k] is represented by
 * 2 gamma^k / (gamma + 1), within a of every value in it.  Values below
 * SKETCH_MIN_VALUE count as zeros, so that keys stay in a range that
 * doubles represent (a parsed key outside it is refused).
 */
#define SKETCH_MIN_VALUE 1e-300

/* log(gamma) = log1p(2 a / (1 - a)) for a = 0.01 (test_appstat checks it) */
#define SKETCH_LOG_GAMMA 0.020000666706669525

static double sketch_log_gamma(void)
{
	return SKETCH_LOG_GAMMA;
}

static int32_t sketch_key(double v) /* v >= SKETCH_MIN_VALUE, finite */
{
	return (int32_t)ceil(log(v) / sketch_log_gamma());
}

static int32_t key_min(void)
{
	return sketch_key(SKETCH_MIN_VALUE);
}

static int32_t key_max(void)
{
	return sketch_key(DBL_MAX);
}

static double key_value(int32_t k)
{
	double lg = sketch_log_gamma();
	double gamma = exp(lg);
	double v = exp((double)k * lg + log(2 / (gamma + 1)));

	return v > DBL_MAX ? DBL_MAX : v;
}

void app_sketch_init(struct app_sketch *s)
{
	memset(s, 0, sizeof(*s));
}

void app_sketch_release(struct app_sketch *s)
{
	free(s->pos.b);
	free(s->neg.b);
	app_sketch_init(s);
}

/* Counts saturate at DBL_MAX: an infinite one would not survive the text form. */
static double count_add(double a, double b)
{
	double n = a + b;

	return n > DBL_MAX ? DBL_MAX : n;
}

/* The index of key k in bins, or where it would go (-(index) - 1). */
static ptrdiff_t bins_find(const struct app_bins *bs, int32_t k)
{
	size_t lo = 0, hi = bs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (bs->b[mid].key < k)
			lo = mid + 1;
		else if (bs->b[mid].key > k)
			hi = mid;
		else
			return (ptrdiff_t)mid;
	}
	return -(ptrdiff_t)lo - 1;
}

static int bins_reserve(struct app_bins *bs, size_t n)
{
	struct app_bin *b;
	size_t alloc;

	if (n <= bs->alloc)
		return 0;
	alloc = bs->alloc ? bs->alloc * 2 : 16;
	if (alloc < n)
		alloc = n;
	b = realloc(bs->b, alloc * sizeof(*b));
	if (!b)
		return -ENOMEM;
	bs->b = b;
	bs->alloc = alloc;
	return 0;
}

/*
 * Adds w at key k.  At APP_SKETCH_MAX bins, the lowest two keys of the
 * bins plus k become one (the higher of the two): precision is given up
 * where values are smallest, as DDSketch's collapsing-lowest store does.
 */
static int bins_add(struct app_bins *bs, int32_t k, double w)
{
	ptrdiff_t at = bins_find(bs, k);
	size_t i;

	if (at >= 0) {
		bs->b[at].n = count_add(bs->b[at].n, w);
		return 0;
	}
	i = (size_t)(-at - 1);
	if (bs->n >= APP_SKETCH_MAX) {
		if (i == 0) { /* below the lowest: into it */
			bs->b[0].n = count_add(bs->b[0].n, w);
			return 0;
		}
		if (i == 1) { /* between the lowest two: the lowest moves up to k */
			bs->b[0].key = k;
			bs->b[0].n = count_add(bs->b[0].n, w);
			return 0;
		}
		bs->b[1].n = count_add(bs->b[1].n, bs->b[0].n);
		memmove(bs->b, bs->b + 1, (i - 1) * sizeof(*bs->b));
		bs->b[i - 1].key = k;
		bs->b[i - 1].n = w;
		return 0;
	}
	if (bins_reserve(bs, bs->n + 1))
		return -ENOMEM;
	memmove(bs->b + i + 1, bs->b + i, (bs->n - i) * sizeof(*bs->b));
	bs->b[i].key = k;
	bs->b[i].n = w;
	bs->n++;
	return 0;
}

int app_sketch_add(struct app_sketch *s, double v, double w)
{
	if (!isfinite(v) || !isfinite(w) || w <= 0)
		return -EINVAL;
	if (fabs(v) < SKETCH_MIN_VALUE) {
		s->zero = count_add(s->zero, w);
		return 0;
	}
	if (v > 0)
		return bins_add(&s->pos, sketch_key(v), w);
	return bins_add(&s->neg, sketch_key(-v), w);
}

/* out = a + b (sorted union), lowest keys collapsed beyond the cap. */
static int bins_union(const struct app_bins *a, const struct app_bins *b, struct app_bins *out)
{
	size_t i = 0, j = 0, n = 0;

	memset(out, 0, sizeof(*out));
	if (a->n + b->n == 0)
		return 0;
	out->b = malloc((a->n + b->n) * sizeof(*out->b));
	if (!out->b)
		return -ENOMEM;
	out->alloc = a->n + b->n;
	while (i < a->n || j < b->n) {
		if (j == b->n || (i < a->n && a->b[i].key < b->b[j].key))
			out->b[n++] = a->b[i++];
		else if (i == a->n || b->b[j].key < a->b[i].key)
			out->b[n++] = b->b[j++];
		else {
			out->b[n].key = a->b[i].key;
			out->b[n++].n = count_add(a->b[i++].n, b->b[j++].n);
		}
	}
	if (n > APP_SKETCH_MAX) {
		size_t cut = n - APP_SKETCH_MAX; /* bins 0..cut go into bin cut */

		for (size_t k = 0; k < cut; k++)
			out->b[cut].n = count_add(out->b[cut].n, out->b[k].n);
		memmove(out->b, out->b + cut, APP_SKETCH_MAX * sizeof(*out->b));
		n = APP_SKETCH_MAX;
	}
	out->n = n;
	return 0;
}

int app_sketch_merge(struct app_sketch *into, const struct app_sketch *from)
{
	struct app_bins pos, neg;

	if (bins_union(&into->pos, &from->pos, &pos))
		return -ENOMEM;
	if (bins_union(&into->neg, &from->neg, &neg)) {
		free(pos.b);
		return -ENOMEM;
	}
	free(into->pos.b);
	free(into->neg.b);
	into->pos = pos;
	into->neg = neg;
	into->zero = count_add(into->zero, from->zero);
	return 0;
}

double app_sketch_count(const struct app_sketch *s)
{
	double n = s->zero;

	for (size_t i = 0; i < s->pos.n; i++)
		n += s->pos.b[i].n;
	for (size_t i = 0; i < s->neg.n; i++)
		n += s->neg.b[i].n;
	return n;
}

/*
 * The value of rank q (count - 1), walking from the lowest value up: the
 * negatives from their highest key down, the zeros, the positives.
 */
bool app_sketch_quantile(const struct app_sketch *s, double q, double *out)
{
	double count = app_sketch_count(s), rank, seen = 0;

	if (!(count > 0) || !(q >= 0 && q <= 1))
		return false;
	rank = q * (count - 1);
	for (size_t i = s->neg.n; i-- > 0;) {
		seen += s->neg.b[i].n;
		if (seen > rank) {
			*out = -key_value(s->neg.b[i].key);
			return true;
		}
	}
	seen += s->zero;
	if (seen > rank) {
		*out = 0;
		return true;
	}
	for (size_t i = 0; i < s->pos.n; i++) {
		seen += s->pos.b[i].n;
		if (seen > rank) {
			*out = key_value(s->pos.b[i].key);
			return true;
		}
	}
	/* rounding left the rank just past the end: the highest value */
	if (s->pos.n)
		*out = key_value(s->pos.b[s->pos.n - 1].key);
	else if (s->zero > 0)
		*out = 0;
	else
		*out = -key_value(s->neg.b[0].key);
	return true;
}

bool app_quantile(const struct app_sketch *s, double min, double max, double q, double *out)
{
	if (!app_sketch_quantile(s, q, out))
		return false;
	if (min <= max) {
		if (*out < min)
			*out = min;
		if (*out > max)
			*out = max;
	}
	return true;
}

static int format_bins(const struct app_bins *bs, char tag, bool first, struct strbuf *out)
{
	if (!bs->n)
		return 0;
	strbuf_addf(out, "%s%c=", first ? "" : ";", tag);
	for (size_t i = 0; i < bs->n; i++)
		strbuf_addf(out, "%s%d:%.17g", i ? "," : "", bs->b[i].key, bs->b[i].n);
	return 1;
}

int app_sketch_format(const struct app_sketch *s, struct strbuf *out)
{
	bool first = true;

	if (s->zero > 0) {
		strbuf_addf(out, "z=%.17g", s->zero);
		first = false;
	}
	if (format_bins(&s->pos, 'p', first, out))
		first = false;
	format_bins(&s->neg, 'n', first, out);
	return strbuf_error(out);
}

/*
 * The parser trusts nothing: counts are finite and > 0 in the plain
 * decimal form %.17g writes (no "nan", "inf" or hex), keys are integers
 * in the range values give and strictly increasing, each part comes at
 * most once and in order, and a part holds at most APP_SKETCH_MAX bins
 * (counted before anything is allocated).
 */
static int parse_count(const char *p, const char *end, double *out)
{
	char buf[64], *stop;
	size_t len = (size_t)(end - p);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = p[i];

		if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' ||
		      c == '-'))
			return -EINVAL;
	}
	memcpy(buf, p, len);
	buf[len] = '\0';
	*out = strtod(buf, &stop);
	if (stop != buf + len || !isfinite(*out) || !(*out > 0))
		return -EINVAL;
	return 0;
}

static int parse_key(const char *p, const char *end, int32_t *out)
{
	bool neg = false;
	int64_t v = 0;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p == end || end - p > 7)
		return -EINVAL;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	if (neg)
		v = -v;
	if (v < key_min() || v > key_max())
		return -EINVAL;
	*out = (int32_t)v;
	return 0;
}

static int parse_bins(const char *p, const char *end, struct app_bins *bs)
{
	size_t n = 1;

	for (const char *c = p; c < end; c++)
		n += *c == ',';
	if (n > APP_SKETCH_MAX || p == end)
		return -EINVAL;
	bs->b = malloc(n * sizeof(*bs->b));
	if (!bs->b)
		return -ENOMEM;
	bs->alloc = n;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item_end = comma ? comma : end;
		const char *colon = memchr(p, ':', (size_t)(item_end - p));
		struct app_bin bin;

		if (!colon || parse_key(p, colon, &bin.key) ||
		    parse_count(colon + 1, item_end, &bin.n))
			return -EINVAL;
		if (bs->n && bin.key <= bs->b[bs->n - 1].key)
			return -EINVAL;
		bs->b[bs->n++] = bin;
		if (comma && comma + 1 == end) /* a trailing ',' */
			return -EINVAL;
		p = comma ? comma + 1 : end;
	}
	return 0;
}

int app_sketch_parse(struct app_sketch *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int last_part = -1, ret = 0;

	app_sketch_release(s);
	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *part_end = semi ? semi : end;
		int part;

		if (part_end - p < 2 || p[1] != '=') {
			ret = -EINVAL;
			break;
		}
		part = p[0] == 'z' ? 0 : p[0] == 'p' ? 1 : p[0] == 'n' ? 2 : -1;
		if (part <= last_part) {
			ret = -EINVAL;
			break;
		}
		last_part = part;
		if (part == 0)
			ret = parse_count(p + 2, part_end, &s->zero);
		else
			ret = parse_bins(p + 2, part_end, part == 1 ? &s->pos : &s->neg);
		if (ret)
			break;
		if (semi && semi + 1 == end) {
			ret = -EINVAL;
			break;
		}
		p = semi ? semi + 1 : end;
	}
	if (ret)
		app_sketch_release(s);
	return ret;
}

void app_point_init(struct app_point *p)
{
	memset(p, 0, sizeof(*p));
	p->type = APP_COUNTER;
	app_sketch_init(&p->sk);
}

void app_point_release(struct app_point *p)
{
	app_sketch_release(&p->sk);
}

int app_point_merge(struct app_point *into, const struct app_point *from)
{
	if (into->type != from->type)
		return -EINVAL;
	if (app_sketch_merge(&into->sk, &from->sk))
		return -ENOMEM;
	if (from->count > 0) {
		if (into->count > 0) {
			into->min = fmin(into->min, from->min);
			into->max = fmax(into->max, from->max);
		} else {
			into->min = from->min;
			into->max = from->max;
		}
		into->last = from->last;
	}
	into->count += from->count;
	into->sum += from->sum;
	return 0;
}
