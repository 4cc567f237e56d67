/* cuda_app.c - js-cuda-app: a program that "uses CUDA" through the fake
 * libcuda (tests/fakes/fake_cuda.h), as a scenario file says, so that the
 * CUDA hook's tests know every record it must see.
 *
 * The scenario is read and checked whole before anything runs: a bad line
 * is a message on stderr and exit 2.  One directive a line; blank lines and
 * lines starting with '#' are skipped; "x N DIRECTIVE" runs DIRECTIVE N times.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define PROG_NAME "js-cuda-app"
#include "helper.h"

#include "fake_cuda.h"

#define MAX_LINES    10000
#define MAX_TOKENS   8
#define MAX_REPEAT   100000000UL
#define MAX_DUR_NS   1000000000000000ULL /* 11.6 days */
#define MAX_BYTES    (1ULL << 50)
#define MAX_SLEEP_MS 3600000UL
#define MAX_CHILDREN 64
#define BENCH_DUR_NS 1000

enum op {
	OP_INIT,
	OP_CTX,
	OP_API,
	OP_KERNEL,
	OP_MEMCPY,
	OP_MEMSET,
	OP_SLEEP,
	OP_FLUSH,
	OP_KILL9,
	OP_EXIT,
	OP__EXIT,
	OP_FORK,
	OP_OTHER_PROFILER,
	OP_BENCH,
};

struct directive {
	enum op op;
	unsigned long repeat;
	int domain;	    /* api */
	uint32_t cbid;	    /* api */
	char *name;	    /* kernel */
	uint64_t dur_ns;    /* api, kernel, memcpy, memset */
	uint64_t launch_ns; /* kernel: its cudaLaunchKernel, if has_launch */
	bool has_launch;
	int copy_kind;	     /* memcpy: CUPTI_ACTIVITY_MEMCPY_KIND_* */
	uint64_t bytes;	     /* memcpy, memset */
	unsigned long count; /* sleep ms, exit code, bench kernels */
	int lineno;
};

static const char *scenario_path;
static pid_t children[MAX_CHILDREN];
static int nchildren;

static void usage(FILE *out, int status)
{
	print_usage(out, status, "usage: js-cuda-app SCENARIO\n",
		    "\n"
		    "Directives, one a line (NS: nanoseconds on the fake clock):\n"
		    "  init                         cuInit (runs $CUDA_INJECTION64_PATH)\n"
		    "  ctx                          create a context\n"
		    "  api runtime|driver NAME dur=NS   one API call, NAME as CUPTI names it\n"
		    "  kernel name=MANGLED dur=NS [launch=NS]  a kernel (and its\n"
		    "                               cudaLaunchKernel_v7000 call)\n"
		    "  memcpy kind=HtoD|DtoH|DtoD|HtoH|PtoP bytes=N dur=NS\n"
		    "  memset bytes=N dur=NS\n"
		    "  x N DIRECTIVE                DIRECTIVE N times\n"
		    "  sleep ms=N | flush | kill9 | exit code=N | _exit code=N\n"
		    "  fork                         the rest runs in a child too\n"
		    "  other_profiler               before init: subscribe to\n"
		    "                               $JOBSCOPE_CUPTI_LIBRARY as nsys would\n"
		    "  bench kernels=N              N kernels, 8 names, timed\n");
}

static __attribute__((noreturn, format(printf, 2, 3))) void bad_line(int lineno, const char *fmt,
								     ...)
{
	va_list ap;

	fprintf(stderr, PROG_NAME ": %s:%d: ", scenario_path, lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static uint64_t parse_u64(int lineno, const char *key, const char *text, uint64_t max)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)text[0]))
		bad_line(lineno, "bad %s '%s'", key, text);
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		bad_line(lineno, "bad %s '%s'", key, text);
	return v;
}

/* The value of "key=value" among @tok[from..n), or NULL; any other token
 * is an error. */
static const char *find_arg(int lineno, char **tok, int n, int from, const char *key,
			    const char *const *allowed)
{
	const char *found = NULL;
	size_t len = strlen(key);

	for (int i = from; i < n; i++) {
		const char *eq = strchr(tok[i], '=');
		bool known = false;
		if (eq == NULL)
			bad_line(lineno, "expected key=value, got '%s'", tok[i]);
		for (int a = 0; allowed[a] != NULL; a++)
			if ((size_t)(eq - tok[i]) == strlen(allowed[a]) &&
			    strncmp(tok[i], allowed[a], strlen(allowed[a])) == 0)
				known = true;
		if (!known)
			bad_line(lineno, "unknown argument '%s'", tok[i]);
		if ((size_t)(eq - tok[i]) == len && strncmp(tok[i], key, len) == 0) {
			if (found != NULL)
				bad_line(lineno, "%s given twice", key);
			found = eq + 1;
		}
	}
	return found;
}

static const char *need_arg(int lineno, char **tok, int n, int from, const char *key,
			    const char *const *allowed)
{
	const char *v = find_arg(lineno, tok, n, from, key, allowed);
	if (v == NULL)
		bad_line(lineno, "%s= missing", key);
	return v;
}

static int parse_copy_kind(int lineno, const char *text)
{
	static const struct {
		const char *name;
		int kind;
	} kinds[] = {{"HtoD", 1}, {"DtoH", 2}, {"DtoD", 8}, {"HtoH", 9}, {"PtoP", 10}};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(text, kinds[i].name) == 0)
			return kinds[i].kind;
	bad_line(lineno, "bad memcpy kind '%s'", text);
}

static void expect_args(int lineno, int n, int want, const char *what)
{
	if (n != want)
		bad_line(lineno, "%s takes %d argument(s)", what, want - 1);
}

/* Parses the directive in @tok[0..n) (its "x N" prefix already taken). */
static void parse_directive(struct directive *d, char **tok, int n)
{
	static const char *const dur[] = {"dur", NULL};
	static const char *const kernel[] = {"name", "dur", "launch", NULL};
	static const char *const memcpy_args[] = {"kind", "bytes", "dur", NULL};
	static const char *const memset_args[] = {"bytes", "dur", NULL};
	static const char *const ms[] = {"ms", NULL};
	static const char *const code[] = {"code", NULL};
	static const char *const kernels[] = {"kernels", NULL};
	int ln = d->lineno;
	const char *v;

	if (strcmp(tok[0], "init") == 0) {
		expect_args(ln, n, 1, "init");
		d->op = OP_INIT;
	} else if (strcmp(tok[0], "ctx") == 0) {
		expect_args(ln, n, 1, "ctx");
		d->op = OP_CTX;
	} else if (strcmp(tok[0], "api") == 0) {
		expect_args(ln, n, 4, "api");
		d->op = OP_API;
		if (strcmp(tok[1], "runtime") == 0)
			d->domain = 2; /* CUPTI_CB_DOMAIN_RUNTIME_API */
		else if (strcmp(tok[1], "driver") == 0)
			d->domain = 1; /* CUPTI_CB_DOMAIN_DRIVER_API */
		else
			bad_line(ln, "api: runtime or driver, not '%s'", tok[1]);
		int64_t cbid = fakecuda_api_cbid(d->domain, tok[2]);
		if (cbid < 0)
			bad_line(ln, "api: the fakes do not know %s '%s'", tok[1], tok[2]);
		d->cbid = (uint32_t)cbid;
		d->dur_ns = parse_u64(ln, "dur", need_arg(ln, tok, n, 3, "dur", dur), MAX_DUR_NS);
	} else if (strcmp(tok[0], "kernel") == 0) {
		d->op = OP_KERNEL;
		v = need_arg(ln, tok, n, 1, "name", kernel);
		if (v[0] == '\0')
			bad_line(ln, "kernel: empty name");
		d->name = strdup(v);
		if (d->name == NULL)
			err(1, "strdup");
		d->dur_ns =
		    parse_u64(ln, "dur", need_arg(ln, tok, n, 1, "dur", kernel), MAX_DUR_NS);
		v = find_arg(ln, tok, n, 1, "launch", kernel);
		d->has_launch = v != NULL;
		if (v != NULL)
			d->launch_ns = parse_u64(ln, "launch", v, MAX_DUR_NS);
	} else if (strcmp(tok[0], "memcpy") == 0) {
		d->op = OP_MEMCPY;
		d->copy_kind = parse_copy_kind(ln, need_arg(ln, tok, n, 1, "kind", memcpy_args));
		d->bytes = parse_u64(ln, "bytes", need_arg(ln, tok, n, 1, "bytes", memcpy_args),
				     MAX_BYTES);
		d->dur_ns =
		    parse_u64(ln, "dur", need_arg(ln, tok, n, 1, "dur", memcpy_args), MAX_DUR_NS);
	} else if (strcmp(tok[0], "memset") == 0) {
		d->op = OP_MEMSET;
		d->bytes = parse_u64(ln, "bytes", need_arg(ln, tok, n, 1, "bytes", memset_args),
				     MAX_BYTES);
		d->dur_ns =
		    parse_u64(ln, "dur", need_arg(ln, tok, n, 1, "dur", memset_args), MAX_DUR_NS);
	} else if (strcmp(tok[0], "sleep") == 0) {
		d->op = OP_SLEEP;
		d->count = parse_u64(ln, "ms", need_arg(ln, tok, n, 1, "ms", ms), MAX_SLEEP_MS);
	} else if (strcmp(tok[0], "flush") == 0) {
		expect_args(ln, n, 1, "flush");
		d->op = OP_FLUSH;
	} else if (strcmp(tok[0], "kill9") == 0) {
		expect_args(ln, n, 1, "kill9");
		d->op = OP_KILL9;
	} else if (strcmp(tok[0], "exit") == 0 || strcmp(tok[0], "_exit") == 0) {
		d->op = tok[0][0] == '_' ? OP__EXIT : OP_EXIT;
		d->count = parse_u64(ln, "code", need_arg(ln, tok, n, 1, "code", code), 255);
	} else if (strcmp(tok[0], "fork") == 0) {
		expect_args(ln, n, 1, "fork");
		d->op = OP_FORK;
	} else if (strcmp(tok[0], "other_profiler") == 0) {
		expect_args(ln, n, 1, "other_profiler");
		d->op = OP_OTHER_PROFILER;
	} else if (strcmp(tok[0], "bench") == 0) {
		d->op = OP_BENCH;
		d->count = parse_u64(ln, "kernels", need_arg(ln, tok, n, 1, "kernels", kernels),
				     MAX_REPEAT);
	} else {
		bad_line(ln, "unknown directive '%s'", tok[0]);
	}
}

/* Reads and checks the whole scenario; returns the directive count. */
static int parse_scenario(const char *path, struct directive *out)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int n = 0, lineno = 0;

	if (f == NULL)
		err(2, "cannot open scenario '%s'", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *tok[MAX_TOKENS + 1], *save = NULL, *t;
		int ntok = 0;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f))
			bad_line(lineno, "line too long");
		for (t = strtok_r(line, " \t\r\n", &save); t != NULL;
		     t = strtok_r(NULL, " \t\r\n", &save)) {
			if (ntok == MAX_TOKENS)
				bad_line(lineno, "too many words");
			tok[ntok++] = t;
		}
		if (ntok == 0 || tok[0][0] == '#')
			continue;
		if (n == MAX_LINES)
			bad_line(lineno, "more than %d directives", MAX_LINES);
		struct directive *d = &out[n++];
		memset(d, 0, sizeof(*d));
		d->lineno = lineno;
		d->repeat = 1;
		int from = 0;
		if (strcmp(tok[0], "x") == 0) {
			if (ntok < 3)
				bad_line(lineno, "x N DIRECTIVE");
			d->repeat = parse_u64(lineno, "repeat count", tok[1], MAX_REPEAT);
			from = 2;
		}
		parse_directive(d, tok + from, ntok - from);
	}
	if (ferror(f))
		err(2, "cannot read scenario '%s'", path);
	fclose(f);
	return n;
}

static void reap_children(void)
{
	for (int i = 0; i < nchildren; i++)
		wait_child(children[i]);
	nchildren = 0;
}

/* As nsys or ncu do: take CUPTI's one subscriber slot before the program
 * initializes CUDA.  The library stays loaded and subscribed. */
static void other_profiler(int lineno)
{
	typedef int (*subscribe_fn)(void **subscriber, void *callback, void *userdata);
	const char *path = getenv("JOBSCOPE_CUPTI_LIBRARY");
	void *subscriber = NULL;

	if (path == NULL || path[0] == '\0')
		bad_line(lineno, "other_profiler: $JOBSCOPE_CUPTI_LIBRARY is not set");
	void *lib = dlopen(path, RTLD_NOW);
	if (lib == NULL)
		errx(1, "other_profiler: %s", dlerror());
	subscribe_fn subscribe = (subscribe_fn)dlsym(lib, "cuptiSubscribe");
	if (subscribe == NULL)
		errx(1, "other_profiler: no cuptiSubscribe in '%s'", path);
	int ret = subscribe(&subscriber, NULL, NULL);
	if (ret != 0)
		errx(1, "other_profiler: cuptiSubscribe returned %d", ret);
}

static void bench(unsigned long kernels)
{
	static const char *const names[8] = {
	    "_Z6vecAddPKfS0_Pfi",
	    "_Z4gemmIfEvPKT_S2_PS0_iii",
	    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_"
	     "6detail5ArrayIPcLi1EEEEEviT0_T1_"),
	    "_Z9reduceSumPfS_i",
	    "_Z7softmaxPKfPfi",
	    "_Z9layerNormPKfPfS1_S1_i",
	    "_Z4reluPf",
	    "_Z8transposePfPKfii",
	};
	double t0 = now_s();
	for (unsigned long i = 0; i < kernels; i++)
		fakecuda_kernel(names[i & 7], BENCH_DUR_NS);
	double elapsed = now_s() - t0;
	printf("bench: %lu kernels in %.0f ns, %.1f ns/kernel\n", kernels, elapsed * 1e9,
	       kernels > 0 ? elapsed * 1e9 / (double)kernels : 0.0);
	fflush(stdout);
}

static void run_once(const struct directive *d)
{
	pid_t pid;

	switch (d->op) {
	case OP_INIT:
		cuInit(0);
		break;
	case OP_CTX:
		fakecuda_ctx_create();
		break;
	case OP_API:
		fakecuda_api(d->domain, d->cbid, d->dur_ns);
		break;
	case OP_KERNEL:
		if (d->has_launch)
			fakecuda_api(2, FAKECUDA_CBID_LAUNCH_KERNEL, d->launch_ns);
		fakecuda_kernel(d->name, d->dur_ns);
		break;
	case OP_MEMCPY:
		fakecuda_memcpy(d->copy_kind, d->bytes, d->dur_ns);
		break;
	case OP_MEMSET:
		fakecuda_memset(d->bytes, d->dur_ns);
		break;
	case OP_SLEEP:
		sleep_s((double)d->count / 1000.0);
		break;
	case OP_FLUSH:
		break; /* the hook flushes on its own */
	case OP_KILL9:
		fflush(NULL);
		raise(SIGKILL);
		break;
	case OP_EXIT:
		reap_children();
		exit((int)d->count);
	case OP__EXIT:
		reap_children();
		fflush(NULL);
		_exit((int)d->count);
	case OP_FORK:
		if (nchildren == MAX_CHILDREN)
			errx(1, "more than %d forks", MAX_CHILDREN);
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			err(1, "fork");
		if (pid == 0)
			nchildren = 0; /* the child waits only for its own */
		else
			children[nchildren++] = pid;
		break;
	case OP_OTHER_PROFILER:
		other_profiler(d->lineno);
		break;
	case OP_BENCH:
		bench(d->count);
		break;
	}
}

int main(int argc, char **argv)
{
	static struct directive script[MAX_LINES];

	if (argc == 2 && strcmp(argv[1], "--help") == 0)
		usage(stdout, 0);
	if (argc != 2)
		usage(stderr, 2);
	scenario_path = argv[1];
	int n = parse_scenario(scenario_path, script);
	for (int i = 0; i < n; i++)
		for (unsigned long r = 0; r < script[i].repeat; r++)
			run_once(&script[i]);
	reap_children();
	for (int i = 0; i < n; i++)
		free(script[i].name);
	return 0;
}
