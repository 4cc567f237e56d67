/*
 * cudaproto.c - the CUDA hook's frames (cudaproto.h): encoders used by the
 * hook and the receiver, and the parsers of untrusted payloads.
 *
 * A frame is encoded in place: 4 bytes are reserved for the length, the
 * payload appended, the length written last.  Parsing splits a payload
 * into lines and each line into tab-separated fields; a snapshot is parsed
 * into a fresh cuda_proc and moved into the caller's only when all of it
 * was good.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/scan.h"
#include "cuda/cudaproto.h"

#define MAX_FIELDS 12

static int frame_begin(struct strbuf *out, size_t *at)
{
	static const char zero[CUDA_PROTO_HEADER];

	*at = out->len;
	return strbuf_add(out, zero, sizeof(zero));
}

/* Writes the payload's length into the prefix; an oversized frame is taken back. */
static int frame_end(struct strbuf *out, size_t at, int ret)
{
	size_t len = out->len - at - CUDA_PROTO_HEADER;

	if (!ret && len > CUDA_PROTO_MAX_FRAME)
		ret = -EMSGSIZE;
	if (ret) {
		out->len = at;
		if (out->buf)
			out->buf[at] = '\0';
		return ret;
	}
	for (int i = 0; i < CUDA_PROTO_HEADER; i++)
		out->buf[at + (size_t)i] = (char)((len >> (8 * i)) & 0xff);
	return 0;
}

/* s with tabs, newlines and other control bytes as blanks (they would split fields). */
static int add_clean(struct strbuf *out, const char *s, size_t max)
{
	size_t start = out->len, n = strnlen(s ? s : "", max);
	int ret = strbuf_add(out, s ? s : "", n);

	if (ret)
		return ret;
	for (size_t i = start; i < out->len; i++)
		if ((unsigned char)out->buf[i] < 0x20 || out->buf[i] == 0x7f)
			out->buf[i] = ' ';
	return 0;
}

int cuda_proto_hello(struct strbuf *out, int32_t pid, enum cuda_proc_state state,
		     uint32_t cupti_version, const char *message)
{
	size_t at;
	int ret = frame_begin(out, &at);

	if (!ret)
		ret = strbuf_addf(out, "hello\t%d\t%" PRId32 "\t%s\t%" PRIu32 "\t",
				  CUDA_PROTO_VERSION, pid, cuda_proc_state_name(state),
				  cupti_version);
	if (!ret)
		ret = add_clean(out, message, 255);
	if (!ret)
		ret = strbuf_addch(out, '\n');
	return frame_end(out, at, ret);
}

int cuda_proto_status(struct strbuf *out, enum cuda_proc_state state, const char *message)
{
	size_t at;
	int ret = frame_begin(out, &at);

	if (!ret)
		ret = strbuf_addf(out, "status\t%s\t", cuda_proc_state_name(state));
	if (!ret)
		ret = add_clean(out, message, 255);
	if (!ret)
		ret = strbuf_addch(out, '\n');
	return frame_end(out, at, ret);
}

int cuda_proto_snap(struct strbuf *out, const struct cuda_proc *p)
{
	size_t at;
	int ret = frame_begin(out, &at);

	if (!ret)
		ret = strbuf_addf(out, "snap\t%" PRIu64 "\t%d\t%" PRIu32 "\t%" PRIu64 "\n", p->seq,
				  p->final ? 1 : 0, p->contexts, p->dropped);
	for (size_t i = 0; !ret && i < p->nstats && i < CUDA_PROTO_MAX_STATS; i++) {
		const struct cuda_stat *s = &p->stats[i];

		ret = strbuf_addf(out,
				  "%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
				  "\t%.17g\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.17g\t",
				  cuda_stat_kind_name(s->kind), s->count, s->total_ns, s->min_ns,
				  s->max_ns, s->m2_ns2, s->bytes, s->min_bytes, s->max_bytes,
				  s->m2_bytes2);
		if (!ret)
			ret = add_clean(out, s->name, CUDA_NAME_MAX - 1);
		if (!ret)
			ret = strbuf_addch(out, '\n');
	}
	return frame_end(out, at, ret);
}

int cuda_proto_on(struct strbuf *out, int64_t interval_ms)
{
	size_t at;
	int ret = frame_begin(out, &at);

	if (!ret)
		ret = strbuf_addf(out, "on\t%" PRId64 "\n", interval_ms);
	return frame_end(out, at, ret);
}

int cuda_proto_off(struct strbuf *out)
{
	size_t at;
	int ret = frame_begin(out, &at);

	if (!ret)
		ret = strbuf_addstr(out, "off\n");
	return frame_end(out, at, ret);
}

int64_t cuda_proto_frame_len(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	uint32_t n = 0;

	if (len < CUDA_PROTO_HEADER)
		return 0;
	for (int i = 0; i < CUDA_PROTO_HEADER; i++)
		n |= (uint32_t)b[i] << (8 * i);
	if (n > CUDA_PROTO_MAX_FRAME)
		return -EMSGSIZE;
	return n;
}

/* Splits [s, end) at tabs; the last field takes the rest.  The count. */
static int split(const char *s, const char *end, struct scan *f, int max)
{
	int n = 0;

	while (n < max - 1) {
		const char *tab = memchr(s, '\t', (size_t)(end - s));

		if (!tab)
			break;
		f[n++] = (struct scan){s, tab};
		s = tab + 1;
	}
	f[n++] = (struct scan){s, end};
	return n;
}

/* Decimal digits alone, 20 at most (a 64-bit value, no padding). */
static int field_u64(const struct scan *f, uint64_t *out)
{
	return span_len(f) <= 20 && span_u64(f, out) ? 0 : -EPROTO;
}

static int field_u32(const struct scan *f, uint32_t *out)
{
	uint64_t v;

	if (field_u64(f, &v) || v > UINT32_MAX)
		return -EPROTO;
	*out = (uint32_t)v;
	return 0;
}

static int field_double(const struct scan *f, double *out)
{
	char buf[64];
	char *end;
	double v;

	if (span_len(f) == 0 || span_len(f) >= sizeof(buf))
		return -EPROTO;
	for (size_t i = 0; i < span_len(f); i++)
		if (!f->pos[i] || !strchr("0123456789.eE+-", f->pos[i]))
			return -EPROTO;
	span_copy(buf, sizeof(buf), f);
	v = strtod(buf, &end);
	if (*end || !isfinite(v) || v < 0)
		return -EPROTO;
	*out = v;
	return 0;
}

/* Text as the encoder writes it: no control byte (a tab would have split it). */
static bool field_clean(const struct scan *f)
{
	for (const char *c = f->pos; c < f->end; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/* A short word (a kind, a state) as a string; -EPROTO if too long or holding a NUL. */
static int field_word(const struct scan *f, char *buf, size_t size)
{
	return memchr(f->pos, '\0', span_len(f)) || !span_copy(buf, size, f) ? -EPROTO : 0;
}

static int field_state(const struct scan *f, enum cuda_proc_state *state)
{
	char word[16];

	return field_word(f, word, sizeof(word)) || cuda_proc_state_parse(word, state) ? -EPROTO
										       : 0;
}

static int field_kind(const struct scan *f, enum cuda_stat_kind *kind)
{
	char word[16];

	return field_word(f, word, sizeof(word)) || cuda_stat_kind_parse(word, kind) ? -EPROTO : 0;
}

int cuda_proto_type(const char *payload, size_t len, enum cuda_msg_type *type)
{
	static const struct {
		const char *word;
		enum cuda_msg_type type;
	} types[] = {
	    {"hello\t", CUDA_MSG_HELLO}, {"status\t", CUDA_MSG_STATUS}, {"snap\t", CUDA_MSG_SNAP},
	    {"on\t", CUDA_MSG_ON},	 {"off\n", CUDA_MSG_OFF},
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t n = strlen(types[i].word);

		if (len >= n && memcmp(payload, types[i].word, n) == 0) {
			*type = types[i].type;
			return 0;
		}
	}
	return -EPROTO;
}

/* The first line of a payload (it must end in '\n'); the rest after it. */
static int first_line(const char *payload, size_t len, const char **end, const char **rest)
{
	const char *nl = memchr(payload, '\n', len);

	if (!nl)
		return -EPROTO;
	*end = nl;
	*rest = nl + 1;
	return 0;
}

static int parse_hello(const char *s, const char *end, struct cuda_proc *p)
{
	struct scan f[MAX_FIELDS];
	uint32_t version, pid, cupti;
	enum cuda_proc_state state;

	if (split(s, end, f, 6) != 6 || !span_eq(&f[0], "hello") || field_u32(&f[1], &version) ||
	    version != CUDA_PROTO_VERSION || field_u32(&f[2], &pid) || pid == 0 ||
	    pid > INT32_MAX || field_state(&f[3], &state) || field_u32(&f[4], &cupti) ||
	    span_len(&f[5]) >= sizeof(p->message) || !field_clean(&f[5]))
		return -EPROTO;
	p->pid = (int32_t)pid;
	p->state = state;
	p->cupti_version = cupti;
	span_copy(p->message, sizeof(p->message), &f[5]);
	return 0;
}

static int parse_status(const char *s, const char *end, struct cuda_proc *p)
{
	struct scan f[MAX_FIELDS];
	enum cuda_proc_state state;

	if (split(s, end, f, 3) != 3 || !span_eq(&f[0], "status") || field_state(&f[1], &state) ||
	    span_len(&f[2]) >= sizeof(p->message) || !field_clean(&f[2]))
		return -EPROTO;
	p->state = state;
	span_copy(p->message, sizeof(p->message), &f[2]);
	return 0;
}

static int parse_stat(const char *s, const char *end, struct cuda_proc *into)
{
	struct scan f[MAX_FIELDS];
	enum cuda_stat_kind kind;
	struct cuda_stat v, *st;
	char *name;

	memset(&v, 0, sizeof(v));
	if (split(s, end, f, 11) != 11 || field_kind(&f[0], &kind) || field_u64(&f[1], &v.count) ||
	    v.count == 0 || field_u64(&f[2], &v.total_ns) || field_u64(&f[3], &v.min_ns) ||
	    field_u64(&f[4], &v.max_ns) || field_double(&f[5], &v.m2_ns2) ||
	    field_u64(&f[6], &v.bytes) || field_u64(&f[7], &v.min_bytes) ||
	    field_u64(&f[8], &v.max_bytes) || field_double(&f[9], &v.m2_bytes2) ||
	    span_len(&f[10]) == 0 || span_len(&f[10]) >= CUDA_NAME_MAX || !field_clean(&f[10]))
		return -EPROTO;
	/* what one process's records can add up to */
	if (v.min_ns > v.max_ns || v.max_ns > v.total_ns || v.min_bytes > v.max_bytes ||
	    v.max_bytes > v.bytes)
		return -EPROTO;
	name = malloc(span_len(&f[10]) + 1);
	if (!name)
		return -ENOMEM;
	span_copy(name, span_len(&f[10]) + 1, &f[10]);
	st = cuda_proc_add(into, kind, name);
	free(name);
	if (!st)
		return -ENOMEM;
	v.kind = kind;
	v.name = st->name;
	*st = v;
	return 0;
}

static int parse_snap(const char *s, const char *end, const char *rest, const char *stop,
		      struct cuda_proc *p)
{
	struct scan f[MAX_FIELDS];
	struct cuda_proc fresh;
	uint64_t seq, final;
	uint32_t contexts;
	uint64_t dropped;
	int ret = 0;

	if (split(s, end, f, 5) != 5 || !span_eq(&f[0], "snap") || field_u64(&f[1], &seq) ||
	    field_u64(&f[2], &final) || final > 1 || field_u32(&f[3], &contexts) ||
	    field_u64(&f[4], &dropped))
		return -EPROTO;
	cuda_proc_init(&fresh);
	while (rest < stop) {
		const char *nl = memchr(rest, '\n', (size_t)(stop - rest));

		if (!nl || fresh.nstats >= CUDA_PROTO_MAX_STATS) {
			ret = -EPROTO;
			break;
		}
		ret = parse_stat(rest, nl, &fresh);
		if (ret)
			break;
		rest = nl + 1;
	}
	if (ret) {
		cuda_proc_release(&fresh);
		return ret == -ENOMEM ? ret : -EPROTO;
	}
	/* the header's fields survive the move: keep p's identity */
	fresh.pid = p->pid;
	fresh.state = p->state;
	fresh.cupti_version = p->cupti_version;
	memcpy(fresh.message, p->message, sizeof(fresh.message));
	fresh.seq = seq;
	fresh.final = final == 1;
	fresh.contexts = contexts;
	fresh.dropped = dropped;
	cuda_proc_move(p, &fresh);
	return 0;
}

int cuda_proto_parse(const char *payload, size_t len, struct cuda_proc *p)
{
	enum cuda_msg_type type;
	const char *end, *rest;

	if (cuda_proto_type(payload, len, &type) || first_line(payload, len, &end, &rest))
		return -EPROTO;
	switch (type) {
	case CUDA_MSG_HELLO:
		return rest == payload + len ? parse_hello(payload, end, p) : -EPROTO;
	case CUDA_MSG_STATUS:
		return rest == payload + len ? parse_status(payload, end, p) : -EPROTO;
	case CUDA_MSG_SNAP:
		return parse_snap(payload, end, rest, payload + len, p);
	default:
		return -EPROTO;
	}
}

int cuda_proto_parse_command(const char *payload, size_t len, bool *on, int64_t *interval_ms)
{
	struct scan f[MAX_FIELDS];
	enum cuda_msg_type type;
	const char *end, *rest;
	uint64_t ms;

	if (cuda_proto_type(payload, len, &type) || first_line(payload, len, &end, &rest) ||
	    rest != payload + len)
		return -EPROTO;
	if (type == CUDA_MSG_OFF) {
		*on = false;
		*interval_ms = 0;
		return 0;
	}
	if (type != CUDA_MSG_ON || split(payload, end, f, 2) != 2 || field_u64(&f[1], &ms) ||
	    ms == 0 || ms > 86400000)
		return -EPROTO;
	*on = true;
	*interval_ms = (int64_t)ms;
	return 0;
}
