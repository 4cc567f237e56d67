/*
 * jobs.c - the agent's job table: attribution of processes, per-job sums,
 * job start and end (see jobs.h for the accounting rules).
 */
#include "attrib/jobs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/sysroot.h"
#include "sample/figures.h"

#define JOBS_ENVIRON_MAX     (256 * 1024) /* the kernel's ARG_MAX-ish bound on environ */
#define JOBS_CGROUP_FILE_MAX (64 * 1024)

void jobs_init(struct jobs *t, const char *hostname, int64_t node_id, int32_t host_cores,
	       uint64_t host_mem_bytes, int64_t interval_ms)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->hostname, sizeof(t->hostname), "%s", hostname);
	t->node_id = node_id;
	t->host_cores = host_cores;
	t->host_mem_bytes = host_mem_bytes;
	t->interval_ms = interval_ms;
	strbuf_init(&t->buf, JOBS_ENVIRON_MAX);
	strbuf_init(&t->cgbuf, JOBS_CGROUP_FILE_MAX);
	cgroup_detect(&t->cg);
	k8s_names_init(&t->k8s, NULL);
}

void jobs_release(struct jobs *t)
{
	free(t->job);
	strbuf_release(&t->buf);
	strbuf_release(&t->cgbuf);
	free(t->note);
	free(t->sluid);
	k8s_names_release(&t->k8s);
	memset(t, 0, sizeof(*t));
}

void jobs_format_key(char *buf, size_t size, const char *scheduler, const char *job_id,
		     int64_t start_ms)
{
	snprintf(buf, size, "%s:%s:%" PRId64, scheduler, job_id, start_ms);
}

bool jobs_key_matches(const char *wanted, const char *key, const char *scheduler,
		      const char *job_id)
{
	size_t n = strlen(scheduler);

	return strcmp(key, wanted) == 0 || strcmp(job_id, wanted) == 0 ||
	       (strncmp(wanted, scheduler, n) == 0 && wanted[n] == ':' &&
		strcmp(wanted + n + 1, job_id) == 0);
}

/*
 * The job-level directory of a cgroup path: the path cut right after the
 * component that names the job (job_<id>, the pod's slice or directory,
 * the systemd unit).  "" when no component does.
 */
static void job_cgroup(const struct job_identity *id, char *out, size_t size)
{
	const char *path = id->cgroup_path, *c = path;
	char want[JOB_ID_MAX + 8];

	out[0] = '\0';
	if (id->scheduler == JOB_SLURM && id->sluid[0])
		snprintf(want, sizeof(want), "%s", id->sluid);
	else if (id->scheduler == JOB_SLURM)
		snprintf(want, sizeof(want), "job_%s", id->job_id);
	else
		snprintf(want, sizeof(want), "%s", id->job_id);
	while (*c) {
		const char *end;
		size_t n;
		bool match;

		while (*c == '/')
			c++;
		end = strchr(c, '/');
		if (!end)
			end = c + strlen(c);
		n = (size_t)(end - c);
		if (id->scheduler == JOB_K8S) {
			/* "pod<uid>" or "...-pod<uid_with_underscores>.slice" */
			char comp[JOB_CGROUP_MAX];

			snprintf(comp, sizeof(comp), "%.*s", (int)n, c);
			for (char *p = comp; *p; p++)
				if (*p == '_')
					*p = '-';
			match = strstr(comp, "pod") && strstr(comp, want);
		} else {
			match = n == strlen(want) && strncmp(c, want, n) == 0;
		}
		if (match) {
			snprintf(out, size, "%.*s", (int)(end - path), path);
			return;
		}
		c = end;
	}
}

/*
 * In a cgroup namespace of its own the agent sees other cgroups relative
 * to its namespace's root: "/../kubepods/besteffort/pod<uid>".  Its
 * /sys/fs/cgroup, mounted from the host (a DaemonSet's hostPath), shows the
 * hierarchy from its real root, where kubepods is: the leading ".." are
 * dropped ("/kubepods/...").  Right when the agent's namespace root is
 * outside kubepods (a system cgroup); from inside another pod the path
 * climbs only to a common ancestor, the stripped path names no directory
 * and the job has no cgroup figures (docs/kubernetes.md).
 */
static void cgroup_from_root(char *path)
{
	size_t skip = 0;

	while (strncmp(path + skip, "/..", 3) == 0 && (path[skip + 3] == '/' || !path[skip + 3]))
		skip += 3;
	if (skip)
		memmove(path, path + skip, strlen(path + skip) + 1);
}

/*
 * The job an environment names into a's scheduler, job_id and step;
 * false if none.  A prolog or epilog carries the job's SLURM_JOB_ID but is
 * Slurm's work, not the job's.
 */
static bool env_names_job(const struct slurm_env *e, struct job_attribution *a)
{
	if ((e->valid & SLURM_ENV_JOB_ID) && !(e->valid & SLURM_ENV_SCRIPT_CONTEXT)) {
		snprintf(a->scheduler, sizeof(a->scheduler), "slurm");
		snprintf(a->job_id, sizeof(a->job_id), "%s", e->job_id);
		a->step[0] = '\0';
		if (e->valid & SLURM_ENV_STEP_ID)
			snprintf(a->step, sizeof(a->step), "%s", e->step_id);
		return true;
	}
	if (e->valid & SLURM_ENV_RUN_ID) {
		snprintf(a->scheduler, sizeof(a->scheduler), "run");
		snprintf(a->job_id, sizeof(a->job_id), "%s", e->run_id);
		a->step[0] = '\0';
		return true;
	}
	return false;
}

void jobs_attribute(const char *cgroup_text, size_t cgroup_len, const char *environ,
		    size_t environ_len, uint32_t uid, int32_t session, struct job_attribution *out)
{
	struct job_identity id;
	bool have_id = cgroup_len > 0 && attrib_parse_cgroup(cgroup_text, cgroup_len, &id) == 0;

	memset(out, 0, sizeof(*out));
	attrib_parse_environ(environ ? environ : "", environ ? environ_len : 0, &out->env);
	if (have_id && (id.scheduler == JOB_SLURM || id.scheduler == JOB_K8S)) {
		out->basis = JOB_BASIS_CGROUP;
		snprintf(out->scheduler, sizeof(out->scheduler), "%s",
			 id.scheduler == JOB_SLURM ? "slurm" : "k8s");
		snprintf(out->job_id, sizeof(out->job_id), "%s", id.job_id);
		snprintf(out->step, sizeof(out->step), "%s", id.step);
		snprintf(out->qos, sizeof(out->qos), "%s", id.qos);
		job_cgroup(&id, out->cgroup, sizeof(out->cgroup));
		cgroup_from_root(out->cgroup);
		snprintf(out->sluid, sizeof(out->sluid), "%s", id.sluid);
		snprintf(out->container_id, sizeof(out->container_id), "%s", id.container_id);
		/* the cgroup says which job, the environment its number */
		if (id.sluid[0] && (out->env.valid & SLURM_ENV_JOB_ID))
			snprintf(out->job_id, sizeof(out->job_id), "%s", out->env.job_id);
		return;
	}
	if (env_names_job(&out->env, out)) {
		out->basis = JOB_BASIS_ENV;
		return;
	}
	if (have_id && id.scheduler == JOB_SYSTEMD) {
		out->basis = JOB_BASIS_UNIT;
		snprintf(out->scheduler, sizeof(out->scheduler), "systemd");
		snprintf(out->job_id, sizeof(out->job_id), "%s", id.job_id);
		job_cgroup(&id, out->cgroup, sizeof(out->cgroup));
		return;
	}
	out->basis = JOB_BASIS_NONE;
	snprintf(out->scheduler, sizeof(out->scheduler), "session");
	snprintf(out->job_id, sizeof(out->job_id), "%" PRIu32 "/%" PRId32, uid, session);
}

/* kept: "<scheduler>\t<job_id>\t<step>"; none of them holds a tab or a blank */
_Static_assert(PTREE_ENV_JOB_MAX >= 8 + JOB_ID_MAX + JOB_STEP_MAX,
	       "ptree_proc.env_job holds a scheduler, a job id and a step");

void jobs_keep_env(struct job_attribution *a, char *kept, size_t kept_size)
{
	struct job_attribution env;
	const char *tab1, *tab2;

	if (kept_size == 0)
		return;
	memset(&env, 0, sizeof(env));
	if (env_names_job(&a->env, &env)) {
		int n =
		    snprintf(kept, kept_size, "%s\t%s\t%s", env.scheduler, env.job_id, env.step);

		if (n < 0 || (size_t)n >= kept_size)
			kept[0] = '\0'; /* cannot happen with the sizes above; never half a job */
		return;
	}
	if (a->basis >= JOB_BASIS_ENV || !kept[0])
		return;
	tab1 = memchr(kept, '\t', strnlen(kept, kept_size));
	tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
	if (!tab2 || tab1 - kept >= (ptrdiff_t)sizeof(a->scheduler) ||
	    tab2 - tab1 - 1 >= (ptrdiff_t)sizeof(a->job_id) || tab2 == tab1 + 1 ||
	    strlen(tab2 + 1) >= sizeof(a->step))
		return;
	snprintf(a->scheduler, sizeof(a->scheduler), "%.*s", (int)(tab1 - kept), kept);
	snprintf(a->job_id, sizeof(a->job_id), "%.*s", (int)(tab2 - tab1 - 1), tab1 + 1);
	snprintf(a->step, sizeof(a->step), "%s", tab2 + 1);
	a->qos[0] = '\0';
	a->cgroup[0] = '\0';
	a->basis = JOB_BASIS_ENV;
}

enum job_choice jobs_choose(const struct job_attribution *a, const struct job_record *has,
			    bool cgroup_moved, const char *parent_scheduler,
			    bool same_cgroup_as_parent)
{
	if (a->basis >= JOB_BASIS_ENV)
		return JOB_CHOICE_OWN;
	if (has && (!cgroup_moved || (!has->cgroup[0] && strcmp(has->scheduler, "session") != 0)))
		return JOB_CHOICE_KEEP;
	if (parent_scheduler && strcmp(parent_scheduler, "session") != 0 &&
	    (a->basis == JOB_BASIS_NONE || same_cgroup_as_parent))
		return JOB_CHOICE_PARENT;
	return JOB_CHOICE_OWN;
}

/* FNV-1a; never 0, which means "not read". */
static uint64_t text_hash(const char *s, size_t len)
{
	uint64_t h = fnv1a(FNV1A_SEED, s, len);

	return h ? h : 1;
}

/*
 * /proc/PID/cgroup into t->cgbuf through a descriptor kept open with the
 * process (ptree closes it): it is read again every few seconds, and open
 * and close cost more than the read.  Once the process is gone its reads
 * fail, whatever process has its pid now.
 */
static int read_cgroup(struct jobs *t, struct ptree *pt, struct ptree_proc *p)
{
	char path[64];

	p->cgroup_ms = pt->scan_ms;
	if (ptree_keep_fd(pt, p, "cgroup") >= 0)
		return sysroot_read_fd(p->owner_fd, &t->cgbuf);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", p->info.pid);
	return sysroot_read(path, &t->cgbuf);
}

/*
 * Attributes process pid from its cgroup file's text (NULL: not read) and
 * its environment, read now into t->buf (empty when it cannot be read).
 */
static void attribute_pid(struct jobs *t, int32_t pid, const char *cg, size_t cg_len, uint32_t uid,
			  int32_t session, struct job_attribution *out)
{
	char path[64];
	bool env;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	env = sysroot_read(path, &t->buf) == 0;
	jobs_attribute(cg, cg_len, env ? t->buf.buf : NULL, env ? t->buf.len : 0, uid, session,
		       out);
}

/*
 * Reads what attribution needs of one process; a file we cannot read is
 * empty.  Notes the cgroup file's hash, to see it change later.
 */
static void attribute_proc(struct jobs *t, struct ptree *pt, struct ptree_proc *p,
			   struct job_attribution *out)
{
	char *cg = NULL;
	size_t cg_len = 0;

	if (read_cgroup(t, pt, p) == 0) {
		cg = t->cgbuf.buf;
		cg_len = t->cgbuf.len;
		p->cgroup_hash = text_hash(cg, cg_len);
	}
	attribute_pid(t, p->info.pid, cg, cg_len, p->info.uid, p->last_stat.session, out);
	t->attributions++;
}

static void sluid_lookup(struct jobs *t, struct job_attribution *a);

bool jobs_claim(struct jobs *t, int32_t pid, char *out, size_t size)
{
	struct job_attribution a;
	char path[64];
	bool cg;

	if (size == 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	cg = sysroot_read(path, &t->cgbuf) == 0;
	attribute_pid(t, pid, cg ? t->cgbuf.buf : NULL, cg ? t->cgbuf.len : 0, 0, 0, &a);
	sluid_lookup(t, &a);
	if (a.basis >= JOB_BASIS_ENV &&
	    snprintf(out, size, "%s:%s", a.scheduler, a.job_id) < (int)size)
		return true;
	out[0] = '\0';
	return false;
}

/* A job a names: by its SLUID when both have one, else by scheduler and id. */
static bool same_job(const struct job_entry *j, const struct job_attribution *a)
{
	if (a->sluid[0] && j->rec.sluid[0])
		return strcmp(j->rec.sluid, a->sluid) == 0;
	return strcmp(j->rec.scheduler, a->scheduler) == 0 && strcmp(j->rec.job_id, a->job_id) == 0;
}

static struct job_entry *find_live(struct jobs *t, const struct job_attribution *a)
{
	for (size_t i = 0; i < t->njobs; i++) {
		struct job_entry *j = &t->job[i];

		if (j->live && same_job(j, a))
			return j;
	}
	return NULL;
}

static struct jobs_sluid *sluid_find(struct jobs *t, const char *sluid)
{
	for (size_t i = 0; i < t->nsluids; i++)
		if (strcmp(t->sluid[i].sluid, sluid) == 0)
			return &t->sluid[i];
	return NULL;
}

static struct jobs_sluid *sluid_add(struct jobs *t, const char *sluid)
{
	struct jobs_sluid *m = sluid_find(t, sluid), add;

	if (m)
		return m;
	if (ARRAY_GROW(t->sluid, t->nsluids, t->sluid_alloc, 8))
		return NULL;
	memset(&add, 0, sizeof(add));
	snprintf(add.sluid, sizeof(add.sluid), "%s", sluid);
	t->sluid[t->nsluids] = add;
	return &t->sluid[t->nsluids++];
}

/* The number the table learned for a's SLUID, if a has none of its own; nothing learned. */
static void sluid_lookup(struct jobs *t, struct job_attribution *a)
{
	struct jobs_sluid *m;

	if (!a->sluid[0] || a->basis != JOB_BASIS_CGROUP || strcmp(a->job_id, a->sluid) != 0)
		return;
	m = sluid_find(t, a->sluid);
	if (m && m->job_id[0])
		snprintf(a->job_id, sizeof(a->job_id), "%s", m->job_id);
}

/*
 * The number of a job whose cgroup is named by its SLUID: the process's own
 * SLURM_JOB_ID (jobs_attribute put it in a->job_id), else its title when it
 * is the job's slurmstepd, else what another process of the SLUID said
 * before.  None: a->job_id stays the SLUID, and the log says so once.
 * cmdline: the process's (proc_format_cmdline), NULL if not known.
 */
static void resolve_sluid(struct jobs *t, const char *cmdline, struct job_attribution *a)
{
	struct stepd_title title;
	struct jobs_sluid *m;
	bool known;

	if (!a->sluid[0] || a->basis != JOB_BASIS_CGROUP)
		return;
	known = strcmp(a->job_id, a->sluid) != 0;
	if (!known && cmdline && attrib_parse_stepd_title(cmdline, strlen(cmdline), &title) == 0) {
		snprintf(a->job_id, sizeof(a->job_id), "%s", title.job_id);
		known = true;
	}
	m = sluid_add(t, a->sluid);
	if (!m)
		return; /* out of memory: this process alone is keyed by what it said */
	if (known) {
		if (!m->job_id[0])
			snprintf(m->job_id, sizeof(m->job_id), "%s", a->job_id);
		return;
	}
	if (m->job_id[0]) {
		snprintf(a->job_id, sizeof(a->job_id), "%s", m->job_id);
		return;
	}
	if (!m->logged)
		log_warn(0,
			 "Slurm job cgroup '%s': no slurmstepd title nor SLURM_JOB_ID gives its job"
			 " id; the job is keyed by its SLUID %s",
			 a->cgroup, a->sluid);
	m->logged = true;
}

/*
 * A job first keyed by its SLUID whose number is learned before it was
 * stored takes its number; once stored, it keeps its key.  A job first
 * known by an environment learns its SLUID from its cgroup.
 */
static void learn_job_id(struct job_entry *j, const struct job_attribution *a)
{
	struct job_record *r = &j->rec;

	if (!a->sluid[0])
		return;
	if (!r->sluid[0]) {
		snprintf(r->sluid, sizeof(r->sluid), "%s", a->sluid);
		j->rec_dirty = true;
		return;
	}
	if (r->id || strcmp(r->job_id, r->sluid) != 0 || strcmp(a->job_id, a->sluid) == 0)
		return;
	snprintf(r->job_id, sizeof(r->job_id), "%s", a->job_id);
	jobs_format_key(j->key, sizeof(j->key), r->scheduler, r->job_id, r->start_ms);
}

/*
 * A job first known by its processes' environment (SLURM_JOB_ID outside
 * its cgroup, a launcher before its move) learns its cgroup from the first
 * process found in it: its cgroup's figures from then on.
 */
static void learn_cgroup(struct job_entry *j, const struct job_attribution *a)
{
	struct job_record *r = &j->rec;

	if (r->cgroup[0] || !a->cgroup[0] || a->basis != JOB_BASIS_CGROUP)
		return;
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", a->cgroup);
	j->rec_dirty = true;
}

/* Forgets the SLUIDs no job of the table has any more. */
static void sluid_prune(struct jobs *t)
{
	size_t out = 0;

	for (size_t i = 0; i < t->nsluids; i++) {
		bool used = false;

		for (size_t k = 0; k < t->njobs && !used; k++)
			used = strcmp(t->job[k].rec.sluid, t->sluid[i].sluid) == 0;
		if (used)
			t->sluid[out++] = t->sluid[i];
	}
	t->nsluids = out;
}

void jobs_reservation(const struct job_attribution *a, const struct cgroup_layout *cg,
		      int32_t host_cores, uint64_t host_mem_bytes, struct job_record *r)
{
	const struct slurm_env *e = &a->env;
	struct cgroup_limits lim;

	if (strcmp(a->scheduler, "slurm") == 0 && (e->valid & SLURM_ENV_CPUS_ON_NODE)) {
		snprintf(r->reservation_source, sizeof(r->reservation_source), "slurm_env");
		r->reserved_cpus = e->cpus_on_node;
		if (e->valid & SLURM_ENV_MEM_PER_NODE)
			r->reserved_mem_bytes = e->mem_per_node_bytes;
		else if (e->valid & SLURM_ENV_MEM_PER_CPU)
			r->reserved_mem_bytes = e->mem_per_cpu_bytes * e->cpus_on_node;
		if (e->valid & SLURM_ENV_JOB_GPUS) {
			r->has_reserved_gpus = true;
			r->reserved_gpus = (int32_t)e->job_gpus_count;
			snprintf(r->reserved_gpu_list, sizeof(r->reserved_gpu_list), "%s",
				 e->job_gpus);
		} else if (e->valid & SLURM_ENV_CUDA_VISIBLE) {
			r->has_reserved_gpus = true;
			r->reserved_gpus = (int32_t)e->cuda_visible_count;
			snprintf(r->reserved_gpu_list, sizeof(r->reserved_gpu_list), "%s",
				 e->cuda_visible);
		} else {
			r->has_reserved_gpus = true; /* Slurm gives GPUs only through these */
			r->reserved_gpus = 0;
		}
	}
	if (!a->cgroup[0] || cgroup_read_limits(cg, a->cgroup, &lim) != 0)
		return;
	if (r->reserved_cpus <= 0) {
		if (lim.valid & CG_LIM_CPU_QUOTA)
			r->reserved_cpus = lim.cpu_quota_cores;
		else if ((lim.valid & CG_LIM_CPUSET) &&
			 (lim.cpuset_cpus < host_cores || strcmp(a->scheduler, "slurm") == 0))
			r->reserved_cpus =
			    lim.cpuset_cpus; /* Slurm's ConstrainCores: the allocation */
		if (r->reserved_cpus > 0 && !r->reservation_source[0])
			snprintf(r->reservation_source, sizeof(r->reservation_source), "cgroup");
	}
	if (r->reserved_mem_bytes == 0 && (lim.valid & CG_LIM_MEM) &&
	    lim.mem_limit_bytes < host_mem_bytes) {
		r->reserved_mem_bytes = lim.mem_limit_bytes;
		if (!r->reservation_source[0])
			snprintf(r->reservation_source, sizeof(r->reservation_source), "cgroup");
	}
}

/*
 * The first process seen of a Slurm job is often slurmstepd, which has no
 * SLURM_* environment: the reservation the job's tasks carry replaces what
 * the cgroup's limits said, once.
 */
static void learn_reservation(struct jobs *t, struct job_entry *j, const struct job_attribution *a)
{
	struct job_record *r = &j->rec;

	if (strcmp(r->scheduler, "slurm") != 0 || !(a->env.valid & SLURM_ENV_CPUS_ON_NODE) ||
	    strcmp(r->reservation_source, "slurm_env") == 0)
		return;
	r->reservation_source[0] = '\0';
	r->reserved_cpus = 0;
	r->reserved_mem_bytes = 0;
	r->has_reserved_gpus = false;
	r->reserved_gpus = 0;
	r->reserved_gpu_list[0] = '\0';
	if (!r->cgroup[0])
		snprintf(r->cgroup, sizeof(r->cgroup), "%s", a->cgroup);
	jobs_reservation(a, &t->cg, t->host_cores, t->host_mem_bytes, r);
	r->cores_allowed =
	    r->reserved_cpus > 0 ? (int32_t)(r->reserved_cpus + 0.999) : t->host_cores;
	j->rec_dirty = true;
}

/* A Slurm job is named by SLURM_JOB_NAME when its processes carry it. */
static void learn_name(struct job_entry *j, const struct job_attribution *a)
{
	struct job_record *r = &j->rec;

	if (j->name_from_env || strcmp(r->scheduler, "slurm") != 0 ||
	    !(a->env.valid & SLURM_ENV_JOB_NAME))
		return;
	snprintf(r->name, sizeof(r->name), "%s", a->env.job_name);
	j->name_from_env = true;
	j->rec_dirty = true;
}

/*
 * A Slurm job's command is its first task's, not slurmstepd's; so is its
 * name when SLURM_JOB_NAME did not give one.
 */
static void learn_command(struct job_entry *j, const struct ptree_proc *p)
{
	struct job_record *r = &j->rec;
	bool stepd = strcmp(r->name, "slurmstepd") == 0 ||
		     (j->name_from_env && strncmp(r->command, "slurmstepd", 10) == 0);

	if (!stepd || strcmp(p->info.comm, "slurmstepd") == 0 || !p->info.comm[0])
		return;
	if (!j->name_from_env)
		snprintf(r->name, sizeof(r->name), "%s", p->info.comm);
	snprintf(r->command, sizeof(r->command), "%s",
		 p->info.cmdline[0] ? p->info.cmdline : p->info.comm);
	r->pid = p->info.pid;
	j->rec_dirty = true;
}

/*
 * The process that started p's container: its first ancestor outside p's
 * cgroup (containerd's shim, CRI-O's conmon), or NULL.
 */
static const struct ptree_proc *starter_of(struct ptree *pt, const struct ptree_proc *p)
{
	const struct ptree_proc *q = p;

	for (int n = 0; n < 64; n++) {
		const struct ptree_proc *parent = ptree_find(pt, q->info.ppid);

		if (!parent || parent == q)
			return NULL;
		if (parent->cgroup_hash != p->cgroup_hash)
			return parent;
		q = parent;
	}
	return NULL;
}

/*
 * A pod's command is its first real container's first process (the
 * sandbox's pause never names it; runc's init is not the container's
 * program yet: the exec that follows gives the command).
 */
static void learn_pod_command(struct job_entry *j, const struct ptree_proc *p)
{
	struct job_record *r = &j->rec;

	if (j->k8s.command_pid && j->k8s.command_pid != p->info.pid)
		return;
	if (!p->info.comm[0] || strncmp(p->info.comm, "runc", 4) == 0 ||
	    strncmp(p->info.cmdline, "runc init", 9) == 0)
		return;
	snprintf(r->command, sizeof(r->command), "%s",
		 p->info.cmdline[0] ? p->info.cmdline : p->info.comm);
	r->pid = p->info.pid;
	j->k8s.command_pid = p->info.pid;
	j->rec_dirty = true;
}

void jobs_k8s_owner_settle(struct job_entry *j)
{
	const struct job_k8s *k = &j->k8s;

	if (!k->namespace_[0] || !k->owner_name[0] || j->rec.k8s_owner[0])
		return;
	snprintf(j->rec.k8s_owner, sizeof(j->rec.k8s_owner), "%s/%s", k->namespace_, k->owner_name);
	snprintf(j->rec.k8s_owner_label, sizeof(j->rec.k8s_owner_label), "%s", k->owner_label);
	j->rec_dirty = true;
}

/*
 * A pod's names from its containers' bundles (k8s.h): the job's name
 * "NAMESPACE/POD", its real containers, p's container, the command.
 */
static void learn_pod(struct jobs *t, struct ptree *pt, struct job_entry *j, struct ptree_proc *p,
		      const struct job_attribution *a)
{
	struct job_k8s *k = &j->k8s;
	const struct ptree_proc *starter;
	const struct k8s_bundle *b;
	size_t i;

	p->container = 0;
	if (strcmp(j->rec.scheduler, "k8s") != 0 || strcmp(a->scheduler, "k8s") != 0 ||
	    strcmp(a->job_id, j->rec.job_id) != 0 || !a->container_id[0])
		return;
	/* runc's init, runc's child until its exec: the shim is not its parent yet */
	if (strncmp(p->info.comm, "runc", 4) == 0 || strncmp(p->info.cmdline, "runc init", 9) == 0)
		return;
	starter = starter_of(pt, p);
	b = k8s_names_lookup(&t->k8s, a->container_id, j->rec.job_id,
			     starter ? starter->info.pid : 0);
	if (!b)
		return;
	if (!k->pod[0]) {
		snprintf(k->namespace_, sizeof(k->namespace_), "%s", b->namespace_);
		snprintf(k->pod, sizeof(k->pod), "%s", b->pod);
		/* a namespace is at most 63 characters, a pod's name 253: it fits */
		snprintf(j->rec.name, sizeof(j->rec.name), "%.63s/%.190s", b->namespace_, b->pod);
		j->rec_dirty = true;
		jobs_k8s_owner_settle(j); /* an owner hint that came before the namespace */
	}
	if (b->sandbox)
		return;
	for (i = 0; i < k->ncontainers && strcmp(k->container[i].name, b->container) != 0; i++)
		;
	if (i == k->ncontainers) {
		if (i == JOB_K8S_CONTAINERS_MAX)
			return;
		k->ncontainers++;
		snprintf(k->container[i].name, sizeof(k->container[i].name), "%s", b->container);
	}
	/* a restarted container: same name, a new ID */
	snprintf(k->container[i].id, sizeof(k->container[i].id), "%s", a->container_id);
	p->container = (uint8_t)(i + 1);
	learn_pod_command(j, p);
}

static bool pod_in_table(const char *uid, void *arg)
{
	const struct jobs *t = arg;

	for (size_t i = 0; i < t->njobs; i++)
		if (strcmp(t->job[i].rec.scheduler, "k8s") == 0 &&
		    strcmp(t->job[i].rec.job_id, uid) == 0)
			return true;
	return false;
}

static struct job_entry *new_job(struct jobs *t, const struct job_attribution *a,
				 const struct ptree_proc *p)
{
	struct job_entry *j;
	struct job_record *r;
	struct passwd *pw;

	if (ARRAY_GROW(t->job, t->njobs, t->alloc, 16))
		return NULL;
	j = &t->job[t->njobs++];
	memset(j, 0, sizeof(*j));
	j->live = true;
	r = &j->rec;
	r->node_id = t->node_id;
	snprintf(r->hostname, sizeof(r->hostname), "%s", t->hostname);
	snprintf(r->scheduler, sizeof(r->scheduler), "%s", a->scheduler);
	snprintf(r->job_id, sizeof(r->job_id), "%s", a->job_id);
	snprintf(r->step, sizeof(r->step), "%s", a->step);
	snprintf(r->qos, sizeof(r->qos), "%s", a->qos);
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", a->cgroup);
	snprintf(r->sluid, sizeof(r->sluid), "%s", a->sluid);
	snprintf(r->command, sizeof(r->command), "%s",
		 p->info.cmdline[0] ? p->info.cmdline : p->info.comm);
	/* a pod is named by its bundles (learn_pod), never by its first process */
	if (strcmp(r->scheduler, "k8s") != 0)
		snprintf(r->name, sizeof(r->name), "%s", p->info.comm);
	r->uid = p->info.uid;
	pw = getpwuid(r->uid);
	snprintf(r->user, sizeof(r->user), "%s", pw ? pw->pw_name : "");
	if (!r->user[0])
		snprintf(r->user, sizeof(r->user), "%" PRIu32, r->uid);
	r->pid = p->info.pid;
	r->start_ms = p->info.start_ms;
	r->interval_ms = t->interval_ms;
	r->host_cores = t->host_cores;
	r->host_mem_bytes = t->host_mem_bytes;
	jobs_reservation(a, &t->cg, t->host_cores, t->host_mem_bytes, r);
	r->cores_allowed =
	    r->reserved_cpus > 0 ? (int32_t)(r->reserved_cpus + 0.999) : t->host_cores;
	jobs_format_key(j->key, sizeof(j->key), r->scheduler, r->job_id, r->start_ms);
	return j;
}

struct job_entry *jobs_of(struct jobs *t, const struct ptree_proc *p)
{
	if (p->tag <= 0 || (size_t)p->tag > t->njobs)
		return NULL;
	return &t->job[p->tag - 1];
}

/* Drops jobs whose end was stored; re-tags processes to the new positions. */
static void compact(struct jobs *t, struct ptree *pt)
{
	size_t before = t->njobs, out = 0;
	int32_t *map = calloc(before + 1, sizeof(*map));

	if (!map)
		return; /* keep them a tick longer */
	for (size_t i = 0; i < before; i++) {
		if (!t->job[i].live && t->job[i].stored_end)
			continue;
		if (out != i)
			t->job[out] = t->job[i];
		map[i + 1] = (int32_t)(out + 1);
		t->job[out].ended_now = false;
		t->job[out].emit = false;
		out++;
	}
	t->njobs = out;
	sluid_prune(t);
	if (out < before)
		k8s_names_prune(&t->k8s, pod_in_table, t);
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];

		p->tag = p->tag > 0 && (size_t)p->tag <= before ? map[p->tag] : 0;
	}
	free(map);
}

uint64_t jobs_cpu_ms(const struct job_sample *s)
{
	return job_cpu_ms(s);
}

static uint64_t cpu_of(const struct proc_sample *s, bool user)
{
	return user ? s->user_ms + s->child_user_ms : s->system_ms + s->child_system_ms;
}

/* A process leaves its job: the job keeps what it used. */
static void credit(struct job_entry *j, const struct proc_sample *s, int sign)
{
	j->credit_user_ms += sign * (int64_t)cpu_of(s, true);
	j->credit_system_ms += sign * (int64_t)cpu_of(s, false);
	if (s->valid & PS_CPU_WAIT)
		j->credit_wait_ms += sign * (int64_t)s->cpu_wait_ms;
	if (s->valid & PS_IO) {
		j->credit_read += sign * (int64_t)s->read_bytes;
		j->credit_write += sign * (int64_t)s->write_bytes;
		j->credit_io = true;
	}
}

static bool job_moved(const struct job_sample *a, const struct job_sample *b)
{
	return a->nprocs != b->nprocs || a->user_ms != b->user_ms || a->system_ms != b->system_ms ||
	       a->rss_bytes != b->rss_bytes || a->swap_bytes != b->swap_bytes ||
	       a->read_bytes != b->read_bytes || a->write_bytes != b->write_bytes ||
	       a->valid != b->valid || a->cg_cpu_ms != b->cg_cpu_ms ||
	       a->cg_mem_bytes != b->cg_mem_bytes || a->cpu_wait_ms != b->cpu_wait_ms;
}

static uint64_t clamp_add(uint64_t sum, int64_t credit)
{
	return credit < 0 && (uint64_t)-credit > sum ? 0 : sum + (uint64_t)credit;
}

static void finish_sample(struct jobs *t, struct job_entry *j, int64_t ts_ms)
{
	struct job_sample *s = &j->js;
	struct cgroup_sample cg;
	struct job_figures f;

	s->user_ms = clamp_add(s->user_ms, j->credit_user_ms);
	s->system_ms = clamp_add(s->system_ms, j->credit_system_ms);
	s->read_bytes = clamp_add(s->read_bytes, j->credit_read);
	s->write_bytes = clamp_add(s->write_bytes, j->credit_write);
	s->cpu_wait_ms = clamp_add(s->cpu_wait_ms, j->credit_wait_ms);
	if (j->credit_wait_ms)
		s->valid |= JS_CPU_WAIT;
	if (j->credit_io)
		s->valid |= JS_IO;
	if (j->has_row) {
		/* counters never go back (a reaping parent read before its child) */
		const struct job_sample *p = &j->last_row;

		if (s->user_ms < p->user_ms)
			s->user_ms = p->user_ms;
		if (s->system_ms < p->system_ms)
			s->system_ms = p->system_ms;
		if (s->read_bytes < p->read_bytes)
			s->read_bytes = p->read_bytes;
		if (s->write_bytes < p->write_bytes)
			s->write_bytes = p->write_bytes;
		if (s->cpu_wait_ms < p->cpu_wait_ms)
			s->cpu_wait_ms = p->cpu_wait_ms;
	}
	if (j->rec.cgroup[0] && cgroup_read_sample(&t->cg, j->rec.cgroup, &cg) == 0) {
		j->cg = cg;
		j->has_cg = true;
	}
	if (j->has_cg) {
		if (j->cg.valid & CG_CPU) {
			s->cg_cpu_ms = j->cg.cpu_usage_us / 1000;
			s->valid |= JS_CG_CPU;
		}
		if (j->cg.valid & CG_MEM) {
			s->cg_mem_bytes = j->cg.mem_current_bytes;
			s->valid |= JS_CG_MEM;
		}
		if (j->cg.valid & CG_MEM_PEAK) {
			if (j->cg.mem_peak_bytes > j->cg_mem_peak_bytes)
				j->cg_mem_peak_bytes = j->cg.mem_peak_bytes;
		} else if (j->cg.valid & CG_MEM && j->cg.mem_current_bytes > j->cg_mem_peak_bytes) {
			j->cg_mem_peak_bytes = j->cg.mem_current_bytes;
		}
		if (j->cg.valid & (CG_MEM_PEAK | CG_MEM)) {
			s->cg_mem_peak_bytes = j->cg_mem_peak_bytes;
			s->valid |= JS_CG_MEM_PEAK;
		}
	}
	job_figures(s, j->prev_ts_ms > 0 ? &j->prev_js : NULL, ts_ms - j->prev_ts_ms, &f);
	j->has_rate = !isnan(f.cores);
	if (j->has_rate)
		j->cpu_cores = f.cores;
	j->has_wait_rate = j->has_rate && !isnan(f.wait_cores);
	if (j->has_wait_rate)
		j->wait_cores = f.wait_cores;
	j->prev_ts_ms = ts_ms;
	j->prev_js = *s;
	j->emit = !j->has_row || j->ended_now || job_moved(s, &j->last_row);
	if (j->emit) {
		j->last_row = *s;
		j->has_row = true;
	}
	j->rec.samples++;
}

/* Why a process is attributed in this update. */
enum jobs_mark {
	MARK_SETTLED,	      /* keeps its job (or is gone) */
	MARK_NEW,	      /* first seen */
	MARK_RENAMED,	      /* its comm changed: an exec, or a rename */
	MARK_MOVED,	      /* its cgroup file changed */
	MARK_DONE,	      /* attributed in this update */
	MARK_ON_CHAIN = 0x80, /* on the chain of ancestors being attributed */
};

/* What an update notes of each process, by its position in ptree.procs. */
struct jobs_note {
	int32_t tag_before; /* its job (ptree_proc.tag) before this update's attribution */
	uint8_t mark;	    /* enum jobs_mark */
};

/* Deep enough for any real process tree; a deeper chain is cut, not lost. */
#define JOBS_CHAIN_MAX 256

static bool mark_pending(uint8_t m)
{
	return m == MARK_NEW || m == MARK_RENAMED || m == MARK_MOVED;
}

/*
 * Was a process that has a job moved to another cgroup?  Its cgroup file is
 * read again whenever ptree read its status in this tick (ptree_scan with
 * the same ts_ms) because it ran or its memory changed: a busy process is
 * re-attributed at the next tick.  One that did not run is read again
 * every JOBS_CGROUP_IDLE_MS: until it runs it uses no CPU, and only its
 * memory stays with its old job meanwhile (a thousand sleeping processes
 * read every PTREE_FULL_REFRESH_MS cost a tenth of the agent's tick).  A
 * file that cannot be read says nothing new.
 */
static bool cgroup_moved(struct jobs *t, struct ptree *pt, struct ptree_proc *p, int64_t ts_ms)
{
	if (p->refreshed_ms != ts_ms)
		return false;
	if (p->refreshed_idle && ts_ms - p->cgroup_ms < JOBS_CGROUP_IDLE_MS)
		return false;
	if (read_cgroup(t, pt, p) != 0)
		return false;
	return text_hash(t->cgbuf.buf, t->cgbuf.len) != p->cgroup_hash;
}

static int mark_processes(struct jobs *t, struct ptree *pt, int64_t ts_ms)
{
	if (pt->nprocs > t->note_alloc) {
		size_t n = pt->nprocs + pt->nprocs / 2 + 64;
		struct jobs_note *note = realloc(t->note, n * sizeof(*note));

		if (!note)
			return -ENOMEM;
		t->note = note;
		t->note_alloc = n;
	}
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];
		uint8_t m = MARK_SETTLED;

		if (!p->alive)
			m = MARK_SETTLED;
		else if (p->tag <= 0)
			m = MARK_NEW;
		else if (cgroup_moved(t, pt, p, ts_ms))
			m = MARK_MOVED;
		else if (p->info_changed)
			m = MARK_RENAMED;
		t->note[i].mark = m;
		t->note[i].tag_before = p->tag;
	}
	return 0;
}

/* Attributes pt->procs[i], its parent being settled (jobs_choose). */
static int attribute_one(struct jobs *t, struct ptree *pt, size_t i)
{
	struct ptree_proc *p = &pt->procs[i], *parent = ptree_find(pt, p->info.ppid);
	struct job_entry *j, *old, *pj;
	struct job_attribution a;
	enum job_choice choice;
	bool same_cgroup, created = false;

	if (parent == p)
		parent = NULL;
	attribute_proc(t, pt, p, &a);
	resolve_sluid(t, p->info.cmdline, &a);
	jobs_keep_env(&a, p->env_job, sizeof(p->env_job));
	old = jobs_of(t, p);
	pj = parent ? jobs_of(t, parent) : NULL;
	if (pj && !pj->live)
		pj = NULL;
	same_cgroup = parent && parent->cgroup_hash && parent->cgroup_hash == p->cgroup_hash;
	choice = jobs_choose(&a, old ? &old->rec : NULL, t->note[i].mark == MARK_MOVED,
			     pj ? pj->rec.scheduler : NULL, same_cgroup);
	if (choice == JOB_CHOICE_KEEP)
		j = old;
	else if (choice == JOB_CHOICE_PARENT)
		j = pj;
	else if (old && same_job(old, &a))
		j = old;
	else if ((j = find_live(t, &a)) == NULL) {
		size_t pos_old = old ? (size_t)(old - t->job) : 0;

		j = new_job(t, &a, p);
		if (!j)
			return -ENOMEM;
		old = old ? &t->job[pos_old] : NULL; /* realloc moved it */
		created = true;
	}
	if (!created && same_job(j, &a)) {
		learn_job_id(j, &a);
		learn_cgroup(j, &a);
		learn_reservation(t, j, &a);
	}
	learn_name(j, &a);
	learn_command(j, p);
	learn_pod(t, pt, j, p, &a);
	if (old && old != j) {
		/* it moved to another job: each keeps what it used while it was its */
		credit(old, &p->cur, +1);
		credit(j, &p->cur, -1);
	}
	if (p->info.start_ms < j->rec.start_ms && !j->rec.id)
		j->rec.start_ms = p->info.start_ms;
	p->tag = (int32_t)(j - t->job) + 1;
	return 0;
}

/*
 * Attributes pt->procs[i] after those of its ancestors that are to be
 * attributed too: pt->procs is in order of discovery, and a parent may come
 * after its child (pids wrap).
 */
static int attribute_chain(struct jobs *t, struct ptree *pt, size_t i)
{
	size_t chain[JOBS_CHAIN_MAX], n = 0, cur = i;
	int ret = 0;

	for (;;) {
		const struct ptree_proc *parent;

		chain[n++] = cur;
		t->note[cur].mark |= MARK_ON_CHAIN;
		parent = ptree_find(pt, pt->procs[cur].info.ppid);
		if (!parent || n == JOBS_CHAIN_MAX ||
		    !mark_pending(t->note[parent - pt->procs].mark))
			break;
		cur = (size_t)(parent - pt->procs);
	}
	while (n-- > 0 && !ret) {
		t->note[chain[n]].mark &= (uint8_t)~MARK_ON_CHAIN;
		ret = attribute_one(t, pt, chain[n]);
		t->note[chain[n]].mark = MARK_DONE;
	}
	return ret;
}

/* The job of p when this update began (before attribution), else its job now. */
static struct job_entry *job_before(struct jobs *t, const struct ptree *pt,
				    const struct ptree_proc *p)
{
	int32_t tag = t->note[p - pt->procs].tag_before;

	if (tag <= 0 || (size_t)tag > t->njobs)
		return jobs_of(t, p);
	return &t->job[tag - 1];
}

int jobs_update(struct jobs *t, struct ptree *pt, int64_t ts_ms)
{
	int ret;

	compact(t, pt);

	/* attribution: new processes, and those that exec'd, renamed or moved */
	ret = mark_processes(t, pt, ts_ms);
	if (ret)
		return ret;
	for (size_t i = 0; i < pt->nprocs; i++) {
		if (!mark_pending(t->note[i].mark))
			continue;
		ret = attribute_chain(t, pt, i);
		if (ret)
			return ret;
	}

	for (size_t i = 0; i < t->njobs; i++) {
		struct job_sample *s = &t->job[i].js;
		uint64_t keep_cpu = s->sampler_cpu_ms;

		memset(s, 0, sizeof(*s));
		s->sampler_cpu_ms = keep_cpu;
	}
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct ptree_proc *p = &pt->procs[i];
		struct job_entry *j = jobs_of(t, p);
		struct job_sample *s;

		if (!j || !j->live)
			continue;
		if (!p->alive) {
			/*
			 * Gone: kept in its parent's cutime when the parent is in the
			 * job.  A parent that ended in the same interval (Slurm's stepd
			 * after the batch script) took it along in its final total.  A
			 * parent that changed job in this update (Slurm's stepd leaving
			 * the job's cgroup at its end) reaped it while in its old job,
			 * which the move credited with the parent's cutime.
			 */
			struct ptree_proc *parent = ptree_find_recent(pt, p->info.ppid);
			struct job_entry *pj = parent ? job_before(t, pt, parent) : NULL;

			if (pj == j)
				continue;
			credit(j, &p->cur, +1);
			/* the reaping parent's job must not count it again */
			if (pj && pj->live)
				credit(pj, &p->cur, -1);
			continue;
		}
		s = &j->js;
		s->nprocs++;
		s->user_ms += cpu_of(&p->cur, true);
		s->system_ms += cpu_of(&p->cur, false);
		if (p->cur.valid & PS_RSS)
			s->rss_bytes += p->cur.rss_bytes;
		if (p->cur.valid & PS_SWAP) {
			s->swap_bytes += p->cur.swap_bytes;
			s->valid |= JS_SWAP;
		}
		if (p->cur.valid & PS_IO) {
			s->read_bytes += p->cur.read_bytes;
			s->write_bytes += p->cur.write_bytes;
			s->valid |= JS_IO;
		}
		if (p->cur.valid & PS_CPU_WAIT) {
			s->cpu_wait_ms += p->cur.cpu_wait_ms;
			s->valid |= JS_CPU_WAIT;
		}
	}
	for (size_t i = 0; i < t->njobs; i++) {
		struct job_entry *j = &t->job[i];

		if (!j->live)
			continue;
		if (j->js.nprocs == 0) {
			j->live = false;
			j->ended_now = true;
			j->rec.end_ms = ts_ms;
		}
		finish_sample(t, j, ts_ms);
	}
	return 0;
}
