/*
 * client.c - requests to a head (see client.h): one request, and a
 * session's export fetched, checked and explained when it fails.
 */
#include "net/client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "common/fmt.h"
#include "common/log.h"
#include "net/api.h"
#include "http/curl_dl.h"
#include "http/munge.h"
#include "store/profiling.h"

/*
 * Whether a head asked this process for a MUNGE credential ("WWW-Authenticate:
 * Munge" on a 401): from then on each request carries a fresh one (a
 * credential decodes once).  The CLI asks one request at a time.
 */
static bool munge_wanted;

static size_t see_header(char *data, size_t size, size_t nmemb, void *arg)
{
	static const char name[] = "WWW-Authenticate:";
	size_t n = size * nmemb, k = sizeof(name) - 1;

	if (n > k && strncasecmp(data, name, k) == 0) {
		while (k < n && data[k] == ' ')
			k++;
		if (n - k >= 5 && strncasecmp(data + k, "Munge", 5) == 0)
			*(bool *)arg = true;
	}
	return n;
}

/* One request; ctype (when not NULL) gets the answer's Content-Type, or "". */
static int request_once(const char *base, const char *path, const char *token, const char *body,
			struct strbuf *answer, long *status, char *ctype, size_t ctype_size,
			bool *asks_munge)
{
	struct curl_slist *headers = NULL;
	char url[2048], auth[MUNGE_CRED_MAX + 32];
	size_t n = strlen(base);
	CURLcode rc;
	CURL *c;

	while (n > 0 && base[n - 1] == '/')
		n--;
	if (snprintf(url, sizeof(url), "%.*s%s", (int)n, base, path) >= (int)sizeof(url))
		return log_err(-EINVAL, "URL too long");
	if (ctype && ctype_size)
		ctype[0] = '\0';
	if (curl_dl_load())
		return log_err(-ENOENT, "cannot ask '%s'", base);
	c = curl_dl_handle(url, answer, NULL, 30L, false);
	if (!c)
		return log_err(-ENOMEM, "cannot set up libcurl");
	headers = curl_fn.slist_append(headers, "Content-Type: application/json");
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		headers = curl_fn.slist_append(headers, auth);
	} else if (munge_wanted) {
		char msg[256];
		int ret;

		strcpy(auth, "Authorization: Munge ");
		ret = munge_cred_encode(auth + strlen(auth), sizeof(auth) - strlen(auth), msg,
					sizeof(msg));
		if (ret) {
			curl_fn.easy_cleanup(c);
			log_err(0, "the head at %s asks who you are: %s", base, msg);
			return -EACCES;
		}
		headers = curl_fn.slist_append(headers, auth);
	}
	*asks_munge = false;
	curl_fn.easy_setopt(c, CURLOPT_HEADERFUNCTION, see_header);
	curl_fn.easy_setopt(c, CURLOPT_HEADERDATA, asks_munge);
	curl_fn.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	if (body) {
		curl_fn.easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_fn.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	rc = curl_fn.easy_perform(c);
	if (rc == CURLE_OK) {
		const char *type = NULL;

		curl_fn.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		if (ctype && ctype_size &&
		    curl_fn.easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type)
			snprintf(ctype, ctype_size, "%s", type);
	}
	curl_fn.slist_free_all(headers);
	curl_fn.easy_cleanup(c);
	if (rc == CURLE_WRITE_ERROR && strbuf_error(answer) == -E2BIG)
		return log_err(-E2BIG, "the answer from %s is larger than %zu MiB", base,
			       answer->max_len >> 20);
	if (rc != CURLE_OK)
		return log_err(-EIO, "cannot reach %s: %s", base, curl_fn.easy_strerror(rc));
	return 0;
}

/* One request; again with a MUNGE credential when the head's 401 asks for one. */
static int request(const char *base, const char *path, const char *token, const char *body,
		   struct strbuf *answer, long *status, char *ctype, size_t ctype_size)
{
	bool asks_munge = false;
	size_t len = answer->len;
	int ret =
	    request_once(base, path, token, body, answer, status, ctype, ctype_size, &asks_munge);

	if (ret || *status != 401 || !asks_munge || token || munge_wanted)
		return ret;
	munge_wanted = true;
	answer->len = len; /* the 401's body is not the answer */
	if (answer->buf)
		answer->buf[len] = '\0';
	return request_once(base, path, token, body, answer, status, ctype, ctype_size,
			    &asks_munge);
}

int http_client_request(const char *base, const char *path, const char *token, const char *body,
			struct strbuf *answer, long *status)
{
	return request(base, path, token, body, answer, status, NULL, 0);
}

bool http_client_error_text(const char *body, size_t len, char *msg, size_t size)
{
	const cJSON *e;
	cJSON *doc;
	bool ok = false;

	if (size)
		msg[0] = '\0';
	if (!body || !len || !size)
		return false;
	doc = cJSON_ParseWithLength(body, len);
	e = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "error") : NULL;
	if (cJSON_IsString(e) && e->valuestring) {
		size_t n = 0;

		for (const char *c = e->valuestring; *c && n + 1 < size; c++)
			msg[n++] = (unsigned char)*c < 0x20 || *c == 0x7f ? ' ' : *c;
		msg[n] = '\0';
		ok = true;
	}
	cJSON_Delete(doc);
	return ok;
}

/* What a format's answer is: its Content-Type and how its bytes begin. */
static bool export_shape_ok(const char *format, const char *ctype, const struct strbuf *b)
{
	static const struct {
		const char *format, *type, *start;
	} shapes[] = {
	    {"json", "application/json", "{\"session_name\":"},
	    {"csv", "text/csv", "frame_id,time,"},
	    {"text", "text/plain", "jobscope session "},
	    {"gswarm", "application/json", "{\n  \"frames\": ["},
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		size_t n = strlen(shapes[i].start);

		if (strcmp(format, shapes[i].format) == 0)
			return strncasecmp(ctype, shapes[i].type, strlen(shapes[i].type)) == 0 &&
			       b->len >= n && memcmp(b->buf, shapes[i].start, n) == 0;
	}
	return false;
}

int http_client_get_query(const char *base, const char *path, const char *token,
			  const char *const *names, const char *const *values, size_t n,
			  struct strbuf *answer)
{
	static const char hex[] = "0123456789ABCDEF";
	struct strbuf url;
	long status = 0;
	int ret;

	strbuf_init(&url, 4096);
	strbuf_addstr(&url, path);
	for (size_t i = 0; i < n; i++) {
		if (!values[i])
			continue;
		strbuf_addch(&url, strchr(url.buf, '?') ? '&' : '?');
		strbuf_addf(&url, "%s=", names[i]);
		for (const unsigned char *p = (const unsigned char *)values[i]; *p; p++) {
			if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9') || strchr("-._~:", *p)) {
				strbuf_addch(&url, (char)*p);
			} else {
				strbuf_addch(&url, '%');
				strbuf_addch(&url, hex[*p >> 4]);
				strbuf_addch(&url, hex[*p & 15]);
			}
		}
	}
	ret = http_client_request(base, url.buf, token, NULL, answer, &status);
	strbuf_release(&url);
	if (!ret && status != 200) {
		char msg[512];

		/* its {"error": ...} said as words; anything else (a proxy's page) cut and
		 * printable */
		if (!http_client_error_text(answer->buf, answer->len, msg, sizeof(msg)))
			fmt_printable(msg, sizeof(msg), strbuf_str(answer));
		log_err(0, "the head answered %ld: %s", status, msg);
		ret = status == 404 || status == 400 ? -ENOENT : -EIO;
	}
	return ret;
}

int http_client_session_export(const char *base, const char *token, const char *name,
			       const char *format, struct strbuf *out)
{
	char path[3 * SESSION_NAME_MAX + 64], ctype[128], why[512];
	long status = 0;
	size_t o;
	bool said;
	int ret;

	if (!api_session_name_ok(name))
		return log_err(-EINVAL,
			       "'%s' is not a session's name (1 to 127 bytes of UTF-8 text "
			       "without control characters)",
			       name);
	/* the name percent-encoded: every byte but RFC 3986's unreserved ones */
	o = (size_t)snprintf(path, sizeof(path), "/api/v1/sessions/");
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		o += (size_t)(isalnum(*p) || strchr("-._~", *p)
				  ? snprintf(path + o, sizeof(path) - o, "%c", *p)
				  : snprintf(path + o, sizeof(path) - o, "%%%02X", *p));
	snprintf(path + o, sizeof(path) - o, "/export?format=%s", format);
	ret = request(base, path, token, NULL, out, &status, ctype, sizeof(ctype));
	if (ret)
		goto out_fail;
	if (status == 200) {
		if (export_shape_ok(format, ctype, out))
			return 0;
		ret = log_err(-EPROTO,
			      "what answered at %s is not a jobscope head's session export "
			      "(HTTP 200, Content-Type '%s'): is it the head's address?",
			      base, ctype[0] ? ctype : "none");
		goto out_fail;
	}
	said = strncasecmp(ctype, "application/json", 16) == 0 &&
	       http_client_error_text(out->buf, out->len, why, sizeof(why));
	if (!said)
		snprintf(why, sizeof(why), "not in a jobscope head's words");
	switch (status) {
	case 401:
		ret = log_err(-EACCES,
			      "the head at %s wants its read token (401: %s): "
			      "--token-file FILE or $JOBSCOPE_TOKEN_FILE",
			      base, why);
		break;
	case 403:
		ret = log_err(-EPERM,
			      "the head at %s refused the token (403: %s): the file must "
			      "hold its read (or admin) token",
			      base, why);
		break;
	case 404:
		if (!said)
			ret = log_err(-EPROTO, "%s answered 404 (%s): is it a jobscope head?", base,
				      why);
		else if (strcmp(why, "no such session") == 0) /* /api/v1/sessions/NAME's words */
			ret = log_err(-ENOENT,
				      "no session '%s' on the head at %s, or the head is older "
				      "than this jobscope (no session export there)",
				      name, base);
		else
			ret = log_err(-ENOENT, "no session '%s' on the head at %s (%s)", name, base,
				      why);
		break;
	default:
		ret = log_err(said ? -EIO : -EPROTO, "the head at %s answered %ld: %s", base,
			      status, why);
	}
out_fail:
	strbuf_reset(out);
	return ret;
}
