/*
 * gpu_list.h - the GPUs jobscope can see, for `jobscope gpus`: each
 * vendor's library and why it has no GPU, then index, UUID, name, bus id,
 * memory, power limit, NVLink links, driver, the metrics the driver
 * gives and does not give, the profiling ones it gives (GPM activity,
 * violation counters, PCIe replays, remapped rows), MIG mode and each MIG
 * device (GPU and compute instance ids, profile, memory) after its GPU.  Appends to out; cannot fail (out's cap cuts).
 */
#ifndef JOBSCOPE_GPU_LIST_H
#define JOBSCOPE_GPU_LIST_H

#include "common/strbuf.h"

struct gpu_set;

void gpu_list_text(const struct gpu_set *set, struct strbuf *out);
/* {"libraries": [...], "vendors": [...], "gpus": [...]} and a newline */
void gpu_list_json(const struct gpu_set *set, struct strbuf *out);

#endif
