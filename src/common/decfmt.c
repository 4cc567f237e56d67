/*
 * decfmt.c - decimal spellings of doubles (decfmt.h).
 *
 * Fixed places: x * 10^places is split by fma into its rounded product
 * and that product's exact error, so the rounding to an integer sees the
 * exact value of x * 10^places without arbitrary precision; a value too
 * large for that (2^52 units or more), NaN and the infinities go to
 * printf.  Shortest repr: the 15 significant digits printf rounds to read
 * back as v for most doubles, and then they (less their trailing zeros)
 * are the shortest that do; only when they do not are 16 and 17 tried.
 */
#include "common/decfmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double pow10_of[DEC_FIXED_MAX_PLACES + 1] = {1,   10,  100, 1e3, 1e4,
							  1e5, 1e6, 1e7, 1e8, 1e9};

/*
 * |x| * 10^places rounded half to even to an integer, exactly: false when
 * that cannot be done here (places out of range, not finite, too large).
 */
static bool fixed_units(double x, int places, uint64_t *units)
{
	double a = fabs(x), hi, lo, fl, f;

	if (places < 0 || places > DEC_FIXED_MAX_PLACES || !isfinite(x))
		return false;
	hi = a * pow10_of[places];
	if (hi >= 4503599627370496.0) /* 2^52: a unit of hi's last place may be 1 */
		return false;
	if (hi < 0.25) { /* well below half a unit (and fma's error may underflow here) */
		*units = 0;
		return true;
	}
	lo = fma(a, pow10_of[places], -hi); /* a * 10^places == hi + lo exactly */
	fl = floor(hi);
	f = hi - fl; /* exact; a multiple of hi's last place, |lo| at most half of it */
	*units = (uint64_t)fl;
	if (f > 0.5 || (f == 0.5 && (lo > 0 || (lo == 0 && (*units & 1)))))
		(*units)++;
	return true;
}

int dec_fixed(char *buf, size_t size, double x, int places)
{
	char tmp[48], *p = tmp + sizeof(tmp);
	uint64_t units;
	int len;

	if (!fixed_units(x, places, &units))
		return snprintf(buf, size, "%.*f", places, x);
	*--p = '\0';
	for (int i = 0; i < places; i++, units /= 10)
		*--p = (char)('0' + units % 10);
	if (places)
		*--p = '.';
	do {
		*--p = (char)('0' + units % 10);
		units /= 10;
	} while (units);
	if (signbit(x))
		*--p = '-';
	len = (int)(tmp + sizeof(tmp) - 1 - p);
	if (size)
		snprintf(buf, size, "%s", p);
	return len;
}

double dec_round(double x, int places)
{
	char b[400];
	uint64_t units;
	double v;

	if (!fixed_units(x, places, &units)) {
		snprintf(b, sizeof(b), "%.*f", places, x);
		return strtod(b, NULL);
	}
	/* units < 2^52: exact, and the division is correctly rounded, as strtod is */
	v = (double)units / pow10_of[places];
	return signbit(x) ? -v : v;
}

/* e: "[-]d[.ddd]e(+|-)XX" as printf's %e writes it, respelled as Python does */
static void respell(const char *e, char *buf, size_t size)
{
	char digits[24], *q = buf, *end = buf + size;
	size_t nd = 0;
	int exp10, decpt;
	const char *p = e;

	if (*p == '-')
		*q++ = *p++;
	for (; *p && *p != 'e'; p++)
		if (*p != '.' && nd < sizeof(digits) - 1)
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	exp10 = atoi(p + 1);
	decpt = exp10 + 1; /* digits[0] is worth 10^(decpt - 1) */
	if (decpt <= -4 || decpt > 16) {
		snprintf(q, (size_t)(end - q), "%c%s%se%c%02d", digits[0], nd > 1 ? "." : "",
			 digits + 1, exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
		return;
	}
	/* fixed: at most 17 digits and 20 places, well inside DEC_PY_REPR_MAX */
	if (decpt <= 0) {
		*q++ = '0';
		*q++ = '.';
		for (int i = decpt; i < 0; i++)
			*q++ = '0';
		for (size_t i = 0; i < nd; i++)
			*q++ = digits[i];
	} else {
		for (int i = 0; i < decpt; i++)
			*q++ = (size_t)i < nd ? digits[i] : '0';
		*q++ = '.';
		if ((size_t)decpt >= nd)
			*q++ = '0';
		for (size_t i = (size_t)decpt; i < nd; i++)
			*q++ = digits[i];
	}
	*q = '\0';
}

void dec_py_repr(double v, char *buf, size_t size)
{
	char e[40];
	int prec = 15;

	if (isnan(v)) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, size, "%s", v < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (v == 0) {
		snprintf(buf, size, "%s", signbit(v) ? "-0.0" : "0.0");
		return;
	}
	/*
	 * A normal double is within half its last place of any decimal of at
	 * most 15 digits that reads back as it, and half a unit of the 15th
	 * digit is wider than that: so if some k <= 15 digits read back as v,
	 * the 15 printf rounds to do too and end in 15 - k zeros.  Subnormals
	 * are too coarse for that: there each length is tried, shortest first.
	 */
	if (fabs(v) < 2.2250738585072014e-308)
		prec = 1;
	for (; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(e, sizeof(e), "%.16e", v);
	respell(e, buf, size);
}
