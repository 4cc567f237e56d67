/*
 * store_schema16.h - SQL that takes a store of schema 16 back to what
 * schema 15 had (the tests that make an older store by dropping what came
 * later): gpu_samples' enum gpu_prof columns, gpu_proc_samples'
 * max_mem_bytes and the devices' figures and MIG columns.  The columns are
 * facts.h's, so a column added there is dropped here with it.
 */
#ifndef JOBSCOPE_TEST_STORE_SCHEMA16_H
#define JOBSCOPE_TEST_STORE_SCHEMA16_H

#include "sample/gpu/gpu.h"
#include "store/facts.h"

#define STORE_DROP_PROF_COLUMN_(c, ...) " ALTER TABLE gpu_samples DROP COLUMN " #c ";"

#define STORE_UNDO_SCHEMA16                                                                        \
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
