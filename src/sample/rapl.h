/*
 * rapl.h - the host's energy counters: Intel RAPL (and AMD's, under the same
 * name) in /sys/class/powercap/intel-rapl:N and its subzones intel-rapl:N:M.
 *
 * Each zone gives a cumulative counter in microjoules (energy_uj) that wraps
 * at max_energy_range_uj.  Zones are named as the kernel names them, a
 * subzone after its parent: "package-0", "package-0/dram", "psys".  The
 * zones are found at the first read, through sysroot; a zone whose counter
 * cannot be read (energy_uj is root's alone on kernels since 5.10) is left
 * out, and no zone at all is no error: it is said once in the log (info).
 *
 * Ownership: struct rapl owns a buffer.  Errors: the parser returns 0 or
 * -EINVAL.  Not thread-safe.
 */
#ifndef JOBSCOPE_RAPL_H
#define JOBSCOPE_RAPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define RAPL_MAX_ZONES 16
#define RAPL_NAME_MAX  64

struct rapl_reading {
	char zone[RAPL_NAME_MAX];
	uint64_t energy_uj;
	uint64_t max_uj; /* where energy_uj wraps to 0; 0: unknown */
};

struct rapl {
	bool probed;
	int nzones;
	struct {
		char name[RAPL_NAME_MAX];
		char dir[96]; /* /sys/class/powercap/intel-rapl:N[:M] */
		uint64_t max_uj;
	} zone[RAPL_MAX_ZONES];
	struct strbuf buf;
};

void rapl_init(struct rapl *r);
void rapl_release(struct rapl *r);
/* One decimal number and a newline (a sysfs value); trailing blanks allowed. */
int rapl_parse_u64(const char *text, size_t len, uint64_t *out);
/*
 * Every readable zone's counter now into out[0 .. max): how many (0: none).
 * Finds the zones at the first call.
 */
int rapl_read(struct rapl *r, struct rapl_reading *out, int max);
/*
 * The energy between two readings of one counter that wraps at max_uj:
 * after - before, or across one wrap max_uj - before + after.  false when
 * it cannot be known (a smaller reading and max_uj 0 or not above before).
 */
bool rapl_delta_uj(uint64_t before, uint64_t after, uint64_t max_uj, uint64_t *delta);

#endif
