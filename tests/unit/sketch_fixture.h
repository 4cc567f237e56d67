/*
 * sketch_fixture.h - a cmocka check that two app sketches (app/appstat.h)
 * are the same: the zero count, and every bucket's key and count on both
 * sides.  Include after <cmocka.h>.
 */
#ifndef JOBSCOPE_TEST_SKETCH_FIXTURE_H
#define JOBSCOPE_TEST_SKETCH_FIXTURE_H

#include "app/appstat.h"

static inline void assert_sketch_equal(const struct app_sketch *a, const struct app_sketch *b)
{
	assert_true(a->zero == b->zero);
	assert_int_equal(a->pos.n, b->pos.n);
	assert_int_equal(a->neg.n, b->neg.n);
	for (size_t i = 0; i < a->pos.n; i++) {
		assert_int_equal(a->pos.b[i].key, b->pos.b[i].key);
		assert_true(a->pos.b[i].n == b->pos.b[i].n);
	}
	for (size_t i = 0; i < a->neg.n; i++) {
		assert_int_equal(a->neg.b[i].key, b->neg.b[i].key);
		assert_true(a->neg.b[i].n == b->neg.b[i].n);
	}
}

#endif
