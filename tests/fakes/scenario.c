/* scenario.c - parse the fake GPU libraries' scenario file (see scenario.h). */
#include "scenario.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PROC_SAMPLE_US 100000

static const char *const value_keys[SV_COUNT] = {
    [SV_UTIL] = "util",
    [SV_MEM_UTIL] = "mem_util",
    [SV_MEM_USED] = "mem_used",
    [SV_PCIE_TX_KBPS] = "pcie_tx_kbps",
    [SV_PCIE_RX_KBPS] = "pcie_rx_kbps",
    [SV_NVLINK_TX_KIB] = "nvlink_tx_kib",
    [SV_NVLINK_RX_KIB] = "nvlink_rx_kib",
    [SV_POWER] = "power",
    [SV_ENERGY] = "energy",
    [SV_TEMP] = "temp",
    [SV_SM_CLOCK] = "sm_clock",
    [SV_MEM_CLOCK] = "mem_clock",
    [SV_THROTTLE] = "throttle",
    [SV_ECC_SBE] = "ecc_sbe",
    [SV_ECC_DBE] = "ecc_dbe",
    [SV_PCIE_REPLAY] = "pcie_replay",
    [SV_REMAPPED_CORR] = "remapped_corr",
    [SV_REMAPPED_UNC] = "remapped_unc",
    [SV_REMAP_PENDING] = "remap_pending",
    [SV_REMAP_FAILED] = "remap_failed",
};

static const char *const fvalue_keys[SF_COUNT] = {
    [SF_GR_ACTIVE] = "gr_active",
    [SF_SM_ACTIVE] = "sm_active",
    [SF_SM_OCCUPANCY] = "sm_occupancy",
    [SF_TENSOR] = "tensor",
    [SF_DFMA] = "dfma",
    [SF_HMMA] = "hmma",
    [SF_IMMA] = "imma",
    [SF_DRAM] = "dram",
    [SF_FP64] = "fp64",
    [SF_FP32] = "fp32",
    [SF_FP16] = "fp16",
    [SF_VIOL_POWER] = "viol_power",
    [SF_VIOL_THERMAL] = "viol_thermal",
    [SF_VIOL_SYNC_BOOST] = "viol_sync_boost",
    [SF_VIOL_BOARD_LIMIT] = "viol_board_limit",
    [SF_VIOL_LOW_UTIL] = "viol_low_util",
    [SF_VIOL_RELIABILITY] = "viol_reliability",
    [SF_VIOL_APP_CLOCKS] = "viol_app_clocks",
    [SF_VIOL_BASE_CLOCKS] = "viol_base_clocks",
    [SF_VIOL_SW_THERMAL] = "viol_sw_thermal",
    [SF_VIOL_HW_THERMAL] = "viol_hw_thermal",
    [SF_VIOL_HW_POWER_BRAKE] = "viol_hw_power_brake",
};

static const struct {
	const char *name;
	uint32_t bit;
} metric_names[] = {
    {"util", SM_UTIL},
    {"mem_util", SM_MEM_UTIL},
    {"mem_used", SM_MEM_USED},
    {"pcie", SM_PCIE},
    {"nvlink", SM_NVLINK},
    {"power", SM_POWER},
    {"energy", SM_ENERGY},
    {"temp", SM_TEMP},
    {"clocks", SM_CLOCKS},
    {"throttle", SM_THROTTLE},
    {"ecc", SM_ECC},
    {"procs", SM_PROCS},
    {"proc_util", SM_PROC_UTIL},
    {"events", SM_EVENTS},
    {"gpm", SM_GPM},
    {"viol", SM_VIOL},
    {"viol_fields", SM_VIOL_FIELDS},
    {"pcie_replay", SM_PCIE_REPLAY},
    {"remap", SM_REMAP},
    {"accounting", SM_ACCOUNTING},
};

#define DEFAULT_GPM_METRIC_MAX 333

static double start_time = -1;
/* CLOCK_BOOTTIME at start_time: /proc start times are counted from boot */
static double start_boottime;
/* the tests' clock (scenario_set_clock): when >= 0, what scenario_now() reads */
static double test_time = -1;
static double test_step;

void scenario_set_clock(double t, double step)
{
	test_time = t;
	test_step = step;
}

double scenario_now(void)
{
	struct timespec ts;
	double now;

	if (test_time >= 0) {
		now = test_time;
		test_time += test_step;
		return now;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (start_time < 0) {
		struct timespec boot;

		start_time = now;
		clock_gettime(CLOCK_BOOTTIME, &boot);
		start_boottime = (double)boot.tv_sec + (double)boot.tv_nsec / 1e9;
	}
	return now - start_time;
}

/* Splits line into words in place; "quoted" values keep their spaces. */
static int split(char *line, char **words, int max)
{
	int n = 0;
	char *p = line;

	while (*p && n < max) {
		char *out;

		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			break;
		words[n++] = out = p;
		while (*p && !isspace((unsigned char)*p)) {
			if (*p == '"') {
				p++;
				while (*p && *p != '"')
					*out++ = *p++;
				if (*p == '"')
					p++;
				continue;
			}
			*out++ = *p++;
		}
		if (*p)
			p++;
		*out = '\0';
	}
	return n;
}

static bool kv(const char *word, const char *key, const char **value)
{
	size_t n = strlen(key);

	if (strncmp(word, key, n) != 0 || word[n] != '=')
		return false;
	*value = word + n + 1;
	return true;
}

static int device_arg(const struct scenario *s, const char *w, bool must_exist)
{
	char *end;
	long d = strtol(w, &end, 10);

	if (*end || d < 0 || d >= SCN_MAX_DEVICES || (must_exist && d >= s->ndevices))
		return -1;
	return (int)d;
}

/* The MIG instance of gi (and ci, or its first when ci < 0) on device d, or -1. */
static int mig_find(const struct scenario *s, int d, int gi, int ci)
{
	for (int i = 0; i < s->nmigs; i++)
		if (s->mig[i].device == d && (int)s->mig[i].gi == gi &&
		    (ci < 0 || (int)s->mig[i].ci == ci))
			return i;
	return -1;
}

/*
 * "D", "D/GI" or "D/GI/CI" (ci may be NULL: then no CI part): the device
 * (existing), its MIG GPU instance (declared by a `mig` line before) or
 * SCN_NO_INSTANCE, and the compute instance (-1: not said).
 */
static int device_mig_arg(const struct scenario *s, const char *w, int *gi, int *ci)
{
	char dev[16];
	const char *slash = strchr(w, '/');
	long g, c = -1;
	char *end;
	int d;

	*gi = SCN_NO_INSTANCE;
	if (ci)
		*ci = -1;
	if (!slash)
		return device_arg(s, w, true);
	if ((size_t)(slash - w) >= sizeof(dev))
		return -1;
	memcpy(dev, w, (size_t)(slash - w));
	dev[slash - w] = '\0';
	d = device_arg(s, dev, true);
	g = strtol(slash + 1, &end, 10);
	if (*end == '/' && ci) {
		c = strtol(end + 1, &end, 10);
		if (c < 0)
			return -1;
	}
	if (d < 0 || end == slash + 1 || *end || g < 0 || mig_find(s, d, (int)g, (int)c) < 0)
		return -1;
	*gi = (int)g;
	if (ci)
		*ci = (int)c;
	return d;
}

/* "1,2,3": GPM metric ids below 64 into a mask. */
static int parse_ids(const char *v, uint64_t *mask)
{
	*mask = 0;
	while (*v) {
		char *end;
		unsigned long id = strtoul(v, &end, 10);

		if (end == v || id >= 64)
			return -EINVAL;
		*mask |= 1ull << id;
		v = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	return 0;
}

static int parse_line(struct scenario *s, char **w, int n)
{
	const char *v;
	int d;

	if (strcmp(w[0], "driver") == 0 && n == 2) {
		snprintf(s->driver, sizeof(s->driver), "%s", w[1]);
		return 0;
	}
	if (strcmp(w[0], "init_sleep_ms") == 0 && n == 2) {
		s->init_sleep_ms = atoi(w[1]);
		return 0;
	}
	if (strcmp(w[0], "init_error") == 0 && n == 2) {
		s->init_error = atoi(w[1]);
		return 0;
	}
	if (strcmp(w[0], "no_gpu") == 0 && n == 1) {
		s->no_gpu = true;
		return 0;
	}
	if (strcmp(w[0], "init_say") == 0 && n >= 2 && n <= 3) {
		if (n == 3 && strcmp(w[1], "stdout") != 0 && strcmp(w[1], "stderr") != 0)
			return -EINVAL;
		s->init_say_stdout = n == 3 && strcmp(w[1], "stdout") == 0;
		snprintf(s->init_say, sizeof(s->init_say), "%s", w[n - 1]);
		return 0;
	}
	if (strcmp(w[0], "device") == 0 && n >= 2) {
		struct scn_device *dev;

		d = device_arg(s, w[1], false);
		if (d < 0 || d != s->ndevices)
			return -EINVAL; /* devices in order 0, 1, 2... */
		dev = &s->dev[s->ndevices++];
		memset(dev, 0, sizeof(*dev));
		dev->lost_at = -1;
		dev->proc_sample_us = DEFAULT_PROC_SAMPLE_US;
		snprintf(dev->uuid, sizeof(dev->uuid), "GPU-fake-%04d", d);
		snprintf(dev->name, sizeof(dev->name), "Fake GPU");
		snprintf(dev->bus, sizeof(dev->bus), "00000000:%02X:00.0", d + 1);
		dev->minor = d;
		dev->gpm_metric_max = DEFAULT_GPM_METRIC_MAX;
		for (int i = 2; i < n; i++) {
			if (kv(w[i], "uuid", &v))
				snprintf(dev->uuid, sizeof(dev->uuid), "%s", v);
			else if (kv(w[i], "name", &v))
				snprintf(dev->name, sizeof(dev->name), "%s", v);
			else if (kv(w[i], "bus", &v))
				snprintf(dev->bus, sizeof(dev->bus), "%s", v);
			else if (kv(w[i], "mem_total", &v))
				dev->mem_total = strtoull(v, NULL, 10);
			else if (kv(w[i], "power_limit", &v))
				dev->power_limit_mw = (uint32_t)strtoul(v, NULL, 10);
			else if (kv(w[i], "nvlinks", &v))
				dev->nvlinks = (uint32_t)strtoul(v, NULL, 10);
			else if (kv(w[i], "minor", &v))
				dev->minor = atoi(v);
			else if (kv(w[i], "proc_sample_ms", &v) && strtoul(v, NULL, 10) > 0)
				dev->proc_sample_us = strtoull(v, NULL, 10) * 1000;
			else if (kv(w[i], "gpm", &v))
				dev->gpm = atoi(v) != 0;
			else if (kv(w[i], "gpm_metric_max", &v) && strtoul(v, NULL, 10) > 0)
				dev->gpm_metric_max = (uint32_t)strtoul(v, NULL, 10);
			else if (kv(w[i], "gpm_ids", &v) && parse_ids(v, &dev->gpm_ids) == 0)
				dev->has_gpm_ids = true;
			else if (kv(w[i], "accounting", &v))
				dev->accounting = atoi(v) != 0;
			else
				return -EINVAL;
		}
		return 0;
	}
	if (strcmp(w[0], "unsupported") == 0 && n >= 3) {
		d = device_arg(s, w[1], true);
		if (d < 0)
			return -EINVAL;
		for (int i = 2; i < n; i++) {
			size_t k;

			for (k = 0; k < sizeof(metric_names) / sizeof(metric_names[0]); k++)
				if (strcmp(w[i], metric_names[k].name) == 0)
					break;
			if (k == sizeof(metric_names) / sizeof(metric_names[0]))
				return -EINVAL;
			s->dev[d].unsupported |= metric_names[k].bit;
		}
		return 0;
	}
	if (strcmp(w[0], "at") == 0 && n >= 3) {
		struct scn_step *st;

		int gi;

		if (s->nsteps == SCN_MAX_STEPS)
			return -E2BIG;
		/* `at T D`; the device may be D/GI, and the word with the '/' is it */
		d = device_mig_arg(s, strchr(w[1], '/') ? w[1] : w[2], &gi, NULL);
		if (d < 0)
			return -EINVAL;
		st = &s->step[s->nsteps++];
		memset(st, 0, sizeof(*st));
		st->device = d;
		st->gi = gi;
		st->at = strtod(strchr(w[1], '/') ? w[2] : w[1], NULL);
		for (int i = 3; i < n; i++) {
			int k;

			for (k = 0; k < SV_COUNT; k++)
				if (kv(w[i], value_keys[k], &v))
					break;
			if (k < SV_COUNT) {
				st->v[k] = strtoull(v, NULL, 0);
				st->set |= 1u << k;
				continue;
			}
			for (k = 0; k < SF_COUNT; k++)
				if (kv(w[i], fvalue_keys[k], &v))
					break;
			if (k == SF_COUNT)
				return -EINVAL;
			st->f[k] = strtod(v, NULL);
			st->fset |= 1u << k;
		}
		return 0;
	}
	if (strcmp(w[0], "proc") == 0 && n >= 3) {
		struct scn_proc *p;

		int gi, ci;

		if (s->nprocs == SCN_MAX_PROCS)
			return -E2BIG;
		d = device_mig_arg(s, w[1], &gi, &ci);
		if (d < 0)
			return -EINVAL;
		p = &s->proc[s->nprocs++];
		memset(p, 0, sizeof(*p));
		p->device = d;
		p->gi = gi;
		p->ci = gi == SCN_NO_INSTANCE ? SCN_NO_INSTANCE
			: ci >= 0	      ? ci
					      : (int)s->mig[mig_find(s, d, gi, -1)].ci;
		p->until = 1e18;
		p->start_t = p->alive_at = NAN;
		for (int i = 2; i < n; i++) {
			if (kv(w[i], "pid", &v)) {
				if (strncmp(v, "file:", 5) == 0)
					snprintf(p->pid_file, sizeof(p->pid_file), "%s", v + 5);
				else
					p->pid = (uint32_t)strtoul(v, NULL, 10);
			} else if (kv(w[i], "mem", &v)) {
				p->mem = strtoull(v, NULL, 0);
			} else if (kv(w[i], "sm", &v)) {
				p->sm = (uint32_t)strtoul(v, NULL, 10);
				p->has_util = true;
			} else if (kv(w[i], "memutil", &v)) {
				p->memutil = (uint32_t)strtoul(v, NULL, 10);
				p->has_util = true;
			} else if (kv(w[i], "graphics", &v)) {
				p->graphics = atoi(v) != 0;
			} else if (kv(w[i], "from", &v)) {
				p->from_start = *v == '+';
				p->from = strtod(v, NULL);
			} else if (kv(w[i], "until", &v)) {
				p->until_start = *v == '+';
				p->until = strtod(v, NULL);
			} else if (kv(w[i], "power", &v)) {
				p->power_mw = (uint32_t)strtoul(v, NULL, 10);
			} else if (kv(w[i], "maxmem", &v)) {
				p->maxmem = strtoull(v, NULL, 0);
				p->has_maxmem = true;
			} else {
				return -EINVAL;
			}
		}
		/* a start to count from: only a real process (a pid file) has one */
		if ((p->from_start || p->until_start) && !p->pid_file[0])
			return -EINVAL;
		return 0;
	}
	if (strcmp(w[0], "xid") == 0 && n >= 3) {
		struct scn_event *e;

		if (s->nevents == SCN_MAX_EVENTS)
			return -E2BIG;
		d = device_arg(s, w[1], true);
		if (d < 0)
			return -EINVAL;
		e = &s->event[s->nevents++];
		memset(e, 0, sizeof(*e));
		e->device = d;
		for (int i = 2; i < n; i++) {
			if (kv(w[i], "at", &v))
				e->at = strtod(v, NULL);
			else if (kv(w[i], "code", &v))
				e->code = strtoull(v, NULL, 10);
			else
				return -EINVAL;
		}
		return 0;
	}
	if (strcmp(w[0], "mig") == 0 && n >= 3) {
		struct scn_mig *m;
		bool has_gi = false;

		if (s->nmigs == SCN_MAX_MIGS)
			return -E2BIG;
		d = device_arg(s, w[1], true);
		if (d < 0)
			return -EINVAL;
		m = &s->mig[s->nmigs];
		memset(m, 0, sizeof(*m));
		m->device = d;
		for (int i = 2; i < n; i++) {
			if (kv(w[i], "gi", &v)) {
				m->gi = (uint32_t)strtoul(v, NULL, 10);
				has_gi = true;
			} else if (kv(w[i], "ci", &v)) {
				m->ci = (uint32_t)strtoul(v, NULL, 10);
			} else if (kv(w[i], "profile", &v)) {
				snprintf(m->profile, sizeof(m->profile), "%s", v);
			} else if (kv(w[i], "uuid", &v)) {
				snprintf(m->uuid, sizeof(m->uuid), "%s", v);
			} else if (kv(w[i], "mem_total", &v)) {
				m->mem_total = strtoull(v, NULL, 0);
			} else {
				return -EINVAL;
			}
		}
		if (!has_gi || mig_find(s, d, (int)m->gi, (int)m->ci) >= 0)
			return -EINVAL; /* a GPU instance, once per compute instance */
		if (!m->profile[0])
			snprintf(m->profile, sizeof(m->profile), "1g.10gb");
		if (!m->uuid[0])
			snprintf(m->uuid, sizeof(m->uuid), "MIG-fake-%04d-%u-%u", d, m->gi, m->ci);
		s->nmigs++;
		return 0;
	}
	if (strcmp(w[0], "lost") == 0 && n == 3) {
		d = device_arg(s, w[1], true);
		if (d < 0 || !kv(w[2], "at", &v))
			return -EINVAL;
		s->dev[d].lost_at = strtod(v, NULL);
		return 0;
	}
	return -EINVAL;
}

int scenario_load(struct scenario *s)
{
	const char *path = getenv("FAKE_GPU_SCENARIO");
	char line[1024];
	int lineno = 0;
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(s->driver, sizeof(s->driver), "535.104.05");
	/* t = 0 is now, at every load: a test process loads the fake many times */
	scenario_set_clock(-1, 0);
	start_time = -1;
	scenario_now();
	if (!path || !*path) {
		s->ndevices = 1;
		s->dev[0].lost_at = -1;
		snprintf(s->dev[0].uuid, sizeof(s->dev[0].uuid), "GPU-fake-0000");
		snprintf(s->dev[0].name, sizeof(s->dev[0].name), "Fake GPU");
		snprintf(s->dev[0].bus, sizeof(s->dev[0].bus), "00000000:01:00.0");
		s->dev[0].mem_total = 16ull << 30;
		s->dev[0].proc_sample_us = DEFAULT_PROC_SAMPLE_US;
		s->dev[0].gpm_metric_max = DEFAULT_GPM_METRIC_MAX;
		return 0;
	}
	f = fopen(path, "r");
	if (!f) {
		int err = errno;

		fprintf(stderr, "fake gpu: cannot open scenario '%s'\n", path);
		return -err;
	}
	while (fgets(line, sizeof(line), f)) {
		char *w[32];
		int n, ret;

		lineno++;
		n = split(line, w, 32);
		if (n == 0)
			continue;
		ret = parse_line(s, w, n);
		if (ret) {
			fprintf(stderr, "fake gpu: %s:%d: cannot parse '%s'\n", path, lineno, w[0]);
			fclose(f);
			return ret;
		}
	}
	fclose(f);
	return 0;
}

static void step_values(const struct scenario *s, int device, int gi, double t,
			uint64_t v[SV_COUNT])
{
	double best_at[SV_COUNT];

	for (int k = 0; k < SV_COUNT; k++) {
		v[k] = 0;
		best_at[k] = -1e300;
	}
	for (int i = 0; i < s->nsteps; i++) {
		const struct scn_step *st = &s->step[i];

		if (st->device != device || st->gi != gi || st->at > t)
			continue;
		for (int k = 0; k < SV_COUNT; k++) {
			if ((st->set & (1u << k)) && st->at >= best_at[k]) {
				v[k] = st->v[k];
				best_at[k] = st->at;
			}
		}
	}
}

void scenario_values(const struct scenario *s, int device, double t, uint64_t v[SV_COUNT])
{
	step_values(s, device, SCN_NO_INSTANCE, t, v);
}

void scenario_mig_values(const struct scenario *s, int device, int gi, double t,
			 uint64_t v[SV_COUNT])
{
	step_values(s, device, gi, t, v);
}

bool scenario_mig_mode(const struct scenario *s, int device)
{
	for (int i = 0; i < s->nmigs; i++)
		if (s->mig[i].device == device)
			return true;
	return false;
}

/* one step of a double-valued key */
struct fstep {
	double at, value;
};

/* The steps of key k, in time order (file order at one time: the last one wins). */
static int fsteps(const struct scenario *s, int device, int gi, enum scn_fvalue k,
		  struct fstep *out)
{
	int n = 0;

	for (int i = 0; i < s->nsteps; i++) {
		const struct scn_step *st = &s->step[i];

		if (st->device != device || st->gi != gi || !(st->fset & (1u << k)))
			continue;
		out[n].at = st->at;
		out[n++].value = st->f[k];
	}
	for (int i = 1; i < n; i++) /* stable: insertion */
		for (int j = i; j > 0 && out[j - 1].at > out[j].at; j--) {
			struct fstep tmp = out[j];

			out[j] = out[j - 1];
			out[j - 1] = tmp;
		}
	return n;
}

double scenario_fvalue(const struct scenario *s, int device, int gi, enum scn_fvalue k, double t)
{
	struct fstep st[SCN_MAX_STEPS];
	int n = fsteps(s, device, gi, k, st);
	double v = 0;

	for (int i = 0; i < n && st[i].at <= t; i++)
		v = st[i].value;
	return v;
}

double scenario_fintegral(const struct scenario *s, int device, int gi, enum scn_fvalue k, double a,
			  double b)
{
	struct fstep st[SCN_MAX_STEPS];
	int n = fsteps(s, device, gi, k, st);
	double sum = 0, cur = 0, pos = a;

	if (b <= a)
		return 0;
	for (int i = 0; i < n; i++) {
		if (st[i].at <= a) {
			cur = st[i].value;
			continue;
		}
		if (st[i].at >= b)
			break;
		sum += cur * (st[i].at - pos);
		pos = st[i].at;
		cur = st[i].value;
	}
	return sum + cur * (b - pos);
}

uint32_t scenario_pid(const struct scn_proc *p)
{
	char buf[32] = "";
	FILE *f;

	if (!p->pid_file[0])
		return p->pid;
	f = fopen(p->pid_file, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return (uint32_t)strtoul(buf, NULL, 10);
}

/*
 * /proc/PID/stat: whether the process lives (a zombie does not: its GPU
 * context went with its exit) and its start, in seconds since boot.
 */
static bool proc_stat(uint32_t pid, double *start_s)
{
	char path[64], buf[1024];
	unsigned long long ticks;
	const char *rp;
	size_t n;
	FILE *f;
	char state;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	/* state is field 3, starttime field 22: 19 fields after the state */
	if (!rp || sscanf(rp + 1,
			  " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			  "%*s %*s %*s %*s %llu",
			  &state, &ticks) != 2)
		return false;
	*start_s = (double)ticks / (double)sysconf(_SC_CLK_TCK);
	return state != 'Z' && state != 'X';
}

void scenario_refresh(struct scenario *s, double now)
{
	for (int i = 0; i < s->nprocs; i++) {
		struct scn_proc *p = &s->proc[i];
		uint32_t pid;
		double start_s;

		if (!p->pid_file[0])
			continue;
		pid = scenario_pid(p);
		if (pid != p->seen_pid) { /* a new process: nothing known of it yet */
			p->seen_pid = pid;
			p->start_t = p->alive_at = NAN;
			p->alive = false;
		}
		if (!pid)
			continue;
		p->alive = proc_stat(pid, &start_s);
		if (p->alive) {
			if (isnan(p->start_t))
				p->start_t = start_s - start_boottime;
			p->alive_at = now;
		}
	}
}

/*
 * When the process is on its device: [from, until) in scenario seconds.
 * False while it has no pid, or a start to count from is not known yet.
 */
static bool proc_span(const struct scn_proc *p, double *from, double *until)
{
	if (!p->pid_file[0]) {
		*from = p->from;
		*until = p->until;
		return p->pid != 0;
	}
	if (!p->seen_pid || isnan(p->alive_at))
		return false;
	if ((p->from_start || p->until_start) && isnan(p->start_t))
		return false;
	*from = p->from + (p->from_start ? p->start_t : 0);
	*until = p->until + (p->until_start ? p->start_t : 0);
	if (!p->alive && *until > p->alive_at)
		*until = p->alive_at; /* it exited since: when exactly is not known */
	return true;
}

bool scenario_proc_live(const struct scn_proc *p, double t)
{
	double from, until;

	if (!proc_span(p, &from, &until))
		return false;
	return t >= from && t < until && (!p->pid_file[0] || p->alive);
}

double scenario_proc_overlap(const struct scn_proc *p, double a, double b)
{
	double from, until;

	if (!proc_span(p, &from, &until))
		return 0;
	if (from > a)
		a = from;
	if (until < b)
		b = until;
	return b > a ? b - a : 0;
}

uint64_t scenario_power_mw(const struct scenario *s, int device, double t)
{
	uint64_t v[SV_COUNT];

	scenario_values(s, device, t, v);
	for (int i = 0; i < s->nprocs; i++) {
		const struct scn_proc *p = &s->proc[i];
		double from, until;

		if (p->device == device && p->power_mw && proc_span(p, &from, &until) &&
		    t >= from && t < until)
			v[SV_POWER] += p->power_mw;
	}
	return v[SV_POWER];
}

/* one `at` line's power */
struct power_step {
	double at, mw;
};

uint64_t scenario_energy_mj(const struct scenario *s, int device, double t)
{
	struct power_step steps[SCN_MAX_STEPS];
	double mj = 0, at = 0, mw = 0;
	int n = 0;

	for (int i = 0; i < s->nsteps; i++) {
		const struct scn_step *st = &s->step[i];

		if (st->device != device || st->gi != SCN_NO_INSTANCE)
			continue;
		if (st->set & (1u << SV_ENERGY)) { /* the counter as given */
			uint64_t v[SV_COUNT];

			scenario_values(s, device, t, v);
			return v[SV_ENERGY];
		}
		if (st->set & (1u << SV_POWER)) {
			steps[n].at = st->at;
			steps[n++].mw = (double)st->v[SV_POWER];
		}
	}
	/* the `at` power, a step function: in time order, file order at one time */
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && steps[k - 1].at > steps[k].at; k--) {
			struct power_step tmp = steps[k];

			steps[k] = steps[k - 1];
			steps[k - 1] = tmp;
		}
	for (int i = 0; i < n && steps[i].at <= t; i++) {
		if (steps[i].at > at) {
			mj += mw * (steps[i].at - at);
			at = steps[i].at;
		}
		mw = steps[i].mw;
	}
	if (t > at)
		mj += mw * (t - at);
	for (int i = 0; i < s->nprocs; i++) {
		const struct scn_proc *p = &s->proc[i];

		if (p->device == device && p->power_mw)
			mj += p->power_mw * scenario_proc_overlap(p, 0, t);
	}
	return (uint64_t)(mj + 1e-6);
}
