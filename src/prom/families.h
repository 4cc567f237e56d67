/*
 * families.h - every jobscope_* metric family, once: its name, its type,
 * the store column it is read from where one column holds it (NULL: made
 * from several, or not stored), the scale from that column's unit to the
 * family's, and its HELP.  The agent's and the head's /metrics, remote
 * write and the Prometheus reader all name families through this table,
 * so that one family never has two names, types or HELP texts
 * (docs/metrics.md lists them for users).
 *
 * Units are in the name (Prometheus's rule): _bytes, _seconds, _percent
 * (0-100), _watts, _joules, _celsius; counters end in _total.
 */
#ifndef JOBSCOPE_PROM_FAMILIES_H
#define JOBSCOPE_PROM_FAMILIES_H

#include "common/strbuf.h"

/* X(ID, name, type, column, scale, help) */
#define PROM_FAMILIES(X)                                                                          \
	/* the node, from host_samples (the agent's /metrics: live) */                            \
	X(NODE_CPU_SECONDS, "jobscope_node_cpu_seconds_total", "counter", NULL, 1e-3,              \
	  "CPU time of the whole node by mode, seconds (all CPUs summed).")                        \
	X(NODE_CPUS, "jobscope_node_cpus", "gauge", "ncpus", 1, "Online CPUs.")                    \
	X(NODE_MEMORY_TOTAL, "jobscope_node_memory_total_bytes", "gauge", "mem_total_bytes", 1,    \
	  "Memory, bytes.")                                                                        \
	X(NODE_MEMORY_AVAILABLE, "jobscope_node_memory_available_bytes", "gauge",                  \
	  "mem_available_bytes", 1,                                                                \
	  "Memory available for new work without swapping (MemAvailable), bytes.")                 \
	X(NODE_SWAP_USED, "jobscope_node_swap_used_bytes", "gauge", NULL, 1, "Swap in use, bytes.") \
	X(NODE_LOAD1, "jobscope_node_load1", "gauge", "load1_milli", 1e-3,                         \
	  "1-minute load average.")                                                                \
	X(NODE_DISK_READ, "jobscope_node_disk_read_bytes_total", "counter", "disk_read_bytes", 1,  \
	  "Bytes read from whole disks.")                                                          \
	X(NODE_DISK_WRITTEN, "jobscope_node_disk_written_bytes_total", "counter",                  \
	  "disk_write_bytes", 1, "Bytes written to whole disks.")                                  \
	X(NODE_NET_RX, "jobscope_node_network_receive_bytes_total", "counter", "net_rx_bytes", 1,  \
	  "Bytes received on every interface but lo.")                                             \
	X(NODE_NET_TX, "jobscope_node_network_transmit_bytes_total", "counter", "net_tx_bytes", 1, \
	  "Bytes sent on every interface but lo.")                                                 \
	X(NODE_PSI_MEMORY, "jobscope_node_pressure_memory_waiting_seconds_total", "counter",       \
	  "psi_mem_some_us", 1e-6, "Time some task waited for memory (PSI some), seconds.")        \
	X(NODE_PROCESSES, "jobscope_node_processes", "gauge", NULL, 1,                             \
	  "User-space processes sampled.")                                                         \
	/* the node, the head's /metrics (one series per node) */                                 \
	X(NODE_CPU_USER_SECONDS, "jobscope_node_cpu_user_seconds_total", "counter", "cpu_user_ms", \
	  1e-3, "CPU time in user mode, seconds.")                                                 \
	X(NODE_CPU_SYSTEM_SECONDS, "jobscope_node_cpu_system_seconds_total", "counter",            \
	  "cpu_system_ms", 1e-3, "CPU time in the kernel, seconds.")                               \
	X(NODE_CPU_IDLE_SECONDS, "jobscope_node_cpu_idle_seconds_total", "counter", "cpu_idle_ms", \
	  1e-3, "Idle CPU time, seconds.")                                                         \
	X(NODE_LAST_SAMPLE, "jobscope_node_last_sample_timestamp_seconds", "gauge", "ts_ms", 1e-3, \
	  "When the node's latest sample was taken.")                                              \
	/* each CPU, disk, interface and filesystem (remote write) */                             \
	X(NODE_CPU_CORE_SECONDS, "jobscope_node_cpu_core_seconds_total", "counter", NULL, 1e-3,    \
	  "CPU time of each CPU by mode, seconds.")                                                \
	X(DISK_READS, "jobscope_disk_reads_total", "counter", "reads", 1,                          \
	  "Reads completed on each disk.")                                                         \
	X(DISK_READ_BYTES, "jobscope_disk_read_bytes_total", "counter", "read_bytes", 1,           \
	  "Bytes read from each disk.")                                                            \
	X(DISK_WRITES, "jobscope_disk_writes_total", "counter", "writes", 1,                       \
	  "Writes completed on each disk.")                                                        \
	X(DISK_WRITTEN_BYTES, "jobscope_disk_written_bytes_total", "counter", "write_bytes", 1,    \
	  "Bytes written to each disk.")                                                           \
	X(DISK_IO_SECONDS, "jobscope_disk_io_seconds_total", "counter", "io_ms", 1e-3,             \
	  "Time each disk was busy with I/O, seconds.")                                            \
	X(NET_RX_BYTES, "jobscope_network_receive_bytes_total", "counter", "rx_bytes", 1,          \
	  "Bytes received on each interface.")                                                     \
	X(NET_RX_PACKETS, "jobscope_network_receive_packets_total", "counter", "rx_packets", 1,    \
	  "Packets received on each interface.")                                                   \
	X(NET_TX_BYTES, "jobscope_network_transmit_bytes_total", "counter", "tx_bytes", 1,         \
	  "Bytes sent on each interface.")                                                         \
	X(NET_TX_PACKETS, "jobscope_network_transmit_packets_total", "counter", "tx_packets", 1,   \
	  "Packets sent on each interface.")                                                       \
	X(FS_USED, "jobscope_filesystem_used_bytes", "gauge", "used_bytes", 1,                     \
	  "Bytes used on each filesystem.")                                                        \
	X(FS_SIZE, "jobscope_filesystem_size_bytes", "gauge", "total_bytes", 1,                    \
	  "Size of each filesystem, bytes.")                                                       \
	/* each GPU, from gpu_samples */                                                          \
	X(GPU_UTIL, "jobscope_gpu_utilization_percent", "gauge", "util_pct", 1,                    \
	  "Time a kernel ran on the GPU over the driver's last period, 0-100.")                    \
	X(GPU_MEMORY_USED, "jobscope_gpu_memory_used_bytes", "gauge", "mem_used_bytes", 1,         \
	  "GPU memory in use, bytes.")                                                             \
	X(GPU_MEMORY_TOTAL, "jobscope_gpu_memory_total_bytes", "gauge", NULL, 1,                   \
	  "GPU memory, bytes.")                                                                    \
	X(GPU_POWER, "jobscope_gpu_power_watts", "gauge", "power_mw", 1e-3, "Power draw, watts.")  \
	X(GPU_ENERGY, "jobscope_gpu_energy_joules_total", "counter", "energy_mj", 1e-3,            \
	  "Energy since the driver loaded, joules.")                                               \
	X(GPU_TEMPERATURE, "jobscope_gpu_temperature_celsius", "gauge", "temp_c", 1,               \
	  "GPU temperature, degrees Celsius.")                                                     \
	X(GPU_PCIE_RX, "jobscope_gpu_pcie_receive_bytes_per_second", "gauge", "pcie_rx_bps", 1,    \
	  "PCIe traffic into the GPU, bytes/s (driver's sampling window).")                        \
	X(GPU_PCIE_TX, "jobscope_gpu_pcie_transmit_bytes_per_second", "gauge", "pcie_tx_bps", 1,   \
	  "PCIe traffic out of the GPU, bytes/s.")                                                 \
	X(GPU_GR_ACTIVE, "jobscope_gpu_graphics_active_percent", "gauge", NULL, 1,                 \
	  "Time the graphics/compute engine was active over the last tick, 0-100 (NVML "           \
	  "GPM, Hopper and newer).")                                                               \
	X(GPU_SM_ACTIVE, "jobscope_gpu_sm_active_percent", "gauge", NULL, 1,                       \
	  "Time at least one warp was resident on an SM, averaged over the SMs, over the "         \
	  "last tick, 0-100 (NVML GPM).")                                                          \
	X(GPU_SM_OCCUPANCY, "jobscope_gpu_sm_occupancy_percent", "gauge", NULL, 1,                 \
	  "Warps resident on the SMs as a share of their maximum, over the last tick, "            \
	  "0-100 (NVML GPM).")                                                                     \
	X(GPU_TENSOR_ACTIVE, "jobscope_gpu_tensor_active_percent", "gauge", NULL, 1,               \
	  "Time any tensor pipe was active over the last tick, 0-100 (NVML GPM).")                 \
	X(GPU_DFMA_TENSOR_ACTIVE, "jobscope_gpu_dfma_tensor_active_percent", "gauge", NULL, 1,     \
	  "Time the FP64 (DFMA) tensor pipe was active over the last tick, 0-100 (NVML "           \
	  "GPM).")                                                                                 \
	X(GPU_HMMA_TENSOR_ACTIVE, "jobscope_gpu_hmma_tensor_active_percent", "gauge", NULL, 1,     \
	  "Time the half-precision (HMMA) tensor pipe was active over the last tick, "             \
	  "0-100 (NVML GPM).")                                                                     \
	X(GPU_IMMA_TENSOR_ACTIVE, "jobscope_gpu_imma_tensor_active_percent", "gauge", NULL, 1,     \
	  "Time the integer (IMMA) tensor pipe was active over the last tick, 0-100 (NVML "        \
	  "GPM).")                                                                                 \
	X(GPU_DRAM_ACTIVE, "jobscope_gpu_dram_active_percent", "gauge", NULL, 1,                   \
	  "DRAM bandwidth used as a share of the peak over the last tick, 0-100 (NVML "            \
	  "GPM).")                                                                                 \
	X(GPU_FP64_ACTIVE, "jobscope_gpu_fp64_active_percent", "gauge", NULL, 1,                   \
	  "Time the FP64 (non-tensor) pipes were active over the last tick, 0-100 (NVML "          \
	  "GPM).")                                                                                 \
	X(GPU_FP32_ACTIVE, "jobscope_gpu_fp32_active_percent", "gauge", NULL, 1,                   \
	  "Time the FP32 (non-tensor) pipes were active over the last tick, 0-100 (NVML "          \
	  "GPM).")                                                                                 \
	X(GPU_FP16_ACTIVE, "jobscope_gpu_fp16_active_percent", "gauge", NULL, 1,                   \
	  "Time the FP16 (non-tensor) pipes were active over the last tick, 0-100 (NVML "          \
	  "GPM).")                                                                                 \
	X(GPU_THROTTLE, "jobscope_gpu_throttle_seconds_total", "counter", NULL, 1,                 \
	  "Time the driver held the GPU back, by reason (NVML's violation counters, "              \
	  "exact, not sampled), seconds since the driver loaded.")                                 \
	X(GPU_PCIE_REPLAYS, "jobscope_gpu_pcie_replays_total", "counter", NULL, 1,                 \
	  "PCIe replays (retries) of the GPU's link.")                                             \
	X(GPU_REMAPPED_ROWS, "jobscope_gpu_remapped_rows_total", "counter", NULL, 1,               \
	  "Memory rows remapped, by the error that caused it (correctable, "                       \
	  "uncorrectable).")                                                                       \
	X(GPU_ROW_REMAP_PENDING, "jobscope_gpu_row_remap_pending", "gauge", NULL, 1,               \
	  "1 when a row remapping waits for the GPU's reset, else 0.")                             \
	X(GPU_ROW_REMAP_FAILED, "jobscope_gpu_row_remap_failed", "gauge", NULL, 1,                 \
	  "1 when a row remapping has failed, else 0.")                                            \
	/* each job, from job_samples and jobs */                                                 \
	X(JOB_CPU_SECONDS, "jobscope_job_cpu_seconds_total", "counter", NULL, 1e-3,                \
	  "CPU time of the job's processes (exited ones included), seconds.")                      \
	X(JOB_CPU_CORES, "jobscope_job_cpu_cores", "gauge", NULL, 1,                               \
	  "CPU cores the job used over the last interval.")                                        \
	X(JOB_MEMORY_RSS, "jobscope_job_memory_rss_bytes", "gauge", "rss_bytes", 1,                \
	  "Resident memory of the job's processes (shared pages counted in each), bytes.")         \
	X(JOB_SWAP, "jobscope_job_swap_bytes", "gauge", "swap_bytes", 1,                           \
	  "Swap used by the job's processes, bytes.")                                              \
	X(JOB_READ, "jobscope_job_read_bytes_total", "counter", "read_bytes", 1,                   \
	  "Bytes the job's processes read from storage.")                                          \
	X(JOB_WRITTEN, "jobscope_job_written_bytes_total", "counter", "write_bytes", 1,            \
	  "Bytes the job's processes wrote to storage.")                                           \
	X(JOB_PROCESSES, "jobscope_job_processes", "gauge", "nprocs", 1,                           \
	  "Live processes of the job.")                                                            \
	X(JOB_RESERVED_CPUS, "jobscope_job_reserved_cpus", "gauge", "reserved_cpus", 1,            \
	  "CPUs the scheduler reserved for the job.")                                              \
	X(JOB_RESERVED_MEMORY, "jobscope_job_reserved_memory_bytes", "gauge",                      \
	  "reserved_mem_bytes", 1, "Memory the scheduler reserved for the job, bytes.")            \
	X(JOB_RESERVED_GPUS, "jobscope_job_reserved_gpus", "gauge", "reserved_gpus", 1,            \
	  "GPUs the scheduler reserved for the job.")                                              \
	X(JOB_CGROUP_MEMORY, "jobscope_job_cgroup_memory_bytes", "gauge", "cg_mem_bytes", 1,       \
	  "Memory charged to the job's cgroup (page cache included), bytes.")                      \
	X(JOB_START_TIME, "jobscope_job_start_time_seconds", "gauge", "start_ms", 1e-3,            \
	  "When the job's first process started, seconds since the epoch.")                        \
	X(JOB_GPU_MEMORY, "jobscope_job_gpu_memory_bytes", "gauge", "mem_bytes", 1,                \
	  "GPU memory of the job's processes on the device, bytes.")                               \
	X(JOB_GPU_SM_UTIL, "jobscope_job_gpu_sm_utilization_percent", "gauge", "sm_util_pct", 1,   \
	  "SM utilization of the job's processes on the device, 0-100.")                           \
	X(JOB_GPU_ENERGY, "jobscope_job_gpu_energy_joules_total", "counter", NULL, 1e-3,           \
	  "The job's share of the device's energy (by SM share, else memory), joules.")            \
	X(JOB_GPU_GR_ACTIVE, "jobscope_job_gpu_graphics_active_percent", "gauge", NULL, 1,         \
	  "The job's part of the device's graphics engine active over the last tick, "             \
	  "0-100: the device's figure times the job's share (its processes' SM "                   \
	  "utilization, else memory, among all on the device; a MIG slice's own).")                \
	X(JOB_GPU_SM_ACTIVE, "jobscope_job_gpu_sm_active_percent", "gauge", NULL, 1,               \
	  "The job's part of the device's SM active over the last tick, 0-100: the "               \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	X(JOB_GPU_SM_OCCUPANCY, "jobscope_job_gpu_sm_occupancy_percent", "gauge", NULL, 1,         \
	  "The job's part of the device's SM occupancy over the last tick, 0-100: the "            \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	X(JOB_GPU_TENSOR_ACTIVE, "jobscope_job_gpu_tensor_active_percent", "gauge", NULL, 1,       \
	  "The job's part of the device's tensor active over the last tick, 0-100: the "           \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	X(JOB_GPU_DRAM_ACTIVE, "jobscope_job_gpu_dram_active_percent", "gauge", NULL, 1,           \
	  "The job's part of the device's DRAM active over the last tick, 0-100: the "             \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	X(JOB_GPU_FP64_ACTIVE, "jobscope_job_gpu_fp64_active_percent", "gauge", NULL, 1,           \
	  "The job's part of the device's FP64 active over the last tick, 0-100: the "             \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	X(JOB_GPU_FP32_ACTIVE, "jobscope_job_gpu_fp32_active_percent", "gauge", NULL, 1,           \
	  "The job's part of the device's FP32 active over the last tick, 0-100: the "             \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	X(JOB_GPU_FP16_ACTIVE, "jobscope_job_gpu_fp16_active_percent", "gauge", NULL, 1,           \
	  "The job's part of the device's FP16 active over the last tick, 0-100: the "             \
	  "device's figure times the job's share (its processes' SM utilization, else "            \
	  "memory, among all on the device; a MIG slice's own).")                                  \
	/* each job's StatsD metrics (the agent's /metrics) */                                    \
	X(APP_COUNTER, "jobscope_app_counter_total", "counter", NULL, 1,                           \
	  "A job's StatsD counter: the sum of its increments (weighted by sample rates) since "    \
	  "it was first seen.")                                                                    \
	X(APP_GAUGE, "jobscope_app_gauge", "gauge", NULL, 1, "A job's StatsD gauge: its last value.") \
	X(APP_SET_DISTINCT, "jobscope_app_set_distinct", "gauge", NULL, 1,                         \
	  "A job's StatsD set: members distinct within the last tick it got lines.")               \
	X(APP_SUMMARY, "jobscope_app_summary", "summary", NULL, 1,                                 \
	  "A job's StatsD timer (ms), histogram or distribution: quantiles within 1% of a "        \
	  "value received, count and sum since it was first seen.")                                \
	/* the agent itself */                                                                    \
	X(AGENT_CPU_SECONDS, "jobscope_agent_cpu_seconds_total", "counter", NULL, 1e-3,            \
	  "CPU time the agent itself used, seconds.")                                              \
	X(AGENT_RSS, "jobscope_agent_resident_memory_bytes", "gauge", NULL, 1,                     \
	  "The agent's RSS, bytes.")                                                               \
	X(AGENT_TICKS, "jobscope_agent_ticks_total", "counter", NULL, 1, "Ticks sampled.")         \
	X(AGENT_LOST_TICKS, "jobscope_agent_lost_ticks_total", "counter", NULL, 1,                 \
	  "Ticks that could not be stored.")                                                       \
	X(AGENT_TICK_DURATION, "jobscope_agent_tick_duration_seconds", "gauge", NULL, 1,           \
	  "How long the last tick took, seconds.")                                                 \
	X(AGENT_STORE_BYTES, "jobscope_agent_store_bytes", "gauge", NULL, 1,                       \
	  "Bytes the store's pages hold.")                                                         \
	X(AGENT_PACKED_ROWS, "jobscope_agent_packed_rows_total", "counter", NULL, 1,               \
	  "Raw rows packed into compressed column blobs since the agent started.")                 \
	X(AGENT_PACKED_BYTES, "jobscope_agent_packed_bytes_total", "counter", NULL, 1,             \
	  "Bytes of the packs written since the agent started (after zstd).")                      \
	X(AGENT_LOST_ROWS, "jobscope_agent_lost_rows_total", "counter", NULL, 1,                   \
	  "Rows the size cap deleted before the head held them.")                                  \
	X(AGENT_GAPS, "jobscope_agent_gaps_total", "counter", NULL, 1,                             \
	  "Gap records written for those rows (one per retention step).")                          \
	X(AGENT_HEAD_UP, "jobscope_agent_head_up", "gauge", NULL, 1,                               \
	  "1 when the head answered the agent's last request.")                                    \
	X(AGENT_HEAD_REFUSED, "jobscope_agent_head_refused", "gauge", NULL, 1,                     \
	  "1 when the head refused the agent's token (401, 403) when it last answered.")           \
	X(AGENT_HEAD_FAILURES, "jobscope_agent_head_failures_total", "counter", NULL, 1,           \
	  "Requests to the head that failed (network, 4xx, 5xx).")                                 \
	X(AGENT_HEAD_MOVES, "jobscope_agent_head_moves_total", "counter", NULL, 1,                 \
	  "Times another head than the last one answered the agent (several --head).")             \
	X(AGENT_RW_PENDING, "jobscope_agent_remote_write_pending_rows", "gauge", NULL, 1,          \
	  "Rows (seqs) of the store a remote-write target has not acknowledged.")                  \
	X(AGENT_RW_FAILURES, "jobscope_agent_remote_write_failures_total", "counter", NULL, 1,     \
	  "Remote-write requests that failed (network, 5xx, 429, 4xx).")                           \
	X(AGENT_RW_UP, "jobscope_agent_remote_write_up", "gauge", NULL, 1,                         \
	  "1 when the target's last request was answered 2xx.")                                    \
	X(AGENT_RW_REFUSED, "jobscope_agent_remote_write_refused", "gauge", NULL, 1,               \
	  "1 when the target refused the credentials (401, 403) when it last answered.")           \
	X(AGENT_LIVE_JOBS, "jobscope_agent_live_jobs", "gauge", NULL, 1, "Jobs with a live process.") \
	X(AGENT_TASK_ITERATOR, "jobscope_agent_task_iterator", "gauge", NULL, 1,                   \
	  "1 when the agent reads every process in one read of the kernel's task iterator "       \
	  "(BPF), 0 when it reads each process's /proc/PID/schedstat.")                           \
	X(AGENT_JOBS_VIEWS, "jobscope_agent_jobs_views_total", "counter", NULL, 1,                 \
	  "Times the jobs' live objects (with their processes) were rendered: at a tick, because " \
	  "a request asked for them since the tick before, or between ticks, for a request.")     \
	X(AGENT_APP_LINES, "jobscope_agent_app_lines_total", "counter", NULL, 1,                   \
	  "StatsD lines received, and those dropped: not valid, over a cap, or (UDP) without a "   \
	  "job tag.")                                                                              \
	X(AGENT_APP_POINTS_DROPPED, "jobscope_agent_app_points_dropped_total", "counter", NULL, 1, \
	  "App metric points and markers not stored: their sender is in no job, or the store "     \
	  "failed.")                                                                               \
	/* the head itself */                                                                     \
	X(HEAD_AGENT_HEALTHY, "jobscope_head_agent_healthy", "gauge", NULL, 1,                     \
	  "1 when the node's agent sent within 3 of its intervals.")                               \
	X(HEAD_BATCHES, "jobscope_head_batches_total", "counter", NULL, 1,                         \
	  "Batches taken from agents since the head started.")                                     \
	X(HEAD_REFUSED_BATCHES, "jobscope_head_refused_batches_total", "counter", NULL, 1,         \
	  "Batches refused (400) since the head started.")                                         \
	X(HEAD_COMMIT_GROUPS, "jobscope_head_commit_groups_total", "counter", NULL, 1,             \
	  "Transactions the batches were committed in (group commit): batches / groups is the "    \
	  "mean group size.")

enum prom_fam {
#define PROM_FAM_ENUM(id, name, type, column, scale, help) PF_##id,
	PROM_FAMILIES(PROM_FAM_ENUM)
#undef PROM_FAM_ENUM
	PF__COUNT
};

struct prom_family_def {
	const char *name, *type;
	const char *column; /* the store column it is read from; NULL: none alone */
	double scale;	    /* from the column's unit to the family's */
	const char *help;
};

extern const struct prom_family_def prom_families[PF__COUNT];

/* "# HELP" and "# TYPE" lines of family f. */
void prom_family_head(struct strbuf *o, enum prom_fam f);

static inline const char *prom_fam_name(enum prom_fam f)
{
	return prom_families[f].name;
}

#endif
