/* test_scaling.c - Amdahl's law fitted to exact and noisy synthetic points. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <string.h>

#include "analysis/scaling.h"
#include "report/trial.h"

static void fit_amdahl(double p, const double *ns, size_t k, struct scaling_fit *f)
{
	struct scaling_point pts[SCALING_MAX_POINTS];

	for (size_t i = 0; i < k; i++)
		pts[i] =
		    (struct scaling_point){ns[i], 10.0 * scaling_amdahl_speedup(p, ns[0], ns[i])};
	scaling_fit(pts, k, f);
}

static void test_linear(void **state)
{
	static const double ns[] = {1, 2, 4, 8};
	struct scaling_fit f;
	bool capped;

	(void)state;
	fit_amdahl(1.0, ns, 4, &f);
	assert_int_equal(f.verdict, SCALING_FITS);
	assert_float_equal(f.p, 1.0, 1e-9);
	assert_float_equal(f.rms_rel_err, 0.0, 1e-9);
	assert_int_equal(f.npoints, 4);
	/* every CPU added is worth a whole one: up to the cap */
	assert_float_equal(scaling_recommend(&f, 0.5, 128, &capped), 128, 0);
	assert_true(capped);
}

static void test_serial(void **state)
{
	static const double ns[] = {1, 2, 4};
	struct scaling_fit f;
	bool capped;

	(void)state;
	fit_amdahl(0.0, ns, 3, &f);
	assert_int_equal(f.verdict, SCALING_FITS);
	assert_float_equal(f.p, 0.0, 1e-9);
	assert_float_equal(scaling_recommend(&f, 0.5, 64, &capped), 1, 0);
	assert_false(capped);
}

static void test_p09(void **state)
{
	static const double ns[] = {1, 2, 4, 8, 16};
	struct scaling_fit f;
	bool capped;

	(void)state;
	fit_amdahl(0.9, ns, 5, &f);
	assert_int_equal(f.verdict, SCALING_FITS);
	assert_float_equal(f.p, 0.9, 1e-6);
	assert_true(f.rms_rel_err < 1e-6);
	/*
	 * S(k) = 1 / (0.1 + 0.9/k): S(3)-S(2) = 2.5-1.818 = 0.68, S(4)-S(3) =
	 * 3.077-2.5 = 0.58, S(5)-S(4) = 3.571-3.077 = 0.49 < 0.5: 4
	 */
	assert_float_equal(scaling_recommend(&f, 0.5, 256, &capped), 4, 0);
	assert_false(capped);
	assert_float_equal(scaling_amdahl_speedup(0.9, 1, 10), 1 / 0.19, 1e-12);
	assert_float_equal(scaling_efficiency(scaling_amdahl_speedup(0.9, 1, 10), 1, 10), 1 / 1.9,
			   1e-12);
}

static void test_relative_to_smallest(void **state)
{
	/* n0 = 2: p is the same law seen from 2 CPUs up, given out of order */
	struct scaling_point pts[] = {{8, 10 * scaling_amdahl_speedup(0.8, 2, 8)},
				      {2, 10},
				      {4, 10 * scaling_amdahl_speedup(0.8, 2, 4)}};
	struct scaling_fit f;

	(void)state;
	scaling_fit(pts, 3, &f);
	assert_int_equal(f.verdict, SCALING_FITS);
	assert_float_equal(f.n0, 2, 0);
	assert_float_equal(f.p, 0.8, 1e-6);
}

static void test_noisy(void **state)
{
	/* p = 0.75 with +-3% noise, two repeats each */
	static const double ns[] = {1, 1, 2, 2, 4, 4};
	static const double noise[] = {1.03, 0.97, 0.98, 1.02, 1.03, 0.97};
	struct scaling_point pts[6];
	struct scaling_fit f;

	(void)state;
	for (size_t i = 0; i < 6; i++)
		pts[i] = (struct scaling_point){
		    ns[i], 100 * scaling_amdahl_speedup(0.75, 1, ns[i]) * noise[i]};
	scaling_fit(pts, 6, &f);
	assert_int_equal(f.verdict, SCALING_FITS);
	assert_int_equal(f.npoints, 6);
	assert_true(fabs(f.p - 0.75) < 0.03);
	assert_true(f.rms_rel_err > 0.01 && f.rms_rel_err < 0.05);
}

static void test_falls(void **state)
{
	struct scaling_point pts[] = {{1, 100}, {2, 150}, {4, 120}};
	struct scaling_fit f;
	bool capped;

	(void)state;
	scaling_fit(pts, 3, &f);
	assert_int_equal(f.verdict, SCALING_FALLS);
	assert_true(isfinite(f.p) && isfinite(f.rms_rel_err)); /* still reported */
	assert_true(isnan(scaling_recommend(&f, 0.5, 64, &capped)));
	assert_string_equal(scaling_verdict_name(f.verdict), "falls");
	/* within the 10% tolerance it is noise, not a fall */
	pts[2].throughput = 136;
	scaling_fit(pts, 3, &f);
	assert_int_not_equal(f.verdict, SCALING_FALLS);
	pts[2].throughput = 134; /* below 150 * 0.9 */
	scaling_fit(pts, 3, &f);
	assert_int_equal(f.verdict, SCALING_FALLS);
}

static void test_poor_fit(void **state)
{
	/* superlinear: 1 -> 2 CPUs gives 3x (caches); no p in [0,1] comes near */
	struct scaling_point pts[] = {{1, 100}, {2, 300}};
	struct scaling_fit f;

	(void)state;
	scaling_fit(pts, 2, &f);
	assert_int_equal(f.verdict, SCALING_POOR_FIT);
	assert_float_equal(f.p, 1.0, 1e-9);
	/* the best is S(2) = 2 against 3: relative error 1/3 at one point of two */
	assert_float_equal(f.rms_rel_err, sqrt((1.0 / 9) / 2), 1e-9);
}

static void test_one_point(void **state)
{
	struct scaling_point one[] = {{2, 100}};
	struct scaling_point same_n[] = {{2, 100}, {2, 110}};
	struct scaling_point missing[] = {{1, 100}, {2, NAN}, {4, 0}};
	struct scaling_fit f;
	bool capped;

	(void)state;
	scaling_fit(one, 1, &f);
	assert_int_equal(f.verdict, SCALING_NO_FIT);
	assert_true(isnan(f.p) && isnan(f.rms_rel_err));
	assert_float_equal(f.n0, 2, 0);
	assert_true(isnan(scaling_recommend(&f, 0.5, 64, &capped)));
	scaling_fit(same_n, 2, &f);
	assert_int_equal(f.verdict, SCALING_NO_FIT);
	scaling_fit(missing, 3, &f);
	assert_int_equal(f.verdict, SCALING_NO_FIT);
	assert_int_equal(f.npoints, 1);
	scaling_fit(NULL, 0, &f);
	assert_int_equal(f.verdict, SCALING_NO_FIT);
	assert_true(isnan(f.n0));
}

/* cpus 1, 2, 4 under two memory limits: p = 1 at 1 GiB, p = 0.5 at 2 GiB */
static void test_trial_groups(void **state)
{
	static char *argv[] = {"app", NULL};
	static const int cpus[] = {1, 2, 4};
	struct trial *t = calloc(1, sizeof(*t));
	struct strbuf out;

	(void)state;
	assert_non_null(t);
	t->argv = argv;
	t->duration_ms = 3000;
	t->repeat = 1;
	t->min_eff = 0.5;
	t->resource = "cpus";
	for (int c = 0; c < 3; c++)
		for (int m = 0; m < 2; m++) {
			struct trial_placement *p = &t->place[t->nplace++];

			p->cpus = cpus[c];
			p->gpus = -1;
			p->mem_bytes = (uint64_t)(m + 1) << 30;
			p->mem_applied = m == 0;
			snprintf(p->mem_note, sizeof(p->mem_note), "no controller");
			p->runs = 1;
			p->source = TRIAL_SOURCE_CPU;
			p->throughput_run[0] =
			    2 * scaling_amdahl_speedup(m ? 0.5 : 1.0, 1, cpus[c]);
			p->exit_status[0] = 0;
			p->wall_s[0] = 3;
		}
	trial_analyse(t);
	assert_int_equal(t->ngroups, 2);
	assert_string_equal(t->group[0].label, "mem=1.00 GiB");
	assert_string_equal(t->group[1].label, "mem=2.00 GiB");
	assert_float_equal(t->group[0].fit.p, 1.0, 1e-6);
	assert_float_equal(t->group[1].fit.p, 0.5, 1e-6);
	assert_float_equal(t->group[0].nmax, 4, 0);
	/* p = 0.5: S(2) - S(1) = 1/3 < 0.5 already */
	assert_float_equal(t->group[1].recommend, 1, 0);
	assert_float_equal(t->group[0].recommend, 64, 0);
	assert_true(t->group[0].recommend_capped);
	/* the 4-CPU placement at 2 GiB: S = 1.6, E = 0.4 */
	assert_int_equal(t->place[5].group, 1);
	assert_float_equal(t->place[5].speedup, 1.6, 1e-9);
	assert_float_equal(t->place[5].efficiency, 0.4, 1e-9);
	assert_float_equal(t->group[1].pred_n[1], 16, 0);
	assert_float_equal(t->group[1].pred_speedup[1], 1 / (0.5 + 0.5 / 16), 1e-9);

	strbuf_init(&out, 1 << 20);
	assert_int_equal(trial_json(t, &out), 0);
	assert_non_null(strstr(strbuf_str(&out), "\"gpus\": null"));
	assert_non_null(strstr(strbuf_str(&out), "\"mem_limit_applied\": false"));
	assert_non_null(strstr(strbuf_str(&out), "\"mem_limit_note\": \"no controller\""));
	assert_non_null(strstr(strbuf_str(&out), "\"recommended_capped\": true"));
	strbuf_reset(&out);
	assert_int_equal(trial_text(t, &out), 0);
	assert_non_null(strstr(strbuf_str(&out), "! memory limit NOT applied: no controller"));
	assert_non_null(strstr(strbuf_str(&out), "recommendation: 1 CPU "));
	strbuf_release(&out);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_linear),	 cmocka_unit_test(test_serial),
	    cmocka_unit_test(test_p09),		 cmocka_unit_test(test_relative_to_smallest),
	    cmocka_unit_test(test_noisy),	 cmocka_unit_test(test_falls),
	    cmocka_unit_test(test_poor_fit),	 cmocka_unit_test(test_one_point),
	    cmocka_unit_test(test_trial_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
