/*
 * fuzz_cudaproto.c - libFuzzer target for the CUDA hook's frames as the
 * receiver reads them (src/cuda/cudaproto.c): a stream of frames parsed
 * into one process's state, as collect.c does.  A parsed snapshot must
 * re-encode and parse back to the same stats.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cudaproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct cuda_proc *p)
{
	struct cuda_proc q;
	struct strbuf sb;
	int64_t len;

	strbuf_init(&sb, 0);
	if (cuda_proto_snap(&sb, p)) {
		strbuf_release(&sb);
		return;
	}
	len = cuda_proto_frame_len(sb.buf, sb.len);
	cuda_proc_init(&q);
	if (len <= 0 || cuda_proto_parse(sb.buf + CUDA_PROTO_HEADER, (size_t)len, &q) ||
	    q.nstats != p->nstats)
		abort();
	for (size_t i = 0; i < q.nstats; i++)
		if (q.stats[i].count != p->stats[i].count ||
		    q.stats[i].total_ns != p->stats[i].total_ns ||
		    strcmp(q.stats[i].name, p->stats[i].name) != 0)
			abort();
	cuda_proc_release(&q);
	strbuf_release(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cuda_proc p;
	size_t off = 0;

	cuda_proc_init(&p);
	while (off < size) {
		int64_t len = cuda_proto_frame_len(data + off, size - off);
		enum cuda_msg_type type;
		bool on;
		int64_t ms;

		if (len <= 0 || (uint64_t)len > size - off - CUDA_PROTO_HEADER)
			break;
		off += CUDA_PROTO_HEADER;
		if (cuda_proto_parse((const char *)data + off, (size_t)len, &p) == 0 &&
		    cuda_proto_type((const char *)data + off, (size_t)len, &type) == 0 &&
		    type == CUDA_MSG_SNAP)
			check_round_trip(&p);
		cuda_proto_parse_command((const char *)data + off, (size_t)len, &on, &ms);
		off += (size_t)len;
	}
	cuda_proc_release(&p);
	return 0;
}
