/*
 * test_top.c - jobscope top's model and layout on fixture models: the
 * columns at 100, 80 and 50 columns, "-" for what is missing (never 0),
 * the too-small message, sorting with missing values last, the user
 * filter and search, the process tree's order, the badges, the keys, and
 * the agent's job JSON read into a model (an agent on a fake socket is in
 * tests/integration/test_top.py).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curses.h>

#include "top/source.h"
#include "top/top.h"
#include "top/ui.h"

static void add_job(struct top_model *m, const char *key, const char *user, double cores,
		    double res_cpus, double rss, double res_mem)
{
	struct top_job *j = top_model_add_job(m);

	assert_non_null(j);
	snprintf(j->key, sizeof(j->key), "%s", key);
	snprintf(j->user, sizeof(j->user), "%s", user);
	snprintf(j->command, sizeof(j->command), "train.py --%s", key);
	j->live = true;
	j->cpu_cores = cores;
	j->reserved_cpus = res_cpus;
	j->rss_bytes = rss;
	j->reserved_mem_bytes = res_mem;
	if (!isnan(cores) && !isnan(res_cpus))
		j->cpu_eff_pct = 100 * cores / res_cpus;
	if (!isnan(rss) && !isnan(res_mem))
		j->mem_eff_pct = 100 * rss / res_mem;
	top_job_badges(j);
}

static void fixture(struct top_model *m)
{
	top_model_init(m);
	snprintf(m->source, sizeof(m->source), "agent http://127.0.0.1:9464  node n1");
	add_job(m, "slurm:101:1700000000000", "alice", 3.5, 4, 2.0 * (1 << 30), 8.0 * (1 << 30));
	add_job(m, "slurm:102:1700000000001", "bob", 0.25, 2, 900.0 * (1 << 20), 1.0 * (1 << 30));
	add_job(m, "slurm:103:1700000000002", "alice", NAN, NAN, NAN, NAN);
}

/* the grid's line y as a string, trailing blanks dropped */
static const char *line(const struct top_grid *g, int y)
{
	static char buf[1024];
	int n = g->width;

	memcpy(buf, g->cell + (size_t)y * g->width, g->width);
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	return buf;
}

static void render(const struct top_model *m, const struct top_view *v, struct top_grid *g, int w,
		   int h)
{
	assert_int_equal(top_grid_init(g, w, h), 0);
	top_render(m, v, g);
}

static void test_formats(void **state)
{
	char b[32];

	(void)state;
	top_fmt_bytes(b, sizeof(b), NAN);
	assert_string_equal(b, "-");
	top_fmt_bytes(b, sizeof(b), 0);
	assert_string_equal(b, "0B");
	top_fmt_bytes(b, sizeof(b), 1.5 * (1 << 30));
	assert_string_equal(b, "1.5G");
	top_fmt_bytes(b, sizeof(b), 900.0 * (1 << 20));
	assert_string_equal(b, "900M");
	top_fmt_num(b, sizeof(b), NAN, 2);
	assert_string_equal(b, "-");
	top_fmt_num(b, sizeof(b), 0, 2);
	assert_string_equal(b, "0.00");
}

static void test_jobs_100(void **state)
{
	struct top_model m;
	struct top_view v;
	struct top_grid g;

	(void)state;
	fixture(&m);
	top_view_init(&v);
	render(&m, &v, &g, 100, 10);
	assert_string_equal(line(&g, 1), "3 jobs  sort cpu");
	assert_string_equal(line(&g, 2),
			    "NAME/COMMAND                       USER     CPU used/res  MEM "
			    "used/res   GPU  EFF% VERDICT");
	/* sorted by CPU, the job with no figures last; "-" for each missing one; no
	 * name: the command; no room for the key */
	assert_string_equal(line(&g, 3),
			    "train.py --slurm:101:1700000000000 alice          3.50/4     "
			    "2.0G/8.0G   -/-    88");
	assert_string_equal(line(&g, 4),
			    "train.py --slurm:102:1700000000001 bob            0.25/2     "
			    "900M/1.0G   -/-    12 CPU-LOW");
	assert_string_equal(line(&g, 5),
			    "train.py --slurm:103:1700000000002 alice             -/-    "
			    "       -/-   -/-     -");
	assert_int_equal(g.attr[3 * g.width], TOP_A_SELECTED);
	assert_string_equal(line(&g, 9),
			    "Enter open  s/S sort  / search  u user  f follow  h help  q quit");
	top_grid_release(&g);
	top_model_release(&m);
}

static void test_jobs_narrow(void **state)
{
	struct top_model m;
	struct top_view v;
	struct top_grid g;

	(void)state;
	fixture(&m);
	top_view_init(&v);
	/* 80: everything but the verdict's extra width */
	render(&m, &v, &g, 80, 8);
	assert_string_equal(line(&g, 2),
			    "NAME/COMMAND    USER     CPU used/res  MEM used/res   GPU  "
			    "EFF% VERDICT");
	top_grid_release(&g);
	/* 50: the verdict, GPUs and EFF% go; user, CPU and memory stay, the command cut */
	render(&m, &v, &g, 50, 8);
	assert_string_equal(line(&g, 2), "NAME/COMMAND   USER     CPU used/res  MEM used/res");
	assert_string_equal(line(&g, 3), "train.py --slu alice          3.50/4     2.0G/8.0G");
	top_grid_release(&g);
	/* too small: one line that says so, nothing else */
	render(&m, &v, &g, 30, 8);
	assert_string_equal(line(&g, 0), "too small: 30x8, need 40x5");
	assert_string_equal(line(&g, 1), "");
	top_grid_release(&g);
	top_model_release(&m);
}

/* the name before the command; the key last once the name has its width; NODE for several */
static void test_jobs_name_key_node(void **state)
{
	struct top_model m;
	struct top_view v;
	struct top_grid g;

	(void)state;
	fixture(&m);
	snprintf(m.jobs[1].name, sizeof(m.jobs[1].name), "resnet-50");
	m.jobs[2].command[0] = '\0'; /* neither: the key */
	top_view_init(&v);
	render(&m, &v, &g, 130, 8);
	assert_string_equal(line(&g, 2),
			    "NAME/COMMAND                       USER     CPU used/res  MEM "
			    "used/res   GPU  EFF% VERDICT          KEY");
	assert_string_equal(line(&g, 3),
			    "train.py --slurm:101:1700000000000 alice          3.50/4     "
			    "2.0G/8.0G   -/-    88                  slurm:101:1700000000000");
	assert_string_equal(line(&g, 4),
			    "resnet-50                          bob            0.25/2     "
			    "900M/1.0G   -/-    12 CPU-LOW          slurm:102:1700000000001");
	assert_string_equal(line(&g, 5),
			    "slurm:103:1700000000002            alice             -/-    "
			    "       -/-   -/-     -                  slurm:103:1700000000002");
	top_grid_release(&g);
	/* a search finds a job by its name */
	snprintf(v.search, sizeof(v.search), "RESNET");
	render(&m, &v, &g, 100, 8);
	assert_string_equal(line(&g, 1), "1 job of 3  sort cpu  /RESNET");
	top_grid_release(&g);
	v.search[0] = '\0';
	/* jobs on two nodes: NODE, before the figures */
	snprintf(m.jobs[0].node, sizeof(m.jobs[0].node), "n1");
	snprintf(m.jobs[1].node, sizeof(m.jobs[1].node), "n2");
	render(&m, &v, &g, 100, 8);
	assert_string_equal(line(&g, 2),
			    "NAME/COMMAND           USER     NODE         CPU used/res  MEM "
			    "used/res   GPU  EFF% VERDICT");
	assert_string_equal(line(&g, 4),
			    "resnet-50              bob      n2                 0.25/2     "
			    "900M/1.0G   -/-    12 CPU-LOW");
	top_grid_release(&g);
	/* the job's screen: the name, then the key */
	m.has_job = true;
	m.job = m.jobs[1];
	v.screen = TOP_SCREEN_JOB;
	render(&m, &v, &g, 80, 8);
	assert_string_equal(line(&g, 1),
			    "resnet-50  slurm:102:1700000000001  user bob  node n2  running");
	top_grid_release(&g);
	top_model_release(&m);
}

static void test_sort_filter(void **state)
{
	struct top_model m;
	struct top_view v;
	size_t idx[8];

	(void)state;
	fixture(&m);
	top_view_init(&v);
	assert_int_equal(top_view_jobs(&m, &v, idx), 3);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	assert_int_equal(idx[2], 2);
	v.ascending = true; /* missing still last */
	top_view_jobs(&m, &v, idx);
	assert_int_equal(idx[0], 1);
	assert_int_equal(idx[1], 0);
	assert_int_equal(idx[2], 2);
	v.sort = TOP_SORT_USER;
	v.ascending = false;
	top_view_jobs(&m, &v, idx);
	assert_int_equal(idx[0], 1); /* bob before alice, reversed */
	snprintf(v.user, sizeof(v.user), "alice");
	assert_int_equal(top_view_jobs(&m, &v, idx), 2);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 2);
	v.user[0] = '\0';
	snprintf(v.search, sizeof(v.search), "--SLURM:102"); /* the command, any case */
	assert_int_equal(top_view_jobs(&m, &v, idx), 1);
	assert_int_equal(idx[0], 1);
	top_model_release(&m);
}

static void test_badges(void **state)
{
	struct top_job j;

	(void)state;
	top_job_init(&j);
	top_job_badges(&j);
	assert_string_equal(j.badges, "");
	j.cpu_eff_pct = 120;
	j.reserved_gpus = 2;
	j.gpus_used = 1;
	top_job_badges(&j);
	assert_string_equal(j.badges, "CPU-OVER GPU-UNUSED");
	j.gpus_used = 2;
	j.gpu_util_pct = 3;
	top_job_badges(&j);
	assert_string_equal(j.badges, "CPU-OVER GPU-IDLE");
	/* its threads waited for CPUs others held: CPU-WAIT, and no CPU-LOW (not free) */
	top_job_init(&j);
	j.cpu_eff_pct = 30;
	j.cpu_cores = 0.6;
	j.cpu_wait_cores = 0.9;
	top_job_badges(&j);
	assert_string_equal(j.badges, "CPU-WAIT");
	/* a wait under a tenth of a core, or of what it ran, is no contention */
	j.cpu_wait_cores = 0.05;
	top_job_badges(&j);
	assert_string_equal(j.badges, "CPU-LOW");
	j.cpu_cores = 4;
	j.cpu_wait_cores = 0.3;
	top_job_badges(&j);
	assert_string_equal(j.badges, "CPU-LOW");
}

static struct top_proc *proc(struct top_model *m, int pid, int ppid, const char *cmd, double cpu)
{
	struct top_proc *p = top_model_add_proc(m);

	assert_non_null(p);
	p->pid = pid;
	p->ppid = ppid;
	snprintf(p->command, sizeof(p->command), "%s", cmd);
	snprintf(p->user, sizeof(p->user), "alice");
	p->cpu_pct = cpu;
	return p;
}

static void test_job_screen(void **state)
{
	struct top_model m;
	struct top_view v;
	struct top_grid g;
	struct top_gpu *u;

	(void)state;
	fixture(&m);
	m.has_job = true;
	m.job = m.jobs[0];
	snprintf(m.job.node, sizeof(m.job.node), "n1");
	proc(&m, 300, 200, "worker 2", 50);
	proc(&m, 100, 1, "srun", NAN);
	proc(&m, 200, 100, "python train.py", 99.5)->rss_bytes = 1.5 * (1 << 30);
	proc(&m, 250, 100, "bash\033[2J", 0); /* an escape: drawn as a blank */
	top_model_tree(&m);
	u = top_model_add_gpu(&m);
	u->index = 0;
	u->util_pct = 87;
	u->mem_used_bytes = 10.0 * (1 << 30);
	u->mem_total_bytes = 80.0 * (1 << 30);
	u->job_util_pct = 85;
	top_model_add_metric(&m);
	snprintf(m.metrics[0].name, sizeof(m.metrics[0].name), "loss");
	m.metrics[0].value = 0.25;
	top_view_init(&v);
	v.screen = TOP_SCREEN_JOB;
	render(&m, &v, &g, 80, 14);
	assert_string_equal(line(&g, 1), "slurm:101:1700000000000  user alice  node n1  running");
	assert_string_equal(line(&g, 2),
			    "CPU 3.50 of 4.0 cores (88%)  MEM 2.0G of 8.0G (25%)  GPUs - of -");
	assert_string_equal(line(&g, 4), "GPU  UTIL%      MEM used/total  POWER  JOB%  JOB MEM");
	assert_string_equal(line(&g, 5), "  0     87          10G/80G      -    85        -");
	assert_string_equal(line(&g, 6), "app: loss=0.25");
	assert_string_equal(line(&g, 7), "    PID USER       CPU%     RSS  COMMAND");
	assert_string_equal(line(&g, 8), "    100 alice         -       -  srun");
	assert_string_equal(line(&g, 9), "    200 alice      99.5    1.5G    `- python train.py");
	assert_string_equal(line(&g, 10), "    300 alice      50.0       -      `- worker 2");
	assert_string_equal(line(&g, 11), "    250 alice       0.0       -    `- bash [2J");
	top_grid_release(&g);
	/* what its threads waited for a CPU, when the source knows it */
	m.job.cpu_wait_cores = 0.5;
	render(&m, &v, &g, 80, 14);
	assert_string_equal(line(&g, 2),
			    "CPU 3.50 of 4.0 cores (88%), waited 0.50  MEM 2.0G of 8.0G "
			    "(25%)  GPUs - of -");
	top_grid_release(&g);
	top_model_release(&m);
}

static void test_keys(void **state)
{
	struct top_model m;
	struct top_view v;
	struct top_source src = {.be = &top_backend_agent};

	(void)state;
	fixture(&m);
	top_view_init(&v);
	assert_int_equal(top_ui_key(&src, &m, &v, 'j', 10), 0);
	assert_int_equal(top_ui_key(&src, &m, &v, KEY_DOWN, 10), 0);
	assert_int_equal(v.sel, 2);
	assert_int_equal(top_ui_key(&src, &m, &v, 'j', 10), 0);
	assert_int_equal(v.sel, 2); /* the last row stays selected */
	assert_int_equal(top_ui_key(&src, &m, &v, 'k', 10), 0);
	assert_int_equal(top_ui_key(&src, &m, &v, '\n', 10), 2);
	assert_int_equal(v.screen, TOP_SCREEN_JOB);
	assert_string_equal(v.open_key, "slurm:102:1700000000001");
	assert_int_equal(top_ui_key(&src, &m, &v, 27, 10), 2);
	assert_int_equal(v.screen, TOP_SCREEN_JOBS);
	/* f: the selection follows the job when the order changes */
	top_ui_key(&src, &m, &v, 'f', 10);
	assert_true(v.follow);
	assert_string_equal(v.open_key, "slurm:101:1700000000000");
	m.jobs[0].cpu_cores = 0.1; /* now last but the job with no figures */
	top_view_follow(&m, &v);
	assert_int_equal(v.sel, 1);
	top_ui_key(&src, &m, &v, 'f', 10);
	assert_false(v.follow);
	top_ui_key(&src, &m, &v, 's', 10);
	assert_int_equal(v.sort, TOP_SORT_MEM);
	top_ui_key(&src, &m, &v, 'u', 10);
	top_ui_key(&src, &m, &v, 'b', 10);
	top_ui_key(&src, &m, &v, 'o', 10);
	top_ui_key(&src, &m, &v, 'x', 10);
	top_ui_key(&src, &m, &v, KEY_BACKSPACE, 10);
	top_ui_key(&src, &m, &v, 'b', 10);
	assert_string_equal(v.prompt, "bob");
	top_ui_key(&src, &m, &v, '\n', 10);
	assert_string_equal(v.user, "bob");
	top_ui_key(&src, &m, &v, '?', 10);
	assert_int_equal(v.screen, TOP_SCREEN_HELP);
	assert_int_equal(top_ui_key(&src, &m, &v, 'x', 10), 0);
	assert_int_equal(v.screen, TOP_SCREEN_JOBS);
	assert_int_equal(top_ui_key(&src, &m, &v, '[', 10), 0); /* a live source has no steps */
	assert_int_equal(top_ui_key(&src, &m, &v, 'q', 10), 1);
	top_model_release(&m);
}

static void test_cpu_rate(void **state)
{
	struct top_source s = {0};

	(void)state;
	assert_true(isnan(top_source_cpu_pct(&s, "n1", 7, 1000, 10000)));
	top_source_cpu_done(&s);
	assert_float_equal(top_source_cpu_pct(&s, "n1", 7, 1500, 11000), 50.0, 1e-9);
	assert_true(isnan(top_source_cpu_pct(&s, "n2", 7, 1500, 11000))); /* another node */
	top_source_cpu_done(&s);
	/* the same tick read again keeps its rate */
	assert_float_equal(top_source_cpu_pct(&s, "n1", 7, 1500, 11000), 50.0, 1e-9);
	top_source_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_formats),	cmocka_unit_test(test_jobs_100),
	    cmocka_unit_test(test_jobs_narrow), cmocka_unit_test(test_jobs_name_key_node),
	    cmocka_unit_test(test_sort_filter), cmocka_unit_test(test_badges),
	    cmocka_unit_test(test_job_screen),	cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_cpu_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
