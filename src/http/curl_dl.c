/*
 * curl_dl.c - resolves the libcurl functions of curl_dl.h with dlopen(),
 * once (pthread_once: the sender's thread and the CLI may both ask).
 */
#include "http/curl_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/log.h"

struct curl_dl curl_fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ret;

static void load(void)
{
	const char *name = getenv("JOBSCOPE_CURL_LIBRARY"); /* tests: another path */
	void *dl = dlopen(name && name[0] ? name : "libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		log_err(0, "an HTTP client needs libcurl4 (%s): apt-get install libcurl4",
			dlerror());
		load_ret = -ENOENT;
		return;
	}
#define CURL_DL_RESOLVE(name)                                                                      \
	curl_fn.name = (__typeof__(curl_fn.name))dlsym(dl, "curl_" #name);                         \
	if (!curl_fn.name)                                                                         \
		goto out_missing;
	CURL_DL_FUNCTIONS(CURL_DL_RESOLVE)
#undef CURL_DL_RESOLVE
	return;
out_missing:
	log_err(0, "libcurl is older than 7.85 (%s): apt-get install libcurl4", dlerror());
	dlclose(dl);
	load_ret = -ENOENT;
}

int curl_dl_load(void)
{
	pthread_once(&load_once, load);
	return load_ret;
}

static size_t append_answer(char *data, size_t size, size_t nmemb, void *arg)
{
	return strbuf_add(arg, data, size * nmemb) ? 0 : size * nmemb; /* full: fail */
}

CURL *curl_dl_handle(const char *url, struct strbuf *answer, curl_write_callback write,
		     long timeout_s, bool keepalive)
{
	CURL *c = curl_fn.easy_init();

	if (!c)
		return NULL;
	curl_fn.easy_setopt(c, CURLOPT_URL, url);
	curl_fn.easy_setopt(c, CURLOPT_WRITEFUNCTION, write ? write : append_answer);
	curl_fn.easy_setopt(c, CURLOPT_WRITEDATA, answer);
	curl_fn.easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_fn.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_fn.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (keepalive)
		curl_fn.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_fn.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	return c;
}
