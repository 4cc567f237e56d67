/*
 * fuzz_host.c - libFuzzer target for the machine-wide /proc parsers.  The
 * input is copied into a buffer of exactly its size, not NUL-terminated,
 * so ASan catches any read past len.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample/host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_ENTRIES 8

/* 66 kB: kept off the stack */
static struct host_cpu_stat cpu;

static void check_name(const char *name)
{
	size_t n = strnlen(name, HOST_NAME_MAX_LEN);

	if (n == 0 || n >= HOST_NAME_MAX_LEN)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	struct host_meminfo mi;
	struct disk_stat disks[FUZZ_MAX_ENTRIES];
	struct net_stat nets[FUZZ_MAX_ENTRIES];
	struct host_loadavg la;
	struct host_psi psi;
	int n, i;

	if (!text)
		return 0;
	memcpy(text, data, size);

	if (host_parse_stat(text, size, 100, &cpu) == 0) {
		if (cpu.ncpus < 0 || cpu.ncpus > HOST_MAX_CPUS)
			abort();
	}
	host_parse_stat(text, size, 1, &cpu);
	if (host_parse_meminfo(text, size, &mi) == 0 && mi.valid == 0)
		abort();
	if (host_parse_diskstats(text, size, disks, FUZZ_MAX_ENTRIES, &n) == 0) {
		if (n < 0 || n > FUZZ_MAX_ENTRIES)
			abort();
		for (i = 0; i < n; i++)
			check_name(disks[i].name);
	}
	host_parse_diskstats(text, size, disks, 0, &n);
	if (host_parse_netdev(text, size, nets, FUZZ_MAX_ENTRIES, &n) == 0) {
		if (n < 0 || n > FUZZ_MAX_ENTRIES)
			abort();
		for (i = 0; i < n; i++)
			check_name(nets[i].name);
	}
	host_parse_loadavg(text, size, &la);
	if (host_parse_pressure(text, size, &psi) == 0 && !psi.some_valid && !psi.full_valid)
		abort();

	free(text);
	return 0;
}
