/*
 * client.c - one HTTP request to a head (see client.h).
 */
#include "net/client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "common/log.h"

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	return strbuf_add(arg, data, size * nmemb) ? 0 : size * nmemb;
}

int http_client_request(const char *base, const char *path, const char *token,
			const char *body, struct strbuf *answer, long *status)
{
	struct curl_slist *headers = NULL;
	char url[2048], auth[300];
	size_t n = strlen(base);
	CURLcode rc;
	CURL *c;

	while (n > 0 && base[n - 1] == '/')
		n--;
	if (snprintf(url, sizeof(url), "%.*s%s", (int)n, base, path) >= (int)sizeof(url))
		return log_err(-EINVAL, "URL too long");
	c = curl_easy_init();
	if (!c)
		return log_err(-ENOMEM, "cannot set up libcurl");
	headers = curl_slist_append(headers, "Content-Type: application/json");
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		headers = curl_slist_append(headers, auth);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(headers);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		return log_err(-EIO, "cannot reach the head at %s: %s", base, curl_easy_strerror(rc));
	return 0;
}
