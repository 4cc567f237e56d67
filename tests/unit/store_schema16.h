/*
 * store_schema16.h - SQL that takes a store back to what schema 16 had
 * (STORE_UNDO_SCHEMA17: job_summaries' GPM columns) or schema 15 had
 * (STORE_UNDO_SCHEMA16, 17's undone first), for the tests that make an
 * older store by dropping what came later: gpu_samples' enum gpu_prof
 * columns, gpu_proc_samples' max_mem_bytes and the devices' figures and
 * MIG columns.  The columns are
 * facts.h's, so a column added there is dropped here with it.
 */
#ifndef JOBSCOPE_TEST_STORE_SCHEMA16_H
#define JOBSCOPE_TEST_STORE_SCHEMA16_H

#include "sample/gpu/gpu.h"
#include "store/facts.h"

#define STORE_DROP_PROF_COLUMN_(c, ...) " ALTER TABLE gpu_samples DROP COLUMN " #c ";"

/* Schema 17's columns of job_summaries: back to what schema 16 had. */
#define STORE_UNDO_SCHEMA17                                                                        \
	" ALTER TABLE job_summaries DROP COLUMN sm_active_avg_pct;"                                \
	" ALTER TABLE job_summaries DROP COLUMN sm_occupancy_avg_pct;"                             \
	" ALTER TABLE job_summaries DROP COLUMN tensor_active_avg_pct;"                            \
	" ALTER TABLE job_summaries DROP COLUMN dram_active_avg_pct;"                              \
	" ALTER TABLE job_summaries DROP COLUMN fp64_active_avg_pct;"                              \
	" ALTER TABLE job_summaries DROP COLUMN fp32_active_avg_pct;"                              \
	" ALTER TABLE job_summaries DROP COLUMN fp16_active_avg_pct;"                              \
	" ALTER TABLE job_summaries DROP COLUMN throttle_power_s;"                                 \
	" ALTER TABLE job_summaries DROP COLUMN throttle_thermal_s;"

/* back to schema 15, through 16 (schema 17's columns go first) */
#define STORE_UNDO_SCHEMA16                                                                        \
	STORE_UNDO_SCHEMA17                                                                        \
	GPU_PROF_COLUMNS(STORE_DROP_PROF_COLUMN_)                                                  \
	" ALTER TABLE gpu_proc_samples DROP COLUMN max_mem_bytes;"                                 \
	" ALTER TABLE devices DROP COLUMN prof_supported;"                                         \
	" ALTER TABLE devices DROP COLUMN mig_enabled;"                                            \
	" ALTER TABLE devices DROP COLUMN mig;"                                                    \
	" ALTER TABLE devices DROP COLUMN mig_parent_uuid;"                                        \
	" ALTER TABLE devices DROP COLUMN gpu_instance_id;"                                        \
	" ALTER TABLE devices DROP COLUMN compute_instance_id;"                                    \
	" ALTER TABLE devices DROP COLUMN mig_profile;"

#endif
