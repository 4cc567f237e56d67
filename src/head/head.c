/*
 * head.c - the head's life: setup (log, tokens, store, signals, TLS, the
 * HTTP server), the wait for a signal, and the release (see head.h).
 *
 * One libmicrohttpd thread answers everything, ingest included; the main
 * thread only waits on a signalfd: SIGTERM/SIGINT stop the server (a batch
 * in flight is either committed and answered or not answered, and the
 * agent resends it), SIGHUP reopens the log file.
 */
#include "head/head.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "net/wire.h"

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

/* The log, the tokens and the store (durable): 0 or -errno, said why. */
static int head_open(struct head *h, const struct head_opts *o)
{
	int ret;

	ret = log_open_file(o->log_file);
	if (!ret)
		ret = head_auth_load(h, o);
	if (!ret)
		ret = store_open(o->db, STORE_CREATE, &h->st);
	if (ret)
		return ret;
	/* an acknowledged batch is on disk: the agent will never send it again */
	ret = store_set_durable(h->st);
	if (ret) {
		store_close(h->st);
		h->st = NULL;
	}
	return ret;
}

/* --tls-cert and --tls-key into hopts (both or neither): 0 or -errno, said why. */
static int head_tls(const struct head_opts *o, struct strbuf *cert, struct strbuf *key,
		    struct http_options *hopts)
{
	if (!o->tls_cert_file && !o->tls_key_file)
		return 0;
	if (!o->tls_cert_file || !o->tls_key_file) {
		log_err(0, "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (read_pem(o->tls_cert_file, cert) || read_pem(o->tls_key_file, key))
		return -EINVAL;
	hopts->tls_cert_pem = strbuf_str(cert);
	hopts->tls_key_pem = strbuf_str(key);
	return 0;
}

/* Until SIGTERM, SIGINT or the deadline (0: none); SIGHUP reopens the log. */
static void head_wait(int sigfd, const char *log_file, int64_t deadline)
{
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
			if (log_open_file(log_file) == 0)
				log_info("head: log file reopened");
			continue;
		}
		log_info("head: %s received: exiting", strsignal((int)si.ssi_signo));
		break;
	}
}

enum head_result head_main(const struct head_opts *o)
{
	struct head h;
	struct http_server *srv = NULL;
	sigset_t mask, orig;
	int sigfd = -1;
	enum head_result result = HEAD_OK;
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
	if (head_open(&h, o))
		return HEAD_FAIL_SETUP;
	/* blocked before the server starts, so that its thread inherits the mask */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	signal(SIGPIPE, SIG_IGN);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (head_tls(o, &cert, &key, &hopts)) {
		result = HEAD_FAIL_SETUP;
		goto out;
	}
	if (sigfd < 0 || http_start_opts(o->listen, &hopts, head_http, &h, &srv)) {
		result = sigfd < 0 ? HEAD_FAIL_SYSTEM : HEAD_FAIL_SETUP;
		goto out;
	}
	colon = strrchr(o->listen, ':');
	log_info("head: listening on %.*s:%u", (int)(colon - o->listen), o->listen,
		 (unsigned)http_port(srv));
	head_wait(sigfd, o->log_file, o->exit_after_ms ? time_now_ms() + o->exit_after_ms : 0);
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
	return result;
}
