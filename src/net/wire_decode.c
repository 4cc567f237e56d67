/*
 * wire_decode.c - the head's decoder of an ingest batch (wire.h,
 * docs/wire.md): one pass over a copy of the body, each table's rows
 * straight into the batch's row set, strings unescaped in place in that
 * copy (the cells point there), no tree and no allocation per value.
 *
 * It takes what the decoder over cJSON's tree took and refuses the rest
 * with the same messages, in the same order: a body that is not JSON
 * first, then the batch's fields (version, agent_id, node, the seqs), then
 * its tables in their order.  A field given twice: its first; a string's
 * \u0000 ends it (as cJSON's C strings did).  Where the two differ: an
 * integer is read exactly up to int64's range (cJSON rounded past 2^53 to a
 * double); numbers must be JSON's ("01", "+1", ".5" are not), and nothing
 * but white space may follow the object (cJSON ignored what did).
 *
 *   struct jp, ws, parse_str, parse_num, skip   the JSON reader
 *   parse_field, parse_node                     the batch's fields
 *   parse_rows, parse_table, parse_tables       its tables
 *   wire_decode_batch                           the checks, in order
 */
#include "net/wire.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define JP_MAX_DEPTH 512 /* nesting in what is skipped (cJSON took 1000) */

/* The reader over the body's copy (NUL after its last byte). */
struct jp {
	char *p, *end;
	bool bad; /* not JSON */
};

static void ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

/* The next byte (after white space) is c: taken. */
static bool take(struct jp *j, char c)
{
	ws(j);
	if (*j->p != c)
		return false;
	j->p++;
	return true;
}

static bool lit(struct jp *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return false;
	j->p += n;
	return true;
}

static int hex4(const char *s)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static char *put_utf8(char *w, unsigned cp)
{
	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xc0 | (cp >> 6));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xe0 | (cp >> 12));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*w++ = (char)(0xf0 | (cp >> 18));
		*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	}
	return w;
}

/*
 * A string at j->p ('"'): checked, and with out unescaped where it lies
 * (never longer than its JSON) and NUL-terminated, *out and *len (up to a
 * \u0000, as a C string ends); without out only checked, the bytes left
 * as they are (so that they can be read again).  False, and j->bad, for
 * one that is not JSON's.
 */
static bool scan_str(struct jp *j, char **out, size_t *len)
{
	char *r = j->p + 1, *w = r;

	for (;;) {
		char c = *r;
		int cp, lo;

		if (r >= j->end)
			break; /* unterminated */
		if (c == '"') {
			if (out) {
				*w = '\0';
				*out = j->p + 1;
				*len = strlen(*out);
			}
			j->p = r + 1;
			return true;
		}
		if (c != '\\') {
			if (out)
				*w = c;
			w++;
			r++;
			continue;
		}
		switch (r[1]) {
		case '"':
		case '\\':
		case '/':
			c = r[1];
			break;
		case 'b':
			c = '\b';
			break;
		case 'f':
			c = '\f';
			break;
		case 'n':
			c = '\n';
			break;
		case 'r':
			c = '\r';
			break;
		case 't':
			c = '\t';
			break;
		case 'u':
			c = 0;
			break;
		default:
			j->bad = true;
			return false;
		}
		if (c) {
			if (out)
				*w = c;
			w++;
			r += 2;
			continue;
		}
		if (j->end - r < 6 || (cp = hex4(r + 2)) < 0)
			break;
		r += 6;
		if (cp >= 0xdc00 && cp <= 0xdfff)
			break; /* a low surrogate alone */
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (j->end - r < 6 || r[0] != '\\' || r[1] != 'u' ||
			    (lo = hex4(r + 2)) < 0 || lo < 0xdc00 || lo > 0xdfff)
				break; /* a high surrogate without its low one */
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			r += 6;
		}
		if (out) {
			w = put_utf8(w, (unsigned)cp);
		} else {
			char tmp[4];

			w += put_utf8(tmp, (unsigned)cp) - tmp;
		}
	}
	j->bad = true;
	return false;
}

static bool parse_str(struct jp *j, char **out, size_t *len)
{
	return scan_str(j, out, len);
}

static bool check_str(struct jp *j)
{
	return scan_str(j, NULL, NULL);
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

/* 10^k for the exact path of parse_num: every one a double exactly */
static const double exact_pow10[] = {1e0,  1e1,	 1e2,  1e3,  1e4,  1e5,	 1e6,  1e7,
				     1e8,  1e9,	 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * A JSON number at j->p into v: INT when it is an integer (read exactly
 * within int64, or a real's integral value within +-2^53, as the decoder
 * over cJSON took it), else REAL.  1; 0 for a real too large to be finite
 * (v untouched); -1, and j->bad, for one that is not JSON's.
 */
static int parse_num(struct jp *j, struct store_value *v)
{
	const char *s = j->p, *q = s;
	uint64_t mant = 0;
	int sig = 0, frac_digits = 0, exp10 = 0;
	bool neg = *q == '-', frac = false, expo = false;
	double d;

	if (neg)
		q++;
	if (!digit(*q) || (*q == '0' && digit(q[1])))
		goto bad;
	/* the significant digits, up to 19 of them exactly */
	for (; digit(*q); q++)
		if ((sig += mant || *q != '0') <= 19)
			mant = mant * 10 + (uint64_t)(*q - '0');
	if (*q == '.') {
		frac = true;
		if (!digit(*++q))
			goto bad;
		for (; digit(*q); q++, frac_digits++)
			if ((sig += mant || *q != '0') <= 19)
				mant = mant * 10 + (uint64_t)(*q - '0');
	}
	if (*q == 'e' || *q == 'E') {
		bool eneg;

		expo = true;
		q++;
		eneg = *q == '-';
		if (*q == '+' || *q == '-')
			q++;
		if (!digit(*q))
			goto bad;
		for (; digit(*q); q++)
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (*q - '0');
		if (eneg)
			exp10 = -exp10;
	}
	j->p = (char *)q;
	if (!frac && !expo && sig <= 19 &&
	    (neg ? mant <= (uint64_t)INT64_MAX + 1 : mant <= (uint64_t)INT64_MAX)) {
		v->type = STORE_VALUE_INT;
		v->i = neg ? (int64_t)(0 - mant) : (int64_t)mant;
		return 1;
	}
	exp10 -= frac_digits;
	/* both exact and one rounding: the correctly rounded double, as strtod's */
	if (sig <= 19 && mant <= (1ULL << 53) && exp10 >= -22 && exp10 <= 22) {
		d = exp10 < 0 ? (double)mant / exact_pow10[-exp10]
			      : (double)mant * exact_pow10[exp10];
		if (neg)
			d = -d;
	} else {
		d = strtod(s, NULL); /* the span is JSON's number: strtod reads the same */
	}
	if (!isfinite(d))
		return 0;
	if (d == floor(d) && d >= -9007199254740992.0 && d <= 9007199254740992.0) {
		v->type = STORE_VALUE_INT;
		v->i = (int64_t)d;
	} else {
		v->type = STORE_VALUE_REAL;
		v->d = d;
	}
	return 1;
bad:
	j->bad = true;
	return -1;
}

/* Any value, checked and passed over (its bytes left as they are). */
static bool skip(struct jp *j, int depth)
{
	struct store_value v;

	ws(j);
	if (depth > JP_MAX_DEPTH) {
		j->bad = true;
		return false;
	}
	switch (*j->p) {
	case '"':
		return check_str(j);
	case '{':
		j->p++;
		if (take(j, '}'))
			return true;
		do {
			ws(j);
			if (*j->p != '"' || !check_str(j) || !take(j, ':') || !skip(j, depth + 1))
				goto bad;
		} while (take(j, ','));
		if (take(j, '}'))
			return true;
		goto bad;
	case '[':
		j->p++;
		if (take(j, ']'))
			return true;
		do {
			if (!skip(j, depth + 1))
				goto bad;
		} while (take(j, ','));
		if (take(j, ']'))
			return true;
		goto bad;
	case 't':
		if (lit(j, "true"))
			return true;
		goto bad;
	case 'f':
		if (lit(j, "false"))
			return true;
		goto bad;
	case 'n':
		if (lit(j, "null"))
			return true;
		goto bad;
	default:
		if (*j->p == '-' || digit(*j->p))
			return parse_num(j, &v) >= 0;
		goto bad;
	}
bad:
	j->bad = true;
	return false;
}

/* A field of the batch: a number, a string, or something else (skipped). */
struct field {
	bool seen;
	enum { F_OTHER, F_NUM, F_STR } type;
	struct store_value v; /* F_NUM: INT or REAL; F_STR: s, len */
};

static bool parse_field(struct jp *j, struct field *f)
{
	char *s;
	size_t n;

	ws(j);
	if (f->seen) /* cJSON's lookup found the first */
		return skip(j, 0);
	f->seen = true;
	f->type = F_OTHER;
	if (*j->p == '"') {
		if (!parse_str(j, &s, &n))
			return false;
		f->type = F_STR;
		f->v.s = s;
		f->v.len = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
		return true;
	}
	if (*j->p == '-' || digit(*j->p)) {
		int got = parse_num(j, &f->v);

		if (got < 0)
			return false;
		f->type = got ? F_NUM : F_OTHER; /* not finite: no integer */
		return true;
	}
	return skip(j, 0);
}

/* An integer field (a real's integral value within +-2^53 is one). */
static bool field_int(const struct field *f, int64_t *out)
{
	if (!f->seen || f->type != F_NUM || f->v.type != STORE_VALUE_INT)
		return false;
	*out = f->v.i;
	return true;
}

/* A string field that fits size (with its NUL), copied. */
static bool field_str(const struct field *f, char *buf, size_t size)
{
	if (!f->seen || f->type != F_STR || f->v.len >= size)
		return false;
	memcpy(buf, f->v.s, f->v.len);
	buf[f->v.len] = '\0';
	return true;
}

enum { F_VERSION, F_AGENT, F_INTERVAL, F_FROM, F_TO, F_MAX, F_HOST, F_CORES, F_MEM, F_BOOT, F__N };

struct fields {
	struct field f[F__N];
	bool node_seen, node_object;
	bool tables_seen, tables_object;
};

/*
 * An object at j->p: a member named keys[k] into fields[at[k]] (its first
 * only), any other to other(j, key, arg), or skipped when other is NULL.
 */
static bool parse_members(struct jp *j, const char *const *keys, const int *at,
			  struct field *fields, bool (*other)(struct jp *, const char *, void *),
			  void *arg)
{
	char *key;
	size_t n;

	j->p++; /* '{' */
	if (take(j, '}'))
		return true;
	do {
		int k = 0;

		ws(j);
		if (*j->p != '"' || !parse_str(j, &key, &n) || !take(j, ':'))
			goto bad;
		while (keys[k] && strcmp(keys[k], key) != 0)
			k++;
		if (keys[k] ? !parse_field(j, &fields[at[k]])
		    : other ? !other(j, key, arg)
			    : !skip(j, 0))
			goto bad;
	} while (take(j, ','));
	if (take(j, '}'))
		return true;
bad:
	j->bad = true;
	return false;
}

static bool parse_node(struct jp *j, struct fields *fs)
{
	static const char *const keys[] = {"hostname", "cores", "mem_total_bytes", "boot_ms", NULL};
	static const int at[] = {F_HOST, F_CORES, F_MEM, F_BOOT};

	ws(j);
	if (fs->node_seen)
		return skip(j, 0);
	fs->node_seen = true;
	fs->node_object = *j->p == '{';
	return fs->node_object ? parse_members(j, keys, at, fs->f, NULL, NULL) : skip(j, 0);
}

/* The tables' decoding: the first refusal (then values are only read), rows so far. */
struct tables_ctx {
	struct wire_batch *wb;
	char *msg;
	size_t size;
	int ret; /* -EINVAL with msg, or -ENOMEM / -E2BIG: the first */
	size_t total_rows;
};

static bool refuse(struct tables_ctx *c, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool refuse(struct tables_ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	if (!c->ret) {
		c->ret = ret;
		if (fmt) {
			va_start(ap, fmt);
			vsnprintf(c->msg, c->size, fmt, ap);
			va_end(ap);
		}
	}
	return true; /* the JSON reads on */
}

/* Table and column names: lower case letters, digits and '_', as ours are. */
static bool is_name(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
			return false;
	return n < max;
}

/* One cell: a number, a string or null (anything else is refused). */
static bool parse_cell(struct jp *j, struct tables_ctx *c, const struct store_table *t, size_t r,
		       struct store_value *out)
{
	char *s;
	size_t n;

	ws(j);
	switch (*j->p) {
	case '"':
		if (!parse_str(j, &s, &n))
			return false;
		out->type = STORE_VALUE_TEXT;
		out->s = s;
		out->len = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
		return true;
	case 'n':
		if (!lit(j, "null")) {
			j->bad = true;
			return false;
		}
		out->type = STORE_VALUE_NULL;
		return true;
	default:
		if (*j->p == '-' || digit(*j->p)) {
			int got = parse_num(j, out);

			if (got < 0)
				return false;
			if (got)
				return true;
		} else if (!skip(j, 0)) {
			return false;
		}
		out->type = STORE_VALUE_NULL;
		return refuse(c, -EINVAL,
			      "%s: row %zu: a value that is not a number, a string or null",
			      t->name, r);
	}
}

/* rows: [[v, ...], ...] into t (or only read, once something was refused). */
static bool parse_rows(struct jp *j, struct tables_ctx *c, struct store_table *t)
{
	struct store_rowset *rs = &c->wb->b.rows;
	size_t r = 0;

	j->p++; /* '[' */
	if (take(j, ']'))
		return true;
	do {
		struct store_value *cells = NULL, scratch;
		int k = 0;

		ws(j);
		if (*j->p != '[') {
			if (!skip(j, 0))
				return false;
			refuse(c, -EINVAL, "%s: row %zu does not have %d values", t->name, r,
			       t->ncols);
			r++;
			continue;
		}
		if (!c->ret && ++c->total_rows > WIRE_MAX_ROWS)
			refuse(c, -EINVAL, "more than %u rows in one batch", WIRE_MAX_ROWS);
		if (!c->ret) {
			int ret = store_rowset_add_row(rs, t, &cells);

			if (ret)
				refuse(c, ret, NULL);
		}
		j->p++;
		if (!take(j, ']')) {
			do {
				if (!parse_cell(j, c, t, r,
						c->ret || k >= t->ncols ? &scratch : &cells[k]))
					return false;
				k++;
			} while (take(j, ','));
			if (!take(j, ']')) {
				j->bad = true;
				return false;
			}
		}
		if (k != t->ncols)
			refuse(c, -EINVAL, "%s: row %zu does not have %d values", t->name, r,
			       t->ncols);
		r++;
	} while (take(j, ','));
	if (take(j, ']'))
		return true;
	j->bad = true;
	return false;
}

/* What a table's columns are: good, or the first problem among them. */
struct columns {
	const char *name[STORE_ROWSET_MAX_COLUMNS];
	uint64_t hash[STORE_ROWSET_MAX_COLUMNS]; /* of each name: compared before it */
	int n;
	enum { COLS_OK, COLS_BAD, COLS_TWICE } status;
	const char *twice; /* COLS_TWICE: the name */
};

/* columns: ["name", ...] (a name of ours each, none twice, up to the most a table has) */
static bool parse_columns(struct jp *j, struct columns *cs)
{
	j->p++; /* '[' */
	if (take(j, ']'))
		return true;
	do {
		char *s;
		size_t len;
		uint64_t h;

		ws(j);
		if (*j->p != '"') {
			if (!skip(j, 0))
				return false;
			if (cs->status == COLS_OK)
				cs->status = COLS_BAD;
			continue;
		}
		if (!parse_str(j, &s, &len))
			return false;
		if (cs->status != COLS_OK)
			continue;
		if (cs->n >= STORE_ROWSET_MAX_COLUMNS || !is_name(s, 64)) {
			cs->status = COLS_BAD;
			continue;
		}
		h = fnv1a(FNV1A_SEED, s, len);
		for (int k = 0; k < cs->n && cs->status == COLS_OK; k++)
			if (cs->hash[k] == h && strcmp(cs->name[k], s) == 0) {
				cs->status = COLS_TWICE;
				cs->twice = s;
			}
		if (cs->status == COLS_OK) {
			cs->hash[cs->n] = h;
			cs->name[cs->n++] = s;
		}
	} while (take(j, ','));
	if (take(j, ']'))
		return true;
	j->bad = true;
	return false;
}

/*
 * The table's checks, in the order the decoder over cJSON made them, once
 * its columns and the kind of its rows are known: 0 and *t added to the
 * row set (rows to read), or refused.
 */
static int table_begin(struct tables_ctx *c, const char *name, const struct columns *cs,
		       bool arrays, struct store_table **t)
{
	int ret;

	*t = NULL;
	if (!arrays)
		return refuse(c, -EINVAL, "%s: columns and rows must be arrays", name), -1;
	if (cs->status == COLS_BAD)
		return refuse(c, -EINVAL, "%s: bad or too many columns", name), -1;
	if (cs->status == COLS_TWICE)
		return refuse(c, -EINVAL, "%s: column %s twice", name, cs->twice), -1;
	if (cs->n == 0)
		return refuse(c, -EINVAL, "%s: no columns", name), -1;
	ret = store_rowset_add_table(&c->wb->b.rows, name, t);
	if (ret)
		return refuse(c, ret, NULL), -1;
	memcpy((*t)->cols, cs->name, (size_t)cs->n * sizeof(cs->name[0]));
	(*t)->ncols = cs->n;
	return 0;
}

/*
 * One table: {"columns": [...], "rows": [...]}.  Rows after the columns
 * (as agents send them) go straight into the row set; rows before them
 * are checked, and read again once the columns are known.
 */
static bool parse_table(struct jp *j, struct tables_ctx *c, const char *name)
{
	struct store_rowset *rs = &c->wb->b.rows;
	struct columns cs = {.n = 0};
	char *rows_at = NULL, *key;
	bool cols_seen = false, cols_array = false, rows_seen = false, rows_array = false;
	struct store_table *t = NULL;
	size_t klen;

	ws(j);
	if (c->ret)
		return skip(j, 0);
	if (rs->ntables >= STORE_ROWSET_MAX_TABLES)
		return refuse(c, -EINVAL, "too many tables") && skip(j, 0);
	if (!is_name(name, sizeof(t->name)) || *j->p != '{')
		return refuse(c, -EINVAL, "tables: a member that is not a table") && skip(j, 0);
	if (store_rowset_table(rs, name))
		return refuse(c, -EINVAL, "table %s twice", name) && skip(j, 0);
	j->p++;
	if (!take(j, '}')) {
		do {
			ws(j);
			if (*j->p != '"' || !parse_str(j, &key, &klen) || !take(j, ':'))
				goto bad;
			ws(j);
			if (strcmp(key, "columns") == 0 && !cols_seen) {
				cols_seen = true;
				cols_array = *j->p == '[';
				if (cols_array ? !parse_columns(j, &cs) : !skip(j, 0))
					goto bad;
			} else if (strcmp(key, "rows") == 0 && !rows_seen) {
				rows_seen = true;
				rows_array = *j->p == '[';
				if (cols_array && rows_array && !c->ret &&
				    table_begin(c, name, &cs, true, &t) == 0) {
					if (!parse_rows(j, c, t))
						goto bad;
				} else {
					rows_at = j->p;
					if (!skip(j, 0))
						goto bad;
				}
			} else if (!skip(j, 0)) {
				goto bad;
			}
		} while (take(j, ','));
		if (!take(j, '}'))
			goto bad;
	}
	if (t || c->ret)
		return true; /* its rows read, or refused */
	if (table_begin(c, name, &cs, cols_array && rows_array, &t) == 0) {
		char *after = j->p;
		bool ok;

		j->p = rows_at; /* checked already: read again, into the row set */
		ok = parse_rows(j, c, t);
		j->p = after;
		return ok;
	}
	return true;
bad:
	j->bad = true;
	return false;
}

static bool parse_tables(struct jp *j, struct tables_ctx *c)
{
	char *name;
	size_t n;

	j->p++; /* '{' */
	if (take(j, '}'))
		return true;
	do {
		ws(j);
		if (*j->p != '"' || !parse_str(j, &name, &n) || !take(j, ':') ||
		    !parse_table(j, c, name))
			goto bad;
	} while (take(j, ','));
	if (take(j, '}'))
		return true;
bad:
	j->bad = true;
	return false;
}

/* The batch's top-level members that are not plain fields: node and tables. */
struct top_ctx {
	struct fields *fs;
	struct tables_ctx *tables;
};

static bool parse_top_other(struct jp *j, const char *key, void *arg)
{
	struct top_ctx *tc = arg;

	ws(j);
	if (strcmp(key, "node") == 0)
		return parse_node(j, tc->fs);
	if (strcmp(key, "tables") != 0 || tc->fs->tables_seen)
		return skip(j, 0);
	tc->fs->tables_seen = true;
	tc->fs->tables_object = *j->p == '{';
	return tc->fs->tables_object ? parse_tables(j, tc->tables) : skip(j, 0);
}

static int fail(char *msg, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *msg, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int wire_decode_batch(const char *body, size_t len, struct wire_batch *wb, char *msg, size_t size)
{
	static const char *const keys[] = {"version", "agent_id", "interval_ms", "from_seq",
					   "to_seq",  "max_seq",  NULL};
	static const int at[] = {F_VERSION, F_AGENT, F_INTERVAL, F_FROM, F_TO, F_MAX};
	struct store_batch *b = &wb->b;
	struct fields fs;
	struct tables_ctx tables = {.wb = wb, .msg = msg, .size = size};
	struct top_ctx top = {&fs, &tables};
	struct jp j;
	int64_t v;

	memset(wb, 0, sizeof(*wb));
	memset(&fs, 0, sizeof(fs));
	store_rowset_init(&b->rows, 0);
	msg[0] = '\0';
	if (len > WIRE_MAX_BODY)
		return fail(msg, size, "batch larger than %u bytes", WIRE_MAX_BODY);
	wb->text = malloc(len + 1);
	if (!wb->text)
		return -ENOMEM;
	memcpy(wb->text, body, len);
	wb->text[len] = '\0';
	j = (struct jp){wb->text, wb->text + len, false};
	ws(&j);
	if (*j.p == '{') {
		parse_members(&j, keys, at, fs.f, parse_top_other, &top);
	} else if (skip(&j, 0) && (ws(&j), j.p == j.end)) {
		return fail(msg, size, "not a JSON object");
	}
	ws(&j);
	if (j.bad || j.p != j.end) {
		msg[0] = '\0';
		return fail(msg, size, "not JSON");
	}
	if (tables.ret && tables.ret != -EINVAL)
		return tables.ret; /* out of memory, or past the row set's cap */
	if (!field_int(&fs.f[F_VERSION], &v) || v != WIRE_VERSION)
		return fail(msg, size, "version must be %d", WIRE_VERSION);
	if (!field_str(&fs.f[F_AGENT], b->who.agent_id, sizeof(b->who.agent_id)) ||
	    !b->who.agent_id[0])
		return fail(msg, size, "agent_id: a string of 1 to %zu bytes",
			    sizeof(b->who.agent_id) - 1);
	if (!fs.node_object ||
	    !field_str(&fs.f[F_HOST], b->who.hostname, sizeof(b->who.hostname)) ||
	    !b->who.hostname[0])
		return fail(msg, size, "node.hostname: a string");
	if (field_int(&fs.f[F_CORES], &v) && v >= 0 && v < 1 << 20)
		b->who.cores = (int32_t)v;
	if (field_int(&fs.f[F_MEM], &v) && v >= 0)
		b->who.mem_total_bytes = (uint64_t)v;
	if (field_int(&fs.f[F_BOOT], &v) && v >= 0)
		b->who.boot_ms = v;
	if (field_int(&fs.f[F_INTERVAL], &v) && v > 0 && v < 86400000)
		b->who.interval_ms = v;
	if (!field_int(&fs.f[F_FROM], &b->from_seq) || !field_int(&fs.f[F_TO], &b->to_seq) ||
	    b->from_seq < 0 || b->to_seq < b->from_seq)
		return fail(msg, size, "from_seq and to_seq: integers, 0 <= from_seq <= to_seq");
	if (field_int(&fs.f[F_MAX], &v) && v >= 0)
		b->max_seq = v; /* informative: the head does not use it */
	if (fs.tables_seen && !fs.tables_object)
		return fail(msg, size, "tables: an object");
	return tables.ret;
}

void wire_batch_release(struct wire_batch *wb)
{
	store_rowset_release(&wb->b.rows);
	free(wb->text);
	memset(wb, 0, sizeof(*wb));
}
