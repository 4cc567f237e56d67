/*
 * fuzz_reportckpt.c - libFuzzer target for report_ckpt_decode(): a report
 * checkpoint read from a store that may be corrupt or hostile.  The input
 * is the decompressed payload (compressing it here lets the fuzzer reach
 * past the zstd frame); a payload that decodes must then finish and
 * render as a report, text and JSON, without a fault.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "analysis/jobreport.h"
#include "analysis/reportckpt.h"
#include "common/strbuf.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The job the seeds were made for (tests/fuzz/corpus/fuzz_reportckpt). */
static void fuzz_job(struct job_record *j)
{
	memset(j, 0, sizeof(*j));
	j->id = 42;
	j->start_ms = 1767571200000LL;
	j->interval_ms = 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t format = (uint32_t)report_ckpt_format();
	size_t bound = ZSTD_compressBound(size), n;
	struct report_options ro = {.utf8 = true, .max_procs = 10};
	struct report_ckpt_mark mark;
	struct job_record job;
	struct job_report *r;
	struct strbuf out;
	unsigned char *blob;

	blob = malloc(8 + bound);
	r = calloc(1, sizeof(*r));
	if (!blob || !r)
		goto out_free;
	memcpy(blob, "JSCK", 4);
	memcpy(blob + 4, &format, 4);
	n = ZSTD_compress(blob + 8, bound, data, size, 1);
	if (ZSTD_isError(n))
		goto out_free;
	fuzz_job(&job);
	job_report_init(r, &job);
	if (report_ckpt_decode(blob, 8 + n, &job, &r->sum, &r->js, &mark) == 0) {
		strbuf_init(&out, 0);
		job_report_finish(r, &job);
		report_text(&r->sum, &r->an, &ro, &out);
		report_json(&r->sum, &r->an, NULL, NULL, &out);
		report_csv(&r->sum, &r->js, &out);
		strbuf_release(&out);
	}
	job_report_release(r);
out_free:
	free(r);
	free(blob);
	return 0;
}
