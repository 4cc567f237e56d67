/*
 * http.c - the HTTP server: libmicrohttpd with its internal polling
 * thread, one handler for every request, bodies refused or capped.
 */
#include "net/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "common/jsonw.h"
#include "common/log.h"

#define HTTP_CONN_LIMIT	  256
#define HTTP_CONN_TIMEOUT 30 /* seconds an idle keep-alive connection stays */

struct http_server {
	struct MHD_Daemon *d;
	http_handler_fn fn;
	void *arg;
	uint16_t port;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *s = cls;
	struct http_request req = {method, url, c};
	struct http_response res = {200, "application/json; charset=utf-8", {0}};
	enum MHD_Result ret;

	const char *clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	bool refuse = (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) ||
		      (clen && strcmp(clen, "0") != 0) ||
		      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
	static int headers_seen;

	(void)version;
	(void)upload_data;
	/*
	 * A request we refuse (a method or a body no endpoint takes) is
	 * answered on the first call, with the headers, so its body is never
	 * read nor buffered; libmicrohttpd then closes the connection.  A good
	 * one is answered on the second call, once libmicrohttpd knows there is
	 * no body, so the connection is kept alive.
	 */
	if (!refuse && *con_cls == NULL) {
		*con_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* not reached: bodies are refused above */
		return MHD_YES;
	}
	strbuf_init(&res.body, 64 << 20);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		http_error(&res, 405, "method not allowed: use GET");
	else if (refuse)
		http_error(&res, 413, "this endpoint takes no request body");
	else
		s->fn(s->arg, &req, &res);
	ret = send_response(c, &res);
	strbuf_release(&res.body);
	return ret;
}

int http_start(const char *listen, http_handler_fn fn, void *arg, struct http_server **out)
{
	struct sockaddr_storage sa;
	const union MHD_DaemonInfo *info;
	struct http_server *s;
	unsigned salen;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;

	*out = NULL;
	if (http_parse_listen(listen, &sa, &salen))
		return log_err(-EINVAL, "bad listen address '%s' (ADDR:PORT, e.g. 127.0.0.1:9464)",
			       listen);
	s = calloc(1, sizeof(*s));
	if (!s)
		return log_err(-ENOMEM, "out of memory");
	s->fn = fn;
	s->arg = arg;
	if (sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONN_LIMIT,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONN_TIMEOUT,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_END);
	if (!s->d) {
		free(s);
		return log_err(-EADDRINUSE, "cannot listen on %s (in use, or not an address of "
					    "this machine?)",
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
	free(s);
}
