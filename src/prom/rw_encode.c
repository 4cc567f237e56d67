/*
 * rw_encode.c - the remote-write WriteRequest by hand, and snappy (see
 * rw_encode.h for why by hand).
 *
 * Protobuf wire format: a field is a key varint (number << 3 | wire type)
 * and its value; wire type 0 is a varint, 1 eight little-endian bytes, 2 a
 * varint length and that many bytes.  A nested message is type 2, so its
 * size is computed before it is written (the *_size functions).
 */
#include "prom/rw_encode.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/varint.h"

/*
 * libsnappy is loaded with dlopen on first use, as libcurl is (curl_dl.h):
 * it is C++ and pulls libstdc++ and libgcc_s in, which an agent without
 * --remote-write must not map.  The header gives the types.
 */
#define SNAPPY_FUNCTIONS(X)                                                                        \
	X(snappy_compress)                                                                         \
	X(snappy_uncompress)                                                                       \
	X(snappy_max_compressed_length)                                                            \
	X(snappy_uncompressed_length)                                                              \
	X(snappy_validate_compressed_buffer)

static struct {
#define SNAPPY_POINTER(name) __typeof__(name) *name;
	SNAPPY_FUNCTIONS(SNAPPY_POINTER)
#undef SNAPPY_POINTER
} sn;
static pthread_once_t sn_once = PTHREAD_ONCE_INIT;
static int sn_ret;

static void sn_load(void)
{
	const char *name = getenv("JOBSCOPE_SNAPPY_LIBRARY"); /* tests: another path */
	void *dl = dlopen(name && name[0] ? name : "libsnappy.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		log_err(0, "remote write needs libsnappy1v5 (%s): apt-get install libsnappy1v5",
			dlerror());
		sn_ret = -ENOENT;
		return;
	}
#define SNAPPY_RESOLVE(name)                                                                       \
	sn.name = (__typeof__(sn.name))dlsym(dl, #name);                                           \
	if (!sn.name)                                                                              \
		goto out_missing;
	SNAPPY_FUNCTIONS(SNAPPY_RESOLVE)
#undef SNAPPY_RESOLVE
	return;
out_missing:
	log_err(0, "libsnappy lacks its C API (%s)", dlerror());
	dlclose(dl);
	sn_ret = -ENOENT;
}

int rw_snappy_load(void)
{
	pthread_once(&sn_once, sn_load);
	return sn_ret;
}

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

static void put_key(struct strbuf *o, unsigned field, unsigned type)
{
	(void)varint_put(o, (uint64_t)field << 3 | type);
}

/* A string field: key, length, bytes. */
static size_t string_size(size_t len)
{
	return 1 + varint_size(len) + len;
}

static void put_string(struct strbuf *o, unsigned field, const char *s)
{
	size_t len = strlen(s);

	put_key(o, field, WT_LEN);
	(void)varint_put(o, len);
	strbuf_add(o, s, len);
}

static size_t label_size(const struct rw_label *l)
{
	return string_size(strlen(l->name)) + string_size(strlen(l->value));
}

/* Sample: value as fixed64 (field 1), timestamp as an int64 varint (field 2). */
static size_t sample_size(const struct rw_sample *s)
{
	return 1 + 8 + 1 + varint_size((uint64_t)s->ts_ms);
}

static size_t series_size(const struct rw_series *ts)
{
	size_t n = 0, m;

	for (size_t i = 0; i < ts->nlabels; i++) {
		m = label_size(&ts->labels[i]);
		n += 1 + varint_size(m) + m;
	}
	for (size_t i = 0; i < ts->nsamples; i++) {
		m = sample_size(&ts->samples[i]);
		n += 1 + varint_size(m) + m;
	}
	return n;
}

static void put_sample(struct strbuf *o, const struct rw_sample *s)
{
	unsigned char b[8];
	uint64_t bits;

	memcpy(&bits, &s->value, sizeof(bits));
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(bits >> (8 * i));
	put_key(o, 1, WT_FIXED64);
	strbuf_add(o, b, sizeof(b));
	put_key(o, 2, WT_VARINT);
	/* int64: negative as ten bytes, as protobuf says */
	(void)varint_put(o, (uint64_t)s->ts_ms);
}

int rw_encode_write_request(const struct rw_series *series, size_t n, struct strbuf *out)
{
	for (size_t k = 0; k < n; k++) {
		const struct rw_series *ts = &series[k];

		put_key(out, 1, WT_LEN);
		(void)varint_put(out, series_size(ts));
		for (size_t i = 0; i < ts->nlabels; i++) {
			put_key(out, 1, WT_LEN);
			(void)varint_put(out, label_size(&ts->labels[i]));
			put_string(out, 1, ts->labels[i].name);
			put_string(out, 2, ts->labels[i].value);
		}
		for (size_t i = 0; i < ts->nsamples; i++) {
			put_key(out, 2, WT_LEN);
			(void)varint_put(out, sample_size(&ts->samples[i]));
			put_sample(out, &ts->samples[i]);
		}
	}
	return strbuf_error(out);
}

int rw_snappy_compress(const char *in, size_t len, struct strbuf *out)
{
	size_t room;
	int ret;

	if (rw_snappy_load())
		return -ENOENT;
	room = sn.snappy_max_compressed_length(len);
	strbuf_reset(out);
	ret = strbuf_grow(out, room + 1);
	if (ret)
		return ret;
	if (sn.snappy_compress(in, len, out->buf, &room) != SNAPPY_OK)
		return -EINVAL;
	out->len = room;
	out->buf[room] = '\0';
	return 0;
}

int rw_snappy_uncompress(const char *in, size_t len, struct strbuf *out)
{
	size_t n;
	int ret;

	if (rw_snappy_load())
		return -ENOENT;
	strbuf_reset(out);
	if (sn.snappy_uncompressed_length(in, len, &n) != SNAPPY_OK ||
	    sn.snappy_validate_compressed_buffer(in, len) != SNAPPY_OK)
		return -EINVAL;
	ret = strbuf_grow(out, n + 1);
	if (ret)
		return ret;
	if (sn.snappy_uncompress(in, len, out->buf, &n) != SNAPPY_OK)
		return -EINVAL;
	out->len = n;
	out->buf[n] = '\0';
	return 0;
}
