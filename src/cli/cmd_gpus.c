/*
 * cmd_gpus.c - `jobscope gpus`: the GPUs this machine has, who drives them,
 * and which metrics their driver gives.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/log.h"
#include "report/gpu_list.h"
#include "sample/gpu/gpu_set.h"

static const char gpus_head[] =
    "usage: jobscope gpus [--json] [--verbose]\n"
    "\n"
    "List the GPUs jobscope can see: index, UUID, name, PCI bus id, memory,\n"
    "power limit, NVLink links, the driver and library versions, which metrics\n"
    "this driver supports for each device and which profiling metrics (NVML's\n"
    "GPM activity on Hopper and newer: SM active, occupancy, tensor, DRAM, FP64,\n"
    "FP32, FP16; throttle times per reason; PCIe replays; remapped rows).  A GPU\n"
    "in MIG mode is followed by each of its MIG devices, a device of its own\n"
    "(GPU and compute instance ids, profile, memory).  NVIDIA GPUs are read through\n"
    "NVML (libnvidia-ml.so.1), AMD ones through ROCm SMI (librocm_smi64.so);\n"
    "$JOBSCOPE_NVML_LIBRARY and $JOBSCOPE_ROCM_SMI_LIBRARY name other files.\n"
    "Each vendor's line says whether its library is there and, when it has no\n"
    "GPU, why (\"no driver loaded: no NVIDIA GPU\").\n"
    "\n";

static int set_verbose(const struct opt *opt, const char *arg)
{
	(void)opt;
	(void)arg;
	log_set_level(LOG_DEBUG);
	return 0;
}

static int cmd_gpus(int argc, char **argv)
{
	static const struct opt_cmd cmd = {"gpus", gpus_head, NULL, 18, 0, 0};
	bool json = false;
	const struct opt opts[] = {
	    OPT_FLAG(0, "json", &json, "one JSON object instead of text"),
	    OPT_ACTION('v', "verbose",
		       "debug messages, with what the GPU libraries print while\n"
		       "they start (kept off the terminal otherwise)",
		       set_verbose),
	    OPT_END(),
	};
	struct gpu_set set;
	struct strbuf out;
	int first, ret = opt_parse(&cmd, opts, argc, argv, &first);

	if (ret)
		return ret == OPT_DONE ? 0 : ret;
	gpu_set_init(&set);
	gpu_set_open(&set);
	strbuf_init(&out, 0);
	if (json)
		gpu_list_json(&set, &out);
	else
		gpu_list_text(&set, &out);
	fwrite(out.buf, 1, out.len, stdout);
	strbuf_release(&out);
	gpu_set_close(&set);
	return 0;
}

const struct cli_command cmd_gpus_def = {
    "gpus",
    cmd_gpus,
    "list the GPUs and what their driver reports",
};
