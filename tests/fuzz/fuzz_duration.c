/*
 * fuzz_duration.c - libFuzzer target for parse_duration_ms() and parse_rfc3339_ms().  It takes a C
 * string, so the input is copied into an exact-size buffer plus the NUL.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	int64_t ms = -12345;
	int ret;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	ret = parse_duration_ms(s, &ms);
	/* success gives a non-negative time; failure leaves out alone */
	if (ret == 0 && ms < 0)
		abort();
	if (ret != 0 && (ms != -12345 || (ret != -EINVAL && ret != -ERANGE)))
		abort();
	/* the same text as an RFC 3339 time (the head's since= and until=) */
	ms = -12345;
	ret = parse_rfc3339_ms(s, &ms);
	if ((ret == 0 && ms < 0) || (ret != 0 && (ret != -EINVAL || ms != -12345)))
		abort();
	free(s);
	return 0;
}
