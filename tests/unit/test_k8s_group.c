/*
 * test_k8s_group.c - a training job above pods (report/report_group.c):
 * two agents' stores, each with pods of two owners (ml/bert, ml/gpt),
 * streamed to a head's store; `report --k8s-job ml/bert` there is every
 * pod of that owner on both nodes, its figures the sum of the pods' own
 * reports; a user caller sees their own pods alone; schema 15's columns
 * reach the head with the jobs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fixture.h"
#include "store_fixture.h"
#include "report/report_query.h"
#include "store/reader.h"
#include "store/write.h"
#include "store_schema16.h"

#define T0 1700000000000LL

/* A pod job with three ticks of its own CPU and memory; its owner "" when none. */
static void add_pod(struct store *st, int64_t node, const char *uid, const char *name,
		    const char *user, const char *owner, uint64_t cpu_ms, uint64_t rss)
{
	struct job_record job;
	struct job_sample js;

	memset(&job, 0, sizeof(job));
	job.node_id = node;
	snprintf(job.scheduler, sizeof(job.scheduler), "k8s");
	snprintf(job.job_id, sizeof(job.job_id), "%s", uid);
	snprintf(job.name, sizeof(job.name), "%s", name);
	snprintf(job.user, sizeof(job.user), "%s", user);
	snprintf(job.command, sizeof(job.command), "python train.py");
	job.start_ms = T0;
	job.interval_ms = 1000;
	job.reserved_cpus = 2;
	snprintf(job.k8s_owner, sizeof(job.k8s_owner), "%s", owner);
	if (owner[0])
		snprintf(job.k8s_owner_label, sizeof(job.k8s_owner_label),
			 "training.kubeflow.org/job-name");
	assert_int_equal(store_job_begin(st, &job), 0);
	for (int i = 1; i <= 3; i++) {
		memset(&js, 0, sizeof(js));
		js.nprocs = 1;
		js.user_ms = cpu_ms * (uint64_t)i / 3;
		js.rss_bytes = rss / 4 * (uint64_t)(i + 1);
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_put_job_sample(st, job.id, T0 + 1000 * i, &js), 0);
		assert_int_equal(store_tick_commit(st), 0);
	}
	job.end_ms = T0 + 3500;
	job.samples = 3;
	assert_int_equal(store_job_update(st, &job), 0);
}

static struct store *agent_store(struct fixture *fx, const char *host, int n)
{
	char path[256];
	struct store *st = NULL;
	int64_t node;

	snprintf(path, sizeof(path), "%s/%s.db", fx->dir, host);
	assert_int_equal(store_open(path, STORE_CREATE, &st), 0);
	assert_int_equal(store_node(st, host, 8, 1ull << 34, 0, &node), 0);
	/* two pods of ml/bert (alice), one of ml/gpt, one with no owner */
	add_pod(st, node, n ? "uid-b1" : "uid-a1", n ? "ml/bert-worker-1" : "ml/bert-worker-0",
		"alice", "ml/bert", 3000 + 600 * (uint64_t)n, (64ull << 20) * (uint64_t)(n + 1));
	add_pod(st, node, n ? "uid-b2" : "uid-a2", n ? "ml/gpt-1" : "ml/gpt-0", "bob", "ml/gpt",
		9000, 1ull << 30);
	add_pod(st, node, n ? "uid-b3" : "uid-a3", n ? "ml/web-1" : "ml/web-0", "carol", "", 300,
		1ull << 20);
	return st;
}

static struct store *head_store(struct fixture *fx)
{
	struct store *a = agent_store(fx, "gpu-a", 0), *b = agent_store(fx, "gpu-b", 1);
	struct store *head = open_store(fx);

	stream(a, head, "gpu-a", 0, NULL);
	stream(b, head, "gpu-b", 0, NULL);
	store_close(a);
	store_close(b);
	return head;
}

static cJSON *ask(struct store *st, struct report_query *q, int want)
{
	struct strbuf out;
	char err[512];
	cJSON *doc = NULL;
	int ret;

	strbuf_init(&out, 0);
	q->format = REPORT_FMT_JSON;
	ret = report_query_run(st, q, T0 + 10000, &out, err, sizeof(err));
	if (ret != want)
		fail_msg("report: %d (%s), wanted %d", ret, err, want);
	if (!ret) {
		doc = cJSON_Parse(out.buf);
		assert_non_null(doc);
	}
	strbuf_release(&out);
	return doc;
}

static double num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static void test_group_is_the_sum_of_its_pods(void **state)
{
	struct fixture *fx = *state;
	struct store *head = head_store(fx);
	struct report_query q = {.k8s_job = "ml/bert"};
	cJSON *g = ask(head, &q, 0), *pods, *p;
	double cpu = 0, mem = 0;
	int n = 0;

	assert_int_equal(num(g, "pods", NULL), 2);
	assert_int_equal(num(g, "nodes", NULL), 2);
	assert_string_equal(cJSON_GetObjectItem(g, "owner_label")->valuestring,
			    "training.kubeflow.org/job-name");
	pods = cJSON_GetObjectItem(g, "pods_list");
	cJSON_ArrayForEach(p, pods)
	{
		struct report_query one = {.job_key = cJSON_GetObjectItem(p, "key")->valuestring};
		cJSON *r = ask(head, &one, 0);

		/* each pod's line is its own report's figures */
		assert_float_equal(num(p, "cpu_seconds", NULL), num(r, "cpu", "cpu_seconds"), 1e-3);
		assert_float_equal(num(p, "memory_peak_bytes", NULL),
				   num(r, "memory", "rss_peak_bytes"), 0.5);
		cpu += num(r, "cpu", "cpu_seconds");
		mem += num(r, "memory", "rss_peak_bytes");
		assert_non_null(strstr(cJSON_GetObjectItem(p, "name")->valuestring, "ml/bert-"));
		n++;
		cJSON_Delete(r);
	}
	assert_int_equal(n, 2);
	assert_float_equal(cpu, 3.0 + 3.6, 1e-3);
	assert_float_equal(num(g, "total", "cpu_seconds"), cpu, 1e-3);
	assert_float_equal(num(g, "total", "memory_peak_bytes_sum"), mem, 0.5);
	assert_float_equal(num(g, "total", "reserved_cpus"), 4, 1e-9);
	cJSON_Delete(g);
	store_close(head);
}

static void test_owner_and_errors(void **state)
{
	struct fixture *fx = *state;
	struct store *head = head_store(fx);
	struct report_query q = {.k8s_job = "ml/bert", .owner = "alice"};
	cJSON *g = ask(head, &q, 0);

	assert_int_equal(num(g, "pods", NULL), 2);
	cJSON_Delete(g);
	q.owner = "bob"; /* a user caller of a head: another's pods are not there */
	ask(head, &q, -ENOENT);
	q.owner = NULL;
	q.k8s_job = "ml/nothing";
	ask(head, &q, -ENOENT);
	q.k8s_job = "no-slash";
	ask(head, &q, -EINVAL);
	q.k8s_job = "ml/bert";
	q.node = "gpu-a";
	ask(head, &q, -EINVAL);
	store_close(head);
}

/* A store of schema 14 (no owner columns) still opens: no pod has an owner there. */
static void test_old_store_opens(void **state)
{
	struct fixture *fx = *state;
	struct store *head = head_store(fx);
	struct report_query q = {.k8s_job = "ml/bert"};
	struct job_record job;

	store_close(head);
	write_sql(fx, "ALTER TABLE jobs DROP COLUMN k8s_owner;"
		      " ALTER TABLE jobs DROP COLUMN k8s_owner_label;" STORE_UNDO_SCHEMA16
		      " PRAGMA user_version = 14");
	assert_int_equal(store_open(fx->path, STORE_READONLY, &head), 0);
	assert_int_equal(store_get_job(head, 1, &job), 0);
	assert_string_equal(job.k8s_owner, "");
	ask(head, &q, -ENOENT);
	store_close(head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_group_is_the_sum_of_its_pods, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_and_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_old_store_opens, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
