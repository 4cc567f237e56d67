/*
 * fuzz_client.c - libFuzzer target for what the CLI reads of a head's
 * error answer (http_client_error_text): any bytes give a message or
 * false, the message always terminated, within its buffer and free of
 * control characters.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1), msg[64];
	bool ok;

	if (!buf)
		abort();
	memcpy(buf, data, size);
	memset(msg, 'x', sizeof(msg));
	ok = http_client_error_text(buf, size, msg, sizeof(msg));
	if (strnlen(msg, sizeof(msg)) >= sizeof(msg) || (!ok && msg[0]))
		abort();
	for (const char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			abort();
	free(buf);
	return 0;
}
