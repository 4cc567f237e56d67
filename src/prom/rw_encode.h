/*
 * rw_encode.h - Prometheus remote-write 1.0 bodies (docs/remote-write.md):
 * the protobuf WriteRequest and its snappy block compression.
 *
 *   message WriteRequest { repeated TimeSeries timeseries = 1; }
 *   message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
 *   message Label        { string name = 1; string value = 2; }
 *   message Sample       { double value = 1; int64 timestamp = 2; }
 *
 * The four messages are encoded by hand (varints, length-delimited fields,
 * a little-endian fixed64 double), not with libprotobuf-c: they are about
 * 60 lines, a generated encoder would need protoc-c at build time and an
 * allocation per message, and the bytes are checked byte for byte by a
 * unit test (tests/unit/test_rw_encode.c).  Snappy is Debian's libsnappy
 * (the block format, which the protocol requires; never the framed one),
 * loaded with dlopen on first use (rw_snappy_load: 0, or -ENOENT after
 * logging which package to install).
 *
 * The caller passes labels already sorted by name, without empty values,
 * and each series' samples in timestamp order (remote_write.c does).
 * Errors: 0 or -errno (-ENOMEM, -E2BIG over the buffer's cap, -EINVAL for
 * a body snappy refuses).  Pure and thread-safe.
 */
#ifndef JOBSCOPE_RW_ENCODE_H
#define JOBSCOPE_RW_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

struct rw_label {
	const char *name, *value;
};

struct rw_sample {
	double value;
	int64_t ts_ms;
};

struct rw_series {
	const struct rw_label *labels;
	size_t nlabels;
	const struct rw_sample *samples;
	size_t nsamples;
};

/* Appends one WriteRequest of the n series to out. */
int rw_encode_write_request(const struct rw_series *series, size_t n, struct strbuf *out);
int rw_snappy_load(void);
/* out = snappy block of in[0..len) (out reset first). */
int rw_snappy_compress(const char *in, size_t len, struct strbuf *out);
/* out = the bytes of a snappy block (out reset first): for tests and checks. */
int rw_snappy_uncompress(const char *in, size_t len, struct strbuf *out);

#endif
