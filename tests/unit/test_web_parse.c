/*
 * test_web_parse.c - the dashboard's parsers: a query string (http/urlquery.h, the
 * event streams' own requests) and /ui/events' topic list (web/web.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "http/urlquery.h"
#include "web/web.h"

static void query_pairs_decoded(void **state)
{
	struct url_query q;

	(void)state;
	assert_int_equal(url_query_parse("state=running&user=a%20b+c&flag&empty=&x=%2F%3f", &q), 0);
	assert_int_equal(q.n, 5);
	assert_string_equal(url_query_get(&q, "state"), "running");
	assert_string_equal(url_query_get(&q, "user"), "a b c");
	assert_string_equal(url_query_get(&q, "flag"), "");
	assert_string_equal(url_query_get(&q, "empty"), "");
	assert_string_equal(url_query_get(&q, "x"), "/?");
	assert_null(url_query_get(&q, "missing"));
	/* the first of a repeated name; empty pairs skipped; '=' inside a value kept */
	assert_int_equal(url_query_parse("a=1&&a=2&b=x=y&", &q), 0);
	assert_int_equal(q.n, 3);
	assert_string_equal(url_query_get(&q, "a"), "1");
	assert_string_equal(url_query_get(&q, "b"), "x=y");
	assert_int_equal(url_query_parse(NULL, &q), 0);
	assert_int_equal(q.n, 0);
	assert_int_equal(url_query_parse("", &q), 0);
	assert_int_equal(q.n, 0);
}

static void query_refused(void **state)
{
	struct url_query q;
	char big[URL_QUERY_MAX + 2];
	char many[URL_QUERY_ARGS * 4 + 8] = "";

	(void)state;
	assert_int_equal(url_query_parse("a=%zz", &q), -EINVAL);
	assert_int_equal(q.n, 0);
	assert_int_equal(url_query_parse("a=%4", &q), -EINVAL);
	assert_int_equal(url_query_parse("a=%", &q), -EINVAL);
	assert_int_equal(url_query_parse("a=%00", &q), -EINVAL);
	assert_int_equal(url_query_parse("%41=1", &q), 0);
	assert_string_equal(url_query_get(&q, "A"), "1");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(url_query_parse(big, &q), -EINVAL);
	big[URL_QUERY_MAX] = '\0'; /* exactly the cap: one name, fits */
	assert_int_equal(url_query_parse(big, &q), 0);
	assert_int_equal(q.n, 1);
	for (int i = 0; i < URL_QUERY_ARGS; i++)
		strcat(many, "a&");
	assert_int_equal(url_query_parse(many, &q), 0);
	assert_int_equal(q.n, URL_QUERY_ARGS);
	strcat(many, "b");
	assert_int_equal(url_query_parse(many, &q), -EINVAL);
	assert_int_equal(q.n, 0);
}

static void topics_head_and_agent(void **state)
{
	struct web_topics t;

	(void)state;
	assert_int_equal(web_topics_parse(true, "nodes,gpus,jobs", NULL, &t), 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.path[0], "/api/v1/nodes");
	assert_string_equal(t.event[0], "nodes");
	assert_string_equal(t.path[2], "/api/v1/jobs?state=running");
	assert_int_equal(web_topics_parse(true, "job,report", "slurm:5:1732270000123", &t), 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.path[0], "/api/v1/jobs/slurm:5:1732270000123");
	assert_string_equal(t.path[1], "/api/v1/report?format=json&job=slurm:5:1732270000123");
	assert_int_equal(web_topics_parse(true, "sessions", NULL, &t), 0);
	assert_string_equal(t.path[0], "/profiling/sessions");
	/* the agent: its node, no cluster, no report, no sessions */
	assert_int_equal(web_topics_parse(false, "node,gpus,jobs", NULL, &t), 0);
	assert_string_equal(t.path[0], "/api/v1/node");
	assert_int_equal(web_topics_parse(false, "nodes", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(false, "report", "5", &t), -EINVAL);
	assert_int_equal(web_topics_parse(false, "sessions", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "node", NULL, &t), -EINVAL);
}

static void topics_refused(void **state)
{
	struct web_topics t;
	char key[WEB_KEY_MAX + 2];

	(void)state;
	assert_int_equal(web_topics_parse(true, NULL, NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, ",nodes", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "nodes,", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "nodes,,gpus", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "nodes,nodes", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "node", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "nodesx", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "nodes,gpus,jobs,sessions,job", "1", &t), -EINVAL);
	assert_int_equal(t.n, 0);
	/* a key: 1 to WEB_KEY_MAX bytes of [A-Za-z0-9:._@+-] */
	assert_int_equal(web_topics_parse(true, "job", NULL, &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "job", "", &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "job", "a b", &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "job", "../x", &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "job", "a?b", &t), -EINVAL);
	assert_int_equal(web_topics_parse(true, "job", "a&b", &t), -EINVAL);
	memset(key, '7', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	assert_int_equal(web_topics_parse(true, "job", key, &t), -EINVAL);
	key[WEB_KEY_MAX] = '\0';
	assert_int_equal(web_topics_parse(true, "job", key, &t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(query_pairs_decoded),
	    cmocka_unit_test(query_refused),
	    cmocka_unit_test(topics_head_and_agent),
	    cmocka_unit_test(topics_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
