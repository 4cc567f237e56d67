/* fmt.c - human-readable sizes and counts, and sizes read back (see fmt.h). */
#include "fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

static char *fmt_scaled(char *buf, size_t size, double v, const char *suffix)
{
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f %s%s", v, units[u], suffix);
	else if (v < 10.0)
		snprintf(buf, size, "%.2f %s%s", v, units[u], suffix);
	else if (v < 100.0)
		snprintf(buf, size, "%.1f %s%s", v, units[u], suffix);
	else
		snprintf(buf, size, "%.0f %s%s", v, units[u], suffix);
	return buf;
}

char *fmt_bytes(char *buf, size_t size, uint64_t bytes)
{
	return fmt_scaled(buf, size, (double)bytes, "");
}

char *fmt_rate(char *buf, size_t size, double bytes_per_s)
{
	if (bytes_per_s < 0)
		bytes_per_s = 0;
	return fmt_scaled(buf, size, bytes_per_s, "/s");
}

char *fmt_count(char *buf, size_t size, uint64_t n)
{
	char tmp[32];
	size_t len, out = 0;

	len = (size_t)snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)n);
	for (size_t i = 0; i < len && out + 1 < size; i++) {
		if (i > 0 && (len - i) % 3 == 0 && out + 2 < size)
			buf[out++] = ',';
		buf[out++] = tmp[i];
	}
	if (size)
		buf[out < size ? out : size - 1] = '\0';
	return buf;
}

char *fmt_printable(char *dst, size_t size, const char *src)
{
	size_t i;

	for (i = 0; src && src[i] && i + 1 < size; i++) {
		if (src[i] == '\n' || src[i] == '\t')
			dst[i] = ' ';
		else
			dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	}
	dst[i] = '\0';
	return dst;
}

int parse_size_bytes(const char *s, uint64_t *out)
{
	static const char prefixes[] = "kmgt";
	const char *u;
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0))
		return -EINVAL;
	if (*end && (u = strchr(prefixes, *end | 0x20)) != NULL) {
		for (const char *p = prefixes; p <= u; p++)
			v *= 1024.0;
		end++;
		if (*end == 'i')
			end++;
	}
	if (*end == 'B')
		end++;
	if (*end || v > 9.0e18)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}
