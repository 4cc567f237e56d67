/*
 * utf8.h - the one UTF-8 decoder: renderers that must not pass bad bytes
 * on (HTML pages, cairo, which stops drawing on invalid text) check each
 * sequence with it.
 *
 * Strict: overlong forms, surrogates and code points past U+10FFFF are
 * invalid.  Pure function, thread-safe.
 */
#ifndef JOBSCOPE_UTF8_H
#define JOBSCOPE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * The length (1-4) of the UTF-8 sequence at s, which has n bytes left, and
 * its code point in *cp; 0 when it is not valid UTF-8 or is cut by n (a NUL
 * byte never continues a sequence, so n may overstate a C string's end).
 */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

#endif
