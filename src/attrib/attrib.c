/*
 * attrib.c - parsers for job attribution: /proc/PID/cgroup paths (Slurm,
 * Kubernetes, systemd; Slurm 26.05's SLUID-named job cgroups),
 * /proc/PID/environ (Slurm's variables), a slurmstepd's process title, and
 * the cgroup limit files cpuset.cpus, cpu.max and memory.max.
 *
 * Everything walks a bounded cursor (struct scan) or a span inside the
 * caller's text; nothing is copied until it is known to fit its field.
 */
#include "attrib.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/scan.h"

/* A cgroup path under JOB_CGROUP_MAX has fewer components than this. */
#define CGROUP_COMPONENTS_MAX (JOB_CGROUP_MAX / 2)
/* The kernel's NR_CPUS tops out at 8192; anything far above is not a CPU. */
#define CPUSET_CPU_LIMIT (1u << 20)
#define K8S_UID_LEN	 36 /* 8-4-4-4-12 */
#define CONTAINER_ID_LEN 64

/* Non-empty, all of [0-9a-z_]: Slurm's step names ("0", "batch", "extern"). */
static bool span_is_step(const struct scan *s)
{
	const char *p;

	if (span_len(s) == 0)
		return false;
	for (p = s->pos; p < s->end; p++) {
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '_'))
			return false;
	}
	return true;
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* ---- /proc/PID/cgroup ---- */

struct cgroup_line {
	uint64_t hierarchy;
	struct scan controllers; /* "memory", "cpu,cpuacct", "name=systemd", "" */
	struct scan path;
};

struct cgroup_path {
	struct scan comp[CGROUP_COMPONENTS_MAX];
	size_t n;
};

/*
 * "N:controllers:/path".  Controllers hold no ':', the path may.  A v2
 * process whose cgroup was removed shows "/path (deleted)": it still tells
 * which job the process was in.
 */
static int cgroup_line_parse(struct scan line, struct cgroup_line *cl)
{
	const char *colon;

	if (memchr(line.pos, '\0', span_len(&line)))
		return -EINVAL;
	if (scan_digits(&line, &cl->hierarchy) || scan_at_end(&line) || *line.pos != ':')
		return -EINVAL;
	line.pos++;
	colon = memchr(line.pos, ':', span_len(&line));
	if (!colon)
		return -EINVAL;
	cl->controllers.pos = line.pos;
	cl->controllers.end = colon;
	cl->path.pos = colon + 1;
	cl->path.end = line.end;
	if (scan_at_end(&cl->path) || *cl->path.pos != '/')
		return -EINVAL;
	if (span_ends(&cl->path, " (deleted)"))
		cl->path.end -= strlen(" (deleted)");
	return 0;
}

static bool controllers_have(const struct scan *controllers, const char *name)
{
	struct scan c = *controllers, item;
	const char *comma;

	while (c.pos <= c.end) {
		comma = memchr(c.pos, ',', span_len(&c));
		item.pos = c.pos;
		item.end = comma ? comma : c.end;
		if (span_eq(&item, name))
			return true;
		if (!comma)
			break;
		c.pos = comma + 1;
	}
	return false;
}

static bool cgroup_line_is_v2(const struct cgroup_line *cl)
{
	return cl->hierarchy == 0 && scan_at_end(&cl->controllers);
}

/* Where to look for a Slurm job or a pod: 0 first. */
#define JOB_RANKS 4
static int job_rank(const struct cgroup_line *cl)
{
	if (cgroup_line_is_v2(cl))
		return 0;
	if (controllers_have(&cl->controllers, "memory"))
		return 1;
	if (controllers_have(&cl->controllers, "cpuacct"))
		return 2;
	return 3;
}

/*
 * Where to look for a systemd unit.  In v1, systemd keeps its whole tree
 * only in name=systemd; the resource controllers show a unit only when its
 * accounting is on.
 */
#define UNIT_RANKS 5
static int unit_rank(const struct cgroup_line *cl)
{
	if (cgroup_line_is_v2(cl))
		return 0;
	if (controllers_have(&cl->controllers, "name=systemd"))
		return 1;
	return job_rank(cl) + 1;
}

/* Splits the path at '/'; false if it is too long to be used. */
static bool cgroup_path_split(const struct scan *path, struct cgroup_path *cp)
{
	const char *p = path->pos, *slash;

	if (span_len(path) >= JOB_CGROUP_MAX)
		return false;
	cp->n = 0;
	while (p < path->end) {
		slash = memchr(p, '/', (size_t)(path->end - p));
		if (!slash)
			slash = path->end;
		if (slash > p) {
			if (cp->n == CGROUP_COMPONENTS_MAX)
				return false;
			cp->comp[cp->n].pos = p;
			cp->comp[cp->n].end = slash;
			cp->n++;
		}
		p = slash + 1;
	}
	return true;
}

/* "slurm", "slurm_<node>" (v1); "slurmstepd.scope", "<node>_slurmstepd.scope" (v2). */
static bool is_slurm_root(const struct scan *c)
{
	return span_eq(c, "slurm") || (span_starts(c, "slurm_") && span_len(c) > 6) ||
	       span_eq(c, "slurmstepd.scope") ||
	       (span_ends(c, "_slurmstepd.scope") && span_len(c) > 17);
}

/* A component "<prefix><value>": value as a span, empty if no match. */
static struct scan after_prefix(const struct scan *c, const char *prefix)
{
	struct scan v = {c->end, c->end};

	if (span_starts(c, prefix))
		v.pos = c->pos + strlen(prefix);
	return v;
}

/*
 * Slurm 26.05's SLUID, the job's cgroup name when CgroupJobIdPaths is off
 * (its default): 's' and 13 characters of [0-9A-Z] (Crockford base 32), the
 * form cgroup_exporter 0.3.1 matches too.
 */
static bool span_is_sluid(const struct scan *c)
{
	if (span_len(c) != JOB_SLUID_LEN || *c->pos != 's')
		return false;
	for (const char *p = c->pos + 1; p < c->end; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z')))
			return false;
	return true;
}

/* <root>/[uid_<uid>/](job_<id>|<sluid>)[/step_<s>[/...]] */
static bool match_slurm(const struct cgroup_path *cp, struct job_identity *id)
{
	size_t i, j;

	for (i = 0; i < cp->n; i++) {
		struct scan v, job;
		int64_t uid = -1;
		uint64_t n;

		if (!is_slurm_root(&cp->comp[i]))
			continue;
		j = i + 1;
		if (j < cp->n) {
			v = after_prefix(&cp->comp[j], "uid_");
			if (span_u64(&v, &n) && n <= INT64_MAX) {
				uid = (int64_t)n;
				j++;
			}
		}
		if (j >= cp->n)
			continue;
		job = after_prefix(&cp->comp[j], "job_");
		id->sluid[0] = '\0';
		if (span_is_sluid(&cp->comp[j])) {
			/* the number is not in the path: the SLUID stands for it */
			job = cp->comp[j];
			span_copy(id->sluid, sizeof(id->sluid), &job);
		} else if (!span_u64(&job, &n) || span_len(&job) >= sizeof(id->job_id)) {
			continue;
		}
		span_copy(id->job_id, sizeof(id->job_id), &job);
		id->step[0] = '\0';
		if (++j < cp->n) {
			v = after_prefix(&cp->comp[j], "step_");
			if (!span_is_step(&v) || !span_copy(id->step, sizeof(id->step), &v))
				id->step[0] = '\0';
		}
		id->uid = uid;
		id->scheduler = JOB_SLURM;
		return true;
	}
	return false;
}

/*
 * "pod<uid>" at the start of the component or after a '-', with the UID's
 * separators '-' (cgroupfs) or '_' (systemd, which escapes '-'), followed by
 * the end of the component, ".slice", or ".slice:<runtime>:<id>" (the name
 * runc gets from containerd, left as is when runc itself uses cgroupfs, as
 * under some nested setups).  The UID comes out with '-'.
 */
static bool find_pod_uid(const struct scan *c, char uid[K8S_UID_LEN + 1])
{
	size_t len = span_len(c), k, i;

	for (k = 0; k + 3 + K8S_UID_LEN <= len; k++) {
		const char *u = c->pos + k + 3;
		struct scan rest = {u + K8S_UID_LEN, c->end};

		if (memcmp(c->pos + k, "pod", 3) != 0 || (k > 0 && c->pos[k - 1] != '-'))
			continue;
		for (i = 0; i < K8S_UID_LEN; i++) {
			bool sep = i == 8 || i == 13 || i == 18 || i == 23;

			if (sep ? (u[i] != '-' && u[i] != '_') : !is_lower_hex(u[i]))
				break;
			uid[i] = sep ? '-' : u[i];
		}
		if (i < K8S_UID_LEN)
			continue;
		if (!scan_at_end(&rest) && !span_eq(&rest, ".slice") &&
		    !span_starts(&rest, ".slice:"))
			continue;
		uid[K8S_UID_LEN] = '\0';
		return true;
	}
	return false;
}

static bool span_is_container_id(const struct scan *s)
{
	const char *p;

	if (span_len(s) != CONTAINER_ID_LEN)
		return false;
	for (p = s->pos; p < s->end; p++) {
		if (!is_lower_hex(*p))
			return false;
	}
	return true;
}

/*
 * The component right under the pod: "cri-containerd-<id>.scope",
 * "crio-<id>.scope", "docker-<id>.scope" (systemd driver), "crio-<id>" or
 * "<id>" (cgroupfs).  Conmon's "crio-conmon-<id>.scope" is no container.
 */
static bool match_container(const struct scan *c, char out[JOB_CONTAINER_MAX])
{
	static const char *const prefixes[] = {"cri-containerd-", "crio-", "docker-"};
	size_t i;

	if (span_is_container_id(c))
		return span_copy(out, JOB_CONTAINER_MAX, c);
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		struct scan v = after_prefix(c, prefixes[i]);

		if (span_ends(&v, ".scope"))
			v.end -= strlen(".scope");
		if (span_is_container_id(&v))
			return span_copy(out, JOB_CONTAINER_MAX, &v);
	}
	return false;
}

/* A component holding s at its start or after a '-', followed by its end, '.' or '-'. */
static bool has_word(const struct scan *c, const char *w)
{
	size_t n = strlen(w), len = span_len(c), k;

	for (k = 0; k + n <= len; k++) {
		const char *after = c->pos + k + n;

		if (memcmp(c->pos + k, w, n) != 0 || (k > 0 && c->pos[k - 1] != '-'))
			continue;
		if (after == c->end || *after == '.' || *after == '-')
			return true;
	}
	return false;
}

/* "kubepods", "kubepods.slice", "kubepods-burstable.slice", kind's "kubelet-kubepods.slice" */
static bool is_kubepods(const struct scan *c)
{
	return has_word(c, "kubepods");
}

static const char *k8s_qos(const struct scan *c)
{
	if (span_eq(c, "burstable") || has_word(c, "kubepods-burstable"))
		return "burstable";
	if (span_eq(c, "besteffort") || has_word(c, "kubepods-besteffort"))
		return "besteffort";
	return NULL;
}

/* [prefix/]kubepods.../[qos/]pod<uid>[/container[/...]] */
static bool match_k8s(const struct cgroup_path *cp, struct job_identity *id)
{
	char uid[K8S_UID_LEN + 1];
	const char *qos = NULL, *colon;
	size_t i, j;

	for (i = 0; i < cp->n && !is_kubepods(&cp->comp[i]); i++)
		;
	for (j = i; j < cp->n; j++) {
		if (!qos)
			qos = k8s_qos(&cp->comp[j]);
		if (find_pod_uid(&cp->comp[j], uid))
			break;
	}
	if (j >= cp->n)
		return false;
	id->scheduler = JOB_K8S;
	memcpy(id->job_id, uid, sizeof(uid));
	/* Guaranteed pods sit right under kubepods: no QoS level in the path */
	strcpy(id->qos, qos ? qos : "guaranteed");
	id->container_id[0] = '\0';
	colon = memrchr(cp->comp[j].pos, ':', span_len(&cp->comp[j]));
	if (colon) {
		struct scan leaf = {colon + 1, cp->comp[j].end};

		if (!span_is_container_id(&leaf) ||
		    !span_copy(id->container_id, sizeof(id->container_id), &leaf))
			id->container_id[0] = '\0';
	} else if (j + 1 < cp->n && !match_container(&cp->comp[j + 1], id->container_id)) {
		id->container_id[0] = '\0';
	}
	return true;
}

/*
 * The innermost ".service" or ".scope" unit.  A unit whose name does not
 * fit job_id (e.g. "docker-<64 hex>.scope") is not used: a cut name could
 * merge two units.  "user-<uid>.slice" gives the uid of user sessions.
 */
static bool match_unit(const struct cgroup_path *cp, struct job_identity *id)
{
	size_t i;

	for (i = cp->n; i-- > 0;) {
		const struct scan *c = &cp->comp[i];

		if ((span_ends(c, ".service") && span_len(c) > 8) ||
		    (span_ends(c, ".scope") && span_len(c) > 6))
			break;
	}
	if (i >= cp->n || !span_copy(id->job_id, sizeof(id->job_id), &cp->comp[i]))
		return false;
	id->scheduler = JOB_SYSTEMD;
	id->uid = -1;
	for (i = 0; i < cp->n; i++) {
		struct scan v = after_prefix(&cp->comp[i], "user-");
		uint64_t n;

		if (!span_ends(&v, ".slice"))
			continue;
		v.end -= strlen(".slice");
		if (span_u64(&v, &n) && n <= INT64_MAX)
			id->uid = (int64_t)n;
	}
	return true;
}

static void identity_clear(struct job_identity *id)
{
	memset(id, 0, sizeof(*id));
	id->scheduler = JOB_NONE;
	id->uid = -1;
}

typedef bool (*path_matcher)(const struct cgroup_path *cp, struct job_identity *id);

/* Tries the matcher on the lines of each rank in turn, best rank first. */
static bool match_by_rank(const char *text, size_t len, int nranks,
			  int (*rank)(const struct cgroup_line *), path_matcher match,
			  struct job_identity *id)
{
	struct cgroup_path cp;
	int r;

	for (r = 0; r < nranks; r++) {
		struct scan s = {text, text + len}, line;
		struct cgroup_line cl;

		while (scan_line(&s, &line)) {
			if (scan_at_end(&line) || cgroup_line_parse(line, &cl) || rank(&cl) != r)
				continue;
			if (!cgroup_path_split(&cl.path, &cp))
				continue;
			identity_clear(id);
			if (match(&cp, id)) {
				span_copy(id->cgroup_path, sizeof(id->cgroup_path), &cl.path);
				return true;
			}
		}
	}
	return false;
}

static bool match_job(const struct cgroup_path *cp, struct job_identity *id)
{
	return match_slurm(cp, id) || match_k8s(cp, id);
}

/* No job, no unit: the path of the best-ranked line that fits. */
static bool match_none(const struct cgroup_path *cp, struct job_identity *id)
{
	(void)cp;
	identity_clear(id);
	return true;
}

int attrib_parse_cgroup(const char *text, size_t len, struct job_identity *out)
{
	struct job_identity id;
	struct scan s = {text, text + len}, line;
	struct cgroup_line cl;
	size_t lines = 0;

	while (scan_line(&s, &line)) {
		if (scan_at_end(&line))
			continue;
		if (cgroup_line_parse(line, &cl))
			return -EINVAL;
		lines++;
	}
	if (lines == 0)
		return -EINVAL;

	if (!match_by_rank(text, len, JOB_RANKS, job_rank, match_job, &id) &&
	    !match_by_rank(text, len, UNIT_RANKS, unit_rank, match_unit, &id) &&
	    !match_by_rank(text, len, JOB_RANKS, job_rank, match_none, &id))
		identity_clear(&id); /* every path too long: none, and no path */
	*out = id;
	return 0;
}

/* ---- a slurmstepd's title ---- */

int attrib_parse_stepd_title(const char *text, size_t len, struct stepd_title *out)
{
	static const char prefix[] = "slurmstepd: [";
	struct scan s = {text, text + len}, job, step;
	const char *dot, *close;
	uint64_t n;

	while (s.end > s.pos && (s.end[-1] == ' ' || s.end[-1] == '\0'))
		s.end--;
	if (!span_starts(&s, prefix) || s.end[-1] != ']')
		return -EINVAL;
	s.pos += strlen(prefix);
	s.end--;
	dot = memchr(s.pos, '.', span_len(&s));
	close = memchr(s.pos, ']', span_len(&s));
	if (!dot || close)
		return -EINVAL;
	job.pos = s.pos;
	job.end = dot;
	step.pos = dot + 1;
	step.end = s.end;
	if (!span_u64(&job, &n) || span_len(&job) >= sizeof(out->job_id) || !span_is_step(&step) ||
	    span_len(&step) >= sizeof(out->step))
		return -EINVAL;
	span_copy(out->job_id, sizeof(out->job_id), &job);
	span_copy(out->step, sizeof(out->step), &step);
	return 0;
}

/* ---- /proc/PID/environ ---- */

/* A name: any bytes but control characters (spaces and UTF-8 are names' own). */
static bool env_is_text(const struct scan *v)
{
	if (span_len(v) == 0)
		return false;
	for (const char *p = v->pos; p < v->end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static bool env_is_printable(const struct scan *v)
{
	const char *p;

	if (span_len(v) == 0)
		return false;
	for (p = v->pos; p < v->end; p++) {
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return false;
	}
	return true;
}

/*
 * A comma-separated GPU list: "0,1", "GPU-<uuid>,...", or "" (no GPU
 * visible, which is not the same as no variable).  The count is of the
 * non-empty entries of the whole value; the copy keeps whole entries.
 */
static bool env_gpu_list(const struct scan *v, char *dst, size_t size, uint32_t *count)
{
	const char *p, *fit = v->pos;
	uint32_t n = 0;
	bool in_entry = false;

	for (p = v->pos; p < v->end; p++) {
		if (*p == ',') {
			in_entry = false;
			if ((size_t)(p - v->pos) < size)
				fit = p;
		} else if (!in_entry) {
			in_entry = true;
			n++;
		}
	}
	*count = n;
	if (span_len(v) < size)
		fit = v->end;
	memcpy(dst, v->pos, (size_t)(fit - v->pos));
	dst[fit - v->pos] = '\0';
	return fit == v->end;
}

static bool env_mb_to_bytes(const struct scan *v, uint64_t *bytes)
{
	uint64_t mb;

	if (!span_u64(v, &mb) || mb > UINT64_MAX >> 20)
		return false;
	*bytes = mb << 20;
	return true;
}

static void env_apply(struct slurm_env *env, uint32_t bit, const struct scan *v)
{
	uint64_t n;
	bool ok = false;

	switch (bit) {
	case SLURM_ENV_JOB_ID:
		ok = span_u64(v, &n) && span_copy(env->job_id, sizeof(env->job_id), v);
		break;
	case SLURM_ENV_STEP_ID:
		ok = span_is_step(v) && span_copy(env->step_id, sizeof(env->step_id), v);
		break;
	case SLURM_ENV_CPUS_ON_NODE:
		ok = span_u64(v, &n) && n <= UINT32_MAX;
		if (ok)
			env->cpus_on_node = (uint32_t)n;
		break;
	case SLURM_ENV_MEM_PER_NODE:
		ok = env_mb_to_bytes(v, &env->mem_per_node_bytes);
		break;
	case SLURM_ENV_MEM_PER_CPU:
		ok = env_mb_to_bytes(v, &env->mem_per_cpu_bytes);
		break;
	case SLURM_ENV_JOB_GPUS:
		ok = true;
		if (!env_gpu_list(v, env->job_gpus, sizeof(env->job_gpus), &env->job_gpus_count))
			env->valid |= SLURM_ENV_JOB_GPUS_CUT;
		break;
	case SLURM_ENV_CUDA_VISIBLE:
		ok = true;
		if (!env_gpu_list(v, env->cuda_visible, sizeof(env->cuda_visible),
				  &env->cuda_visible_count))
			env->valid |= SLURM_ENV_CUDA_VISIBLE_CUT;
		break;
	case SLURM_ENV_RUN_ID:
		ok = env_is_printable(v) && span_copy(env->run_id, sizeof(env->run_id), v);
		break;
	case SLURM_ENV_SCRIPT_CONTEXT:
		ok = env_is_printable(v) &&
		     span_copy(env->script_context, sizeof(env->script_context), v);
		break;
	case SLURM_ENV_JOB_NAME:
		ok = env_is_text(v) && span_copy(env->job_name, sizeof(env->job_name), v);
		break;
	}
	if (ok)
		env->valid |= bit;
}

int attrib_parse_environ(const char *raw, size_t len, struct slurm_env *out)
{
	static const struct {
		const char *key;
		uint32_t bit;
	} env_keys[] = {
	    {"SLURM_JOB_ID", SLURM_ENV_JOB_ID},
	    {"SLURM_STEP_ID", SLURM_ENV_STEP_ID},
	    {"SLURM_CPUS_ON_NODE", SLURM_ENV_CPUS_ON_NODE},
	    {"SLURM_MEM_PER_NODE", SLURM_ENV_MEM_PER_NODE},
	    {"SLURM_MEM_PER_CPU", SLURM_ENV_MEM_PER_CPU},
	    {"SLURM_JOB_GPUS", SLURM_ENV_JOB_GPUS},
	    {"CUDA_VISIBLE_DEVICES", SLURM_ENV_CUDA_VISIBLE},
	    {"JOBSCOPE_RUN_ID", SLURM_ENV_RUN_ID},
	    {"SLURM_SCRIPT_CONTEXT", SLURM_ENV_SCRIPT_CONTEXT},
	    {"SLURM_JOB_NAME", SLURM_ENV_JOB_NAME},
	};
	struct slurm_env env;
	const char *p = raw, *end = raw + len;
	uint32_t seen = 0;
	size_t i;

	memset(&env, 0, sizeof(env));
	while (p < end) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		struct scan entry = {p, nul ? nul : end}, key, value;
		const char *eq = memchr(entry.pos, '=', span_len(&entry));

		p = nul ? nul + 1 : end;
		if (!eq)
			continue;
		key.pos = entry.pos;
		key.end = eq;
		value.pos = eq + 1;
		value.end = entry.end;
		for (i = 0; i < sizeof(env_keys) / sizeof(env_keys[0]); i++) {
			if (!span_eq(&key, env_keys[i].key))
				continue;
			/* the first one wins, as for getenv(3) */
			if (!(seen & env_keys[i].bit))
				env_apply(&env, env_keys[i].bit, &value);
			seen |= env_keys[i].bit;
			break;
		}
	}
	*out = env;
	return 0;
}
