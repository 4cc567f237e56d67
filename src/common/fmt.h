/*
 * fmt.h - numbers for people: "1.5 GiB", "12.3 MiB/s", "2.50 cores".
 *
 * Every function writes into a caller buffer (at least 16 bytes) and
 * returns it, so calls can sit inside printf arguments; fmt_printable
 * makes a foreign message one printable line; parse_size_bytes reads a
 * size as people write it.
 */
#ifndef JOBSCOPE_FMT_H
#define JOBSCOPE_FMT_H

#include <stddef.h>
#include <stdint.h>

/* Binary units: "0 B", "512 B", "1.0 KiB", "300 MiB", "2.25 GiB" */
char *fmt_bytes(char *buf, size_t size, uint64_t bytes);
/* fmt_bytes + "/s" */
char *fmt_rate(char *buf, size_t size, double bytes_per_s);
/* "1,234,567" */
char *fmt_count(char *buf, size_t size, uint64_t n);
/*
 * src copied into dst (size > 0), newlines and tabs made spaces and every
 * other byte outside printable ASCII '?': a message quoting names and
 * tokens from a file or a server, made one printable line.  Returns dst.
 */
char *fmt_printable(char *dst, size_t size, const char *src);
/* "500M", "20G", "1.5GiB", "4096" (bytes): binary units, a B after them
 * optional.  0 or -EINVAL. */
int parse_size_bytes(const char *s, uint64_t *out);

#endif
