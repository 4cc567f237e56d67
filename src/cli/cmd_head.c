/*
 * cmd_head.c - `jobscope head`: takes the agents' streams into one store.
 *
 * One libmicrohttpd thread answers everything, ingest included: each batch
 * is decoded (net/wire.c), committed in one transaction (store_ingest), and
 * only then acknowledged with the highest seq of that agent the store
 * holds.  The main thread waits for SIGTERM/SIGINT (then the server is
 * stopped: a batch in flight is either committed and answered or not
 * answered, and the agent resends it) and SIGHUP (reopens the log).
 *
 * This is the first part of the head (docs/wire.md): ingest with nothing
 * lost or duplicated, bearer tokens, /clients, /status, and named profiling
 * sessions (gswarm's /profiling calls) that set the agents' interval through
 * the ingest answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>


#include "cli.h"
#include "head.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/token.h"
#include "net/api.h"
#include "net/http.h"
#include "net/wire.h"
#include "store/store.h"

#define HEAD_DEFAULT_DB	    "/var/lib/jobscope/head.db"
#define HEAD_DEFAULT_LISTEN "0.0.0.0:8091"

static const char head_usage[] =
    "usage: jobscope head [--listen ADDR:PORT] [--db PATH] [--token-file F]\n"
    "\n"
    "Collect what the agents of a cluster stream (jobscope agent --head URL)\n"
    "into one store, with nothing lost or duplicated across outages: a batch is\n"
    "acknowledged only once it is committed, and an agent resends from what was\n"
    "acknowledged.\n"
    "\n"
    "Options:\n"
    "      --listen ADDR:PORT   where agents and clients connect (default " HEAD_DEFAULT_LISTEN ");\n"
    "                           port 0 picks a free one\n"
    "      --db PATH            the store (default " HEAD_DEFAULT_DB ")\n"
    "      --token-file F       agents must send 'Authorization: Bearer <the token in F>';\n"
    "                           also the admin token unless --admin-token-file\n"
    "      --admin-token-file F starting and stopping sessions needs this token\n"
    "      --read-token-file F  reads need this token (or the admin one) too\n"
    "      --tls-cert F --tls-key F   serve HTTPS with this PEM certificate and key\n"
    "      --log-file PATH      messages there instead of stderr; SIGHUP reopens it\n"
    "  -h, --help               show this help\n"
    "\n"
    "Endpoints: POST /api/v1/ingest (agents; docs/wire.md), GET /, GET /status,\n"
    "GET /clients, POST /profiling/start {\"name\", \"interval_ms\", \"nodes\"},\n"
    "POST /profiling/stop {\"name\"}, GET /profiling/sessions.  While a session is\n"
    "active its nodes' agents sample at its interval (the smallest of those that\n"
    "cover a node), then return to their own.  GET /api/v1/... queries the store,\n"
    "/api/v1/report answers `jobscope report --head` (docs/http-api.md).\n";

static int read_pem(const char *path, struct strbuf *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return log_err(-errno, "cannot read '%s'", path);
	ret = strbuf_read_fd(sb, fd);
	close(fd);
	if (ret)
		return log_err(ret, "cannot read '%s'", path);
	return 0;
}

/* Compares in time that does not depend on where they differ. */
static bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

static bool authorized_by(bool has, const char *token, const struct http_request *req,
			  struct http_response *res)
{
	const char *auth = http_header(req, "Authorization");

	if (!has)
		return true;
	if (!auth || strncmp(auth, "Bearer ", 7) != 0) {
		http_error(res, 401, "a bearer token is required (Authorization: Bearer ...)");
		return false;
	}
	if (!token_equal(auth + 7, token)) {
		http_error(res, 403, "wrong token");
		return false;
	}
	return true;
}

static bool bearer_is(const struct http_request *req, const char *token)
{
	const char *auth = http_header(req, "Authorization");

	return auth && strncmp(auth, "Bearer ", 7) == 0 && token_equal(auth + 7, token);
}

/* Reads: free, unless --read-token-file (then it, or the admin token). */
static bool reader(const struct head *h, const struct http_request *req,
		   struct http_response *res)
{
	const char *admin_token = h->has_admin_token ? h->admin_token : h->token;
	bool has_admin = h->has_admin_token || h->has_token;

	if (!h->has_read_token || bearer_is(req, h->read_token) ||
	    (has_admin && bearer_is(req, admin_token)))
		return true;
	if (!http_header(req, "Authorization"))
		http_error(res, 401, "a bearer token is required (Authorization: Bearer ...)");
	else
		http_error(res, 403, "wrong token");
	return false;
}

/* Agents: the ingest token. */
static bool authorized(const struct head *h, const struct http_request *req,
		       struct http_response *res)
{
	return authorized_by(h->has_token, h->token, req, res);
}

/* Mutating calls: the admin token (the ingest token unless --admin-token-file). */
static bool admin(const struct head *h, const struct http_request *req,
		  struct http_response *res)
{
	return h->has_admin_token ? authorized_by(true, h->admin_token, req, res)
				  : authorized(h, req, res);
}

static void on_ingest(struct head *h, const struct http_request *req, struct http_response *res)
{
	const char *enc, *body = req->body;
	size_t body_len = req->body_len;
	struct wire_batch wb;
	char msg[256];
	int64_t acked = 0;
	int ret;

	if (strcmp(req->method, "POST") != 0) {
		http_error(res, 405, "POST a batch (docs/wire.md)");
		return;
	}
	if (!authorized(h, req, res))
		return;
	enc = http_header(req, "Content-Encoding");
	if (enc && strcmp(enc, "zstd") == 0) {
		ret = wire_decompress(req->body, req->body_len, &h->inflated);
		if (ret) {
			http_error(res, ret == -E2BIG ? 413 : 400,
				   ret == -E2BIG ? "batch larger than the cap once decompressed"
						 : "not a zstd body");
			return;
		}
		body = h->inflated.buf ? h->inflated.buf : "";
		body_len = h->inflated.len;
	} else if (enc && strcmp(enc, "identity") != 0) {
		http_error(res, 415, "Content-Encoding: zstd or none");
		return;
	}
	ret = wire_decode_batch(body, body_len, &wb, msg, sizeof(msg));
	if (ret == 0)
		ret = store_ingest(h->st, &wb.b, time_now_ms(), &acked, msg, sizeof(msg));
	if (ret == -EINVAL) {
		h->refused++;
		http_error(res, 400, msg[0] ? msg : "bad batch");
	} else if (ret == -ENOSPC) {
		http_error(res, 507, "the head's disk is full: nothing was stored, send again later");
	} else if (ret) {
		http_error(res, 503, "the head cannot store the batch now: send again later");
	} else {
		struct wire_answer a = {.acked_seq = acked};

		h->batches++;
		/* the control channel: what the active sessions ask of this node */
		if (store_session_control(h->st, wb.b.hostname, &a.interval_ms, a.sessions,
					  sizeof(a.sessions))) {
			a.interval_ms = 0;
			a.sessions[0] = '\0';
		}
		wire_encode_answer(&a, &res->body);
	}
	wire_batch_release(&wb);
}

struct clients_ctx {
	struct jsonw *w;
	int64_t now_ms;
	int n;
};

static int client_json(const struct agent_record *a, void *arg)
{
	struct clients_ctx *c = arg;
	struct jsonw *w = c->w;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "client_id", a->agent_id);
	jsonw_kv_str(w, "hostname", a->hostname);
	jsonw_kv_int(w, "gpu_count", a->gpus);
	jsonw_kv_int(w, "acked_seq", a->acked_seq);
	jsonw_kv_int(w, "first_seen_ms", a->first_seen_ms);
	jsonw_kv_int(w, "last_seen_ms", a->last_seen_ms);
	jsonw_kv_int_opt(w, "interval_ms", a->interval_ms > 0, a->interval_ms);
	/* unhealthy after 3 missed intervals (a batch per interval when current) */
	jsonw_kv_bool(w, "healthy",
		      a->interval_ms > 0 &&
			  c->now_ms - a->last_seen_ms <= HEAD_UNHEALTHY_INTERVALS * a->interval_ms);
	jsonw_kv_int(w, "batches", a->batches);
	jsonw_kv_int(w, "rows", a->rows);
	jsonw_obj_end(w);
	c->n++;
	return 0;
}

static int clients_json(struct head *h, struct jsonw *w)
{
	struct clients_ctx c = {w, time_now_ms(), 0};
	int ret;

	jsonw_key(w, "clients");
	jsonw_arr_begin(w);
	ret = store_for_each_agent(h->st, client_json, &c);
	jsonw_arr_end(w);
	jsonw_kv_int(w, "total_clients", c.n);
	return ret;
}

static void json_answer(struct http_response *res, int status, bool success, const char *msg)
{
	struct jsonw w;

	res->status = status;
	strbuf_reset(&res->body);
	jsonw_init(&w, &res->body, false);
	jsonw_obj_begin(&w);
	jsonw_kv_bool(&w, "success", success);
	jsonw_kv_str(&w, "message", msg);
	if (!success)
		jsonw_kv_str(&w, "error", msg);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

/* POST /profiling/start {"name"?, "interval_ms"?, "nodes"?: [..] or "a,b"} */
static void on_session_start(struct head *h, const struct http_request *req,
			     struct http_response *res)
{
	struct session_record s;
	char msg[300];
	int ret;

	if (!admin(h, req, res))
		return;
	if (api_parse_session_start(req->body, req->body_len, time_now_ms(), &s, msg,
				    sizeof(msg))) {
		json_answer(res, 400, false, msg);
		return;
	}
	ret = store_session_start(h->st, &s);
	if (ret == -EEXIST) {
		snprintf(msg, sizeof(msg), "session '%s' is already active", s.name);
		json_answer(res, 409, false, msg);
	} else if (ret) {
		json_answer(res, 503, false, "the store cannot be written");
	} else {
		struct jsonw w;

		strbuf_reset(&res->body);
		jsonw_init(&w, &res->body, false);
		jsonw_obj_begin(&w);
		jsonw_kv_bool(&w, "success", true);
		snprintf(msg, sizeof(msg), "session '%s' started", s.name);
		jsonw_kv_str(&w, "message", msg);
		jsonw_kv_str(&w, "name", s.name);
		snprintf(msg, sizeof(msg), "%s.json", s.name);
		jsonw_kv_str(&w, "output_file", msg);
		jsonw_kv_int(&w, "start_ms", s.start_ms);
		jsonw_kv_int_opt(&w, "interval_ms", s.interval_ms > 0, s.interval_ms);
		jsonw_obj_end(&w);
		strbuf_addch(&res->body, '\n');
	}
}

/* POST /profiling/stop {"name"?}: no name stops every active session. */
static void on_session_stop(struct head *h, const struct http_request *req,
			    struct http_response *res)
{
	char name[SESSION_NAME_MAX], msg[300];
	bool has_name;
	int stopped = 0;

	if (!admin(h, req, res))
		return;
	if (api_parse_session_stop(req->body, req->body_len, name, sizeof(name), &has_name, msg,
				   sizeof(msg))) {
		json_answer(res, 400, false, msg);
	} else if (store_session_stop(h->st, has_name ? name : NULL, time_now_ms(), &stopped)) {
		json_answer(res, 503, false, "the store cannot be written");
	} else if (stopped == 0 && has_name) {
		snprintf(msg, sizeof(msg), "no active session '%.200s'", name);
		json_answer(res, 404, false, msg);
	} else {
		snprintf(msg, sizeof(msg), "%d session%s stopped", stopped, stopped == 1 ? "" : "s");
		json_answer(res, 200, true, msg);
	}
}

struct sessions_ctx {
	struct jsonw *w;
	int total, active;
};

static int session_json(const struct session_record *s, void *arg)
{
	struct sessions_ctx *c = arg;
	struct jsonw *w = c->w;
	char t[40], file[SESSION_NAME_MAX + 8];

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "name", s->name);
	jsonw_kv_bool(w, "is_active", s->end_ms == 0);
	format_rfc3339_ms(s->start_ms, t, sizeof(t));
	jsonw_kv_str(w, "start_time", t);
	jsonw_kv_int(w, "start_ms", s->start_ms);
	jsonw_kv_int_opt(w, "end_ms", s->end_ms > 0, s->end_ms);
	jsonw_kv_int_opt(w, "interval_ms", s->interval_ms > 0, s->interval_ms);
	jsonw_key(w, "nodes");
	if (s->nodes[0]) {
		char nodes[SESSION_NODES_MAX], *save = NULL;

		snprintf(nodes, sizeof(nodes), "%s", s->nodes);
		jsonw_arr_begin(w);
		for (char *n = strtok_r(nodes, ",", &save); n; n = strtok_r(NULL, ",", &save))
			jsonw_str(w, n);
		jsonw_arr_end(w);
	} else {
		jsonw_null(w); /* every node */
	}
	snprintf(file, sizeof(file), "%s.json", s->name);
	jsonw_kv_str(w, "output_file", file);
	jsonw_obj_end(w);
	c->total++;
	c->active += s->end_ms == 0;
	return 0;
}

static void on_sessions(struct head *h, struct http_response *res)
{
	struct sessions_ctx c = {NULL, 0, 0};
	struct jsonw w;

	jsonw_init(&w, &res->body, true);
	c.w = &w;
	jsonw_obj_begin(&w);
	jsonw_key(&w, "sessions");
	jsonw_arr_begin(&w);
	if (store_for_each_session(h->st, false, session_json, &c)) {
		http_error(res, 503, "the store cannot be read");
		return;
	}
	jsonw_arr_end(&w);
	jsonw_kv_int(&w, "total_sessions", c.total);
	jsonw_kv_int(&w, "active_sessions", c.active);
	jsonw_obj_end(&w);
	strbuf_addch(&res->body, '\n');
}

struct status_ctx {
	struct jsonw *w;
	int64_t now_ms;
	int64_t interval_ms; /* the smallest active session interval */
	int active;
	char files[1024];
	size_t files_len;
};

static int status_session(const struct session_record *s, void *arg)
{
	struct status_ctx *c = arg;

	c->active++;
	if (s->interval_ms > 0 && (c->interval_ms == 0 || s->interval_ms < c->interval_ms))
		c->interval_ms = s->interval_ms;
	if (c->files_len + strlen(s->name) + 7 < sizeof(c->files))
		c->files_len += (size_t)snprintf(c->files + c->files_len,
						 sizeof(c->files) - c->files_len, "%s%s.json",
						 c->files_len ? "," : "", s->name);
	session_json(s, &(struct sessions_ctx){c->w, 0, 0});
	return 0;
}

static int status_client(const struct agent_record *a, void *arg)
{
	struct status_ctx *c = arg;

	if (a->interval_ms > 0 &&
	    c->now_ms - a->last_seen_ms <= HEAD_UNHEALTHY_INTERVALS * a->interval_ms)
		jsonw_str(c->w, a->agent_id);
	return 0;
}

static int status_gpu(const struct store_row *r, void *arg)
{
	struct jsonw *w = arg;

	jsonw_obj_begin(w);
	jsonw_kv_str(w, "client_id", r->text[0]);
	jsonw_kv_str(w, "node", r->text[1]);
	jsonw_kv_int(w, "index", (int64_t)r->num[2]);
	jsonw_kv_str(w, "uuid", r->text[3]);
	jsonw_kv_str(w, "name", r->text[4]);
	jsonw_kv_int_opt(w, "memory_total_bytes", !r->null[5], (int64_t)r->num[5]);
	jsonw_obj_end(w);
	return 0;
}

/*
 * gswarm's GET /status: its fields (freq as the smallest active session
 * interval in ms, or null; the GPUs of every client), plus ours.
 */
static int status_json(struct head *h, struct jsonw *w)
{
	struct status_ctx c = {w, time_now_ms(), 0, 0, "", 0};
	int ret;

	jsonw_obj_begin(w);
	jsonw_key(w, "active_sessions");
	jsonw_arr_begin(w);
	ret = store_for_each_session(h->st, true, status_session, &c);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_kv_int_opt(w, "freq", c.interval_ms > 0, c.interval_ms);
	jsonw_kv_str(w, "freq_unit", "ms");
	jsonw_kv_bool(w, "enable_bandwidth_profiling", true);
	jsonw_kv_bool(w, "enable_nvlink_profiling", true);
	jsonw_kv_bool(w, "is_profiling", c.active > 0);
	jsonw_kv_str_opt(w, "output_filename", c.files_len ? c.files : NULL);
	jsonw_kv_int(w, "frame_id_counter", (int64_t)h->batches);
	jsonw_key(w, "connected_clients");
	jsonw_arr_begin(w);
	ret = store_for_each_agent(h->st, status_client, &c);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_key(w, "gpu_info");
	jsonw_arr_begin(w);
	ret = store_query_rows(h->st,
			       "SELECT a.agent_id, n.hostname, d.idx, d.uuid, d.name,"
			       " d.mem_total_bytes FROM devices d JOIN nodes n ON n.id = d.node_id"
			       " LEFT JOIN agents a ON a.node_id = n.id ORDER BY n.hostname, d.idx",
			       NULL, status_gpu, w);
	jsonw_arr_end(w);
	if (ret)
		return ret;
	jsonw_kv_str(w, "version", JOBSCOPE_VERSION);
	jsonw_kv_int(w, "started_ms", h->started_ms);
	jsonw_kv_str(w, "store", store_path(h->st));
	jsonw_kv_int(w, "batches", (int64_t)h->batches);
	jsonw_kv_int(w, "refused_batches", (int64_t)h->refused);
	ret = clients_json(h, w);
	jsonw_obj_end(w);
	return ret;
}

static void head_http(void *arg, const struct http_request *req, struct http_response *res)
{
	struct head *h = arg;
	struct jsonw w;

	if (strcmp(req->path, "/api/v1/ingest") == 0) {
		on_ingest(h, req, res);
		return;
	}
	if (strcmp(req->path, "/profiling/start") == 0 || strcmp(req->path, "/profiling/stop") == 0) {
		if (strcmp(req->method, "POST") != 0)
			json_answer(res, 405, false, "POST a JSON object");
		else if (strcmp(req->path, "/profiling/start") == 0)
			on_session_start(h, req, res);
		else
			on_session_stop(h, req, res);
		return;
	}
	if (strcmp(req->method, "POST") != 0 && !reader(h, req, res))
		return;
	if (strcmp(req->path, "/profiling/sessions") == 0 && strcmp(req->method, "POST") != 0) {
		on_sessions(h, res);
		return;
	}
	if (strcmp(req->method, "POST") != 0 && head_api(h, req, res))
		return;
	if (strcmp(req->method, "POST") == 0) {
		http_error(res, 404, "no such endpoint");
		return;
	}
	jsonw_init(&w, &res->body, true);
	if (strcmp(req->path, "/") == 0) {
		jsonw_obj_begin(&w);
		jsonw_kv_str(&w, "message", "jobscope head");
		jsonw_kv_str(&w, "version", JOBSCOPE_VERSION);
		jsonw_obj_end(&w);
	} else if (strcmp(req->path, "/clients") == 0) {
		jsonw_obj_begin(&w);
		if (clients_json(h, &w)) {
			http_error(res, 503, "the store cannot be read");
			return;
		}
		jsonw_obj_end(&w);
	} else if (strcmp(req->path, "/status") == 0) {
		if (status_json(h, &w)) {
			http_error(res, 503, "the store cannot be read");
			return;
		}
	} else {
		http_error(res, 404, "no such endpoint");
		return;
	}
	strbuf_addch(&res->body, '\n');
}

static int parse_opts(int argc, char **argv, struct head_opts *o)
{
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"db", required_argument, NULL, 'd'},
	    {"token-file", required_argument, NULL, 't'},
	    {"admin-token-file", required_argument, NULL, 'a'},
	    {"read-token-file", required_argument, NULL, 'r'},
	    {"tls-cert", required_argument, NULL, 'C'},
	    {"tls-key", required_argument, NULL, 'K'},
	    {"log-file", required_argument, NULL, 'L'},
	    {"exit-after", required_argument, NULL, 'E'}, /* hidden: tests */
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sockaddr_storage sa;
	unsigned salen;
	int c;

	memset(o, 0, sizeof(*o));
	o->listen = HEAD_DEFAULT_LISTEN;
	o->db = HEAD_DEFAULT_DB;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (http_parse_listen(optarg, &sa, &salen))
				return cli_usage_error("head", "bad --listen '%s' (ADDR:PORT)",
						       optarg);
			o->listen = optarg;
			break;
		case 'd':
			if (!optarg[0])
				return cli_usage_error("head", "--db needs a path");
			o->db = optarg;
			break;
		case 't':
			o->token_file = optarg;
			break;
		case 'a':
			o->admin_token_file = optarg;
			break;
		case 'r':
			o->read_token_file = optarg;
			break;
		case 'C':
			o->tls_cert_file = optarg;
			break;
		case 'K':
			o->tls_key_file = optarg;
			break;
		case 'L':
			o->log_file = optarg;
			break;
		case 'E':
			if (parse_duration_ms(optarg, &o->exit_after_ms))
				return cli_usage_error("head", "bad --exit-after '%s'", optarg);
			break;
		case 'h':
			fputs(head_usage, stdout);
			return -1;
		default:
			return cli_option_error("head", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("head", "unexpected argument '%s'", argv[optind]);
	return 0;
}

static int head_main(const struct head_opts *o)
{
	struct head h;
	struct http_server *srv = NULL;
	sigset_t mask, orig;
	int sigfd = -1, exit_code = 0;
	int64_t deadline;
	const char *colon;
	struct http_options hopts = {.max_body = WIRE_MAX_BODY};
	struct strbuf cert, key;

	/*
	 * Every batch allocates and frees a few MiB (the body, the parsed
	 * JSON): without this glibc gives it back to the kernel after each one
	 * and faults it in again, a third of the head's CPU (bench/RESULTS.md).
	 */
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	memset(&h, 0, sizeof(h));
	strbuf_init(&cert, 1 << 20);
	strbuf_init(&key, 1 << 20);
	strbuf_init(&h.inflated, WIRE_MAX_BODY + 1);
	h.opt = o;
	h.started_ms = time_now_ms();
	if (log_open_file(o->log_file))
		return EXIT_USAGE;
	if (o->token_file) {
		if (token_read_file(o->token_file, h.token, sizeof(h.token)))
			return EXIT_USAGE;
		h.has_token = true;
	}
	if (o->admin_token_file) {
		if (token_read_file(o->admin_token_file, h.admin_token, sizeof(h.admin_token)))
			return EXIT_USAGE;
		h.has_admin_token = true;
	}
	if (o->read_token_file) {
		if (token_read_file(o->read_token_file, h.read_token, sizeof(h.read_token)))
			return EXIT_USAGE;
		h.has_read_token = true;
	}
	if (store_open(o->db, STORE_CREATE, &h.st))
		return EXIT_USAGE;
	/* an acknowledged batch is on disk: the agent will never send it again */
	if (store_set_durable(h.st)) {
		store_close(h.st);
		return EXIT_USAGE;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	signal(SIGPIPE, SIG_IGN);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (o->tls_cert_file || o->tls_key_file) {
		if (!o->tls_cert_file || !o->tls_key_file) {
			log_err(0, "--tls-cert and --tls-key go together");
			exit_code = EXIT_USAGE;
			goto out;
		}
		if (read_pem(o->tls_cert_file, &cert) || read_pem(o->tls_key_file, &key)) {
			exit_code = EXIT_USAGE;
			goto out;
		}
		hopts.tls_cert_pem = strbuf_str(&cert);
		hopts.tls_key_pem = strbuf_str(&key);
	}
	if (sigfd < 0 || http_start_opts(o->listen, &hopts, head_http, &h, &srv)) {
		exit_code = sigfd < 0 ? EXIT_FAIL : EXIT_USAGE;
		goto out;
	}
	colon = strrchr(o->listen, ':');
	log_info("head: listening on %.*s:%u", (int)(colon - o->listen), o->listen,
		 (unsigned)http_port(srv));
	deadline = o->exit_after_ms ? time_now_ms() + o->exit_after_ms : 0;
	for (;;) {
		struct pollfd p = {.fd = sigfd, .events = POLLIN};
		struct signalfd_siginfo si;
		int timeout = deadline ? (int)(deadline - time_now_ms()) : -1;

		if (deadline && timeout <= 0)
			break;
		if (poll(&p, 1, timeout) <= 0)
			continue;
		if (read(sigfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			if (log_open_file(o->log_file) == 0)
				log_info("head: log file reopened");
			continue;
		}
		log_info("head: %s received: exiting", strsignal((int)si.ssi_signo));
		break;
	}
out:
	http_stop(srv); /* waits for a batch in flight to be committed and answered */
	if (sigfd >= 0)
		close(sigfd);
	store_close(h.st);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	strbuf_release(&cert);
	strbuf_release(&h.inflated);
	/* the key does not linger in freed memory */
	if (key.buf)
		memset(key.buf, 0, key.alloc);
	strbuf_release(&key);
	return exit_code;
}

static int cmd_head(int argc, char **argv)
{
	struct head_opts o;
	int ret = parse_opts(argc, argv, &o);

	if (ret < 0)
		return 0;
	if (ret)
		return ret;
	return head_main(&o);
}

const struct cli_command cmd_head_def = {
    "head",
    cmd_head,
    "collect the agents' streams into one store (cluster view)",
    head_usage,
};
