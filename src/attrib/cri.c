/*
 * cri.c - runtime.v1 ListPodSandboxResponse, decoded by hand for the
 * pods' owner labels (cri.h).  Every length is checked against what is
 * left; unknown fields are skipped, groups refused.
 */
#include "attrib/cri.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The owner labels, strongest first. */
static const char *const owner_labels[] = {
    "training.kubeflow.org/job-name", "batch.kubernetes.io/job-name", "job-name",
    "app.kubernetes.io/instance",     "app.kubernetes.io/name",
};
#define NLABELS (sizeof(owner_labels) / sizeof(owner_labels[0]))

struct pb {
	const uint8_t *p, *end;
};

static bool pb_varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end)
			return false;
		*v |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80))
			return true;
	}
	return false;
}

/*
 * The next field: its number and wire type; a length-delimited one's
 * bytes in *sub.  False at the end (*err 0) or on a malformed field (-EINVAL).
 */
static bool pb_field(struct pb *b, uint32_t *field, struct pb *sub, int *err)
{
	uint64_t key, n;

	*err = 0;
	for (;;) {
		if (b->p >= b->end)
			return false;
		if (!pb_varint(b, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
			goto bad;
		*field = (uint32_t)(key >> 3);
		switch (key & 7) {
		case 0:
			if (!pb_varint(b, &n))
				goto bad;
			continue;
		case 1:
			if (b->end - b->p < 8)
				goto bad;
			b->p += 8;
			continue;
		case 5:
			if (b->end - b->p < 4)
				goto bad;
			b->p += 4;
			continue;
		case 2:
			if (!pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
				goto bad;
			sub->p = b->p;
			sub->end = b->p + n;
			b->p += n;
			return true;
		default:
			goto bad;
		}
	}
bad:
	*err = -EINVAL;
	return false;
}

static bool copy_str(char *out, size_t size, const struct pb *s)
{
	size_t n = (size_t)(s->end - s->p);

	if (n >= size || memchr(s->p, '\0', n))
		return false;
	memcpy(out, s->p, n);
	out[n] = '\0';
	return true;
}

static bool str_eq(const struct pb *s, const char *want)
{
	size_t n = strlen(want);

	return (size_t)(s->end - s->p) == n && memcmp(s->p, want, n) == 0;
}

/* One map<string,string> entry: an owner label into o when stronger than *rank. */
static int label_entry(struct pb e, struct cri_owner *o, size_t *rank)
{
	struct pb key = {NULL, NULL}, value = {NULL, NULL}, sub;
	uint32_t f;
	int err;

	while (pb_field(&e, &f, &sub, &err)) {
		if (f == 1)
			key = sub;
		else if (f == 2)
			value = sub;
	}
	if (err)
		return err;
	if (!key.p || !value.p)
		return 0;
	for (size_t i = 0; i < NLABELS && i < *rank; i++) {
		if (!str_eq(&key, owner_labels[i]))
			continue;
		if (!copy_str(o->name, sizeof(o->name), &value) || !o->name[0])
			return 0; /* too long, or empty: no hint */
		snprintf(o->label, sizeof(o->label), "%s", owner_labels[i]);
		*rank = i;
		return 0;
	}
	return 0;
}

static int sandbox(struct pb s, struct cri_owner *o)
{
	struct pb sub, m;
	uint32_t f, mf;
	size_t rank = NLABELS;
	int err;

	memset(o, 0, sizeof(*o));
	while (pb_field(&s, &f, &sub, &err)) {
		if (f == 2) {
			m = sub;
			while (pb_field(&m, &mf, &sub, &err))
				if (mf == 2 && !copy_str(o->uid, sizeof(o->uid), &sub))
					return -EINVAL;
			if (err)
				return err;
		} else if (f == 5) {
			err = label_entry(sub, o, &rank);
			if (err)
				return err;
		}
	}
	return err;
}

int cri_decode_sandboxes(const uint8_t *msg, size_t len,
			 void (*each)(const struct cri_owner *owner, void *arg), void *arg)
{
	struct pb b = {msg, msg + len}, sub;
	struct cri_owner o;
	uint32_t f;
	int err;

	while (pb_field(&b, &f, &sub, &err)) {
		if (f != 1)
			continue;
		err = sandbox(sub, &o);
		if (err)
			return err;
		if (o.uid[0])
			each(&o, arg);
	}
	return err;
}
