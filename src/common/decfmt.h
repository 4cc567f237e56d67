/*
 * decfmt.h - decimal spellings of doubles, exactly as printf and Python
 * write them, without printf's cost where it can be avoided: a long
 * session's gswarm file (report/session_gswarm.c) spells some twenty
 * numbers a GPU a frame, and printf's arbitrary-precision path was most
 * of its time.
 *
 *   dec_fixed     "%.*f" of x (places 0 to 9), byte for byte
 *   dec_round     the double that "%.*f" of x reads back as (strtod)
 *   dec_py_repr   Python's repr(float): the shortest digits that read back
 */
#ifndef JOBSCOPE_DECFMT_H
#define JOBSCOPE_DECFMT_H

#include <stddef.h>

#define DEC_FIXED_MAX_PLACES 9
/* The longest repr: "-1.2345678901234567e-308", "0.00012345678901234567" */
#define DEC_PY_REPR_MAX 40

/*
 * x with places decimals (0 to DEC_FIXED_MAX_PLACES) as snprintf(buf,
 * size, "%.*f", places, x) writes it in the C locale: glibc rounds the
 * exact binary value half to even, and so does this.  Returns what
 * snprintf would (the length it wanted).
 */
int dec_fixed(char *buf, size_t size, double x, int places);
/* strtod of dec_fixed(x, places): x rounded to places decimals, as a double. */
double dec_round(double x, int places);
/*
 * v as Python's repr(float) (and so json.dumps) spells it: the shortest
 * digits that read back as v, in fixed notation from 1e-4 up to 1e16,
 * else with an exponent of at least two digits; NaN, Infinity, -Infinity.
 * size at least DEC_PY_REPR_MAX.
 */
void dec_py_repr(double v, char *buf, size_t size);

#endif
