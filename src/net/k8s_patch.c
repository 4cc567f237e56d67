/*
 * k8s_patch.c - a pod's and a node's annotations from jobscope's JSON, and
 * the merge patch that writes them (k8s_patch.h).  The report is read with
 * cJSON as any client would read it: a field of the wrong type counts as
 * unknown, never as 0.
 */
#include "net/k8s_patch.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/jsonw.h"

void k8s_annots_init(struct k8s_annots *s)
{
	memset(s, 0, sizeof(*s));
}

static void annots_clear(struct k8s_annots *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->a[i].name);
		free(s->a[i].value);
	}
	s->n = 0;
}

void k8s_annots_release(struct k8s_annots *s)
{
	annots_clear(s);
	free(s->a);
	k8s_annots_init(s);
}

void k8s_annots_move(struct k8s_annots *dst, struct k8s_annots *src)
{
	k8s_annots_release(dst);
	*dst = *src;
	k8s_annots_init(src);
}

static struct k8s_annot *annots_find(const struct k8s_annots *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->a[i].name, name) == 0)
			return &s->a[i];
	return NULL;
}

const char *k8s_annots_get(const struct k8s_annots *s, const char *name)
{
	struct k8s_annot *a = annots_find(s, name);

	return a ? a->value : NULL;
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool k8s_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > K8S_NAME_MAX || !is_alnum(name[0]) || !is_alnum(name[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(name[i]) && name[i] != '-' && name[i] != '_' && name[i] != '.')
			return false;
	return true;
}

/* RFC 1123 labels: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 each. */
static bool dns_labels_valid(const char *s, size_t len, size_t max, bool dots)
{
	size_t label = 0;

	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '.' && dots) {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0 && s[len - 1] != '-';
}

bool k8s_prefix_valid(const char *prefix)
{
	return dns_labels_valid(prefix, strlen(prefix), K8S_PREFIX_MAX, true);
}

bool k8s_namespace_valid(const char *ns, size_t len)
{
	return dns_labels_valid(ns, len, K8S_NS_LEN_MAX, false);
}

bool k8s_object_name_valid(const char *name, size_t len)
{
	return dns_labels_valid(name, len, K8S_OBJECT_NAME_MAX, true);
}

int k8s_split_pod(const char *job_name, char *ns, size_t ns_size, char *pod, size_t pod_size)
{
	const char *slash = strchr(job_name, '/');
	size_t ns_len, pod_len;

	if (!slash)
		return -EINVAL;
	ns_len = (size_t)(slash - job_name);
	pod_len = strlen(slash + 1);
	if (!k8s_namespace_valid(job_name, ns_len) || !k8s_object_name_valid(slash + 1, pod_len) ||
	    ns_len >= ns_size || pod_len >= pod_size)
		return -EINVAL;
	memcpy(ns, job_name, ns_len);
	ns[ns_len] = '\0';
	memcpy(pod, slash + 1, pod_len + 1);
	return 0;
}

int k8s_annots_set(struct k8s_annots *s, const char *name, const char *value)
{
	struct k8s_annot *a = annots_find(s, name);
	char *v;

	if (!k8s_name_valid(name))
		return -EINVAL;
	if (strlen(value) > K8S_VALUE_MAX)
		return -E2BIG;
	v = strdup(value);
	if (!v)
		return -ENOMEM;
	if (a) {
		free(a->value);
		a->value = v;
		return 0;
	}
	if (s->n == K8S_ANNOTS_MAX) {
		free(v);
		return -E2BIG;
	}
	if (s->n == s->alloc) {
		size_t alloc = s->alloc ? s->alloc * 2 : 16;
		struct k8s_annot *na = realloc(s->a, alloc * sizeof(*na));

		if (!na) {
			free(v);
			return -ENOMEM;
		}
		s->a = na;
		s->alloc = alloc;
	}
	s->a[s->n].name = strdup(name);
	if (!s->a[s->n].name) {
		free(v);
		return -ENOMEM;
	}
	s->a[s->n++].value = v;
	return 0;
}

bool k8s_annots_moved(const struct k8s_annots *prev, const struct k8s_annots *now)
{
	size_t counted_prev = 0, counted_now = 0;

	for (size_t i = 0; i < now->n; i++) {
		const char *old;

		if (strcmp(now->a[i].name, K8S_ANNOT_UPDATED) == 0)
			continue;
		counted_now++;
		old = k8s_annots_get(prev, now->a[i].name);
		if (!old || strcmp(old, now->a[i].value) != 0)
			return true;
	}
	for (size_t i = 0; i < prev->n; i++)
		if (strcmp(prev->a[i].name, K8S_ANNOT_UPDATED) != 0)
			counted_prev++;
	return counted_prev != counted_now; /* one was removed */
}

/* The report's JSON, read leniently: a missing field or one of another type is unknown. */
static const cJSON *get(const cJSON *o, const char *path)
{
	char part[64];

	while (o && *path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);

		if (len >= sizeof(part))
			return NULL;
		memcpy(part, path, len);
		part[len] = '\0';
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, part) : NULL;
		path += len + (dot ? 1 : 0);
	}
	return o;
}

static bool get_num(const cJSON *o, const char *path, double *v)
{
	const cJSON *n = get(o, path);

	if (!cJSON_IsNumber(n) || !isfinite(n->valuedouble))
		return false;
	*v = n->valuedouble;
	return true;
}

/* A number as an annotation: decimals after the point, integers exact up to 2^53. */
static int set_num(struct k8s_annots *s, const char *name, double v, int decimals)
{
	char buf[64];

	if (!isfinite(v) || fabs(v) >= 1e18)
		return 0; /* no sensible figure: none */
	if (v < 0 && v > -0.5 * pow(10, -decimals))
		v = 0; /* "0", not "-0" */
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return k8s_annots_set(s, name, buf);
}

static int set_num_at(struct k8s_annots *s, const char *name, const cJSON *o, const char *path,
		      int decimals)
{
	double v;

	return get_num(o, path, &v) ? set_num(s, name, v, decimals) : 0;
}

/*
 * A string from the report as an annotation value: printable ASCII kept,
 * anything else '?', cut to fit (report strings are ours: kinds, types,
 * GPU names; a stranger's bytes never reach the API server as they are).
 */
static void printable(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < size; i++)
		dst[i] =
		    (unsigned char)src[i] >= 0x20 && (unsigned char)src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}

static int set_str_at(struct k8s_annots *s, const char *name, const cJSON *o, const char *path)
{
	const cJSON *v = get(o, path);
	char buf[K8S_VALUE_MAX + 1];

	if (!cJSON_IsString(v) || !v->valuestring[0])
		return 0;
	printable(buf, sizeof(buf), v->valuestring);
	return k8s_annots_set(s, name, buf);
}

/* Items of a list joined by ",", those that do not fit left out (whole). */
static void list_add(char *list, size_t size, const char *item)
{
	size_t len = strlen(list), add = strlen(item) + (len ? 1 : 0);

	if (!item[0] || len + add >= size)
		return;
	snprintf(list + len, size - len, "%s%s", len ? "," : "", item);
}

/* A GPU's index as its annotations name it: 0..999, else none. */
/* One of a GPU's annotations: gpu-<index>-<suffix>, from field key (decimals; -1: text). */
struct gpu_field {
	const char *suffix, *key;
	int decimals;
};

/* A GPU's annotations from its object g, the first failure kept. */
static int set_gpu_fields(struct k8s_annots *s, const cJSON *g, int idx, const struct gpu_field *f,
			  size_t n)
{
	char name[K8S_NAME_MAX + 1];
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		snprintf(name, sizeof(name), "gpu-%d-%s", idx, f[i].suffix);
		ret = f[i].decimals < 0 ? set_str_at(s, name, g, f[i].key)
					: set_num_at(s, name, g, f[i].key, f[i].decimals);
	}
	return ret;
}

/* a pod's GPUs (its report's gpus[]) and a node's (the store's latest samples) */
static const struct gpu_field job_gpu[] = {
    {"util-avg-pct", "util_avg_pct", 1},
    {"util-p95-pct", "util_p95_pct", 1},
    {"memory-peak-bytes", "mem_used_peak_bytes", 0},
    {"energy-j", "energy_j", 0},
    {"uuid", "uuid", -1},
};
static const struct gpu_field node_gpu[] = {
    {"util-pct", "util_pct", 0},
    {"memory-used-bytes", "mem_used_bytes", 0},
    {"uuid", "uuid", -1},
};
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

static bool gpu_index(const cJSON *g, const char *field, int *idx)
{
	double v;

	if (!get_num(g, field, &v) || v < 0 || v > 999 || v != floor(v))
		return false;
	*idx = (int)v;
	return true;
}

static int pod_gpus(const cJSON *report, struct k8s_annots *s)
{
	const cJSON *gpus = get(report, "gpus"), *g;
	double energy = 0;
	bool has_energy = false;
	int n = 0, ret = 0, annotated = 0;

	if (!cJSON_IsArray(gpus))
		return 0;
	cJSON_ArrayForEach(g, gpus)
	{
		double v;
		int idx;

		n++;
		if (get_num(g, "energy_j", &v)) {
			energy += v;
			has_energy = true;
		}
		if (!gpu_index(g, "index", &idx) || annotated == K8S_GPUS_ANNOTATED_MAX)
			continue;
		annotated++;
		ret = ret ? ret : set_gpu_fields(s, g, idx, job_gpu, NFIELDS(job_gpu));
	}
	ret = ret ? ret : set_num(s, "gpus", n, 0);
	if (has_energy)
		ret = ret ? ret : set_num(s, "gpu-energy-j", energy, 0);
	return ret;
}

static int pod_verdicts(const cJSON *report, struct k8s_annots *s)
{
	const cJSON *vs = get(report, "verdicts"), *v;
	char list[K8S_VALUE_MAX + 1] = "", kind[64];

	if (!cJSON_IsArray(vs))
		return 0;
	cJSON_ArrayForEach(v, vs)
	{
		const cJSON *k = get(v, "kind");

		if (!cJSON_IsString(k))
			continue;
		printable(kind, sizeof(kind), k->valuestring);
		list_add(list, sizeof(list), kind);
	}
	/* an empty list says "judged: nothing to say", unlike a report without verdicts */
	return k8s_annots_set(s, "verdicts", list);
}

int k8s_pod_annots(const char *report_json, size_t len, struct k8s_annots *s)
{
	cJSON *r = cJSON_ParseWithLength(report_json, len);
	const cJSON *cores_from;
	int ret = 0;

	annots_clear(s);
	if (!cJSON_IsObject(r)) {
		cJSON_Delete(r);
		return -EINVAL;
	}
	/* the limits only when the pod's cgroup gave them (not the CPUs it may run on) */
	cores_from = get(r, "analysis.efficiency.cpu.cores_from");
#define NUM(name, path, dec) ret = ret ? ret : set_num_at(s, name, r, path, dec)
	NUM("cpu-cores-avg", "analysis.efficiency.cpu.cores_avg", 2);
	NUM("cpu-cores-p95", "analysis.efficiency.cpu.cores_p95", 2);
	if (cJSON_IsString(cores_from) && strcmp(cores_from->valuestring, "reservation") == 0)
		NUM("cpu-limit-cores", "analysis.efficiency.cpu.cores_reserved", 2);
	NUM("cpu-efficiency-pct", "analysis.efficiency.cpu.efficiency_pct", 1);
	NUM("memory-peak-bytes", "analysis.efficiency.memory.peak_bytes", 0);
	NUM("memory-limit-bytes", "analysis.efficiency.memory.reserved_bytes", 0);
	NUM("memory-efficiency-pct", "analysis.efficiency.memory.efficiency_pct", 1);
	NUM("period-s", "analysis.period_s", 2);
	NUM("period-confidence", "analysis.period_confidence", 2);
	NUM("memory-time-to-limit-s", "analysis.trend.memory.time_to_limit_s", 0);
	NUM("gpu-memory-time-to-limit-s", "analysis.trend.gpu_memory.time_to_limit_s", 0);
#undef NUM
	ret = ret ? ret : pod_gpus(r, s);
	ret = ret ? ret : set_str_at(s, "job-type", r, "analysis.job_type");
	ret = ret ? ret : set_str_at(s, "bottleneck", r, "analysis.bottleneck");
	ret = ret ? ret : pod_verdicts(r, s);
	cJSON_Delete(r);
	if (ret)
		annots_clear(s);
	return ret;
}

/* The element of list (an array of objects) whose field "node" is node. */
static bool on_node(const cJSON *o, const char *node)
{
	const cJSON *n = get(o, "node");

	return cJSON_IsString(n) && strcmp(n->valuestring, node) == 0;
}

static int node_host(const cJSON *nodes, const char *node, struct k8s_annots *s, bool *found)
{
	const cJSON *list = get(nodes, "nodes"), *o;
	double total, avail, load;
	int ret = 0;

	if (!cJSON_IsArray(list))
		return 0;
	cJSON_ArrayForEach(o, list)
	{
		if (!on_node(o, node))
			continue;
		*found = true;
		ret = ret ? ret : set_num_at(s, "cpu-cores", o, "cores", 0);
		ret = ret ? ret : set_num_at(s, "memory-total-bytes", o, "mem_total_bytes", 0);
		if (get_num(o, "mem_total_bytes", &total) &&
		    get_num(o, "mem_available_bytes", &avail))
			ret = ret ? ret : set_num(s, "memory-used-bytes", total - avail, 0);
		if (get_num(o, "load1_milli", &load))
			ret = ret ? ret : set_num(s, "load1", load / 1000, 2);
		break;
	}
	return ret;
}

static int node_gpus(const cJSON *gpus, const char *node, struct k8s_annots *s, bool *found)
{
	const cJSON *list = get(gpus, "gpus"), *g;
	char models[K8S_VALUE_MAX + 1] = "", model[256];
	double util_sum = 0, mem_sum = 0, v;
	int n = 0, n_util = 0, n_mem = 0, annotated = 0, ret = 0;

	if (!cJSON_IsArray(list))
		return 0;
	cJSON_ArrayForEach(g, list)
	{
		const cJSON *name = get(g, "name");
		int idx;

		if (!on_node(g, node))
			continue;
		*found = true;
		n++;
		if (cJSON_IsString(name)) {
			printable(model, sizeof(model), name->valuestring);
			/* each model once: "NVIDIA H200,NVIDIA A100" */
			if (!strstr(models, model))
				list_add(models, sizeof(models), model);
		}
		if (get_num(g, "util_pct", &v)) {
			util_sum += v;
			n_util++;
		}
		if (get_num(g, "mem_used_bytes", &v)) {
			mem_sum += v;
			n_mem++;
		}
		if (!gpu_index(g, "index", &idx) || annotated == K8S_GPUS_ANNOTATED_MAX)
			continue;
		annotated++;
		ret = ret ? ret : set_gpu_fields(s, g, idx, node_gpu, NFIELDS(node_gpu));
	}
	if (!*found)
		return ret;
	ret = ret ? ret : set_num(s, "gpus", n, 0);
	if (models[0])
		ret = ret ? ret : k8s_annots_set(s, "gpu-models", models);
	if (n_util)
		ret = ret ? ret : set_num(s, "gpu-util-pct", util_sum / n_util, 1);
	if (n_mem)
		ret = ret ? ret : set_num(s, "gpu-memory-used-bytes", mem_sum, 0);
	return ret;
}

int k8s_node_annots(const char *nodes_json, size_t nodes_len, const char *gpus_json,
		    size_t gpus_len, const char *node, struct k8s_annots *s)
{
	cJSON *nodes = cJSON_ParseWithLength(nodes_json, nodes_len);
	cJSON *gpus = cJSON_ParseWithLength(gpus_json, gpus_len);
	bool host_found = false, gpus_found = false;
	int ret;

	annots_clear(s);
	if (!cJSON_IsObject(nodes) || !cJSON_IsObject(gpus)) {
		ret = -EINVAL;
		goto out_free_json;
	}
	ret = node_host(nodes, node, s, &host_found);
	ret = ret ? ret : node_gpus(gpus, node, s, &gpus_found);
	if (!ret && !host_found && !gpus_found)
		ret = -ENOENT;
	else if (!ret && !gpus_found)
		ret = k8s_annots_set(s, "gpus", "0");
	if (ret)
		annots_clear(s);
out_free_json:
	cJSON_Delete(nodes);
	cJSON_Delete(gpus);
	return ret;
}

int k8s_each_node(const char *nodes_json, size_t len, int (*fn)(const char *node, void *arg),
		  void *arg)
{
	cJSON *nodes = cJSON_ParseWithLength(nodes_json, len);
	const cJSON *list = get(nodes, "nodes"), *o;
	int ret = cJSON_IsArray(list) ? 0 : -EINVAL;

	cJSON_ArrayForEach(o, list)
	{
		const cJSON *n = get(o, "node");

		if (!ret && cJSON_IsString(n))
			ret = fn(n->valuestring, arg);
	}
	cJSON_Delete(nodes);
	return ret;
}

static void write_key(struct jsonw *w, const char *prefix, const char *name)
{
	char key[K8S_PREFIX_MAX + 1 + K8S_NAME_MAX + 1];

	snprintf(key, sizeof(key), "%s/%s", prefix, name);
	jsonw_key(w, key);
}

int k8s_patch_body(const char *prefix, const struct k8s_annots *prev, const struct k8s_annots *now,
		   struct strbuf *out)
{
	size_t start = out->len, bytes = 0, plen = strlen(prefix) + 1;
	struct jsonw w;
	int ret;

	if (!k8s_prefix_valid(prefix))
		return -EINVAL;
	/* the server counts keys and values of all of the object's annotations: ours here */
	for (size_t i = 0; i < now->n; i++)
		bytes += plen + strlen(now->a[i].name) + strlen(now->a[i].value);
	if (bytes > K8S_ANNOTS_BYTES_MAX)
		return -E2BIG;
	jsonw_init(&w, out, false);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "metadata");
	jsonw_obj_begin(&w);
	jsonw_key(&w, "annotations");
	jsonw_obj_begin(&w);
	for (size_t i = 0; i < now->n; i++) {
		write_key(&w, prefix, now->a[i].name);
		jsonw_str(&w, now->a[i].value);
	}
	for (size_t i = 0; prev && i < prev->n; i++) {
		if (k8s_annots_get(now, prev->a[i].name))
			continue;
		write_key(&w, prefix, prev->a[i].name);
		jsonw_null(&w); /* RFC 7386: deletes it */
	}
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	ret = jsonw_error(&w);
	if (ret) {
		out->len = start;
		if (out->buf)
			out->buf[start] = '\0';
	}
	return ret;
}
