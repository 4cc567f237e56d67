/*
 * test_figures.c - each figure of sample/figures.h from fixture readings:
 * a host's (CPU busy and iowait, memory used, load, disk and network
 * rates, pressure), a process's (CPU %), a job's (its processes' CPU
 * growth, cores, CPU wait, I/O rates) and a GPU's (NVLink growth and
 * rates, energy, PCIe and power trapezoids), each with a counter that
 * goes back and the rule it is named for.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sample/figures.h"

/* Two host readings 2 s apart: 10 s of CPU time, 3 s busy and 1 s iowait in it. */
static void host_pair(struct host_reading *a, struct host_reading *b)
{
	*a = (struct host_reading){
	    .valid = HOST_HAS_CPU | HOST_HAS_MEM | HOST_HAS_LOAD | HOST_HAS_DISK | HOST_HAS_NET |
		     HOST_HAS_PSI_MEM | HOST_HAS_PSI_IO,
	    .mem_valid = MEMINFO_TOTAL | MEMINFO_AVAILABLE,
	    .cpu = {.user_ms = 1000, .idle_ms = 5000, .iowait_ms = 100},
	    .mem_total_bytes = 8000,
	    .mem_available_bytes = 6000,
	    .load1_milli = 500,
	    .disk_read_bytes = 1000,
	    .disk_write_bytes = 2000,
	    .net_rx_bytes = 100,
	    .net_tx_bytes = 200,
	    .psi_mem_some_valid = true,
	    .psi_io_some_valid = true,
	    .psi_mem_some_us = 0,
	    .psi_io_some_us = 0,
	};
	*b = *a;
	b->cpu.user_ms += 2000;
	b->cpu.system_ms += 1000;
	b->cpu.idle_ms += 6000;
	b->cpu.iowait_ms += 1000;
	b->mem_available_bytes = 5000;
	b->load1_milli = 1250;
	b->disk_read_bytes += 4000;
	b->disk_write_bytes += 8000;
	b->net_rx_bytes += 600;
	b->net_tx_bytes += 1000;
	b->psi_mem_some_us = 500000; /* 0.5 s of 2 s */
	b->psi_io_some_us = 4000000; /* more than the span: capped at 100 */
}

static void test_host(void **state)
{
	struct host_reading a, b;
	struct host_figures f;

	(void)state;
	host_pair(&a, &b);
	host_figures(&b, &a, 2000, &f);
	assert_float_equal(f.cpu_busy_pct, 30.0, 1e-12);
	assert_float_equal(f.cpu_iowait_pct, 10.0, 1e-12);
	assert_true(f.mem_used_bytes == 3000.0);
	assert_true(f.mem_used_pct == 37.5);
	assert_true(f.load1 == 1.25);
	assert_true(f.disk_read_bps == 2000.0);
	assert_true(f.disk_write_bps == 4000.0);
	assert_true(f.net_rx_bps == 300.0);
	assert_true(f.net_tx_bps == 500.0);
	assert_true(f.net_bps == 800.0);
	assert_float_equal(f.psi_mem_pct, 25.0, 1e-12);
	assert_true(f.psi_io_pct == 100.0);

	/* no reading before: the gauges only */
	host_figures(&b, NULL, 2000, &f);
	assert_true(f.mem_used_bytes == 3000.0 && f.mem_used_pct == 37.5 && f.load1 == 1.25);
	assert_true(isnan(f.cpu_busy_pct) && isnan(f.cpu_iowait_pct) && isnan(f.disk_read_bps) &&
		    isnan(f.net_bps) && isnan(f.psi_mem_pct));
	/* no time between them: no rate */
	host_figures(&b, &a, 0, &f);
	assert_true(isnan(f.disk_read_bps) && isnan(f.net_rx_bps) && isnan(f.psi_io_pct));
	/* a part missing from either reading: its figures unknown, not 0 */
	a.valid &= ~HOST_HAS_DISK;
	b.mem_valid &= ~MEMINFO_AVAILABLE;
	b.valid &= ~HOST_HAS_LOAD;
	host_figures(&b, &a, 2000, &f);
	assert_true(isnan(f.disk_read_bps) && isnan(f.disk_write_bps));
	assert_true(isnan(f.mem_used_bytes) && isnan(f.mem_used_pct) && isnan(f.load1));
	assert_true(f.net_rx_bps == 300.0);
}

/* Disk and network bytes are sums over devices: going back is unknown (COUNTER_RULE_HOST_IO). */
static void test_host_back(void **state)
{
	struct host_reading a, b;
	struct host_figures f;

	(void)state;
	host_pair(&a, &b);
	b.disk_read_bytes = 10;	      /* a disk went away */
	b.net_tx_bytes = 0;	      /* an interface went away */
	b.cpu.idle_ms = 0;	      /* another boot */
	b.psi_mem_some_us = 0;	      /* no growth: 0 %, known */
	a.psi_io_some_us = 5000000;   /* a re-created cgroup: unknown */
	b.mem_available_bytes = 9000; /* more than the total: no figure */
	host_figures(&b, &a, 2000, &f);
	assert_true(isnan(f.disk_read_bps));
	assert_true(f.disk_write_bps == 4000.0);
	assert_true(f.net_rx_bps == 300.0);
	assert_true(isnan(f.net_tx_bps));
	assert_true(f.net_bps == 200.0); /* the sum's own growth: 300 to 700 */
	assert_true(isnan(f.cpu_busy_pct) && isnan(f.cpu_iowait_pct));
	assert_true(f.psi_mem_pct == 0.0);
	assert_true(isnan(f.psi_io_pct));
	assert_true(isnan(f.mem_used_bytes) && isnan(f.mem_used_pct));
	/* no total: no share */
	b.mem_total_bytes = b.mem_available_bytes = 0;
	host_figures(&b, &a, 2000, &f);
	assert_true(f.mem_used_bytes == 0.0 && isnan(f.mem_used_pct));
}

/* A process's CPU % of one core; a time that went back is unknown (COUNTER_RULE_PROC_CPU). */
static void test_proc(void **state)
{
	struct proc_sample s = {.user_ms = 700, .system_ms = 300, .child_user_ms = 5000};

	(void)state;
	assert_true(proc_cpu_ms(&s) == 1000); /* its reaped children's not */
	assert_true(proc_cpu_pct(1000, 1500, 1000) == 50.0);
	assert_true(proc_cpu_pct(1000, 3000, 1000) == 200.0); /* two cores */
	assert_true(proc_cpu_pct(1000, 1000, 1000) == 0.0);
	assert_true(isnan(proc_cpu_pct(1000, 900, 1000))); /* a pid reused */
	assert_true(isnan(proc_cpu_pct(1000, 1500, 0)) && isnan(proc_cpu_pct(1000, 1500, -5)));
}

static void test_host_reading_of(void **state)
{
	static struct host_sample h;
	struct host_reading r;

	(void)state;
	h.valid = HOST_HAS_CPU | HOST_HAS_NET;
	h.cpu.total.user_ms = 7;
	h.mem.valid = MEMINFO_TOTAL;
	h.mem.total_bytes = 9;
	h.load.load1_milli = 3;
	h.net_rx_bytes = 11;
	h.disk_write_bytes = 13;
	h.psi_io.some_valid = true;
	h.psi_io.some_total_us = 17;
	host_reading_of(&h, &r);
	assert_true(r.valid == h.valid && r.mem_valid == MEMINFO_TOTAL);
	assert_true(r.cpu.user_ms == 7 && r.mem_total_bytes == 9 && r.load1_milli == 3);
	assert_true(r.net_rx_bytes == 11 && r.disk_write_bytes == 13);
	assert_true(r.psi_io_some_valid && r.psi_io_some_us == 17 && !r.psi_mem_some_valid);
}

/* A job over 2 s: 3 s of its processes' CPU, 4 s of its cgroup's. */
static void test_job(void **state)
{
	struct job_sample a = {.valid = JS_IO | JS_CG_CPU | JS_CPU_WAIT,
			       .user_ms = 1000,
			       .system_ms = 500,
			       .read_bytes = 100,
			       .write_bytes = 200,
			       .cg_cpu_ms = 2000,
			       .cpu_wait_ms = 50};
	struct job_sample b = a;
	struct job_figures f;

	(void)state;
	b.user_ms += 2000;
	b.system_ms += 1000;
	b.cg_cpu_ms += 4000; /* 6000: more than the processes' 4500 */
	b.read_bytes += 1000;
	b.write_bytes += 3000;
	b.cpu_wait_ms += 1000;
	assert_true(job_cpu_ms(&a) == 2000 && job_cpu_ms(&b) == 6000);
	job_figures(&b, &a, 2000, &f);
	assert_true(f.proc_cpu_ms == 3000.0);
	assert_true(f.cores == 2.0);
	assert_true(f.proc_cores == 1.5);
	assert_true(f.wait_cores == 0.5);
	assert_true(f.read_bps == 500.0 && f.write_bps == 1500.0);

	/* nothing before, or no time: nothing known */
	job_figures(&b, NULL, 2000, &f);
	assert_true(isnan(f.proc_cpu_ms) && isnan(f.cores) && isnan(f.proc_cores) &&
		    isnan(f.read_bps));
	/* no time: the growth, no rate */
	job_figures(&b, &a, 0, &f);
	assert_true(f.proc_cpu_ms == 3000.0);
	assert_true(isnan(f.cores) && isnan(f.wait_cores));

	/* no I/O or wait readable in one of them: unknown, not 0 */
	a.valid &= ~(JS_IO | JS_CPU_WAIT);
	job_figures(&b, &a, 2000, &f);
	assert_true(isnan(f.read_bps) && isnan(f.write_bps) && isnan(f.wait_cores));
	assert_true(f.cores == 2.0);

	/* sums over processes that go back (COUNTER_RULE_JOB): unknown */
	a.valid |= JS_IO;
	b.read_bytes = 50;
	b.cg_cpu_ms = 0; /* a re-created cgroup: job_cpu_ms is the processes' 200 */
	b.user_ms = 100;
	b.system_ms = 100; /* below the 1500 before: a process left */
	job_figures(&b, &a, 2000, &f);
	assert_true(isnan(f.read_bps));
	assert_true(f.write_bps == 1500.0);
	assert_true(isnan(f.proc_cores) && isnan(f.proc_cpu_ms));
	assert_true(isnan(f.cores)); /* 200 below the 2000 before */
}

static void test_gpu(void **state)
{
	struct gpu_sample a = {.valid = GPU_NVLINK | GPU_ENERGY | GPU_POWER,
			       .nvlink_rx_bytes = 1000,
			       .nvlink_tx_bytes = 2000,
			       .energy_mj = 5000,
			       .power_mw = 100000};
	struct gpu_sample b = a;
	struct gpu_figures f;

	(void)state;
	b.nvlink_rx_bytes += 4000;
	b.nvlink_tx_bytes += 2000;
	b.energy_mj += 300;
	b.power_mw = 250000;
	gpu_figures(&b, &a, 500, &f);
	assert_true(f.nvlink_rx_bytes == 4000.0 && f.nvlink_tx_bytes == 2000.0);
	assert_true(f.nvlink_rx_bps == 8000.0 && f.nvlink_tx_bps == 4000.0);
	assert_true(f.nvlink_bps == 12000.0);
	assert_true(f.energy_mj == 300.0 && f.interval_energy_mj == 300.0);

	/* no time: growths known, rates not */
	gpu_figures(&b, &a, 0, &f);
	assert_true(f.nvlink_rx_bytes == 4000.0 && isnan(f.nvlink_rx_bps));

	/* a driver reload: NVLink and energy counters reset (COUNTER_RULE_GPU_*) */
	b.nvlink_rx_bytes = 700;
	b.energy_mj = 40;
	gpu_figures(&b, &a, 500, &f);
	assert_true(f.nvlink_rx_bytes == 700.0 && f.nvlink_rx_bps == 1400.0);
	assert_true(f.energy_mj == 40.0);
	/* ...while the share of the interval takes power x time: 250 W over 0.5 s */
	assert_true(f.interval_energy_mj == 125000.0);

	/* no counter in the reading before: unknown, and power x time for the share */
	a.valid = GPU_POWER;
	gpu_figures(&b, &a, 500, &f);
	assert_true(isnan(f.nvlink_rx_bytes) && isnan(f.nvlink_bps) && isnan(f.energy_mj));
	assert_true(f.interval_energy_mj == 125000.0);
	/* nothing before: nothing */
	gpu_figures(&b, NULL, 500, &f);
	assert_true(isnan(f.interval_energy_mj) && isnan(f.energy_mj));
	/* neither counter nor power: unknown, not 0 */
	b.valid = GPU_NVLINK;
	gpu_figures(&b, &a, 500, &f);
	assert_true(isnan(f.interval_energy_mj));
}

/* Trapezoids between two gauges: PCIe rates and power over the interval. */
static void test_gpu_trapezoid(void **state)
{
	struct gpu_sample a = {.valid = GPU_PCIE | GPU_POWER,
			       .pcie_rx_bps = 1000,
			       .pcie_tx_bps = 3000,
			       .power_mw = 100000};
	struct gpu_sample b = a;
	struct gpu_figures f;

	(void)state;
	b.pcie_rx_bps = 2000;
	b.pcie_tx_bps = 1000;
	b.power_mw = 200000;
	gpu_figures(&b, &a, 500, &f);
	assert_true(f.pcie_rx_bytes == 750.0 && f.pcie_tx_bytes == 1000.0);
	assert_true(f.power_energy_mj == 75000.0); /* 150 W over 0.5 s */
	/* the energy counter rules where there is one: not this figure's business */
	assert_true(isnan(f.energy_mj) && f.interval_energy_mj == 100000.0);

	/* no time, nothing before, or one reading without: unknown, not 0 */
	gpu_figures(&b, &a, 0, &f);
	assert_true(isnan(f.pcie_rx_bytes) && isnan(f.power_energy_mj));
	gpu_figures(&b, NULL, 500, &f);
	assert_true(isnan(f.pcie_tx_bytes) && isnan(f.power_energy_mj));
	a.valid = GPU_POWER;
	gpu_figures(&b, &a, 500, &f);
	assert_true(isnan(f.pcie_rx_bytes) && isnan(f.pcie_tx_bytes));
	assert_true(f.power_energy_mj == 75000.0);
	b.valid = GPU_PCIE;
	gpu_figures(&b, &a, 500, &f);
	assert_true(isnan(f.power_energy_mj));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host),
	    cmocka_unit_test(test_host_back),
	    cmocka_unit_test(test_host_reading_of),
	    cmocka_unit_test(test_proc),
	    cmocka_unit_test(test_job),
	    cmocka_unit_test(test_gpu),
	    cmocka_unit_test(test_gpu_trapezoid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
