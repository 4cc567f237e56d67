/*
 * utf8.c - decoding one UTF-8 sequence, strictly (see utf8.h).
 */
#include "common/utf8.h"

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, *cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, *cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, *cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at a terminating NUL */
			return 0;
		*cp = *cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (*cp < 0x800 || (*cp >= 0xd800 && *cp <= 0xdfff))) ||
	    (len == 4 && (*cp < 0x10000 || *cp > 0x10ffff)))
		return 0;
	return len;
}
