/*
 * podres.h - the kubelet's pod-resources answer, decoded, and each pod's
 * GPU reservation read off it.
 *
 * The kubelet tells which devices each container of each pod was given
 * (kubernetes/kubelet:pkg/apis/podresources/v1/api.proto, service
 * v1.PodResourcesLister, call List).  This module is the pure half: the
 * gRPC message frame and the protobuf of ListPodResourcesResponse decoded
 * by hand into a flat table of (namespace, pod, container, resource,
 * device id), keeping NVIDIA's GPU resources only (`nvidia.com/gpu` and
 * `nvidia.com/mig-*`, as dcgm-exporter does); and the join that makes the
 * devices of a pod the GPU reservation of the pod's job.  The call itself
 * (HTTP/2 over the kubelet's unix socket) is net/kubelet.c's.
 *
 * The answer has no pod UID: a job is joined on its name, "NAMESPACE/POD"
 * (what section 1 of the Kubernetes support names a pod's job).  Device
 * ids are GPU UUIDs ("GPU-…"), MIG devices' ("MIG-…"), with time-slicing
 * either with "::N" after it (the N-th replica of that device); a plain
 * number is taken as the GPU's index (a device plugin run with
 * DEVICE_ID_STRATEGY=index).
 *
 * Ownership: a table owns its entries (podres_table_init cannot fail,
 * podres_table_release frees).  Errors: 0 or -errno: -EBADMSG for bytes
 * that are not the message, -E2BIG over PODRES_MAX_DEVICES entries,
 * -ENOMEM.  A failed decode leaves the table empty.  No I/O, no state:
 * thread-safe on distinct tables.
 */
#ifndef JOBSCOPE_PODRES_H
#define JOBSCOPE_PODRES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attrib/job.h"
#include "sample/gpu/gpu_set.h"

#define PODRES_MAX_DEVICES   4096 /* GPU entries of one answer: a node has a few dozen */
#define PODRES_NAMESPACE_MAX 64	  /* Kubernetes: a namespace is at most 63 bytes */
#define PODRES_POD_MAX	     254  /* ... a pod name 253 */
#define PODRES_CONTAINER_MAX 64	  /* ... a container name 63 */
#define PODRES_RESOURCE_MAX  64
#define PODRES_DEVICE_ID_MAX 128
/* what the reservation's source is called in the job record */
#define PODRES_SOURCE "pod_resources"

struct podres_device {
	char ns[PODRES_NAMESPACE_MAX];
	char pod[PODRES_POD_MAX];
	char container[PODRES_CONTAINER_MAX];
	char resource[PODRES_RESOURCE_MAX];
	char device_id[PODRES_DEVICE_ID_MAX];
};

struct podres_table {
	struct podres_device *dev;
	size_t n, alloc;
	size_t skipped; /* GPU device ids left out: a name or id over its size, or with a NUL */
};

void podres_table_init(struct podres_table *t);
void podres_table_release(struct podres_table *t);
/* dst takes a copy of src's entries (dst emptied first). */
int podres_table_copy(struct podres_table *dst, const struct podres_table *src);

/*
 * The one message of a unary gRPC answer's body: 1 byte compressed flag,
 * 4 bytes big-endian length, the message.  0 with *msg and *msg_len;
 * -EBADMSG when the body is not exactly one frame; -ENOTSUP for a
 * compressed one (we never offer an encoding: a server that sends one
 * anyway is not answered).
 */
int podres_grpc_message(const uint8_t *body, size_t len, const uint8_t **msg, size_t *msg_len);

/* Whether the kubelet resource name is a GPU of ours: nvidia.com/gpu, nvidia.com/mig-*. */
bool podres_is_gpu_resource(const char *name, size_t len);

/*
 * ListPodResourcesResponse's protobuf into t (emptied first): its GPU
 * devices, in the answer's order.  Fields may come in any order, unknown
 * fields are skipped, every length is checked against what holds it.
 */
int podres_decode_list(const uint8_t *msg, size_t len, struct podres_table *t);

/*
 * The position in set->dev of the GPU a device id names (its "::N"
 * replica suffix ignored): by UUID, or by index for a plain number; -1
 * when none does (a MIG device: the set has whole GPUs only).
 */
int podres_gpu_position(const struct gpu_set *set, const char *device_id);

/*
 * The GPU reservation of pod ns/pod in t, into r when t lists any GPU of
 * it: reservation_source "pod_resources", has_reserved_gpus, reserved_gpus
 * (the distinct devices, a device's time-slicing replicas counted once),
 * reserved_gpu_list (the GPUs' indexes, ascending, comma-separated, as
 * Slurm's list is; a MIG device is counted but names no index).  True when
 * r changed.  A pod t does not list leaves r as it was: an answer that
 * misses a pod (it ended) does not take back what it reserved.
 */
bool podres_reserve_pod(const struct podres_table *t, const struct gpu_set *set, const char *ns,
			const char *pod, struct job_record *r);

/*
 * The same for a job record named "NAMESPACE/POD" (a Kubernetes pod's job,
 * scheduler "k8s"); false for any other job.
 */
bool podres_reserve_job(const struct podres_table *t, const struct gpu_set *set,
			struct job_record *r);

#endif
