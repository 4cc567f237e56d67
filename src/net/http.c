/*
 * http.c - the HTTP server: libmicrohttpd with internal epoll threads,
 * one handler for every request, bodies refused or capped, answers
 * deferred by suspending the connection.
 */
#include "net/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "common/jsonw.h"
#include "common/log.h"

#define HTTP_CONN_MEMORY (16 * 1024)

struct http_server {
	struct MHD_Daemon *d;
	size_t max_body; /* 0: GET only */
	http_handler_fn fn;
	void *arg;
	uint16_t port;
	unsigned idle_timeout_s;
	/*
	 * Orders a deferred answer's threads: the handler's (which suspends
	 * the connection), the one that completes it (which resumes it), and
	 * the handler's again once resumed (which sends it, after which the
	 * request is freed).  The server's, not the request's: the completing
	 * thread still holds it when the resumed connection may already be
	 * answered and freed.
	 */
	pthread_mutex_t defer_lock;
};

int http_parse_listen(const char *listen, struct sockaddr_storage *sa, unsigned *salen)
{
	char host[128];
	const char *colon;
	char *end;
	long port;
	size_t hlen;

	memset(sa, 0, sizeof(*sa));
	if (!listen)
		return -EINVAL;
	colon = strrchr(listen, ':');
	if (!colon)
		return -EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end || errno || port < 0 || port > 65535)
		return -EINVAL;
	hlen = (size_t)(colon - listen);
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*salen = sizeof(*s6);
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	if (hlen == 0 || strcmp(host, "*") == 0)
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (strcmp(host, "localhost") == 0)
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	*salen = sizeof(*s4);
	return 0;
}

const char *http_query_arg(const struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

void http_error(struct http_response *res, int status, const char *msg)
{
	struct jsonw w;

	res->status = status;
	res->content_type = "application/json";
	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_str(&w, "error", msg);
	jsonw_kv_int(&w, "status", status);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

static enum MHD_Result send_response(struct MHD_Connection *c, struct http_response *res)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(res->body.len, res->body.buf ? res->body.buf : "",
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", res->content_type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, (unsigned)res->status, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * A request in flight: its body so far, and a deferred answer (its flags
 * under the server's defer_lock).
 */
struct http_conn {
	struct strbuf body;
	bool too_big;
	struct http_server *s;
	struct MHD_Connection *c;
	bool deferred, suspended, done;
	struct http_response res; /* the deferred answer */
};

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_conn *hc = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (!hc)
		return;
	strbuf_release(&hc->body);
	strbuf_release(&hc->res.body);
	free(hc);
	*con_cls = NULL;
}

static bool is_method(const char *m, const char *want)
{
	return strcmp(m, want) == 0;
}

/* Answers a request at once (on the first call: its body is never read). */
static enum MHD_Result answer_now(struct MHD_Connection *c, int status, const char *msg)
{
	struct http_response res = {status, "application/json; charset=utf-8", {0}};
	enum MHD_Result ret;

	strbuf_init(&res.body, 4096);
	http_error(&res, status, msg);
	ret = send_response(c, &res);
	strbuf_release(&res.body);
	return ret;
}

struct http_pending *http_defer(const struct http_request *req)
{
	struct http_conn *hc = req->priv;

	hc->deferred = true;
	hc->res.status = 200;
	hc->res.content_type = "application/json; charset=utf-8";
	strbuf_init(&hc->res.body, 64 << 20);
	return (struct http_pending *)hc;
}

struct http_response *http_pending_response(struct http_pending *p)
{
	return &((struct http_conn *)p)->res;
}

void http_pending_done(struct http_pending *p)
{
	struct http_conn *hc = (struct http_conn *)p;
	struct http_server *s = hc->s;

	/* once resumed, hc may be answered and freed: not touched after the unlock */
	pthread_mutex_lock(&s->defer_lock);
	hc->done = true;
	if (hc->suspended)
		MHD_resume_connection(hc->c);
	pthread_mutex_unlock(&s->defer_lock);
}

/* The handler deferred its answer: suspend until it is done (or send it, if it already is). */
static enum MHD_Result wait_deferred(struct http_conn *hc)
{
	bool done;

	pthread_mutex_lock(&hc->s->defer_lock);
	done = hc->done;
	if (!done) {
		hc->suspended = true;
		MHD_suspend_connection(hc->c);
	}
	pthread_mutex_unlock(&hc->s->defer_lock);
	return done ? send_response(hc->c, &hc->res) : MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *s = cls;
	struct http_conn *hc = *con_cls;
	struct http_request req = {method, url, c, NULL, 0, hc};
	struct http_response res = {200, "application/json; charset=utf-8", {0}};
	enum MHD_Result ret;

	(void)version;
	if (!hc) {
		/*
		 * The headers.  A refused request (a method we do not serve, a
		 * body larger than the cap) is answered now, so its body is
		 * never read; libmicrohttpd then closes the connection.  Others
		 * are answered once the body (if any) is in, so the connection
		 * is kept alive.
		 */
		const char *clen =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		unsigned long long len = clen ? strtoull(clen, NULL, 10) : 0;
		bool post = is_method(method, "POST");

		/* headers in: from now on the connection may idle as long as keep-alive allows */
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, s->idle_timeout_s);
		if (!is_method(method, "GET") && !is_method(method, "HEAD") && !post)
			return answer_now(c, 405, "method not allowed");
		if (post && s->max_body == 0)
			return answer_now(c, 405, "method not allowed: use GET");
		if (!post && len > 0)
			return answer_now(c, 413, "this endpoint takes no request body");
		if (len > s->max_body && post)
			return answer_now(c, 413, "request body too large");
		hc = calloc(1, sizeof(*hc));
		if (!hc)
			return MHD_NO;
		strbuf_init(&hc->body, s->max_body ? s->max_body : 1);
		hc->s = s;
		hc->c = c;
		*con_cls = hc;
		return MHD_YES;
	}
	if (hc->deferred) { /* resumed: the answer is done once its thread lets go */
		bool done;

		pthread_mutex_lock(&s->defer_lock);
		done = hc->done;
		pthread_mutex_unlock(&s->defer_lock);
		return done ? send_response(c, &hc->res) : MHD_YES;
	}
	if (*upload_data_size != 0) {
		/* chunked bodies have no Content-Length: the cap is checked here too */
		if (!hc->too_big && strbuf_add(&hc->body, upload_data, *upload_data_size))
			hc->too_big = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	strbuf_init(&res.body, 64 << 20);
	if (hc->too_big) {
		http_error(&res, 413, "request body too large");
	} else {
		req.body = hc->body.buf ? hc->body.buf : "";
		req.body_len = hc->body.len;
		s->fn(s->arg, &req, &res);
	}
	if (hc->deferred) {
		strbuf_release(&res.body);
		return wait_deferred(hc);
	}
	ret = send_response(c, &res);
	strbuf_release(&res.body);
	return ret;
}

const char *http_header(const struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

int http_start(const char *listen, http_handler_fn fn, void *arg, struct http_server **out)
{
	static const struct http_options none;

	return http_start_opts(listen, &none, fn, arg, out);
}

static unsigned or_default(unsigned v, unsigned def)
{
	return v ? v : def;
}

int http_start_opts(const char *listen, const struct http_options *o, http_handler_fn fn,
		    void *arg, struct http_server **out)
{
	struct sockaddr_storage sa;
	const union MHD_DaemonInfo *info;
	struct http_server *s;
	unsigned salen, threads = or_default(o->threads, 1);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem opts[16];
	size_t n = 0;

	*out = NULL;
	if (http_parse_listen(listen, &sa, &salen))
		return log_err(-EINVAL, "bad listen address '%s' (ADDR:PORT, e.g. 127.0.0.1:9464)",
			       listen);
	s = calloc(1, sizeof(*s));
	if (!s)
		return log_err(-ENOMEM, "out of memory");
	s->fn = fn;
	s->arg = arg;
	s->max_body = o->max_body;
	pthread_mutex_init(&s->defer_lock, NULL);
	s->idle_timeout_s = or_default(o->idle_timeout_s, HTTP_DEFAULT_IDLE_TIMEOUT_S);
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &sa};
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
					    or_default(o->max_conns, HTTP_DEFAULT_CONNS), NULL};
	/* until its headers are in; on_request then gives it the idle timeout */
	opts[n++] = (struct MHD_OptionItem){
	    MHD_OPTION_CONNECTION_TIMEOUT,
	    or_default(o->header_timeout_s, HTTP_DEFAULT_HEADER_TIMEOUT_S), NULL};
	/* headers and the read buffer of a connection (bodies go to our own buffer) */
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY,
					    NULL};
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL};
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed,
					    NULL};
	if (o->max_conns_per_ip)
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
						    o->max_conns_per_ip, NULL};
	if (threads > 1)
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
	if (o->tls_cert_pem && o->tls_key_pem) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			pthread_mutex_destroy(&s->defer_lock);
			free(s);
			return log_err(-ENOTSUP, "this libmicrohttpd has no TLS");
		}
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0,
						    (void *)o->tls_key_pem};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
						    (void *)o->tls_cert_pem};
	}
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
				MHD_OPTION_END);
	if (!s->d) {
		pthread_mutex_destroy(&s->defer_lock);
		free(s);
		return log_err(-EADDRINUSE, "cannot listen on %s (in use, not an address of this "
					    "machine, or a bad TLS key or certificate?)",
			       listen);
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	*out = s;
	return 0;
}

uint16_t http_port(const struct http_server *s)
{
	return s->port;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	pthread_mutex_destroy(&s->defer_lock);
	free(s);
}

static bool route_method_is(const struct http_route *r, const char *method)
{
	if (strcmp(r->method, method) == 0)
		return true;
	return strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

static bool route_path_is(const struct http_route *r, const char *path)
{
	size_t n;

	if (!r->prefix)
		return strcmp(r->path, path) == 0;
	n = strlen(r->path);
	return strncmp(r->path, path, n) == 0 && path[n] != '\0';
}

const struct http_route *http_route_find(const struct http_route *table,
					 const struct http_request *req, int *status)
{
	const struct http_route *r;
	bool path_known = false;

	for (r = table; r->path; r++) {
		if (!route_path_is(r, req->path))
			continue;
		if (route_method_is(r, req->method))
			return r;
		path_known = true;
	}
	*status = path_known ? 405 : 404;
	return NULL;
}

const char *http_access_name(enum http_access a)
{
	static const char *const names[] = {"public", "read", "ingest", "admin"};

	return (size_t)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}
