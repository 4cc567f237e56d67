/*
 * podres.c - the kubelet's pod-resources answer decoded (protobuf by hand:
 * four messages, strings and sub-messages only), and the join of its GPU
 * devices to pods' jobs.  The contract is podres.h's.
 */
#include "attrib/podres.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

/* protobuf wire types */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* A span of the message being read. */
struct pb {
	const uint8_t *p, *end;
};

struct pb_field {
	uint32_t num;
	int type;
	uint64_t varint;
	struct pb span; /* WT_LEN: the bytes */
};

static int pb_varint(struct pb *b, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (b->p >= b->end)
			return -EBADMSG;
		c = *b->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG; /* more than 10 bytes */
}

/* The next field of b: 1, 0 at its end, -EBADMSG. */
static int pb_next(struct pb *b, struct pb_field *f)
{
	uint64_t key, n;

	if (b->p >= b->end)
		return 0;
	if (pb_varint(b, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
		return -EBADMSG;
	f->num = (uint32_t)(key >> 3);
	f->type = (int)(key & 7);
	switch (f->type) {
	case WT_VARINT:
		return pb_varint(b, &f->varint) ? -EBADMSG : 1;
	case WT_I64:
		n = 8;
		break;
	case WT_I32:
		n = 4;
		break;
	case WT_LEN:
		if (pb_varint(b, &n))
			return -EBADMSG;
		break;
	default: /* groups (3, 4), long gone from proto3, and 6, 7 */
		return -EBADMSG;
	}
	if (n > (uint64_t)(b->end - b->p))
		return -EBADMSG;
	f->span.p = b->p;
	f->span.end = b->p + n;
	b->p += n;
	return 1;
}

/* A string field into buf: false when it does not fit or holds a NUL. */
static bool pb_string(const struct pb_field *f, char *buf, size_t size)
{
	size_t n = (size_t)(f->span.end - f->span.p);

	if (n >= size || memchr(f->span.p, '\0', n))
		return false;
	memcpy(buf, f->span.p, n);
	buf[n] = '\0';
	return true;
}

void podres_table_init(struct podres_table *t)
{
	memset(t, 0, sizeof(*t));
}

void podres_table_release(struct podres_table *t)
{
	free(t->dev);
	podres_table_init(t);
}

int podres_table_copy(struct podres_table *dst, const struct podres_table *src)
{
	dst->n = 0;
	dst->skipped = src->skipped;
	if (src->n > dst->alloc) {
		struct podres_device *d = realloc(dst->dev, src->n * sizeof(*d));

		if (!d)
			return -ENOMEM;
		dst->dev = d;
		dst->alloc = src->n;
	}
	if (src->n)
		memcpy(dst->dev, src->dev, src->n * sizeof(*src->dev));
	dst->n = src->n;
	return 0;
}

int podres_grpc_message(const uint8_t *body, size_t len, const uint8_t **msg, size_t *msg_len)
{
	uint32_t n;

	if (len < 5)
		return -EBADMSG;
	n = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
	if (n != len - 5)
		return -EBADMSG;
	if (body[0] != 0)
		return body[0] == 1 ? -ENOTSUP : -EBADMSG;
	*msg = body + 5;
	*msg_len = n;
	return 0;
}

bool podres_is_gpu_resource(const char *name, size_t len)
{
	static const char gpu[] = "nvidia.com/gpu", mig[] = "nvidia.com/mig-";

	return (len == sizeof(gpu) - 1 && memcmp(name, gpu, len) == 0) ||
	       (len > sizeof(mig) - 1 && memcmp(name, mig, sizeof(mig) - 1) == 0);
}

/* What the devices of a container are listed under. */
struct podres_where {
	const char *ns, *pod, *container;
};

static int add_device(struct podres_table *t, const struct podres_where *w, const char *resource,
		      const struct pb_field *id)
{
	struct podres_device *d;

	if (t->n >= PODRES_MAX_DEVICES)
		return -E2BIG;
	if (ARRAY_GROW(t->dev, t->n, t->alloc, 16))
		return -ENOMEM;
	d = &t->dev[t->n];
	if (!pb_string(id, d->device_id, sizeof(d->device_id)) || !d->device_id[0]) {
		t->skipped++;
		return 0;
	}
	/* the names were checked to fit by the callers */
	snprintf(d->ns, sizeof(d->ns), "%s", w->ns);
	snprintf(d->pod, sizeof(d->pod), "%s", w->pod);
	snprintf(d->container, sizeof(d->container), "%s", w->container);
	snprintf(d->resource, sizeof(d->resource), "%s", resource);
	t->n++;
	return 0;
}

/* ContainerDevices{resource_name=1, device_ids=2 (repeated), topology=3} */
static int decode_devices(struct podres_table *t, const struct podres_where *w, struct pb msg)
{
	char resource[PODRES_RESOURCE_MAX] = "";
	bool is_gpu = false, fits = true;
	struct pb b = msg;
	struct pb_field f = {0};
	int ret;

	/* resource_name may come after the ids: read it first */
	while ((ret = pb_next(&b, &f)) > 0)
		if (f.num == 1 && f.type == WT_LEN) {
			is_gpu = podres_is_gpu_resource((const char *)f.span.p,
							(size_t)(f.span.end - f.span.p));
			fits = pb_string(&f, resource, sizeof(resource));
		}
	if (ret < 0)
		return ret;
	if (!is_gpu)
		return 0;
	b = msg;
	while ((ret = pb_next(&b, &f)) > 0) {
		if (f.num != 2 || f.type != WT_LEN)
			continue;
		if (!fits || !w->ns[0] || !w->pod[0]) {
			t->skipped++;
			continue;
		}
		ret = add_device(t, w, resource, &f);
		if (ret)
			return ret;
	}
	return ret;
}

/* ContainerResources{name=1, devices=2 (repeated), cpu_ids=3, memory=4, dynamic_resources=5} */
static int decode_container(struct podres_table *t, const char *ns, const char *pod, struct pb msg)
{
	char name[PODRES_CONTAINER_MAX] = "";
	struct podres_where w = {ns, pod, name};
	struct pb b = msg;
	struct pb_field f = {0};
	int ret;

	while ((ret = pb_next(&b, &f)) > 0)
		if (f.num == 1 && f.type == WT_LEN && !pb_string(&f, name, sizeof(name)))
			name[0] = '\0'; /* not a name we can keep: the devices still count */
	if (ret < 0)
		return ret;
	b = msg;
	while ((ret = pb_next(&b, &f)) > 0)
		if (f.num == 2 && f.type == WT_LEN) {
			ret = decode_devices(t, &w, f.span);
			if (ret)
				return ret;
		}
	return ret;
}

/* PodResources{name=1, namespace=2, containers=3 (repeated)} */
static int decode_pod(struct podres_table *t, struct pb msg)
{
	char ns[PODRES_NAMESPACE_MAX] = "", pod[PODRES_POD_MAX] = "";
	struct pb b = msg;
	struct pb_field f = {0};
	int ret;

	/* a name we cannot keep is left empty: its devices are skipped, counted */
	while ((ret = pb_next(&b, &f)) > 0) {
		if (f.num == 1 && f.type == WT_LEN && !pb_string(&f, pod, sizeof(pod)))
			pod[0] = '\0';
		if (f.num == 2 && f.type == WT_LEN && !pb_string(&f, ns, sizeof(ns)))
			ns[0] = '\0';
	}
	if (ret < 0)
		return ret;
	b = msg;
	while ((ret = pb_next(&b, &f)) > 0)
		if (f.num == 3 && f.type == WT_LEN) {
			ret = decode_container(t, ns, pod, f.span);
			if (ret)
				return ret;
		}
	return ret;
}

/* ListPodResourcesResponse{pod_resources=1 (repeated)} */
int podres_decode_list(const uint8_t *msg, size_t len, struct podres_table *t)
{
	struct pb b = {msg, msg + len};
	struct pb_field f = {0};
	int ret;

	t->n = 0;
	t->skipped = 0;
	while ((ret = pb_next(&b, &f)) > 0)
		if (f.num == 1 && f.type == WT_LEN) {
			ret = decode_pod(t, f.span);
			if (ret)
				break;
		}
	if (ret < 0) {
		t->n = 0;
		t->skipped = 0;
		return ret;
	}
	return 0;
}

/* ---- the join ---- */

/* The length of a device id without its time-slicing "::<replica>". */
static size_t id_len(const char *id)
{
	const char *rep = strstr(id, "::");

	return rep ? (size_t)(rep - id) : strlen(id);
}

/* Whether two device ids name one device: the same id before any "::". */
static bool same_device(const char *a, const char *b)
{
	size_t n = id_len(a);

	return n == id_len(b) && strncmp(a, b, n) == 0;
}

int podres_gpu_position(const struct gpu_set *set, const char *device_id)
{
	size_t n = id_len(device_id);

	if (n == 0)
		return -1;
	if (n < 6 && strspn(device_id, "0123456789") >= n) {
		int index = atoi(device_id);

		for (int i = 0; i < set->ndevices; i++)
			if (set->dev[i].info.index == index)
				return i;
		return -1;
	}
	for (int i = 0; i < set->ndevices; i++)
		if (strlen(set->dev[i].info.uuid) == n &&
		    strncmp(set->dev[i].info.uuid, device_id, n) == 0)
			return i;
	return -1;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

bool podres_reserve_pod(const struct podres_table *t, const struct gpu_set *set, const char *ns,
			const char *pod, struct job_record *r)
{
	bool listed[GPU_MAX_DEVICES] = {false};
	int index[GPU_MAX_DEVICES], nindex = 0;
	char list[sizeof(r->reserved_gpu_list)] = "";
	size_t len = 0;
	int32_t count = 0;
	bool any = false, changed;

	for (size_t i = 0; i < t->n; i++) {
		const struct podres_device *d = &t->dev[i];
		bool seen = false;
		int pos;

		if (strcmp(d->ns, ns) != 0 || strcmp(d->pod, pod) != 0)
			continue;
		any = true;
		/* a device given twice (two replicas, two containers) counts once */
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(t->dev[k].ns, ns) == 0 && strcmp(t->dev[k].pod, pod) == 0 &&
			       same_device(t->dev[k].device_id, d->device_id);
		if (seen)
			continue;
		pos = podres_gpu_position(set, d->device_id);
		if (pos >= 0 && listed[pos])
			continue; /* "0" and its UUID: one GPU */
		count++;
		if (pos >= 0)
			listed[pos] = true;
	}
	if (!any)
		return false;
	/* indexes ascending, as Slurm's list is */
	for (int i = 0; i < set->ndevices; i++)
		if (listed[i])
			index[nindex++] = set->dev[i].info.index;
	qsort(index, (size_t)nindex, sizeof(index[0]), cmp_int);
	for (int i = 0; i < nindex && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "",
					index[i]);
	if (len >= sizeof(list))
		list[0] = '\0'; /* cannot happen with 64 GPUs; never half a list */
	changed = !r->has_reserved_gpus || r->reserved_gpus != count ||
		  strcmp(r->reserved_gpu_list, list) != 0 ||
		  strcmp(r->reservation_source, PODRES_SOURCE) != 0;
	if (!changed)
		return false;
	r->has_reserved_gpus = true;
	r->reserved_gpus = count;
	snprintf(r->reserved_gpu_list, sizeof(r->reserved_gpu_list), "%s", list);
	snprintf(r->reservation_source, sizeof(r->reservation_source), "%s", PODRES_SOURCE);
	return true;
}

bool podres_reserve_job(const struct podres_table *t, const struct gpu_set *set,
			struct job_record *r)
{
	char ns[PODRES_NAMESPACE_MAX];
	const char *slash = strchr(r->name, '/');
	size_t n;

	if (strcmp(r->scheduler, "k8s") != 0 || !slash)
		return false;
	n = (size_t)(slash - r->name);
	if (n == 0 || n >= sizeof(ns) || !slash[1] || strchr(slash + 1, '/'))
		return false;
	memcpy(ns, r->name, n);
	ns[n] = '\0';
	return podres_reserve_pod(t, set, ns, slash + 1, r);
}
