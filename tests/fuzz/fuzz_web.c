/*
 * fuzz_web.c - libFuzzer target for the dashboard's parsers of outside
 * input: url_query_parse() (a query string) and web_topics_parse() (the
 * /ui/events topic list and job key).  The input is split at its first NUL
 * byte: topics before it, the key after it; the whole as a query string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/urlquery.h"
#include "web/web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 2);
	struct url_query q;
	struct web_topics t;
	const char *key;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	s[size + 1] = '\0';
	if (url_query_parse(s, &q) == 0) {
		/* every pair is a string inside the struct's buffer */
		for (size_t i = 0; i < q.n; i++) {
			if (q.name[i] < q.buf || q.value[i] >= q.buf + sizeof(q.buf) ||
			    url_query_get(&q, q.name[i]) == NULL)
				abort();
		}
	} else if (q.n != 0) {
		abort();
	}
	key = s + strlen(s) + 1;
	for (int head = 0; head < 2; head++) {
		if (web_topics_parse(head, s, key, &t) == 0) {
			if (t.n == 0 || t.n > HTTP_WATCH_PATHS)
				abort();
			for (size_t i = 0; i < t.n; i++)
				if (t.path[i][0] != '/' || strlen(t.path[i]) >= HTTP_WATCH_PATH_MAX)
					abort();
		} else if (t.n != 0) {
			abort();
		}
	}
	free(s);
	return 0;
}
