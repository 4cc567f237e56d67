/*
 * agents_sim.c - bench-agents-sim: N simulated jobscope agents, each on its
 * own keep-alive connection, each sending one batch a second, against a
 * jobscope head (POST /api/v1/ingest, docs/wire.md) or a Prometheus
 * remote-write receiver (POST /api/v1/write: protobuf WriteRequest, snappy),
 * with the same values either way.  bench/head_scale.py runs it against each
 * server in turn and reads the JSON it prints.
 *
 * The load is paced, not "as fast as possible": agent i's tick k falls due
 * at start_i + k * interval, the phases spread evenly over the second (as
 * agents whose clocks differ), the agents' first ticks spread over --ramp
 * seconds.  A tick is sent when it falls due if the agent's connection is
 * free; otherwise right after the answer to the one before (an agent never
 * has two requests in flight).  One epoll loop, non-blocking sockets, one
 * timer heap.  Connections are spread over the source addresses 127.0.0.1,
 * 127.0.0.2, ... (--conns-per-addr per address), bound before connect, so a
 * server's per-IP connection cap sees several "hosts".
 *
 * Measured over a window after a warm-up: each request's latency (from its
 * first byte written to the last byte of the answer) and its lag (from the
 * tick falling due to that answer: latency plus waiting behind the agent's
 * previous request or a reconnect), errors by kind, ticks due against ticks
 * acknowledged, and, when --pid names the server, the server's CPU
 * (utime+stime of /proc/PID/stat, all threads), minor faults, peak RSS
 * (VmHWM) and threads.  On failure an agent does what jobscope's agent
 * does: closes the connection, backs off from 0.5 s doubling to 30 s, and
 * resends the same batch (the head acknowledges a seq range once).
 *
 * Build: cc -O2 -Wall -Wextra -Werror -o build/bench-agents-sim
 *        bench/agents_sim.c -lsnappy -lzstd -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define NS_PER_MS	   1000000LL
#define NS_PER_S	   1000000000LL
#define MAX_AGENTS	   100000
#define RESP_HEAD_MAX	   8192 /* bytes of status line and headers kept */
#define RESP_BODY_KEEP	   512	/* bytes of a body kept (the head's answer is ~80) */
#define BACKOFF_MIN_NS	   (500 * NS_PER_MS)
#define BACKOFF_MAX_NS	   (30 * NS_PER_S)
#define JITTER_POOL	   61 /* delta vectors shared by the agents (prime: they drift apart) */
#define ZSTD_ABOVE	   (64 * 1024) /* the agent compresses bodies above this (net/wire.h) */
#define LAT_BUCKETS	   12

/* ---- what a node samples ---- */

/*
 * kind: k = counter (grows by about mag a tick), g = gauge (around mag, +-10 %),
 * c = constant mag, s = a process state ('R' or 'S': a string for the head, its
 * character code for remote write, one value either way).  The columns are the
 * store's (docs/store.md), as bench/head_ingest.py sends them.
 */
struct column {
	const char *name;
	char kind;
	double mag;
};

static const struct column host_cols[] = {
	{"cpu_user_ms", 'k', 16000},	      {"cpu_nice_ms", 'k', 10},
	{"cpu_system_ms", 'k', 3000},	      {"cpu_idle_ms", 'k', 12000},
	{"cpu_iowait_ms", 'k', 50},	      {"cpu_irq_ms", 'k', 5},
	{"cpu_softirq_ms", 'k', 40},	      {"cpu_steal_ms", 'c', 0},
	{"ncpus", 'c', 64},		      {"mem_total_bytes", 'c', 540000000000.0},
	{"mem_free_bytes", 'g', 200000000000.0}, {"mem_available_bytes", 'g', 300000000000.0},
	{"mem_buffers_bytes", 'g', 1000000000}, {"mem_cached_bytes", 'g', 90000000000.0},
	{"mem_shmem_bytes", 'g', 2000000000},	{"swap_total_bytes", 'c', 0},
	{"swap_free_bytes", 'c', 0},	      {"load1_milli", 'g', 24000},
	{"load5_milli", 'g', 23000},	      {"load15_milli", 'g', 22000},
	{"procs_running", 'g', 24},	      {"procs_blocked", 'g', 1},
	{"disk_read_bytes", 'k', 50000000},   {"disk_write_bytes", 'k', 20000000},
	{"disk_reads", 'k', 400},	      {"disk_writes", 'k', 200},
	{"net_rx_bytes", 'k', 800000000},     {"net_tx_bytes", 'k', 700000000},
	{"net_rx_packets", 'k', 90000},	      {"net_tx_packets", 'k', 80000},
	{"psi_cpu_some_us", 'k', 20000},      {"psi_cpu_full_us", 'c', 0},
	{"psi_mem_some_us", 'k', 100},	      {"psi_mem_full_us", 'k', 50},
	{"psi_io_some_us", 'k', 3000},	      {"psi_io_full_us", 'k', 2000},
};
static const struct column cpu_cols[] = {
	{"user_ms", 'k', 500},	 {"nice_ms", 'k', 1}, {"system_ms", 'k', 90},
	{"idle_ms", 'k', 380},	 {"iowait_ms", 'k', 2}, {"irq_ms", 'k', 1},
	{"softirq_ms", 'k', 2}, {"steal_ms", 'c', 0},
};
static const struct column disk_cols[] = {
	{"reads", 'k', 200},	     {"read_bytes", 'k', 25000000}, {"writes", 'k', 100},
	{"write_bytes", 'k', 10000000}, {"io_ms", 'k', 300},
};
static const struct column net_cols[] = {
	{"rx_bytes", 'k', 400000000}, {"rx_packets", 'k', 45000},
	{"tx_bytes", 'k', 350000000}, {"tx_packets", 'k', 40000},
};
static const struct column proc_cols[] = {
	{"state", 's', 0},	      {"threads", 'g', 12},
	{"user_ms", 'k', 90},	      {"system_ms", 'k', 8},
	{"child_user_ms", 'c', 0},    {"child_system_ms", 'c', 0},
	{"rss_bytes", 'g', 2000000000}, {"hwm_bytes", 'c', 2500000000.0},
	{"swap_bytes", 'c', 0},	      {"read_bytes", 'k', 100000},
	{"write_bytes", 'k', 50000},
};
static const struct column job_cols[] = {
	{"nprocs", 'c', 4},		 {"user_ms", 'k', 4500},
	{"system_ms", 'k', 400},	 {"rss_bytes", 'g', 100000000000.0},
	{"swap_bytes", 'c', 0},		 {"read_bytes", 'k', 5000000},
	{"write_bytes", 'k', 2500000},	 {"sampler_cpu_ms", 'k', 1},
	{"cg_cpu_ms", 'k', 4900},	 {"cg_mem_bytes", 'g', 120000000000.0},
	{"cg_mem_peak_bytes", 'c', 130000000000.0},
};
static const struct column gpu_cols[] = {
	{"util_pct", 'g', 80},
	{"mem_util_pct", 'g', 50},
	{"mem_used_bytes", 'g', 60000000000.0},
	{"pcie_rx_bps", 'g', 2000000000},
	{"pcie_tx_bps", 'g', 1000000000},
	{"nvlink_rx_bytes", 'k', 40000000000.0},
	{"nvlink_tx_bytes", 'k', 40000000000.0},
	{"power_mw", 'g', 350000},
	{"energy_mj", 'k', 350000},
	{"temp_c", 'g', 70},
	{"sm_clock_mhz", 'g', 1400},
	{"mem_clock_mhz", 'c', 1593},
	{"throttle_reasons", 'c', 0},
	{"ecc_corrected", 'c', 0},
	{"ecc_uncorrected", 'c', 0},
};

#define NCOLS(a) ((int)(sizeof(a) / sizeof((a)[0])))

enum table_id { T_HOST, T_CPU, T_DISK, T_NET, T_PROC, T_JOB, T_GPU, T_COUNT };

/* A fact table: its name, the columns before the values, and the value columns. */
struct table_def {
	const char *name;
	const char *key_columns; /* JSON, before the value columns */
	const struct column *cols;
	int ncols;
};

static const struct table_def tables[T_COUNT] = {
	[T_HOST] = {"host_samples", "\"seq\",\"node_id\",\"ts_ms\"", host_cols, NCOLS(host_cols)},
	[T_CPU] = {"cpu_samples", "\"seq\",\"node_id\",\"ts_ms\",\"cpu\"", cpu_cols, NCOLS(cpu_cols)},
	[T_DISK] = {"disk_samples", "\"seq\",\"node_id\",\"ts_ms\",\"disk\"", disk_cols,
		    NCOLS(disk_cols)},
	[T_NET] = {"net_samples", "\"seq\",\"node_id\",\"ts_ms\",\"iface\"", net_cols,
		   NCOLS(net_cols)},
	[T_PROC] = {"proc_samples", "\"seq\",\"proc_id\",\"job_id\",\"ts_ms\"", proc_cols,
		    NCOLS(proc_cols)},
	[T_JOB] = {"job_samples", "\"seq\",\"job_id\",\"ts_ms\"", job_cols, NCOLS(job_cols)},
	[T_GPU] = {"gpu_samples", "\"seq\",\"device_id\",\"ts_ms\"", gpu_cols, NCOLS(gpu_cols)},
};

static const char *const disk_names[] = {"nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1",
					 "sda", "sdb", "sdc", "sdd"};
static const char *const net_names[] = {"eth0", "ib0", "ib1", "ib2",
					"ib3", "eth1", "ib4", "ib5"};

/* One fact row of a node-tick: its table, its index within the table, its first cell. */
struct row_def {
	enum table_id table;
	int key;
	int first_cell;
};

/* The shape of a node-tick, the same for every agent. */
struct layout {
	int cpus, disks, nets, procs, jobs, gpus, node_cores;
	struct row_def *rows;
	int nrows;
	int ncells; /* values per node-tick */
	char *kind; /* per cell */
	int64_t *rate;
	int64_t *jitter; /* JITTER_POOL x ncells */
	double *mag;
	int nrows_by_table[T_COUNT];
};

/* ---- small helpers ---- */

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("bench-agents-sim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / NS_PER_MS;
}

/* splitmix64: the values are a function of fixed seeds, the same every run. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static int64_t rng_int(uint64_t *s, int64_t lo, int64_t hi) /* inclusive */
{
	if (hi <= lo)
		return lo;
	return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* A growable byte buffer. */
struct buf {
	char *p;
	size_t len, cap;
};

static void buf_need(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->cap < b->len + more)
		b->cap = b->cap ? b->cap * 2 : 4096;
	b->p = realloc(b->p, b->cap);
	if (!b->p)
		die("out of memory");
}

static void buf_add(struct buf *b, const void *s, size_t n)
{
	buf_need(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	buf_need(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void buf_int(struct buf *b, int64_t v)
{
	char tmp[24], *e = tmp + sizeof(tmp), *p = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	buf_add(b, p, (size_t)(e - p));
}

static void buf_varint(struct buf *b, uint64_t v)
{
	unsigned char tmp[10];
	int n = 0;

	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	buf_add(b, tmp, (size_t)n);
}

static int varint_len(uint64_t v)
{
	int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* ---- the layout and the values ---- */

static void layout_init(struct layout *L, uint64_t seed)
{
	int cap = 1 + L->cpus + L->disks + L->nets + L->procs + L->jobs + L->gpus, cell = 0;
	uint64_t rs = seed;

	L->rows = xcalloc((size_t)cap, sizeof(*L->rows));
	L->nrows = 0;
#define ADD_ROWS(tab, n)                                                              \
	for (int k_ = 0; k_ < (n); k_++) {                                            \
		L->rows[L->nrows++] = (struct row_def){(tab), k_, cell};              \
		cell += tables[(tab)].ncols;                                          \
		L->nrows_by_table[(tab)]++;                                           \
	}
	ADD_ROWS(T_HOST, 1);
	ADD_ROWS(T_CPU, L->cpus);
	ADD_ROWS(T_DISK, L->disks);
	ADD_ROWS(T_NET, L->nets);
	ADD_ROWS(T_PROC, L->procs);
	ADD_ROWS(T_JOB, L->jobs);
	ADD_ROWS(T_GPU, L->gpus);
#undef ADD_ROWS
	L->ncells = cell;
	L->kind = xmalloc((size_t)cell);
	L->mag = xmalloc((size_t)cell * sizeof(double));
	L->rate = xmalloc((size_t)cell * sizeof(int64_t));
	L->jitter = xmalloc((size_t)cell * JITTER_POOL * sizeof(int64_t));
	for (int r = 0; r < L->nrows; r++) {
		const struct table_def *t = &tables[L->rows[r].table];

		for (int c = 0; c < t->ncols; c++) {
			int i = L->rows[r].first_cell + c;

			L->kind[i] = t->cols[c].kind;
			L->mag[i] = t->cols[c].mag;
			if (L->rows[r].table == T_HOST && strcmp(t->cols[c].name, "ncpus") == 0)
				L->mag[i] = L->node_cores;
			if (L->rows[r].table == T_JOB && strcmp(t->cols[c].name, "nprocs") == 0)
				L->mag[i] = L->jobs ? (L->procs + L->jobs - 1) / L->jobs : 0;
		}
	}
	/* how each value moves: v(a, t, i) = base[a][i] + rate[i] * t + jitter[(t + a) % P][i] */
	for (int i = 0; i < cell; i++) {
		double m = L->mag[i];

		L->rate[i] = L->kind[i] == 'k' ? (int64_t)fmax(1, m * rng_uniform(&rs, 0.5, 1.5)) : 0;
	}
	for (int j = 0; j < JITTER_POOL; j++) {
		for (int i = 0; i < cell; i++) {
			int64_t lo = 0, hi = 0, a = (int64_t)(L->mag[i] / 10);

			if (L->kind[i] == 'k')
				hi = L->rate[i] - 1;
			else if (L->kind[i] == 'g')
				lo = -a, hi = a;
			else if (L->kind[i] == 's')
				hi = 1;
			L->jitter[(size_t)j * cell + i] = rng_int(&rs, lo, hi);
		}
	}
}

static void layout_base(const struct layout *L, int agent, int64_t *base)
{
	uint64_t rs = 1000 + (uint64_t)agent;

	for (int i = 0; i < L->ncells; i++) {
		double m = L->mag[i];

		switch (L->kind[i]) {
		case 'k':
			base[i] = (int64_t)(m * rng_uniform(&rs, 1e3, 1e5));
			break;
		case 'g':
			base[i] = (int64_t)(m * rng_uniform(&rs, 0.8, 1.2));
			break;
		case 's':
			base[i] = 'R';
			break;
		default:
			base[i] = (int64_t)m;
		}
	}
}

/* ---- the agents ---- */

enum agent_state {
	A_IDLE,	      /* no connection; connects when a tick falls due */
	A_BACKOFF,    /* no connection; waits before trying again */
	A_CONNECTING, /* connect() under way */
	A_READY,      /* connected, nothing in flight */
	A_SENDING,    /* writing a request */
	A_WAITING,    /* reading the answer */
};

enum resp_state { R_HEAD, R_BODY, R_CHUNK_SIZE, R_CHUNK_DATA, R_CHUNK_CRLF, R_TRAILER, R_DONE };

/* An HTTP/1.1 answer being read. */
struct resp {
	enum resp_state st;
	char head[RESP_HEAD_MAX];
	size_t head_len;
	int status;
	int64_t remaining; /* of the body or the current chunk; -1: until the connection closes */
	bool close;
	char line[64]; /* a chunk-size or trailer line */
	size_t line_len;
	char body[RESP_BODY_KEEP + 1];
	size_t body_len;
};

enum error_kind {
	E_CONNECT,     /* connect() failed or timed out */
	E_RESET,       /* the connection closed or reset with a request in flight */
	E_TIMEOUT,     /* no full answer within --timeout-ms */
	E_HTTP,	       /* an answer other than 200 (head) or 204/200 (remote write) */
	E_ACK,	       /* the head's acked_seq is not the batch's to_seq */
	E_BAD_ANSWER,  /* not HTTP */
	E_COUNT
};

static const char *const error_names[E_COUNT] = {
	"connect", "reset", "timeout", "http_status", "acked_seq", "bad_answer",
};

struct agent {
	int idx;
	int fd;
	enum agent_state state;
	int src_addr; /* 127.0.0.(1 + src_addr) */
	int64_t start_ns; /* tick 0 falls due */
	int64_t tick;	  /* the tick being sent or next to send */
	int64_t built_tick; /* the tick whose request is in out (-1: none) */
	int64_t seq;	  /* the head has acknowledged up to this seq */
	uint32_t timer_gen;
	int failures;
	bool ever_ok;
	int64_t sent_ns, conn_ns;
	/* the request */
	char hdr[512];
	size_t hdr_len;
	struct buf body;
	size_t out_off; /* bytes of hdr + body written */
	struct resp *resp;
	/* remote write: the WriteRequest of this agent, patched each tick */
	struct buf pb;
	uint32_t *val_off, *ts_off;
	/* head: the batch's unchanging parts */
	struct buf prefix, dims;
	/* counts over the window */
	int64_t due_in_window, acked_in_window;
	int64_t *base;
};

/* A timer: agent a's timer_gen was gen when it was set; a later set makes it stale. */
struct timer {
	int64_t at;
	int agent;
	uint32_t gen;
};

struct opts {
	bool head; /* otherwise remote write */
	const char *host;
	int port;
	const char *path;
	int agents;
	int64_t interval_ns;
	double warmup_s, duration_s, ramp_s, drain_s;
	int conns_per_addr;
	int64_t connect_timeout_ns, timeout_ns;
	int pid;
	const char *token;
	int encoding; /* 0 auto (zstd above 64 KiB, as the agent), 1 identity, 2 zstd */
	bool layout_only;
	const char *json_path;
};

/* What the window measured. */
struct window {
	int64_t start_ns, end_ns;
	int64_t requests, node_ticks, values, rows, bytes;
	int64_t errors[E_COUNT];
	int64_t idle_closed, connects;
	double *lat_us, *lag_us;
	size_t nlat, nlag, lat_cap, lag_cap;
	int64_t lat_hist[LAT_BUCKETS];
	int64_t late_sends; /* sent more than one interval after falling due */
};

static const double lat_bucket_ms[LAT_BUCKETS - 1] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000};

struct sim {
	struct opts o;
	struct layout L;
	struct agent *agents;
	int epfd;
	struct timer *heap;
	size_t nheap, heap_cap;
	int64_t t0_ns, t0_wall_ms;
	int64_t window_start_ns, window_end_ns, drain_end_ns;
	bool measuring, window_done;
	struct window w;
	int64_t in_flight;
	int connected, max_connected, ever_ok;
	/* the first failure of any agent */
	int64_t first_fail_ns;
	int first_fail_connected, first_fail_ever_ok;
	const char *first_fail_kind;
	int64_t errors_total[E_COUNT];
	char last_error[E_COUNT][160];
	ZSTD_CCtx *zctx;
	struct buf zbuf;
	char *snap;
	size_t snap_cap;
};

/* ---- the timer heap ---- */

static void heap_push(struct sim *s, int64_t at, int agent, uint32_t gen)
{
	size_t i;

	if (s->nheap == s->heap_cap) {
		s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 4096;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		if (!s->heap)
			die("out of memory");
	}
	i = s->nheap++;
	while (i > 0 && s->heap[(i - 1) / 2].at > at) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = (struct timer){at, agent, gen};
}

static struct timer heap_pop(struct sim *s)
{
	struct timer top = s->heap[0], last = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && s->heap[c + 1].at < s->heap[c].at)
			c++;
		if (s->heap[c].at >= last.at)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

static void set_timer(struct sim *s, struct agent *a, int64_t at)
{
	heap_push(s, at, a->idx, ++a->timer_gen);
}

/* ---- /proc ---- */

struct proc_cpu {
	bool ok;
	int64_t utime, stime, minflt, threads;
};

static bool read_file(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	return n > 0;
}

static struct proc_cpu proc_cpu(int pid)
{
	struct proc_cpu pc = {0};
	char path[64], text[2048], *p;
	long long v[20];

	if (pid <= 0)
		return pc;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!read_file(path, text, sizeof(text)) || !(p = strrchr(text, ')')))
		return pc;
	/* after ") ": state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt,
	 * cmajflt, utime, stime, cutime, cstime, priority, nice, num_threads */
	p += 2;
	p = strchr(p, ' ');
	for (int i = 0; i < 17 && p; i++) {
		char *e;

		v[i] = strtoll(p, &e, 10);
		p = e;
	}
	if (!p)
		return pc;
	pc.ok = true;
	pc.minflt = v[6];
	pc.utime = v[10];
	pc.stime = v[11];
	pc.threads = v[16];
	return pc;
}

static int64_t proc_status_kib(int pid, const char *key)
{
	char path[64], text[8192], *p;
	size_t k = strlen(key);

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!read_file(path, text, sizeof(text)))
		return -1;
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, k) == 0 && p[k] == ':')
			return strtoll(p + k + 1, NULL, 10);
	return -1;
}

/* Busy and total ticks of the host (/proc/stat's first line). */
static void host_cpu(int64_t *busy, int64_t *total)
{
	char text[1024];
	long long v[8] = {0};

	*busy = *total = 0;
	if (!read_file("/proc/stat", text, sizeof(text)))
		return;
	if (sscanf(text, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]) < 4)
		return;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- building the requests ---- */

static int64_t value_at(const struct sim *s, const struct agent *a, int64_t t, int i)
{
	const struct layout *L = &s->L;

	return a->base[i] + L->rate[i] * t +
	       L->jitter[(size_t)((t + a->idx) % JITTER_POOL) * L->ncells + i];
}

static void agent_hostname(int idx, char *out, size_t cap)
{
	snprintf(out, cap, "sim-%04d", idx);
}

static int64_t agent_pid(int idx, int p)
{
	return 200000 + (int64_t)idx * 16 + p;
}

static int proc_job(const struct layout *L, int p)
{
	int per_job = L->jobs ? (L->procs + L->jobs - 1) / L->jobs : 1;

	return per_job ? p / per_job : 0;
}

/* The head: the batch's unchanging parts, prefix (up to "from_seq":) and the dimension rows. */
static void head_setup(struct sim *s, struct agent *a)
{
	const struct layout *L = &s->L;
	int64_t boot = s->t0_wall_ms - 86400000LL;
	char host[32];

	agent_hostname(a->idx, host, sizeof(host));
	buf_printf(&a->prefix,
		   "{\"version\":1,\"agent_id\":\"%024llx\",\"node\":{\"hostname\":\"%s\","
		   "\"cores\":%d,\"mem_total_bytes\":540000000000,\"boot_ms\":%lld},"
		   "\"interval_ms\":%lld,\"from_seq\":",
		   0xbe7c5000ULL + (unsigned long long)a->idx, host, L->node_cores, (long long)boot,
		   (long long)(s->o.interval_ns / NS_PER_MS));
	buf_str(&a->dims, "\"devices\":{\"columns\":[\"id\",\"node_id\",\"vendor\",\"idx\",\"uuid\","
			  "\"name\",\"pci_bus_id\",\"mem_total_bytes\",\"power_limit_mw\","
			  "\"nvlink_count\",\"driver_version\",\"supported\"],\"rows\":[");
	for (int g = 0; g < L->gpus; g++)
		buf_printf(&a->dims,
			   "%s[%d,1,\"NVIDIA\",%d,\"GPU-%08x-%04x-0000-0000-000000000000\","
			   "\"NVIDIA H100 80GB HBM3\",\"00000000:%02X:00.0\",85520809984,700000,18,"
			   "\"535.104.05\",65535]",
			   g ? "," : "", g + 1, g, a->idx, g, 0x18 + g);
	buf_str(&a->dims, "]},\"jobs\":{\"columns\":[\"id\",\"node_id\",\"scheduler\",\"job_id\","
			  "\"start_ms\",\"end_ms\",\"name\",\"command\",\"user\",\"uid\",\"pid\","
			  "\"exit_code\",\"signal\",\"timed_out\",\"interval_ms\",\"cores_allowed\","
			  "\"host_cores\",\"host_mem_bytes\",\"samples\",\"lost_samples\","
			  "\"sampler_cpu_ms\",\"step\",\"cgroup\",\"qos\",\"reservation_source\","
			  "\"reserved_cpus\",\"reserved_mem_bytes\",\"reserved_gpus\","
			  "\"reserved_gpu_list\"],\"rows\":[");
	for (int j = 0; j < L->jobs; j++) {
		long long jid = 7000000LL + (long long)a->idx * 16 + j;
		int cores = L->node_cores / L->jobs, ngpu = 0;
		char list[128] = "";
		size_t n = 0;

		for (int g = 0; g < L->gpus; g++)
			if (g % L->jobs == j) {
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", ngpu ? "," : "", g);
				ngpu++;
				if (n >= sizeof(list))
					die("too many GPUs for a job's list");
			}
		buf_printf(&a->dims,
			   "%s[%d,1,\"slurm\",\"%lld\",%lld,null,\"train-%d\","
			   "\"srun python train.py --config cfg%d.yaml\",\"alice\",1000,%d,null,null,0,%lld,"
			   "%d,%d,540000000000,0,0,0,\"0\","
			   "\"/sys/fs/cgroup/system.slice/slurmstepd.scope/job_%lld\",\"normal\",\"slurm\","
			   "%d.0,128000000000,%d,\"%s\"]",
			   j ? "," : "", j + 1, jid, (long long)(boot + 3600000 + j), j, j, 150000 + j,
			   (long long)(s->o.interval_ns / NS_PER_MS), cores, L->node_cores, jid, cores,
			   ngpu, list);
	}
	buf_str(&a->dims, "]},\"procs\":{\"columns\":[\"id\",\"node_id\",\"job_id\",\"pid\","
			  "\"ppid\",\"start_ms\",\"end_ms\",\"uid\",\"comm\",\"cmdline\"],\"rows\":[");
	for (int p = 0; p < L->procs; p++)
		buf_printf(&a->dims,
			   "%s[%d,1,%d,%lld,%d,%lld,null,1000,\"python3\","
			   "\"python3 -u train.py --config cfg%d.yaml --rank %d\"]",
			   p ? "," : "", p + 1, proc_job(L, p) + 1, (long long)agent_pid(a->idx, p),
			   150000 + proc_job(L, p), (long long)(boot + 3600000 + p), proc_job(L, p), p);
	buf_str(&a->dims, "]}");
}

/* The head: tick t's batch (docs/wire.md) in a->body. */
static void head_build(struct sim *s, struct agent *a, int64_t t, int64_t ts_ms)
{
	const struct layout *L = &s->L;
	struct buf *b = &a->body;
	int64_t seq = a->seq, from = a->seq, to = a->seq + L->nrows;
	enum table_id open = T_COUNT;

	b->len = 0;
	buf_add(b, a->prefix.p, a->prefix.len);
	buf_int(b, from);
	buf_str(b, ",\"to_seq\":");
	buf_int(b, to);
	buf_str(b, ",\"max_seq\":");
	buf_int(b, to);
	buf_str(b, ",\"tables\":{");
	for (int r = 0; r < L->nrows; r++) {
		const struct row_def *rd = &L->rows[r];
		const struct table_def *td = &tables[rd->table];
		int c0 = 0;

		if (rd->table != open) {
			if (open != T_COUNT)
				buf_str(b, "]},");
			buf_printf(b, "\"%s\":{\"columns\":[%s", td->name, td->key_columns);
			for (int c = 0; c < td->ncols; c++)
				buf_printf(b, ",\"%s\"", td->cols[c].name);
			buf_str(b, "],\"rows\":[");
			open = rd->table;
		} else {
			buf_str(b, ",");
		}
		buf_str(b, "[");
		buf_int(b, ++seq);
		switch (rd->table) {
		case T_HOST:
			buf_str(b, ",1,");
			buf_int(b, ts_ms);
			break;
		case T_CPU:
			buf_str(b, ",1,");
			buf_int(b, ts_ms);
			buf_str(b, ",");
			buf_int(b, rd->key);
			break;
		case T_DISK:
		case T_NET:
			buf_str(b, ",1,");
			buf_int(b, ts_ms);
			buf_printf(b, ",\"%s\"", rd->table == T_DISK ? disk_names[rd->key]
								    : net_names[rd->key]);
			break;
		case T_PROC:
			buf_str(b, ",");
			buf_int(b, rd->key + 1);
			buf_str(b, ",");
			buf_int(b, proc_job(L, rd->key) + 1);
			buf_str(b, ",");
			buf_int(b, ts_ms);
			/* the state is a letter */
			buf_str(b, value_at(s, a, t, rd->first_cell) == 'R' ? ",\"R\"" : ",\"S\"");
			c0 = 1;
			break;
		default: /* job_samples, gpu_samples: the reference, then ts */
			buf_str(b, ",");
			buf_int(b, rd->key + 1);
			buf_str(b, ",");
			buf_int(b, ts_ms);
		}
		for (int c = c0; c < td->ncols; c++) {
			buf_str(b, ",");
			buf_int(b, value_at(s, a, t, rd->first_cell + c));
		}
		buf_str(b, "]");
	}
	buf_str(b, "]},");
	buf_add(b, a->dims.p, a->dims.len);
	buf_str(b, "}}");
}

/* One protobuf length-delimited field holding a string. */
static void pb_string(struct buf *b, int field, const char *v)
{
	size_t n = strlen(v);

	buf_varint(b, (uint64_t)field << 3 | 2);
	buf_varint(b, n);
	buf_add(b, v, n);
}

static void pb_label(struct buf *b, const char *name, const char *value)
{
	size_t n = strlen(name), m = strlen(value);

	buf_varint(b, 1 << 3 | 2); /* TimeSeries.labels */
	buf_varint(b, 2 + varint_len(n) + n + varint_len(m) + m);
	pb_string(b, 1, name);
	pb_string(b, 2, value);
}

/*
 * Remote write: the agent's WriteRequest, one TimeSeries per value with one
 * Sample.  Labels sorted by name: __name__ = table_column, then cpu, disk,
 * gpu, iface, jobid as fitting, node, pid.  The timestamp's varint has the
 * same length for the whole run, so each tick patches the value (a fixed
 * 8-byte double) and the timestamp in place.
 */
static void rw_setup(struct sim *s, struct agent *a)
{
	const struct layout *L = &s->L;
	uint64_t ts_ref = (uint64_t)s->t0_wall_ms;
	int tsl = varint_len(ts_ref);
	char host[32];
	struct buf lab = {0};

	agent_hostname(a->idx, host, sizeof(host));
	a->val_off = xmalloc((size_t)L->ncells * sizeof(uint32_t));
	a->ts_off = xmalloc((size_t)L->ncells * sizeof(uint32_t));
	for (int r = 0; r < L->nrows; r++) {
		const struct row_def *rd = &L->rows[r];
		const struct table_def *td = &tables[rd->table];

		for (int c = 0; c < td->ncols; c++) {
			char name[96], v1[32], v2[32];
			int i = rd->first_cell + c;
			size_t sample_len = 1 + 8 + 1 + (size_t)tsl;

			snprintf(name, sizeof(name), "%s_%s", td->name, td->cols[c].name);
			lab.len = 0;
			pb_label(&lab, "__name__", name);
			switch (rd->table) {
			case T_CPU:
				snprintf(v1, sizeof(v1), "%d", rd->key);
				pb_label(&lab, "cpu", v1);
				break;
			case T_DISK:
				pb_label(&lab, "disk", disk_names[rd->key]);
				break;
			case T_NET:
				pb_label(&lab, "iface", net_names[rd->key]);
				break;
			case T_GPU:
				snprintf(v1, sizeof(v1), "%d", rd->key);
				pb_label(&lab, "gpu", v1);
				break;
			case T_PROC:
			case T_JOB:
				snprintf(v1, sizeof(v1), "%lld",
					 7000000LL + (long long)a->idx * 16 +
						 (rd->table == T_JOB ? rd->key : proc_job(L, rd->key)));
				pb_label(&lab, "jobid", v1);
				break;
			default:
				break;
			}
			pb_label(&lab, "node", host);
			if (rd->table == T_PROC) {
				snprintf(v2, sizeof(v2), "%lld", (long long)agent_pid(a->idx, rd->key));
				pb_label(&lab, "pid", v2);
			}
			buf_varint(&a->pb, 1 << 3 | 2); /* WriteRequest.timeseries */
			buf_varint(&a->pb, lab.len + 1 + varint_len(sample_len) + sample_len);
			buf_add(&a->pb, lab.p, lab.len);
			buf_varint(&a->pb, 2 << 3 | 2); /* TimeSeries.samples */
			buf_varint(&a->pb, sample_len);
			buf_varint(&a->pb, 1 << 3 | 1); /* Sample.value, fixed64 */
			a->val_off[i] = (uint32_t)a->pb.len;
			buf_add(&a->pb, "\0\0\0\0\0\0\0\0", 8);
			buf_varint(&a->pb, 2 << 3 | 0); /* Sample.timestamp, varint */
			a->ts_off[i] = (uint32_t)a->pb.len;
			buf_varint(&a->pb, ts_ref);
		}
	}
	free(lab.p);
}

static void rw_build(struct sim *s, struct agent *a, int64_t t, int64_t ts_ms)
{
	const struct layout *L = &s->L;
	unsigned char tsv[10];
	uint64_t v = (uint64_t)ts_ms;
	int n = 0;
	size_t out_len;

	do {
		tsv[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tsv[n] |= 0x80;
		n++;
	} while (v);
	if (n != varint_len((uint64_t)s->t0_wall_ms))
		die("the timestamp's varint changed length");
	for (int i = 0; i < L->ncells; i++) {
		double d = (double)value_at(s, a, t, i);

		memcpy(a->pb.p + a->val_off[i], &d, 8); /* little-endian, as protobuf */
		memcpy(a->pb.p + a->ts_off[i], tsv, (size_t)n);
	}
	out_len = snappy_max_compressed_length(a->pb.len);
	a->body.len = 0;
	buf_need(&a->body, out_len);
	if (snappy_compress(a->pb.p, a->pb.len, a->body.p, &out_len) != SNAPPY_OK)
		die("snappy_compress failed");
	a->body.len = out_len;
}

/* The request for the agent's current tick, in a->hdr and a->body. */
static void build_request(struct sim *s, struct agent *a)
{
	int64_t due_ns = a->start_ns + a->tick * s->o.interval_ns;
	int64_t ts_ms = s->t0_wall_ms + (due_ns - s->t0_ns) / NS_PER_MS;
	const char *enc = "";
	int n;

	if (a->built_tick == a->tick)
		return; /* a resend: the same batch */
	if (s->o.head) {
		head_build(s, a, a->tick, ts_ms);
		if (s->o.encoding == 2 || (s->o.encoding == 0 && a->body.len > ZSTD_ABOVE)) {
			size_t bound = ZSTD_compressBound(a->body.len), zn;

			s->zbuf.len = 0;
			buf_need(&s->zbuf, bound);
			zn = ZSTD_compressCCtx(s->zctx, s->zbuf.p, bound, a->body.p, a->body.len, 1);
			if (ZSTD_isError(zn))
				die("zstd: %s", ZSTD_getErrorName(zn));
			a->body.len = 0;
			buf_add(&a->body, s->zbuf.p, zn);
			enc = "Content-Encoding: zstd\r\n";
		}
		n = snprintf(a->hdr, sizeof(a->hdr),
			     "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
			     "%s%s%s%sContent-Length: %zu\r\n\r\n",
			     s->o.path, s->o.host, s->o.port, enc, s->o.token ? "Authorization: Bearer " : "",
			     s->o.token ? s->o.token : "", s->o.token ? "\r\n" : "", a->body.len);
	} else {
		rw_build(s, a, a->tick, ts_ms);
		n = snprintf(a->hdr, sizeof(a->hdr),
			     "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/x-protobuf\r\n"
			     "Content-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\n"
			     "User-Agent: jobscope-bench/agents_sim\r\nContent-Length: %zu\r\n\r\n",
			     s->o.path, s->o.host, s->o.port, a->body.len);
	}
	if (n < 0 || (size_t)n >= sizeof(a->hdr))
		die("request header too long");
	a->hdr_len = (size_t)n;
	a->built_tick = a->tick;
}

/* ---- the connection ---- */

static bool in_window(const struct sim *s, int64_t t)
{
	return t >= s->window_start_ns && t < s->window_end_ns;
}

static void note_error(struct sim *s, struct agent *a, enum error_kind k, const char *fmt, ...)
{
	int64_t now = now_ns();
	va_list ap;

	s->errors_total[k]++;
	if (in_window(s, now))
		s->w.errors[k]++;
	va_start(ap, fmt);
	vsnprintf(s->last_error[k], sizeof(s->last_error[k]), fmt, ap);
	va_end(ap);
	if (!s->first_fail_ns) {
		s->first_fail_ns = now;
		s->first_fail_connected = s->connected;
		s->first_fail_ever_ok = s->ever_ok;
		s->first_fail_kind = error_names[k];
	}
	(void)a;
}

static void close_conn(struct sim *s, struct agent *a)
{
	if (a->fd >= 0) {
		close(a->fd); /* also leaves the epoll set */
		a->fd = -1;
	}
	if (a->state >= A_READY)
		s->connected--;
	if (a->state == A_SENDING || a->state == A_WAITING)
		s->in_flight--;
}

static void schedule(struct sim *s, struct agent *a);

/* A failed attempt: close, back off (0.5 s doubling to 30 s), then resend the same tick. */
static void fail(struct sim *s, struct agent *a)
{
	int64_t back = BACKOFF_MIN_NS << (a->failures < 6 ? a->failures : 6);

	close_conn(s, a);
	if (back > BACKOFF_MAX_NS)
		back = BACKOFF_MAX_NS;
	a->failures++;
	a->state = A_BACKOFF;
	set_timer(s, a, now_ns() + back);
}

static void start_connect(struct sim *s, struct agent *a)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
	int one = 1, rc;

	a->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0) {
		note_error(s, a, E_CONNECT, "socket: %s", strerror(errno));
		a->state = A_IDLE;
		fail(s, a);
		return;
	}
	setsockopt(a->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the port is chosen at connect(), from the 4-tuple: no exhaustion per source address */
	setsockopt(a->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	src.sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)a->src_addr);
	dst.sin_port = htons((uint16_t)s->o.port);
	inet_pton(AF_INET, s->o.host, &dst.sin_addr);
	if (bind(a->fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
		note_error(s, a, E_CONNECT, "bind 127.0.0.%d: %s", 1 + a->src_addr, strerror(errno));
		a->state = A_IDLE;
		fail(s, a);
		return;
	}
	ev.data.u32 = (uint32_t)a->idx;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, a->fd, &ev) != 0)
		die("epoll_ctl: %s", strerror(errno));
	s->w.connects += in_window(s, now_ns());
	a->conn_ns = now_ns();
	rc = connect(a->fd, (struct sockaddr *)&dst, sizeof(dst));
	if (rc != 0 && errno != EINPROGRESS) {
		note_error(s, a, E_CONNECT, "connect: %s", strerror(errno));
		a->state = A_IDLE;
		fail(s, a);
		return;
	}
	a->state = A_CONNECTING;
	set_timer(s, a, a->conn_ns + s->o.connect_timeout_ns);
}

/* Writes what is left of the request; false when the connection failed. */
static bool write_some(struct sim *s, struct agent *a)
{
	while (a->out_off < a->hdr_len + a->body.len) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (a->out_off < a->hdr_len) {
			iov[n++] = (struct iovec){a->hdr + a->out_off, a->hdr_len - a->out_off};
			iov[n++] = (struct iovec){a->body.p, a->body.len};
		} else {
			iov[n++] = (struct iovec){a->body.p + (a->out_off - a->hdr_len),
						  a->body.len - (a->out_off - a->hdr_len)};
		}
		w = writev(a->fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true; /* EPOLLOUT goes on */
		if (w < 0) {
			note_error(s, a, E_RESET, "write: %s", strerror(errno));
			fail(s, a);
			return false;
		}
		a->out_off += (size_t)w;
	}
	a->state = A_WAITING;
	return true;
}

static void send_tick(struct sim *s, struct agent *a)
{
	int64_t now, due;

	build_request(s, a);
	memset(a->resp, 0, sizeof(*a->resp));
	a->out_off = 0;
	now = now_ns();
	due = a->start_ns + a->tick * s->o.interval_ns;
	if (in_window(s, now) && now - due > s->o.interval_ns)
		s->w.late_sends++;
	a->sent_ns = now;
	a->state = A_SENDING;
	s->in_flight++;
	set_timer(s, a, now + s->o.timeout_ns);
	write_some(s, a);
}

static void push_sample(double **arr, size_t *n, size_t *cap, double v)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 65536;
		*arr = realloc(*arr, *cap * sizeof(double));
		if (!*arr)
			die("out of memory");
	}
	(*arr)[(*n)++] = v;
}

/* The answer is in: judge it, count it, and go on with the next tick. */
static void answered(struct sim *s, struct agent *a)
{
	struct resp *r = a->resp;
	int64_t now = now_ns(), due = a->start_ns + a->tick * s->o.interval_ns;
	bool ok;

	s->in_flight--;
	a->state = A_READY;
	if (s->o.head) {
		ok = r->status == 200;
		if (ok) {
			const char *p = strstr(r->body, "\"acked_seq\":");
			long long acked = p ? strtoll(p + 12, NULL, 10) : -1;

			if (acked != a->seq + s->L.nrows) {
				char host[32];

				agent_hostname(a->idx, host, sizeof(host));
				note_error(s, a, E_ACK, "%s: acked_seq %lld, sent to_seq %lld", host,
					   acked, (long long)(a->seq + s->L.nrows));
				fail(s, a);
				return;
			}
		}
	} else {
		ok = r->status == 204 || r->status == 200;
	}
	if (!ok) {
		note_error(s, a, E_HTTP, "HTTP %d: %.120s", r->status, r->body);
		fail(s, a);
		return;
	}
	if (!a->ever_ok) {
		a->ever_ok = true;
		s->ever_ok++;
	}
	a->failures = 0;
	if (in_window(s, a->sent_ns)) {
		double lat_ms = (double)(now - a->sent_ns) / 1e6;
		int b = 0;

		push_sample(&s->w.lat_us, &s->w.nlat, &s->w.lat_cap, (double)(now - a->sent_ns) / 1e3);
		while (b < LAT_BUCKETS - 1 && lat_ms > lat_bucket_ms[b])
			b++;
		s->w.lat_hist[b]++;
	}
	if (in_window(s, due)) {
		a->acked_in_window++;
		push_sample(&s->w.lag_us, &s->w.nlag, &s->w.lag_cap, (double)(now - due) / 1e3);
	}
	if (in_window(s, now)) {
		s->w.requests++;
		s->w.node_ticks++;
		s->w.values += s->L.ncells;
		s->w.rows += s->L.nrows;
		s->w.bytes += (int64_t)(a->hdr_len + a->body.len);
	}
	if (s->o.head)
		a->seq += s->L.nrows;
	a->tick++;
	if (r->close) {
		close_conn(s, a);
		a->state = A_IDLE;
	}
	schedule(s, a);
}

/* Feeds bytes of the answer to the parser: 1 done, 0 more needed, -1 not HTTP. */
static int resp_feed(struct resp *r, const char *p, size_t n, size_t *used)
{
	size_t i = 0;

	while (i < n && r->st != R_DONE) {
		switch (r->st) {
		case R_HEAD: {
			char *cl, *te, *cn;

			if (r->head_len >= RESP_HEAD_MAX - 1)
				return -1;
			r->head[r->head_len++] = p[i++];
			r->head[r->head_len] = '\0';
			if (r->head_len < 4 || memcmp(r->head + r->head_len - 4, "\r\n\r\n", 4) != 0)
				break;
			if (sscanf(r->head, "HTTP/1.%*d %d", &r->status) != 1)
				return -1;
			if (r->status >= 100 && r->status < 200) { /* 100 Continue: the next head */
				r->head_len = 0;
				break;
			}
			for (char *q = r->head; *q; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q - 'A' + 'a');
			cl = strstr(r->head, "\r\ncontent-length:");
			te = strstr(r->head, "\r\ntransfer-encoding:");
			cn = strstr(r->head, "\r\nconnection:");
			r->close = (cn && strncmp(cn + 13 + strspn(cn + 13, " "), "close", 5) == 0) ||
				   strncmp(r->head, "http/1.0", 8) == 0;
			if (r->status == 204 || r->status == 304) {
				r->st = R_DONE;
			} else if (te && strstr(te, "chunked") &&
				   strstr(te, "chunked") < strstr(te + 2, "\r\n")) {
				r->st = R_CHUNK_SIZE;
				r->line_len = 0;
			} else if (cl) {
				r->remaining = strtoll(cl + 17, NULL, 10);
				r->st = r->remaining > 0 ? R_BODY : R_DONE;
			} else {
				r->remaining = -1; /* until the server closes */
				r->close = true;
				r->st = R_BODY;
			}
			break;
		}
		case R_BODY:
		case R_CHUNK_DATA: {
			size_t take = n - i;

			if (r->remaining >= 0 && (int64_t)take > r->remaining)
				take = (size_t)r->remaining;
			if (r->body_len < RESP_BODY_KEEP) {
				size_t keep = take < RESP_BODY_KEEP - r->body_len ? take
										   : RESP_BODY_KEEP - r->body_len;

				memcpy(r->body + r->body_len, p + i, keep);
				r->body_len += keep;
				r->body[r->body_len] = '\0';
			}
			i += take;
			if (r->remaining >= 0) {
				r->remaining -= (int64_t)take;
				if (r->remaining == 0)
					r->st = r->st == R_BODY ? R_DONE : R_CHUNK_CRLF;
			}
			if (r->st == R_CHUNK_CRLF)
				r->line_len = 0;
			break;
		}
		case R_CHUNK_SIZE:
		case R_CHUNK_CRLF:
		case R_TRAILER:
			if (r->line_len >= sizeof(r->line) - 1)
				return -1;
			r->line[r->line_len++] = p[i++];
			r->line[r->line_len] = '\0';
			if (r->line_len < 2 || memcmp(r->line + r->line_len - 2, "\r\n", 2) != 0)
				break;
			if (r->st == R_CHUNK_CRLF) {
				r->st = R_CHUNK_SIZE;
			} else if (r->st == R_TRAILER) {
				if (r->line_len == 2)
					r->st = R_DONE;
			} else {
				r->remaining = strtoll(r->line, NULL, 16);
				r->st = r->remaining > 0 ? R_CHUNK_DATA : R_TRAILER;
			}
			r->line_len = 0;
			break;
		case R_DONE:
			break;
		}
	}
	*used = i;
	return r->st == R_DONE;
}

static void on_readable(struct sim *s, struct agent *a)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(a->fd, buf, sizeof(buf));
		size_t used = 0;
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (n == 0 && a->state == A_WAITING && a->resp->st == R_BODY &&
			    a->resp->remaining < 0) {
				answered(s, a); /* a body delimited by the close (r->close is set) */
				return;
			}
			if (a->state == A_SENDING || a->state == A_WAITING) {
				note_error(s, a, E_RESET, "%s with a request in flight",
					   n == 0 ? "the server closed the connection" : strerror(errno));
				fail(s, a);
			} else {
				/* an idle keep-alive connection closed by the server: reconnect when due */
				s->w.idle_closed += in_window(s, now_ns());
				close_conn(s, a);
				a->state = A_IDLE;
				schedule(s, a);
			}
			return;
		}
		if (a->state != A_WAITING && a->state != A_SENDING) {
			note_error(s, a, E_BAD_ANSWER, "%zd bytes with no request in flight", n);
			fail(s, a);
			return;
		}
		rc = resp_feed(a->resp, buf, (size_t)n, &used);
		if (rc < 0 || (rc == 1 && used < (size_t)n)) {
			note_error(s, a, E_BAD_ANSWER, "not an HTTP answer: %.80s", a->resp->head);
			fail(s, a);
			return;
		}
		if (rc == 1) {
			answered(s, a);
			/* closed, reconnecting or idle: done; the next tick sent: read on */
			if (a->state != A_SENDING && a->state != A_WAITING)
				return;
		}
	}
}

static void on_event(struct sim *s, struct agent *a, uint32_t ev)
{
	if (a->state == A_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err || (ev & (EPOLLERR | EPOLLHUP))) {
			note_error(s, a, E_CONNECT, "connect: %s", strerror(err ? err : ECONNRESET));
			fail(s, a);
			return;
		}
		a->state = A_READY;
		s->connected++;
		if (s->connected > s->max_connected)
			s->max_connected = s->connected;
		schedule(s, a);
		return;
	}
	if (a->fd < 0)
		return;
	if (a->state == A_SENDING && (ev & EPOLLOUT))
		if (!write_some(s, a))
			return;
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		on_readable(s, a);
}

/* What the agent does next: send a tick that fell due, or wait for it. */
static void schedule(struct sim *s, struct agent *a)
{
	int64_t due = a->start_ns + a->tick * s->o.interval_ns, now = now_ns();

	/*
	 * Ticks due in the window are all sent, also one whose turn comes
	 * after the window's end (its agent's previous request still out, a
	 * timer a little late): it is counted as due, and the drain waits for
	 * its answer.  Ticks due after the window are not sent.
	 */
	if (due >= s->window_end_ns) {
		set_timer(s, a, INT64_MAX); /* the window is over: nothing more to send */
		return;
	}
	if (due > now) {
		set_timer(s, a, due);
		return;
	}
	if (a->state == A_IDLE)
		start_connect(s, a);
	else if (a->state == A_READY)
		send_tick(s, a);
}

static void on_timer(struct sim *s, struct agent *a)
{
	switch (a->state) {
	case A_IDLE:
	case A_READY:
		schedule(s, a);
		break;
	case A_BACKOFF:
		a->state = A_IDLE;
		schedule(s, a);
		break;
	case A_CONNECTING:
		note_error(s, a, E_CONNECT, "connect: no answer in %lld ms",
			   (long long)(s->o.connect_timeout_ns / NS_PER_MS));
		fail(s, a);
		break;
	case A_SENDING:
	case A_WAITING:
		note_error(s, a, E_TIMEOUT, "no answer in %lld ms",
			   (long long)(s->o.timeout_ns / NS_PER_MS));
		fail(s, a);
		break;
	}
}

/* ---- the run ---- */

struct proc_sample {
	struct proc_cpu pc;
	int64_t host_busy, host_total;
	double self_s;
	int64_t at_ns;
};

static struct proc_sample take_sample(const struct sim *s)
{
	struct proc_sample ps;

	ps.pc = proc_cpu(s->o.pid);
	host_cpu(&ps.host_busy, &ps.host_total);
	ps.self_s = self_cpu_s();
	ps.at_ns = now_ns();
	return ps;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* p-th percentile, nearest rank, of sorted v. */
static double pct(const double *v, size_t n, double p)
{
	size_t k;

	if (!n)
		return NAN;
	k = (size_t)ceil(p / 100.0 * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static void json_num(FILE *f, const char *key, double v, bool comma)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "\"%s\": null%s\n", key, comma ? "," : "");
	else
		fprintf(f, "\"%s\": %.6g%s\n", key, v, comma ? "," : "");
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void print_layout(FILE *f, const struct sim *s)
{
	const struct layout *L = &s->L;
	struct agent a = {.idx = 0, .seq = 0, .built_tick = -1};

	fprintf(f, "\"layout\": {\"values_per_node_tick\": %d, \"fact_rows_per_node_tick\": %d, "
		   "\"cpus\": %d, \"disks\": %d, \"nets\": %d, \"procs\": %d, \"jobs\": %d, "
		   "\"gpus\": %d, \"node_cores\": %d, \"dim_rows_per_batch\": %d, \"rows_by_table\": {",
		L->ncells, L->nrows, L->cpus, L->disks, L->nets, L->procs, L->jobs, L->gpus,
		L->node_cores, L->gpus + L->jobs + L->procs);
	for (int t = 0, first = 1; t < T_COUNT; t++)
		if (L->nrows_by_table[t]) {
			fprintf(f, "%s\"%s\": %d", first ? "" : ", ", tables[t].name, L->nrows_by_table[t]);
			first = 0;
		}
	fprintf(f, "}, \"values_by_table\": {");
	for (int t = 0, first = 1; t < T_COUNT; t++)
		if (L->nrows_by_table[t]) {
			fprintf(f, "%s\"%s\": %d", first ? "" : ", ", tables[t].name,
				L->nrows_by_table[t] * tables[t].ncols);
			first = 0;
		}
	/* one agent's request sizes, for the record */
	a.base = xmalloc((size_t)L->ncells * sizeof(int64_t));
	layout_base(L, 0, a.base);
	head_setup((struct sim *)s, &a);
	head_build((struct sim *)s, &a, 0, s->t0_wall_ms);
	fprintf(f, "}, \"head_batch_bytes\": %zu", a.body.len);
	rw_setup((struct sim *)s, &a);
	rw_build((struct sim *)s, &a, 0, s->t0_wall_ms);
	fprintf(f, ", \"rw_protobuf_bytes\": %zu, \"rw_snappy_bytes\": %zu}", a.pb.len, a.body.len);
	free(a.base);
	free(a.prefix.p);
	free(a.dims.p);
	free(a.body.p);
	free(a.pb.p);
	free(a.val_off);
	free(a.ts_off);
}

static void report(struct sim *s, const struct proc_sample *w0, const struct proc_sample *w1,
		   int64_t hwm_kib, int64_t rss_kib, double drain_s)
{
	FILE *f = stdout;
	struct window *w = &s->w;
	double el = (double)(w1->at_ns - w0->at_ns) / 1e9, tck = (double)sysconf(_SC_CLK_TCK);
	double cpu_s = NAN, user_s = NAN, sys_s = NAN, host_busy, self_s;
	int64_t due = 0, acked = 0, acked_total = 0;
	int all_acked = 0, none_acked = 0, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	if (s->o.json_path && !(f = fopen(s->o.json_path, "w")))
		die("cannot write '%s': %s", s->o.json_path, strerror(errno));
	for (int i = 0; i < s->o.agents; i++) {
		struct agent *a = &s->agents[i];
		int64_t first = (s->window_start_ns - a->start_ns + s->o.interval_ns - 1) /
				s->o.interval_ns,
			last = (s->window_end_ns - a->start_ns + s->o.interval_ns - 1) / s->o.interval_ns;

		if (first < 0)
			first = 0;
		a->due_in_window = last > first ? last - first : 0;
		due += a->due_in_window;
		acked_total += a->tick; /* a tick counts up when its answer is in */
		acked += a->acked_in_window;
		if (a->due_in_window && a->acked_in_window == a->due_in_window)
			all_acked++;
		if (a->due_in_window && a->acked_in_window == 0)
			none_acked++;
	}
	qsort(w->lat_us, w->nlat, sizeof(double), cmp_double);
	qsort(w->lag_us, w->nlag, sizeof(double), cmp_double);
	if (w0->pc.ok && w1->pc.ok) {
		user_s = (double)(w1->pc.utime - w0->pc.utime) / tck;
		sys_s = (double)(w1->pc.stime - w0->pc.stime) / tck;
		cpu_s = user_s + sys_s;
	}
	host_busy = (double)(w1->host_busy - w0->host_busy) / tck;
	self_s = w1->self_s - w0->self_s;

	fprintf(f, "{\n\"protocol\": \"%s\",\n", s->o.head ? "head" : "remote_write");
	fprintf(f, "\"agents\": %d,\n\"interval_ms\": %lld,\n", s->o.agents,
		(long long)(s->o.interval_ns / NS_PER_MS));
	fprintf(f, "\"source_addresses\": %d,\n",
		(s->o.agents + s->o.conns_per_addr - 1) / s->o.conns_per_addr);
	print_layout(f, s);
	fprintf(f, ",\n");
	json_num(f, "window_s", el, true);
	json_num(f, "drain_s", drain_s, true);
	fprintf(f, "\"requests\": %lld,\n\"node_ticks\": %lld,\n\"values\": %lld,\n\"rows\": %lld,\n"
		   "\"bytes\": %lld,\n",
		(long long)w->requests, (long long)w->node_ticks, (long long)w->values,
		(long long)w->rows, (long long)w->bytes);
	json_num(f, "values_per_s", (double)w->values / el, true);
	json_num(f, "node_ticks_per_s", (double)w->node_ticks / el, true);
	json_num(f, "mib_per_s", (double)w->bytes / el / 1048576.0, true);
	fprintf(f, "\"ticks_due\": %lld,\n\"ticks_acked\": %lld,\n\"in_flight_at_end\": %lld,\n"
		   "\"agents_all_acked\": %d,\n\"agents_none_acked\": %d,\n\"late_sends\": %lld,\n"
		   "\"ticks_acked_total\": %lld,\n",
		(long long)due, (long long)acked, (long long)s->in_flight, all_acked, none_acked,
		(long long)w->late_sends, (long long)acked_total);
	fprintf(f, "\"latency_samples\": %zu,\n", w->nlat);
	json_num(f, "lat_p50_ms", pct(w->lat_us, w->nlat, 50) / 1e3, true);
	json_num(f, "lat_p90_ms", pct(w->lat_us, w->nlat, 90) / 1e3, true);
	json_num(f, "lat_p99_ms", pct(w->lat_us, w->nlat, 99) / 1e3, true);
	json_num(f, "lat_p999_ms", pct(w->lat_us, w->nlat, 99.9) / 1e3, true);
	json_num(f, "lat_max_ms", w->nlat ? w->lat_us[w->nlat - 1] / 1e3 : NAN, true);
	json_num(f, "lag_p50_ms", pct(w->lag_us, w->nlag, 50) / 1e3, true);
	json_num(f, "lag_p99_ms", pct(w->lag_us, w->nlag, 99) / 1e3, true);
	json_num(f, "lag_max_ms", w->nlag ? w->lag_us[w->nlag - 1] / 1e3 : NAN, true);
	fprintf(f, "\"lat_hist_ms\": [");
	for (int b = 0; b < LAT_BUCKETS; b++) {
		if (b < LAT_BUCKETS - 1)
			fprintf(f, "%s[%g, %lld]", b ? ", " : "", lat_bucket_ms[b], (long long)w->lat_hist[b]);
		else
			fprintf(f, ", [null, %lld]", (long long)w->lat_hist[b]);
	}
	fprintf(f, "],\n\"errors\": {");
	for (int k = 0; k < E_COUNT; k++)
		fprintf(f, "%s\"%s\": %lld", k ? ", " : "", error_names[k], (long long)w->errors[k]);
	fprintf(f, "},\n\"errors_total\": {");
	for (int k = 0; k < E_COUNT; k++)
		fprintf(f, "%s\"%s\": %lld", k ? ", " : "", error_names[k],
			(long long)s->errors_total[k]);
	fprintf(f, "},\n\"error_messages\": {");
	for (int k = 0, first = 1; k < E_COUNT; k++)
		if (s->last_error[k][0]) {
			fprintf(f, "%s\"%s\": ", first ? "" : ", ", error_names[k]);
			json_str(f, s->last_error[k]);
			first = 0;
		}
	fprintf(f, "},\n\"idle_closed\": %lld,\n\"connects_in_window\": %lld,\n",
		(long long)w->idle_closed, (long long)w->connects);
	fprintf(f, "\"max_connected\": %d,\n\"agents_ever_acked\": %d,\n", s->max_connected,
		s->ever_ok);
	if (s->first_fail_ns) {
		fprintf(f, "\"first_failure\": {\"after_s\": %.3f, \"kind\": \"%s\", "
			   "\"connected\": %d, \"agents_ever_acked\": %d},\n",
			(double)(s->first_fail_ns - s->t0_ns) / 1e9, s->first_fail_kind,
			s->first_fail_connected, s->first_fail_ever_ok);
	} else {
		fprintf(f, "\"first_failure\": null,\n");
	}
	fprintf(f, "\"server\": {\"pid\": %d, ", s->o.pid);
	json_num(f, "cpu_s", cpu_s, true);
	json_num(f, "user_s", user_s, true);
	json_num(f, "sys_s", sys_s, true);
	json_num(f, "cores", cpu_s / el, true);
	json_num(f, "values_per_cpu_s", (double)w->values / cpu_s, true);
	json_num(f, "minflt_per_request",
		 w->requests && w0->pc.ok ? (double)(w1->pc.minflt - w0->pc.minflt) / (double)w->requests
					  : NAN,
		 true);
	fprintf(f, "\"hwm_kib\": %lld, \"rss_kib\": %lld, \"threads\": %lld},\n", (long long)hwm_kib,
		(long long)rss_kib, (long long)w1->pc.threads);
	json_num(f, "simulator_cpu_s", self_s, true);
	json_num(f, "simulator_cores", self_s / el, true);
	json_num(f, "other_load_cores", fmax(0, (host_busy - (isnan(cpu_s) ? 0 : cpu_s) - self_s) / el),
		 true);
	fprintf(f, "\"ncpus\": %d\n}\n", ncpu);
	if (f != stdout)
		fclose(f);
}

static void usage(FILE *out, int status)
{
	fprintf(out,
		"usage: bench-agents-sim --head | --remote-write --port PORT [--host 127.0.0.1]\n"
		"           [--path P] [--agents 2000] [--interval-ms 1000] [--warmup S] [--duration S]\n"
		"           [--ramp S] [--drain S] [--conns-per-addr 250] [--gpus 8] [--procs 4]\n"
		"           [--jobs 1] [--cpus 0] [--disks 1] [--nets 1] [--node-cores 64]\n"
		"           [--encoding auto|identity|zstd] [--token-file F] [--pid PID]\n"
		"           [--connect-timeout-ms 5000] [--timeout-ms 30000] [--json F] [--layout]\n"
		"\n"
		"N simulated agents, one keep-alive connection each, one batch a second each,\n"
		"against a jobscope head (--head: POST /api/v1/ingest) or a Prometheus\n"
		"remote-write receiver (--remote-write: POST /api/v1/write), with the same values.\n"
		"Prints the window's figures as JSON (bench/README.md).  --layout prints only\n"
		"the node-tick's shape.\n");
	exit(status);
}

static double parse_num(const char *opt, const char *v, double lo, double hi)
{
	char *e;
	double d = strtod(v, &e);

	if (e == v || *e || !(d >= lo && d <= hi))
		die("%s: '%s' is not a number from %g to %g", opt, v, lo, hi);
	return d;
}

static void raise_nofile(int need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		die("getrlimit: %s", strerror(errno));
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need) {
		rl.rlim_max = (rlim_t)need; /* root may raise it */
		rl.rlim_cur = (rlim_t)need;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			die("need %d file descriptors, the hard limit is lower: %s", need,
			    strerror(errno));
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		die("setrlimit: %s", strerror(errno));
}

static void read_token(struct opts *o, const char *path)
{
	static char tok[512];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		die("cannot open '%s': %s", path, strerror(errno));
	n = fread(tok, 1, sizeof(tok) - 1, f);
	fclose(f);
	tok[n] = '\0';
	tok[strcspn(tok, "\r\n")] = '\0';
	o->token = tok;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"head", no_argument, NULL, 'H'},
		{"remote-write", no_argument, NULL, 'R'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"path", required_argument, NULL, 'P'},
		{"agents", required_argument, NULL, 'n'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'w'},
		{"duration", required_argument, NULL, 'd'},
		{"ramp", required_argument, NULL, 'r'},
		{"drain", required_argument, NULL, 'D'},
		{"conns-per-addr", required_argument, NULL, 'c'},
		{"gpus", required_argument, NULL, 'g'},
		{"procs", required_argument, NULL, 'o'},
		{"jobs", required_argument, NULL, 'j'},
		{"cpus", required_argument, NULL, 'C'},
		{"disks", required_argument, NULL, 'k'},
		{"nets", required_argument, NULL, 'N'},
		{"node-cores", required_argument, NULL, 'K'},
		{"encoding", required_argument, NULL, 'e'},
		{"token-file", required_argument, NULL, 't'},
		{"pid", required_argument, NULL, 'x'},
		{"connect-timeout-ms", required_argument, NULL, 'T'},
		{"timeout-ms", required_argument, NULL, 'U'},
		{"json", required_argument, NULL, 'J'},
		{"layout", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'z'},
		{0},
	};
	struct sim *s = xcalloc(1, sizeof(*s));
	struct opts *o = &s->o;
	struct layout *L = &s->L;
	struct proc_sample w0 = {0}, w1 = {0};
	int c, proto = 0;
	int64_t last_progress, hwm = -1, rss = -1, drain_start = 0;
	double drain_s;

	*o = (struct opts){.host = "127.0.0.1", .agents = 2000, .interval_ns = NS_PER_S,
			   .warmup_s = 10, .duration_s = 60, .ramp_s = 5, .drain_s = 5,
			   .conns_per_addr = 250, .connect_timeout_ns = 5 * NS_PER_S,
			   .timeout_ns = 30 * NS_PER_S};
	*L = (struct layout){.disks = 1, .nets = 1, .procs = 4, .jobs = 1, .gpus = 8,
			     .node_cores = 64};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'H': proto = 1; break;
		case 'R': proto = 2; break;
		case 'h': o->host = optarg; break;
		case 'p': o->port = (int)parse_num("--port", optarg, 1, 65535); break;
		case 'P': o->path = optarg; break;
		case 'n': o->agents = (int)parse_num("--agents", optarg, 1, MAX_AGENTS); break;
		case 'i':
			o->interval_ns = (int64_t)parse_num("--interval-ms", optarg, 10, 3600000) * NS_PER_MS;
			break;
		case 'w': o->warmup_s = parse_num("--warmup", optarg, 0, 3600); break;
		case 'd': o->duration_s = parse_num("--duration", optarg, 1, 86400); break;
		case 'r': o->ramp_s = parse_num("--ramp", optarg, 0, 3600); break;
		case 'D': o->drain_s = parse_num("--drain", optarg, 0, 3600); break;
		case 'c': o->conns_per_addr = (int)parse_num("--conns-per-addr", optarg, 1, 60000); break;
		case 'g': L->gpus = (int)parse_num("--gpus", optarg, 0, 64); break;
		case 'o': L->procs = (int)parse_num("--procs", optarg, 0, 4096); break;
		case 'j': L->jobs = (int)parse_num("--jobs", optarg, 1, 16); break;
		case 'C': L->cpus = (int)parse_num("--cpus", optarg, 0, 1024); break;
		case 'k': L->disks = (int)parse_num("--disks", optarg, 0, 8); break;
		case 'N': L->nets = (int)parse_num("--nets", optarg, 0, 8); break;
		case 'K': L->node_cores = (int)parse_num("--node-cores", optarg, 1, 4096); break;
		case 'e':
			if (strcmp(optarg, "auto") == 0)
				o->encoding = 0;
			else if (strcmp(optarg, "identity") == 0)
				o->encoding = 1;
			else if (strcmp(optarg, "zstd") == 0)
				o->encoding = 2;
			else
				die("--encoding: auto, identity or zstd");
			break;
		case 't': read_token(o, optarg); break;
		case 'x': o->pid = (int)parse_num("--pid", optarg, 1, 1 << 30); break;
		case 'T':
			o->connect_timeout_ns =
				(int64_t)parse_num("--connect-timeout-ms", optarg, 1, 600000) * NS_PER_MS;
			break;
		case 'U':
			o->timeout_ns = (int64_t)parse_num("--timeout-ms", optarg, 1, 600000) * NS_PER_MS;
			break;
		case 'J': o->json_path = optarg; break;
		case 'L': o->layout_only = true; break;
		case 'z': usage(stdout, 0); break;
		default: usage(stderr, 2);
		}
	}
	if (optind != argc)
		usage(stderr, 2);
	if (L->cpus > 0)
		L->node_cores = L->cpus;
	o->head = proto != 2;
	if (!o->path)
		o->path = o->head ? "/api/v1/ingest" : "/api/v1/write";
	s->t0_wall_ms = wall_ms();
	layout_init(L, 12345);
	if (o->layout_only) {
		fputs("{", stdout);
		print_layout(stdout, s);
		fputs("}\n", stdout);
		return 0;
	}
	if (!proto || !o->port)
		usage(stderr, 2);
	if (o->agents > o->conns_per_addr * 254)
		die("%d agents need more than 254 source addresses at %d each", o->agents,
		    o->conns_per_addr);
	raise_nofile(o->agents + 64);
	signal(SIGPIPE, SIG_IGN);
	/* the scheduler: measurements of the servers' latency, not of this process's wait */
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0)
		die("epoll_create1: %s", strerror(errno));
	s->zctx = ZSTD_createCCtx();
	s->agents = xcalloc((size_t)o->agents, sizeof(*s->agents));

	/* the phases: agent i's ticks at start_i + k s; phase_i = ((i * P) mod N) / N of an
	 * interval with P coprime to N (even, and neighbours far apart), the first tick in
	 * second floor(i * ramp / N) */
	{
		int64_t P = (int64_t)(o->agents * 0.6180339887) | 1;
		int64_t a_ = P, b_ = o->agents;

		while (b_) {
			int64_t t = a_ % b_;
			a_ = b_;
			b_ = t;
		}
		while (a_ != 1) {
			P += 2;
			a_ = P;
			b_ = o->agents;
			while (b_) {
				int64_t t = a_ % b_;
				a_ = b_;
				b_ = t;
			}
		}
		for (int i = 0; i < o->agents; i++) {
			struct agent *a = &s->agents[i];

			a->idx = i;
			a->fd = -1;
			a->built_tick = -1;
			a->src_addr = i / o->conns_per_addr;
			a->resp = xcalloc(1, sizeof(*a->resp));
			a->base = xmalloc((size_t)L->ncells * sizeof(int64_t));
			layout_base(L, i, a->base);
			if (o->head)
				head_setup(s, a);
			else
				rw_setup(s, a);
		}
		s->t0_ns = now_ns() + 100 * NS_PER_MS;
		s->t0_wall_ms = wall_ms() + 100;
		for (int i = 0; i < o->agents; i++) {
			int64_t phase = ((int64_t)i * P % o->agents) * o->interval_ns / o->agents;
			int64_t sec = (int64_t)((double)i * o->ramp_s / o->agents);

			s->agents[i].start_ns = s->t0_ns + sec * o->interval_ns + phase;
		}
	}
	s->window_start_ns = s->t0_ns + (int64_t)(o->warmup_s * NS_PER_S);
	s->window_end_ns = s->window_start_ns + (int64_t)(o->duration_s * NS_PER_S);
	s->drain_end_ns = s->window_end_ns + (int64_t)(o->drain_s * NS_PER_S);
	fprintf(stderr,
		"bench-agents-sim: %d agents (%s), %d values in %d rows per node-tick, ramp %g s, "
		"warm-up %g s, window %g s\n",
		o->agents, o->head ? "head" : "remote write", L->ncells, L->nrows, o->ramp_s,
		o->warmup_s, o->duration_s);
	for (int i = 0; i < o->agents; i++)
		schedule(s, &s->agents[i]);
	last_progress = now_ns();
	for (;;) {
		struct epoll_event evs[256];
		int64_t now = now_ns(), wait_ns;
		int n, timeout_ms;

		if (!s->measuring && !s->window_done && now >= s->window_start_ns) {
			s->measuring = true;
			w0 = take_sample(s);
		}
		if (s->measuring && now >= s->window_end_ns) {
			w1 = take_sample(s);
			hwm = proc_status_kib(o->pid, "VmHWM");
			rss = proc_status_kib(o->pid, "VmRSS");
			s->measuring = false;
			s->window_done = true;
			drain_start = now;
		}
		if (s->window_done && (s->in_flight == 0 || now >= s->drain_end_ns))
			break;
		while (s->nheap && s->heap[0].at <= now) {
			struct timer t = heap_pop(s);
			struct agent *a = &s->agents[t.agent];

			if (t.gen == a->timer_gen)
				on_timer(s, a);
		}
		if (now - last_progress >= 5 * NS_PER_S) {
			int64_t e = 0;

			for (int k = 0; k < E_COUNT; k++)
				e += s->errors_total[k];
			fprintf(stderr, "  %5.1f s: %d connected, %d agents acked so far, %lld in flight, "
					"%lld errors\n",
				(double)(now - s->t0_ns) / 1e9, s->connected, s->ever_ok,
				(long long)s->in_flight, (long long)e);
			last_progress = now;
		}
		wait_ns = s->nheap ? s->heap[0].at - now : 100 * NS_PER_MS;
		if (!s->window_done && s->window_start_ns > now && s->window_start_ns - now < wait_ns)
			wait_ns = s->window_start_ns - now;
		if (s->window_end_ns > now && s->window_end_ns - now < wait_ns)
			wait_ns = s->window_end_ns - now;
		if (wait_ns > 100 * NS_PER_MS)
			wait_ns = 100 * NS_PER_MS;
		timeout_ms = wait_ns <= 0 ? 0 : (int)((wait_ns + NS_PER_MS - 1) / NS_PER_MS);
		n = epoll_wait(s->epfd, evs, 256, timeout_ms);
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++)
			on_event(s, &s->agents[evs[i].data.u32], evs[i].events);
	}
	drain_s = (double)(now_ns() - drain_start) / 1e9;
	report(s, &w0, &w1, hwm, rss, drain_s);
	return 0;
}
