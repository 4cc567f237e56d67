/*
 * test_decfmt.c - common/decfmt.c against what it replaces: dec_fixed
 * against glibc's snprintf "%.*f" byte for byte, dec_round against strtod
 * of that, dec_py_repr against the digits of the search it cut short (each
 * length of "%.*e" tried, shortest first, until one reads back), reading
 * back as the value, and against what Python 3 prints; on ties (exact halves), halves a hair off either side,
 * values near the fast path's limits, signed zeros, subnormals, NaN and
 * the infinities, and 200,000 random doubles of every magnitude.
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

#include "common/decfmt.h"

/* The significant digits of a decimal spelling, without trailing zeros: "1.50e+02" -> "15". */
static void sig_digits(const char *num, char *out, size_t size)
{
	size_t n = 0;

	for (const char *p = num; *p && *p != 'e' && n + 1 < size; p++)
		if (*p >= '0' && *p <= '9' && (n || *p != '0'))
			out[n++] = *p;
	while (n > 1 && out[n - 1] == '0')
		n--;
	if (n == 0)
		out[n++] = '0';
	out[n] = '\0';
}

/*
 * The repr search decfmt.c cut short, every length tried, shortest first:
 * its digits, which the repr's must be (where they stand is checked by the
 * Python cases), and the repr must read back as v.
 */
static void repr_digits_by_search(double v, char *digits, size_t size)
{
	char e[40];
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(e, sizeof(e), "%.16e", v);
	sig_digits(e, digits, size);
}

static void check_fixed(double x)
{
	for (int places = 0; places <= DEC_FIXED_MAX_PLACES; places++) {
		char want[400], got[400];
		int wn = snprintf(want, sizeof(want), "%.*f", places, x);
		int gn = dec_fixed(got, sizeof(got), x, places);
		double r = dec_round(x, places), wr = strtod(want, NULL);

		if (strcmp(want, got) != 0 || wn != gn)
			fail_msg("%%.%df of %.17g: printf '%s', dec_fixed '%s'", places, x, want,
				 got);
		if (memcmp(&r, &wr, sizeof(r)) != 0 && !(isnan(r) && isnan(wr)))
			fail_msg("round(%.17g, %d): strtod %.17g, dec_round %.17g", x, places, wr,
				 r);
	}
}

static void check_repr(double v)
{
	char want[32], got[DEC_PY_REPR_MAX], digits[32];

	if (isnan(v) || isinf(v))
		return;
	repr_digits_by_search(v, want, sizeof(want));
	dec_py_repr(v, got, sizeof(got));
	sig_digits(got, digits, sizeof(digits));
	if (strcmp(want, digits) != 0 || strtod(got, NULL) != v)
		fail_msg("repr of %a: by search the digits %s, dec_py_repr '%s'", v, want, got);
}

/* xorshift64*: the same doubles every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_u64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void test_fixed_edges(void **state)
{
	static const double cases[] = {
	    0.0,
	    -0.0,
	    0.125,
	    0.375,
	    2.5,
	    3.5,
	    -2.5,
	    0.005,
	    1.005,
	    2.675,
	    1.115,
	    0.045,
	    -0.045,
	    0.5,
	    1.5,
	    0.25,
	    0.0001,
	    -0.0001,
	    0.00005,
	    0.000049,
	    1e-300,
	    -1e-300,
	    4.9e-324,
	    99.995,
	    99.9949999,
	    100.0,
	    12345.675,
	    0.1,
	    0.7,
	    1e10,
	    45035996273.70495,
	    45035996273.70496,
	    4503599627370.4955,
	    450359962737049.5,
	    4503599627370496.0,
	    9007199254740993.0,
	    1e17,
	    1e300,
	    -1e300,
	    1.7976931348623157e308,
	    NAN,
	    INFINITY,
	    -INFINITY,
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check_fixed(cases[i]);
		/* a hair to either side of each */
		check_fixed(nextafter(cases[i], INFINITY));
		check_fixed(nextafter(cases[i], -INFINITY));
	}
	/* every exact tie of two and three places near small integers */
	for (int k = -4000; k <= 4000; k++) {
		check_fixed(k / 8.0);
		check_fixed(k / 200.0);
		check_fixed(k / 2000.0);
		check_fixed(nextafter(k / 200.0, INFINITY));
		check_fixed(nextafter(k / 200.0, -INFINITY));
	}
}

static void test_fixed_random(void **state)
{
	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint64_t bits = next_u64();
		double x;

		if (i % 2) { /* bit patterns: every exponent */
			memcpy(&x, &bits, sizeof(x));
		} else { /* magnitudes people have: 1e-6 to 1e14 */
			x = ldexp((double)(bits >> 11), -53) * pow(10, (double)(bits % 21) - 6);
			if (bits & 1024)
				x = -x;
		}
		check_fixed(x);
	}
}

static void test_repr_python(void **state)
{
	/* what Python 3.11's repr() prints */
	static const struct {
		double v;
		const char *repr;
	} cases[] = {
	    {0.1, "0.1"},
	    {0.3, "0.3"},
	    {0.1 + 0.2, "0.30000000000000004"},
	    {2.0 / 3.0, "0.6666666666666666"},
	    {1.5, "1.5"},
	    {100.0, "100.0"},
	    {-0.0, "-0.0"},
	    {1e16, "1e+16"},
	    {1e15, "1000000000000000.0"},
	    {123456789012345680.0, "1.2345678901234568e+17"},
	    {1e-4, "0.0001"},
	    {1e-5, "1e-05"},
	    {5e-324, "5e-324"},
	    {2.2250738585072014e-308, "2.2250738585072014e-308"},
	    {1.7976931348623157e308, "1.7976931348623157e+308"},
	    {35802.45, "35802.45"},
	    {12345.67 + 23456.78, "35802.45"},
	    {0.07 + 0.01, "0.08"},
	    {1234.56 + 0.01, "1234.57"},
	    {9007199254740993.0, "9007199254740992.0"},
	    {NAN, "NaN"},
	    {INFINITY, "Infinity"},
	    {-INFINITY, "-Infinity"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char got[DEC_PY_REPR_MAX];

		dec_py_repr(cases[i].v, got, sizeof(got));
		assert_string_equal(got, cases[i].repr);
	}
}

static void test_repr_random(void **state)
{
	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint64_t bits = next_u64();
		double x;

		switch (i % 4) {
		case 0: /* bit patterns: every exponent, subnormals too */
			memcpy(&x, &bits, sizeof(x));
			break;
		case 1: /* subnormals */
			bits &= 0x800fffffffffffffULL;
			memcpy(&x, &bits, sizeof(x));
			break;
		case 2: /* sums of two 2-place figures, as the gswarm file's bandwidth */
			x = (double)(bits % 10000000000ULL) / 100.0 +
			    (double)((bits >> 34) % 1000000) / 100.0;
			break;
		default: /* few digits */
			x = (double)(bits % 100000) * pow(10, (double)((bits >> 20) % 41) - 20);
			break;
		}
		check_repr(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixed_edges),
	    cmocka_unit_test(test_fixed_random),
	    cmocka_unit_test(test_repr_python),
	    cmocka_unit_test(test_repr_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
