/*
 * test_cudatables.c - a job's CUDA tables (analysis/cudatables.h) and
 * their rendering (report_cuda.c): two processes merged exactly (count,
 * total, extremes, standard deviation against the durations themselves),
 * the order of rows and processes, shares, bandwidth and notes; the text
 * tables character for character, the JSON's values, a 3,000-byte kernel
 * name, and a process that another profiler kept from CUPTI.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analysis/cudatables.h"
#include "analysis/summary.h"
#include "common/jsonw.h"
#include "common/strbuf.h"
#include "report/report.h"

/* A stat of these durations (ns) and, for memory operations, sizes (bytes). */
static void add(struct cuda_proc *p, enum cuda_stat_kind kind, const char *name,
		const uint64_t *ns, const uint64_t *bytes, size_t n)
{
	struct cuda_stat *s = cuda_proc_add(p, kind, name);
	double mean_ns = 0, mean_b = 0;

	assert_non_null(s);
	for (size_t i = 0; i < n; i++) {
		s->total_ns += ns[i];
		s->bytes += bytes ? bytes[i] : 0;
		if (i == 0 || ns[i] < s->min_ns)
			s->min_ns = ns[i];
		if (ns[i] > s->max_ns)
			s->max_ns = ns[i];
		if (bytes && (i == 0 || bytes[i] < s->min_bytes))
			s->min_bytes = bytes[i];
		if (bytes && bytes[i] > s->max_bytes)
			s->max_bytes = bytes[i];
	}
	s->count = n;
	mean_ns = (double)s->total_ns / (double)n;
	mean_b = (double)s->bytes / (double)n;
	for (size_t i = 0; i < n; i++) {
		s->m2_ns2 += ((double)ns[i] - mean_ns) * ((double)ns[i] - mean_ns);
		if (bytes)
			s->m2_bytes2 += ((double)bytes[i] - mean_b) * ((double)bytes[i] - mean_b);
	}
}

#define N(...) ((const uint64_t[]){__VA_ARGS__})
#define LEN(...) (sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))
#define ADD(p, kind, name, ...) add(p, kind, name, N(__VA_ARGS__), NULL, LEN(__VA_ARGS__))

/* Process A (pid 100), B (200), C (300: busy), and the job's note (pid 0). */
static struct cuda_proc *two_procs(size_t *n)
{
	struct cuda_proc *procs = calloc(4, sizeof(*procs));
	struct cuda_proc *a = &procs[2], *b = &procs[0], *c = &procs[3], *j = &procs[1];

	assert_non_null(procs);
	for (int i = 0; i < 4; i++)
		cuda_proc_init(&procs[i]);
	a->pid = 100;
	a->contexts = 1;
	ADD(a, CUDA_STAT_KERNEL, "k1", 10, 20, 30);
	ADD(a, CUDA_STAT_KERNEL, "k2", 1000);
	ADD(a, CUDA_STAT_API, "cudaMalloc", 100, 300);
	add(a, CUDA_STAT_MEMCPY, "[CUDA memcpy HtoD]", N(900, 1100), N(4000000, 4000000), 2);
	b->pid = 200;
	b->contexts = 1;
	b->dropped = 3;
	ADD(b, CUDA_STAT_KERNEL, "k1", 5, 45);
	ADD(b, CUDA_STAT_API, "cudaLaunchKernel", 50);
	add(b, CUDA_STAT_MEMCPY, "[CUDA memcpy DtoH]", N(500), N(1000000), 1);
	add(b, CUDA_STAT_MEMSET, "[CUDA memset]", N(600), N(100), 1);
	c->pid = 300;
	c->state = CUDA_PROC_BUSY;
	snprintf(c->message, sizeof(c->message), "another profiler holds CUPTI");
	j->pid = 0;
	j->state = CUDA_PROC_OFF;
	snprintf(j->message, sizeof(j->message),
		 "--cuda was asked but CUDA_INJECTION64_PATH was already set by another profiler");
	*n = 4;
	return procs;
}

static void test_merge_exact(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *procs;
	const struct cuda_table *k, *api, *mem;
	size_t n;

	(void)state;
	procs = two_procs(&n);
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, procs, n, 10), 0);
	assert_true(t.present);
	assert_int_equal(t.nprocs, 3);
	assert_int_equal(t.procs[0].pid, 100);
	assert_int_equal(t.procs[1].pid, 200);
	assert_int_equal(t.procs[2].pid, 300);
	assert_non_null(t.job_proc);

	/* kernels: k2 (1000) before k1 (10, 20, 30 and 5, 45: 110) */
	k = &t.job.t[CUDA_TABLE_KERNEL];
	assert_int_equal(k->nrows, 2);
	assert_int_equal(k->total_ns, 1110);
	assert_string_equal(k->rows[0].s.name, "k2");
	assert_string_equal(k->rows[1].s.name, "k1");
	assert_int_equal(k->rows[1].s.count, 5);
	assert_int_equal(k->rows[1].s.total_ns, 110);
	assert_int_equal(k->rows[1].s.min_ns, 5);
	assert_int_equal(k->rows[1].s.max_ns, 45);
	/* mean 22: squares of 12, 2, 8, 17, 23 sum to 1030 */
	assert_float_equal(k->rows[1].s.m2_ns2, 1030, 1e-9);
	assert_float_equal(k->rows[1].stddev_ns, sqrt(1030.0 / 4), 1e-9);
	assert_float_equal(k->rows[1].avg_ns, 22, 1e-12);
	assert_float_equal(k->rows[1].time_pct, 100.0 * 110 / 1110, 1e-9);
	/* of 10 ms of wall time */
	assert_float_equal(k->rows[0].wall_pct, 100.0 * 1000 / 1e7, 1e-12);
	assert_true(isnan(k->rows[0].gb_per_s));

	api = &t.job.t[CUDA_TABLE_API];
	assert_int_equal(api->nrows, 2);
	assert_string_equal(api->rows[0].s.name, "cudaMalloc");
	assert_float_equal(api->rows[0].stddev_ns, sqrt(20000.0), 1e-9);
	assert_float_equal(api->rows[0].time_pct, 100.0 * 400 / 450, 1e-9);
	assert_true(isnan(api->rows[0].wall_pct));
	assert_string_equal(api->rows[1].s.name, "cudaLaunchKernel");
	assert_float_equal(api->rows[1].stddev_ns, 0, 0);

	/* memory by time: HtoD 2000, memset 600, DtoH 500; by size: HtoD, DtoH, memset */
	mem = &t.job.t[CUDA_TABLE_MEM];
	assert_int_equal(mem->nrows, 3);
	assert_string_equal(mem->rows[0].s.name, "[CUDA memcpy HtoD]");
	assert_string_equal(mem->rows[1].s.name, "[CUDA memset]");
	assert_string_equal(mem->rows[2].s.name, "[CUDA memcpy DtoH]");
	assert_int_equal(mem->by_size[0], 0);
	assert_int_equal(mem->by_size[1], 2);
	assert_int_equal(mem->by_size[2], 1);
	assert_float_equal(mem->rows[0].gb_per_s, 8e6 / 2000, 1e-9);
	assert_float_equal(mem->rows[0].avg_bytes, 4e6, 0);
	assert_float_equal(mem->rows[0].stddev_bytes, 0, 0);
	assert_float_equal(mem->rows[0].stddev_ns, sqrt(20000.0), 1e-9);

	/* per process: A's k1 alone, and the processes by total time */
	assert_int_equal(t.sets[0].t[CUDA_TABLE_KERNEL].rows[1].s.count, 3);
	assert_float_equal(t.sets[0].t[CUDA_TABLE_KERNEL].rows[1].stddev_ns, 10, 1e-12);
	assert_int_equal(t.sets[0].total_ns, 400 + 1060 + 2000);
	assert_int_equal(t.sets[1].total_ns, 50 + 50 + 500 + 600);
	assert_int_equal(t.sets[2].total_ns, 0);
	assert_int_equal(t.by_time[0], 0);
	assert_int_equal(t.by_time[1], 1);
	assert_int_equal(t.by_time[2], 2);

	assert_int_equal(t.nnotes, 3);
	assert_string_equal(t.notes[0], t.job_proc->message);
	assert_string_equal(t.notes[1], "pid 200: CUPTI dropped 3 records: the tables undercount");
	assert_string_equal(t.notes[2], "pid 300: another profiler holds CUPTI");
	cuda_tables_release(&t);
	assert_false(t.present);
}

static void test_empty(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *note = calloc(1, sizeof(*note));
	struct strbuf out;

	(void)state;
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, NULL, 0, 0), 0);
	assert_false(t.present);
	assert_int_equal(t.nnotes, 0);
	strbuf_init(&out, 0);
	assert_int_equal(report_cuda_text(&t, 0, &out), 0);
	assert_int_equal(out.len, 0);

	/* the job's note alone: present, no process, empty tables */
	assert_non_null(note);
	cuda_proc_init(note);
	note->state = CUDA_PROC_OFF;
	snprintf(note->message, sizeof(note->message), "--cuda: CUDA_INJECTION64_PATH was set");
	assert_int_equal(cuda_tables_build(&t, note, 1, 0), 0);
	assert_true(t.present);
	assert_int_equal(t.nprocs, 0);
	assert_int_equal(report_cuda_text(&t, 0, &out), 0);
	assert_string_equal(strbuf_str(&out),
			    "CUDA      no process sent tables\n"
			    "  note: --cuda: CUDA_INJECTION64_PATH was set\n"
			    "\n"
			    "CUDA API Statistics:\n\n (none)\n\n"
			    "CUDA Kernel Statistics:\n\n (none)\n\n"
			    "CUDA Memory Operation Statistics (by time):\n\n (none)\n\n");
	strbuf_release(&out);
	cuda_tables_release(&t);
}

/* One process like Nsight's example: cudaMalloc's three calls, one kernel, one copy. */
static struct cuda_proc *one_proc(size_t *n)
{
	struct cuda_proc *procs = calloc(1, sizeof(*procs));

	assert_non_null(procs);
	cuda_proc_init(procs);
	procs->pid = 4242;
	procs->contexts = 1;
	procs->cupti_version = 18;
	procs->final = true;
	ADD(procs, CUDA_STAT_API, "cudaMalloc", 19070, 29192, 220135021);
	ADD(procs, CUDA_STAT_API, "cudaLaunchKernel", 4100, 3900);
	ADD(procs, CUDA_STAT_KERNEL, "void at::native::vectorized_elementwise_kernel<4>(int)",
	    1500, 1700, 1600, 1800);
	add(procs, CUDA_STAT_MEMCPY, "[CUDA memcpy HtoD]", N(250000, 150000),
	    N(67108864, 33554432), 2);
	*n = 1;
	return procs;
}

static const char one_proc_text[] =
    "CUDA      1 process with the CUDA hook\n"
    "\n"
    "CUDA API Statistics:\n"
    "\n"
    " Time(%)  Total Time (ns)  Num Calls       Average  Minimum      Maximum         StdDev  Name\n"
    " -------  ---------------  ---------  ------------  -------  -----------  -------------  ----------------\n"
    "   100.0      220,183,283          3  73,394,427.7   19,070  220,135,021  127,081,081.7  cudaMalloc\n"
    "     0.0            8,000          2       4,000.0    3,900        4,100          141.4  cudaLaunchKernel\n"
    "\n"
    "CUDA Kernel Statistics:\n"
    "\n"
    " Time(%)  Total Time (ns)  Instances  Average  Minimum  Maximum  StdDev  Wall(%)  Name\n"
    " -------  ---------------  ---------  -------  -------  -------  ------  -------  ------------------------------------------------------\n"
    "   100.0            6,600          4  1,650.0    1,500    1,800   129.1      0.7  void at::native::vectorized_elementwise_kernel<4>(int)\n"
    "\n"
    "CUDA Memory Operation Statistics (by time):\n"
    "\n"
    " Time(%)  Total Time (ns)  Count    Average  Minimum  Maximum    StdDev  Operation\n"
    " -------  ---------------  -----  ---------  -------  -------  --------  ------------------\n"
    "   100.0          400,000      2  200,000.0  150,000  250,000  70,710.7  [CUDA memcpy HtoD]\n"
    "\n"
    "CUDA Memory Operation Statistics (by size in MB):\n"
    "\n"
    "   Total  Count  Average  Minimum  Maximum  StdDev     GB/s  Operation\n"
    " -------  -----  -------  -------  -------  ------  -------  ------------------\n"
    " 100.663      2   50.332   33.554   67.109  23.727  251.658  [CUDA memcpy HtoD]\n"
    "\n";

static void test_text_exact(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *procs;
	struct strbuf out;
	size_t n;

	(void)state;
	procs = one_proc(&n);
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, procs, n, 1), 0);
	strbuf_init(&out, 0);
	assert_int_equal(report_cuda_text(&t, 0, &out), 0);
	if (strcmp(strbuf_str(&out), one_proc_text) != 0)
		fputs(strbuf_str(&out), stdout);
	assert_string_equal(strbuf_str(&out), one_proc_text);
	strbuf_release(&out);
	cuda_tables_release(&t);
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static const cJSON *item(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_non_null(v);
	return v;
}

/* The "cuda" member: raw numbers, every process with its state, null without tables. */
static void test_json(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *procs;
	struct summary s;
	struct job_record job;
	struct strbuf out;
	cJSON *root;
	const cJSON *cuda, *row, *procs_json, *busy;
	size_t n;

	(void)state;
	memset(&job, 0, sizeof(job));
	job.id = 1;
	job.start_ms = 1700000000000;
	job.end_ms = job.start_ms + 10;
	snprintf(job.scheduler, sizeof(job.scheduler), "run");
	summary_init(&s, &job);
	summary_finish(&s, &job);
	procs = two_procs(&n);
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, procs, n, 10), 0);
	strbuf_init(&out, 0);
	assert_int_equal(report_json(&s, NULL, &t, NULL, &out), 0);
	root = cJSON_Parse(strbuf_str(&out));
	assert_non_null(root);
	cuda = item(root, "cuda");
	assert_string_equal(item(cuda, "state")->valuestring, "off");
	assert_string_equal(cJSON_GetArrayItem(item(cuda, "notes"), 0)->valuestring, t.notes[0]);
	assert_int_equal(cJSON_GetArraySize(item(cuda, "notes")), 3);
	assert_float_equal(num(cuda, "wall_ns"), 1e7, 0);
	row = cJSON_GetArrayItem(item(item(cuda, "job"), "kernels"), 1);
	assert_string_equal(item(row, "name")->valuestring, "k1");
	assert_string_equal(item(row, "kind")->valuestring, "kernel");
	assert_float_equal(num(row, "count"), 5, 0);
	assert_float_equal(num(row, "total_ns"), 110, 0);
	assert_float_equal(num(row, "min_ns"), 5, 0);
	assert_float_equal(num(row, "max_ns"), 45, 0);
	assert_float_equal(num(row, "avg_ns"), 22, 0);
	assert_float_equal(num(row, "stddev_ns"), 16.047, 1e-9); /* sqrt(257.5), 3 decimals */
	assert_float_equal(num(row, "time_pct"), 9.91, 1e-9);
	assert_float_equal(num(row, "wall_pct"), 0.0011, 1e-9);
	assert_null(cJSON_GetObjectItemCaseSensitive(row, "bytes"));
	row = cJSON_GetArrayItem(item(item(cuda, "job"), "memory"), 0);
	assert_string_equal(item(row, "name")->valuestring, "[CUDA memcpy HtoD]");
	assert_string_equal(item(row, "kind")->valuestring, "memcpy");
	assert_float_equal(num(row, "bytes"), 8e6, 0);
	assert_float_equal(num(row, "gb_per_s"), 4000, 0);
	assert_float_equal(num(row, "stddev_bytes"), 0, 0);
	assert_float_equal(num(item(cuda, "job"), "total_ns"), 450 + 1110 + 3100, 0);
	procs_json = item(cuda, "processes");
	assert_int_equal(cJSON_GetArraySize(procs_json), 3);
	assert_float_equal(num(cJSON_GetArrayItem(procs_json, 1), "dropped_records"), 3, 0);
	busy = cJSON_GetArrayItem(procs_json, 2);
	assert_float_equal(num(busy, "pid"), 300, 0);
	assert_string_equal(item(busy, "state")->valuestring, "busy");
	assert_string_equal(item(busy, "message")->valuestring, "another profiler holds CUPTI");
	assert_true(cJSON_IsNull(item(busy, "cupti_version")));
	assert_int_equal(cJSON_GetArraySize(item(busy, "kernels")), 0);
	assert_float_equal(num(busy, "total_ns"), 0, 0);
	cJSON_Delete(root);

	/* without tables: null */
	strbuf_reset(&out);
	assert_int_equal(report_json(&s, NULL, NULL, NULL, &out), 0);
	root = cJSON_Parse(strbuf_str(&out));
	assert_true(cJSON_IsNull(item(root, "cuda")));
	cJSON_Delete(root);
	strbuf_release(&out);
	cuda_tables_release(&t);
	summary_release(&s);
}

/* A 3,000-byte kernel name: whole in text, JSON and HTML (escaped), its dashes capped. */
static void test_long_name(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *procs = calloc(1, sizeof(*procs));
	char *name = malloc(3001);
	struct strbuf out;
	const char *line;
	cJSON *root;

	(void)state;
	assert_non_null(procs);
	assert_non_null(name);
	memset(name, 'x', 3000);
	memcpy(name, "void f<a&b>(", 12);
	name[2999] = ')';
	name[3000] = '\0';
	cuda_proc_init(procs);
	procs->pid = 7;
	ADD(procs, CUDA_STAT_KERNEL, name, 1234567);
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, procs, 1, 0), 0);
	strbuf_init(&out, 0);
	assert_int_equal(report_cuda_text(&t, 0, &out), 0);
	line = strstr(strbuf_str(&out), "   100.0        1,234,567          1  1,234,567.0  1,234,567  "
					  "1,234,567     0.0        -  void f<a&b>(");
	assert_non_null(line);
	assert_non_null(strstr(line, name));
	/* the dashes under Name: 60 */
	assert_non_null(strstr(strbuf_str(&out), "  -------  " "------------------------------"
						 "------------------------------\n"));
	assert_null(strstr(strbuf_str(&out), "-------------------------------"
					     "------------------------------\n"));

	strbuf_reset(&out);
	report_cuda_html(&t, &out);
	assert_null(strstr(strbuf_str(&out), "f<a&b>"));
	assert_non_null(strstr(strbuf_str(&out), "void f&lt;a&amp;b&gt;(xxxx"));

	strbuf_reset(&out);
	{
		struct jsonw w;

		jsonw_init(&w, &out, false);
		report_cuda_json(&w, &t);
		assert_int_equal(jsonw_error(&w), 0);
	}
	root = cJSON_Parse(strbuf_str(&out));
	assert_non_null(root);
	assert_string_equal(
	    item(cJSON_GetArrayItem(item(item(root, "job"), "kernels"), 0), "name")->valuestring,
	    name);
	assert_true(cJSON_IsNull(item(root, "wall_ns")));
	cJSON_Delete(root);
	strbuf_release(&out);
	cuda_tables_release(&t);
	free(name);
}

/* A process another profiler kept from CUPTI: its note, no tables, and the job's empty ones. */
static void test_busy_alone(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *procs = calloc(1, sizeof(*procs));
	struct strbuf out;

	(void)state;
	assert_non_null(procs);
	cuda_proc_init(procs);
	procs->pid = 31;
	procs->state = CUDA_PROC_BUSY;
	snprintf(procs->message, sizeof(procs->message), "CUPTI is in use by nsys");
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, procs, 1, 5), 0);
	assert_true(t.present);
	strbuf_init(&out, 0);
	assert_int_equal(report_cuda_text(&t, 0, &out), 0);
	assert_string_equal(strbuf_str(&out),
			    "CUDA      1 process with the CUDA hook\n"
			    "  note: pid 31: CUPTI is in use by nsys\n"
			    "\n"
			    "CUDA API Statistics:\n\n (none)\n\n"
			    "CUDA Kernel Statistics:\n\n (none)\n\n"
			    "CUDA Memory Operation Statistics (by time):\n\n (none)\n\n");
	strbuf_release(&out);
	cuda_tables_release(&t);
}

/* Ten processes: text shows the 8 with the most CUDA time, JSON all ten. */
static void test_process_cap(void **state)
{
	struct cuda_tables t;
	struct cuda_proc *procs = calloc(10, sizeof(*procs));
	struct strbuf out;
	cJSON *root;
	char title[64];

	(void)state;
	assert_non_null(procs);
	for (int i = 0; i < 10; i++) {
		cuda_proc_init(&procs[i]);
		procs[i].pid = 1000 + i;
		/* pid 1000 the least time, 1009 the most */
		ADD(&procs[i], CUDA_STAT_KERNEL, "k", (uint64_t)(i + 1) * 100);
	}
	cuda_tables_init(&t);
	assert_int_equal(cuda_tables_build(&t, procs, 10, 0), 0);
	strbuf_init(&out, 0);
	assert_int_equal(report_cuda_text(&t, 0, &out), 0);
	assert_non_null(strstr(strbuf_str(&out), "Each process: the 8 of 10 with the most CUDA time\n"));
	for (int i = 0; i < 10; i++) {
		snprintf(title, sizeof(title), "Process %d (", 1000 + i);
		if (i < 2)
			assert_null(strstr(strbuf_str(&out), title));
		else
			assert_non_null(strstr(strbuf_str(&out), title));
	}
	/* the most first */
	assert_true(strstr(strbuf_str(&out), "Process 1009 (") <
		    strstr(strbuf_str(&out), "Process 1008 ("));
	strbuf_reset(&out);
	{
		struct jsonw w;

		jsonw_init(&w, &out, false);
		report_cuda_json(&w, &t);
	}
	root = cJSON_Parse(strbuf_str(&out));
	assert_non_null(root);
	assert_int_equal(cJSON_GetArraySize(item(root, "processes")), 10);
	assert_float_equal(num(cJSON_GetArrayItem(item(item(root, "job"), "kernels"), 0), "total_ns"),
			   5500, 0);
	cJSON_Delete(root);
	strbuf_release(&out);
	cuda_tables_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_exact),
	    cmocka_unit_test(test_merge_exact),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_long_name),
	    cmocka_unit_test(test_busy_alone),
	    cmocka_unit_test(test_process_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
