/*
 * fuzz_libout.c - libFuzzer target for libout_clean(): a GPU library's
 * own output (any bytes) made into one log line.  The first byte picks the
 * output buffer's size (0 to 255) and whether the raw text was cut; the
 * line must fit, be terminated and hold printable ASCII only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample/gpu/libout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[257];
	size_t room, len;
	bool cut;

	if (size == 0)
		return 0;
	room = data[0] % 256;
	cut = data[0] & 1;
	memset(out, 'X', sizeof(out));
	len = libout_clean((const char *)data + 1, size - 1, cut, out, room);
	if (room == 0) {
		if (len != 0 || out[0] != 'X')
			abort();
		return 0;
	}
	if (len >= room || out[len] != '\0' || strlen(out) != len || out[room] != 'X')
		abort();
	for (size_t i = 0; i < len; i++)
		if (out[i] < 0x20 || out[i] > 0x7e)
			abort();
	return 0;
}
