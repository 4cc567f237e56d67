/*
 * fuzz_podres.c - libFuzzer target for the kubelet's pod-resources answer
 * (src/attrib/podres.c): the input is a gRPC answer body, its frame taken
 * off, else the whole input read as the protobuf; every entry decoded must
 * be a GPU resource with non-empty, NUL-free names that fit, and the join
 * runs on each pod against a made-up node of two GPUs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/podres.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gpu_set set;
	struct podres_table t;
	const uint8_t *msg = data;
	size_t len = size;

	if (!set.ndevices) {
		set.ndevices = 2;
		set.dev[1].info.index = 1;
		strcpy(set.dev[0].info.uuid, "GPU-0");
		strcpy(set.dev[1].info.uuid, "GPU-1");
	}
	if (podres_grpc_message(data, size, &msg, &len) != 0) {
		msg = data;
		len = size;
	}
	podres_table_init(&t);
	if (podres_decode_list(msg, len, &t) == 0) {
		for (size_t i = 0; i < t.n; i++) {
			const struct podres_device *d = &t.dev[i];
			struct job_record r;

			if (!podres_is_gpu_resource(d->resource, strlen(d->resource)) ||
			    !d->ns[0] || !d->pod[0] || !d->device_id[0])
				abort();
			memset(&r, 0, sizeof(r));
			if (!podres_reserve_pod(&t, &set, d->ns, d->pod, &r) ||
			    r.reserved_gpus < 1 || r.reserved_gpus > (int32_t)t.n ||
			    strlen(r.reserved_gpu_list) > 3)
				abort();
		}
	} else if (t.n != 0) {
		abort();
	}
	podres_table_release(&t);
	return 0;
}
