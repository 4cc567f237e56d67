/*
 * cri.h - owner hints of pods from the container runtime's CRI: the
 * protobuf of runtime.v1 ListPodSandboxResponse decoded by hand (the
 * fields used: items=1 PodSandbox{metadata=2 {uid=2}, labels=5}).  The
 * kubelet copies a pod's labels to its sandbox, among them the owner's:
 * a Job's batch.kubernetes.io/job-name (job-name before 1.27), a Kubeflow
 * training job's training.kubeflow.org/job-name, app.kubernetes.io/name.
 * Hints only: a pod's identity never depends on them.  Pure: no I/O
 * (the agent makes the call, agent/k8s.c).  Errors: 0 or -EINVAL.
 */
#ifndef JOBSCOPE_CRI_H
#define JOBSCOPE_CRI_H

#include <stddef.h>
#include <stdint.h>

#include "attrib/k8s.h"

#define CRI_LABEL_MAX 64

struct cri_owner {
	char uid[K8S_UID_MAX];
	char label[CRI_LABEL_MAX]; /* the label that named the owner */
	char name[K8S_POD_MAX];	   /* its value */
};

/*
 * Calls each(owner, arg) for every sandbox of the response that has a
 * pod UID, with the owner its labels name (the first found of
 * training.kubeflow.org/job-name, batch.kubernetes.io/job-name, job-name,
 * app.kubernetes.io/instance, app.kubernetes.io/name; label and name ""
 * when none does).  -EINVAL when the message is malformed (those before
 * were given).
 */
int cri_decode_sandboxes(const uint8_t *msg, size_t len,
			 void (*each)(const struct cri_owner *owner, void *arg), void *arg);

#endif
