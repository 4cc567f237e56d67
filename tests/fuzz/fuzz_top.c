/*
 * fuzz_top.c - libFuzzer target for what `jobscope top` reads of an
 * agent: any bytes, parsed as JSON, read as both /api/v1/jobs and
 * /api/v1/gpus with the first listed job opened, twice (the second read
 * takes CPU rates against the first), then drawn on the jobs and the job
 * screen at a size from the first bytes: every cell must be printable
 * ASCII with a known attribute.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "top/source.h"
#include "top/top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void draw_check(const struct top_model *m, struct top_view *v, int w, int h)
{
	struct top_grid g;

	if (top_grid_init(&g, w, h))
		abort();
	top_render(m, v, &g);
	for (size_t k = 0; k < (size_t)w * h; k++)
		if (g.cell[k] < 0x20 || g.cell[k] > 0x7e || g.attr[k] > TOP_A_DIM)
			abort();
	top_grid_release(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct top_source src = {0};
	struct top_model m;
	struct top_view v;
	cJSON *doc;
	int w = size > 0 ? 1 + data[0] % 160 : 80, h = size > 1 ? 1 + data[1] % 60 : 24;

	doc = cJSON_ParseWithLength((const char *)data, size);
	top_model_init(&m);
	top_view_init(&v);
	for (int round = 0; round < 2; round++) {
		top_model_clear(&m);
		top_agent_model(&src, &m, doc, doc, m.njobs ? m.jobs[0].key : NULL);
		snprintf(v.open_key, sizeof(v.open_key), "%s", m.njobs ? m.jobs[0].key : "");
		top_agent_model(&src, &m, doc, doc, v.open_key[0] ? v.open_key : NULL);
	}
	v.screen = TOP_SCREEN_JOBS;
	draw_check(&m, &v, w, h);
	v.screen = TOP_SCREEN_JOB;
	draw_check(&m, &v, w, h);
	v.sort = TOP_SORT_EFF;
	v.screen = TOP_SCREEN_JOBS;
	draw_check(&m, &v, w, h);
	top_model_release(&m);
	top_source_release(&src);
	cJSON_Delete(doc);
	return 0;
}
