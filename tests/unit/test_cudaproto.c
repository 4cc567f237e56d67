/*
 * test_cudaproto.c - the CUDA hook's frames (src/cuda/cudaproto.c) and the
 * tables' model (src/cuda/cudastat.c): round trips, every malformed field
 * refused with nothing applied, and the statistics' merge exact.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cuda/cudaproto.h"

/* The payload of the one frame in sb (its length prefix checked). */
static const char *payload(const struct strbuf *sb, size_t *len)
{
	int64_t n = cuda_proto_frame_len(sb->buf, sb->len);

	assert_true(n > 0);
	assert_int_equal((size_t)n + CUDA_PROTO_HEADER, sb->len);
	*len = (size_t)n;
	return sb->buf + CUDA_PROTO_HEADER;
}

static void fill(struct cuda_proc *p)
{
	struct cuda_stat *s;

	cuda_proc_init(p);
	p->pid = 4242;
	p->seq = 7;
	p->final = true;
	p->contexts = 2;
	p->dropped = 3;
	s = cuda_proc_add(p, CUDA_STAT_API, "cudaLaunchKernel");
	s->count = 3;
	s->total_ns = 600;
	s->min_ns = 100;
	s->max_ns = 300;
	s->m2_ns2 = 20000;
	s = cuda_proc_add(p, CUDA_STAT_KERNEL, "void at::native::kernel<float, 4>(int, float*)");
	s->count = 1;
	s->total_ns = s->min_ns = s->max_ns = UINT64_MAX / 4;
	s = cuda_proc_add(p, CUDA_STAT_MEMCPY, cuda_memcpy_name(1));
	s->count = 2;
	s->total_ns = 3000;
	s->min_ns = 1000;
	s->max_ns = 2000;
	s->m2_ns2 = 500000;
	s->bytes = 3 << 20;
	s->min_bytes = 1 << 20;
	s->max_bytes = 2 << 20;
	s->m2_bytes2 = 549755813888.0;
}

static void test_snap_round_trip(void **state)
{
	struct cuda_proc p, q;
	struct strbuf sb;
	const char *pl;
	size_t len;

	(void)state;
	fill(&p);
	strbuf_init(&sb, 0);
	assert_int_equal(cuda_proto_snap(&sb, &p), 0);
	pl = payload(&sb, &len);
	cuda_proc_init(&q);
	q.pid = 99;
	q.state = CUDA_PROC_OK;
	assert_int_equal(cuda_proto_parse(pl, len, &q), 0);
	assert_int_equal(q.pid, 99); /* a snapshot does not say who it is */
	assert_int_equal(q.seq, 7);
	assert_true(q.final);
	assert_int_equal(q.contexts, 2);
	assert_int_equal(q.dropped, 3);
	assert_int_equal(q.nstats, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(q.stats[i].kind, p.stats[i].kind);
		assert_string_equal(q.stats[i].name, p.stats[i].name);
		assert_true(q.stats[i].count == p.stats[i].count);
		assert_true(q.stats[i].total_ns == p.stats[i].total_ns);
		assert_true(q.stats[i].min_ns == p.stats[i].min_ns);
		assert_true(q.stats[i].max_ns == p.stats[i].max_ns);
		assert_true(q.stats[i].m2_ns2 == p.stats[i].m2_ns2);
		assert_true(q.stats[i].bytes == p.stats[i].bytes);
		assert_true(q.stats[i].m2_bytes2 == p.stats[i].m2_bytes2);
	}
	assert_string_equal(q.stats[2].name, "[CUDA memcpy HtoD]");
	cuda_proc_release(&p);
	cuda_proc_release(&q);
	strbuf_release(&sb);
}

static void test_hello_status(void **state)
{
	struct cuda_proc p;
	struct strbuf sb;
	const char *pl;
	size_t len;
	enum cuda_msg_type type;

	(void)state;
	strbuf_init(&sb, 0);
	cuda_proc_init(&p);
	/* control characters in a message become blanks: they would split fields */
	assert_int_equal(cuda_proto_hello(&sb, 31337, CUDA_PROC_BUSY, 130001, "held\tby\nnsys"), 0);
	pl = payload(&sb, &len);
	assert_int_equal(cuda_proto_type(pl, len, &type), 0);
	assert_int_equal(type, CUDA_MSG_HELLO);
	assert_int_equal(cuda_proto_parse(pl, len, &p), 0);
	assert_int_equal(p.pid, 31337);
	assert_int_equal(p.state, CUDA_PROC_BUSY);
	assert_int_equal(p.cupti_version, 130001);
	assert_string_equal(p.message, "held by nsys");
	strbuf_reset(&sb);
	assert_int_equal(cuda_proto_status(&sb, CUDA_PROC_ERROR, "cuptiActivityEnable: oops"), 0);
	pl = payload(&sb, &len);
	assert_int_equal(cuda_proto_parse(pl, len, &p), 0);
	assert_int_equal(p.state, CUDA_PROC_ERROR);
	assert_string_equal(p.message, "cuptiActivityEnable: oops");
	assert_int_equal(p.pid, 31337);
	strbuf_release(&sb);
}

static void test_commands(void **state)
{
	struct strbuf sb;
	const char *pl;
	size_t len;
	bool on = false;
	int64_t ms = -1;

	(void)state;
	strbuf_init(&sb, 0);
	assert_int_equal(cuda_proto_on(&sb, 500), 0);
	pl = payload(&sb, &len);
	assert_int_equal(cuda_proto_parse_command(pl, len, &on, &ms), 0);
	assert_true(on);
	assert_int_equal(ms, 500);
	strbuf_reset(&sb);
	assert_int_equal(cuda_proto_off(&sb), 0);
	pl = payload(&sb, &len);
	assert_int_equal(cuda_proto_parse_command(pl, len, &on, &ms), 0);
	assert_false(on);
	assert_int_equal(ms, 0);
	assert_int_equal(cuda_proto_parse_command("on\t0\n", 5, &on, &ms), -EPROTO);
	assert_int_equal(cuda_proto_parse_command("on\t-5\n", 6, &on, &ms), -EPROTO);
	assert_int_equal(cuda_proto_parse_command("on\t5", 4, &on, &ms), -EPROTO);
	assert_int_equal(cuda_proto_parse_command("off\nx", 5, &on, &ms), -EPROTO);
	strbuf_release(&sb);
}

static void test_frame_len(void **state)
{
	unsigned char big[4] = {0x01, 0x00, 0x00, 0x01}; /* 16 MiB + 1 */
	unsigned char ok[4] = {0x10, 0x00, 0x00, 0x00};

	(void)state;
	assert_int_equal(cuda_proto_frame_len(ok, 3), 0);
	assert_int_equal(cuda_proto_frame_len(ok, 4), 16);
	assert_int_equal(cuda_proto_frame_len(big, 4), -EMSGSIZE);
}

/* Every malformed snapshot is refused, and the previous one stays whole. */
static void test_bad_snaps(void **state)
{
	static const char *const bad[] = {
	    "snap\t1\t0\t0\n",						/* a field short */
	    "snap\t1\t2\t0\t0\n",					/* final not 0/1 */
	    "snap\tx\t0\t0\t0\n",					/* not a number */
	    "snap\t1\t0\t0\t0",						/* no newline */
	    "snap\t1\t0\t0\t0\nkernel\t1\t5\t5\t5\t0\t0\t0\t0\t0\tk",	/* line unended */
	    "snap\t1\t0\t0\t0\nwarp\t1\t5\t5\t5\t0\t0\t0\t0\t0\tk\n",	/* unknown kind */
	    "snap\t1\t0\t0\t0\nkernel\t0\t5\t5\t5\t0\t0\t0\t0\t0\tk\n", /* count 0 */
	    "snap\t1\t0\t0\t0\nkernel\t1\t5\t6\t5\t0\t0\t0\t0\t0\tk\n", /* min > max */
	    "snap\t1\t0\t0\t0\nkernel\t2\t5\t1\t6\t0\t0\t0\t0\t0\tk\n", /* max > total */
	    "snap\t1\t0\t0\t0\nkernel\t1\t5\t5\t5\tnan\t0\t0\t0\t0\tk\n", /* m2 not finite */
	    "snap\t1\t0\t0\t0\nkernel\t1\t5\t5\t5\t-1\t0\t0\t0\t0\tk\n",	/* m2 negative */
	    "snap\t1\t0\t0\t0\nkernel\t1\t5\t5\t5\t0\t0\t0\t0\t0\t\n",	/* no name */
	    "snap\t1\t0\t0\t0\nkernel\t1\t18446744073709551616\t5\t5\t0\t0\t0\t0\t0\tk\n",
	    "snap\t1\t0\t4294967296\t0\n", /* contexts above 32 bits */
	    /* a tab in a name (the encoder never writes one) */
	    "snap\t1\t0\t0\t0\nkernel\t1\t5\t5\t5\t0\t0\t0\t0\t0\tk\tx\n",
	};
	struct cuda_proc p;
	struct strbuf sb;
	const char *pl;
	size_t len;

	(void)state;
	fill(&p);
	strbuf_init(&sb, 0);
	assert_int_equal(cuda_proto_snap(&sb, &p), 0);
	cuda_proc_release(&p);
	cuda_proc_init(&p);
	pl = payload(&sb, &len);
	assert_int_equal(cuda_proto_parse(pl, len, &p), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cuda_proto_parse(bad[i], strlen(bad[i]), &p), -EPROTO);
		assert_int_equal(p.nstats, 3);
		assert_int_equal(p.seq, 7);
	}
	assert_int_equal(cuda_proto_parse("hello\t2\t5\tok\t0\t\n", 16, &p), -EPROTO); /* version */
	assert_int_equal(cuda_proto_parse("hello\t1\t0\tok\t0\t\n", 16, &p), -EPROTO); /* pid 0 */
	assert_int_equal(cuda_proto_parse("hello\t1\t5\tfine\t0\t\n", 18, &p), -EPROTO);
	assert_int_equal(cuda_proto_parse("on\t5\n", 5, &p), -EPROTO); /* a command */
	cuda_proc_release(&p);
	strbuf_release(&sb);
}

static void test_long_name_cut(void **state)
{
	struct cuda_proc p, q;
	struct cuda_stat *s;
	struct strbuf sb;
	char *name = malloc(CUDA_NAME_MAX + 100);
	const char *pl;
	size_t len;

	(void)state;
	memset(name, 'k', CUDA_NAME_MAX + 99);
	name[CUDA_NAME_MAX + 99] = '\0';
	cuda_proc_init(&p);
	s = cuda_proc_add(&p, CUDA_STAT_KERNEL, name);
	assert_int_equal(strlen(s->name), CUDA_NAME_MAX - 1);
	s->count = 1;
	strbuf_init(&sb, 0);
	assert_int_equal(cuda_proto_snap(&sb, &p), 0);
	pl = payload(&sb, &len);
	cuda_proc_init(&q);
	assert_int_equal(cuda_proto_parse(pl, len, &q), 0);
	assert_int_equal(strlen(q.stats[0].name), CUDA_NAME_MAX - 1);
	cuda_proc_release(&p);
	cuda_proc_release(&q);
	strbuf_release(&sb);
	free(name);
}

/* Count, total and extremes of n durations, computed directly. */
static struct cuda_stat stat_of(const uint64_t *v, size_t n)
{
	struct cuda_stat s = {.count = n, .min_ns = v[0], .max_ns = v[0]};

	for (size_t i = 0; i < n; i++) {
		s.total_ns += v[i];
		s.min_ns = v[i] < s.min_ns ? v[i] : s.min_ns;
		s.max_ns = v[i] > s.max_ns ? v[i] : s.max_ns;
	}
	return s;
}

/* Their squared deviations from mean, summed. */
static double m2_about(const uint64_t *v, size_t n, double mean)
{
	double m2 = 0;

	for (size_t i = 0; i < n; i++)
		m2 += (v[i] - mean) * (v[i] - mean);
	return m2;
}

/* Merged stats equal those computed directly from all the values. */
static void test_merge_exact(void **state)
{
	static const uint64_t a[] = {100, 250, 175, 90};
	static const uint64_t b[] = {1000, 10, 333};
	struct cuda_stat sa = stat_of(a, 4), sb_ = stat_of(b, 3), all = {0};
	double mean, m2;

	(void)state;
	sa.m2_ns2 = m2_about(a, 4, (double)sa.total_ns / 4);
	sb_.m2_ns2 = m2_about(b, 3, (double)sb_.total_ns / 3);
	cuda_stat_merge(&all, &sa);
	cuda_stat_merge(&all, &sb_);
	assert_int_equal(all.count, 7);
	assert_int_equal(all.total_ns, 1958);
	assert_int_equal(all.min_ns, 10);
	assert_int_equal(all.max_ns, 1000);
	mean = 1958.0 / 7;
	m2 = m2_about(a, 4, mean) + m2_about(b, 3, mean);
	assert_true(fabs(all.m2_ns2 - m2) < 1e-6);
	assert_true(fabs(cuda_stat_stddev_ns(&all) - sqrt(m2 / 6)) < 1e-9);
	sa.count = 1;
	assert_true(cuda_stat_stddev_ns(&sa) == 0);
}

static void test_names(void **state)
{
	enum cuda_stat_kind k;
	enum cuda_proc_state st;

	(void)state;
	assert_string_equal(cuda_memcpy_name(2), "[CUDA memcpy DtoH]");
	assert_string_equal(cuda_memcpy_name(8), "[CUDA memcpy DtoD]");
	assert_string_equal(cuda_memcpy_name(10), "[CUDA memcpy PtoP]");
	assert_string_equal(cuda_memcpy_name(99), "[CUDA memcpy Unknown]");
	assert_int_equal(cuda_stat_kind_parse("memset", &k), 0);
	assert_int_equal(k, CUDA_STAT_MEMSET);
	assert_int_equal(cuda_stat_kind_parse("Memset", &k), -EINVAL);
	assert_int_equal(cuda_proc_state_parse("no_cupti", &st), 0);
	assert_int_equal(st, CUDA_PROC_NO_CUPTI);
	assert_string_equal(cuda_proc_state_name(CUDA_PROC_OFF), "off");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snap_round_trip), cmocka_unit_test(test_hello_status),
	    cmocka_unit_test(test_commands),	    cmocka_unit_test(test_frame_len),
	    cmocka_unit_test(test_bad_snaps),	    cmocka_unit_test(test_long_name_cut),
	    cmocka_unit_test(test_merge_exact),	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
