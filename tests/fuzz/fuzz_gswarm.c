/*
 * fuzz_gswarm.c - libFuzzer target for session_gswarm_other(): the
 * `other` times of a request as the store holds them, text that came from
 * whoever posted to the head.  Whatever the text, the answer is one JSON
 * object in Python's layout at the file's depth: "{}", or "{" then one
 * "key": float a line, then "}".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "report/session_export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf out;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	strbuf_init(&out, STRBUF_DEFAULT_MAX);
	session_gswarm_other(&out, text);
	if (strbuf_error(&out) == 0) {
		const char *s = strbuf_str(&out);
		size_t n = strlen(s);

		if (n < 2 || s[0] != '{' || s[n - 1] != '}' ||
		    (n > 2 && strncmp(s, "{\n          \"", 13) != 0))
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] > 0x7e ||
			    ((unsigned char)s[i] < 0x20 && s[i] != '\n'))
				abort(); /* ensure_ascii: printable ASCII and newlines only */
	}
	strbuf_release(&out);
	free(text);
	return 0;
}
