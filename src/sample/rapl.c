/*
 * rapl.c - RAPL zones under /sys/class/powercap: finding them (top zones
 * and their subzones, named after their parents), reading their counters,
 * and the energy between two readings across a wrap.  See rapl.h.
 */
#include "rapl.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/scan.h"
#include "common/sysroot.h"

#define RAPL_DIR      "/sys/class/powercap"
#define RAPL_FILE_MAX 4096

void rapl_init(struct rapl *r)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->buf, RAPL_FILE_MAX);
}

void rapl_release(struct rapl *r)
{
	strbuf_release(&r->buf);
	memset(r, 0, sizeof(*r));
}

int rapl_parse_u64(const char *text, size_t len, uint64_t *out)
{
	struct scan s = {text, text + len};
	uint64_t v;

	scan_blanks(&s);
	if (scan_digits(&s, &v))
		return -EINVAL;
	while (s.pos < s.end && (scan_is_blank(*s.pos) || *s.pos == '\n'))
		s.pos++;
	if (!scan_at_end(&s))
		return -EINVAL;
	*out = v;
	return 0;
}

bool rapl_delta_uj(uint64_t before, uint64_t after, uint64_t max_uj, uint64_t *delta)
{
	if (after >= before) {
		*delta = after - before;
		return true;
	}
	if (max_uj == 0 || before > max_uj)
		return false;
	*delta = max_uj - before + after;
	return true;
}

static int read_u64(struct rapl *r, const char *dir, const char *file, uint64_t *out)
{
	char path[160];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ret = sysroot_read(path, &r->buf);
	if (ret)
		return ret;
	return rapl_parse_u64(strbuf_str(&r->buf), r->buf.len, out);
}

static int read_name(struct rapl *r, const char *dir, char *out, size_t size)
{
	char path[160];
	size_t n;
	int ret;

	snprintf(path, sizeof(path), "%s/name", dir);
	ret = sysroot_read(path, &r->buf);
	if (ret)
		return ret;
	n = r->buf.len;
	while (n && (strbuf_str(&r->buf)[n - 1] == '\n' || strbuf_str(&r->buf)[n - 1] == ' '))
		n--;
	if (!n || n >= size)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = strbuf_str(&r->buf)[i];

		if (c <= ' ' || c >= 0x7f || c == '/')
			return -EINVAL;
	}
	memcpy(out, strbuf_str(&r->buf), n);
	out[n] = '\0';
	return 0;
}

/* "intel-rapl:N" (depth 1) or "intel-rapl:N:M" (depth 2); 0 for anything else */
static int zone_depth(const char *d)
{
	int colons = 0;

	if (strncmp(d, "intel-rapl:", 11) != 0)
		return 0;
	for (const char *p = d + 10; *p; p++) {
		if (*p == ':') {
			if (!p[1] || p[1] == ':')
				return 0;
			colons++;
		} else if (*p < '0' || *p > '9') {
			return 0;
		}
	}
	return colons <= 2 ? colons : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void probe(struct rapl *r)
{
	char dirpath[256], *names[RAPL_MAX_ZONES * 4];
	size_t nnames = 0;
	int unreadable = 0;
	struct dirent *de;
	DIR *d;

	r->probed = true;
	if (sysroot_path(dirpath, sizeof(dirpath), RAPL_DIR) || !(d = opendir(dirpath))) {
		log_debug("no RAPL energy counters (%s is absent)", RAPL_DIR);
		return;
	}
	while ((de = readdir(d)) != NULL && nnames < sizeof(names) / sizeof(names[0]))
		if (zone_depth(de->d_name) && strlen(de->d_name) < 40)
			names[nnames++] = strdup(de->d_name);
	closedir(d);
	/* intel-rapl:0 before intel-rapl:0:0: parents are named first */
	qsort(names, nnames, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < nnames; i++) {
		char dir[96], name[RAPL_NAME_MAX], *parent_end;
		uint64_t v;
		int z = r->nzones;

		if (!names[i] || z >= RAPL_MAX_ZONES)
			continue;
		snprintf(dir, sizeof(dir), RAPL_DIR "/%s", names[i]);
		if (read_name(r, dir, name, sizeof(name)))
			continue;
		if (read_u64(r, dir, "energy_uj", &v)) {
			unreadable++;
			continue;
		}
		if (zone_depth(names[i]) == 2) {
			/* the parent's name: the zone up to its last ':' */
			parent_end = strrchr(dir, ':');
			*parent_end = '\0';
			for (int k = 0; k < r->nzones; k++) {
				if (strcmp(r->zone[k].dir, dir) == 0) {
					char full[RAPL_NAME_MAX];

					snprintf(full, sizeof(full), "%.31s/%.31s", r->zone[k].name,
						 name);
					memcpy(r->zone[z].name, full, sizeof(full));
					break;
				}
			}
			*parent_end = ':';
			if (!r->zone[z].name[0])
				continue; /* its parent is not readable */
		} else {
			snprintf(r->zone[z].name, sizeof(r->zone[z].name), "%s", name);
		}
		snprintf(r->zone[z].dir, sizeof(r->zone[z].dir), "%s", dir);
		if (read_u64(r, dir, "max_energy_range_uj", &r->zone[z].max_uj))
			r->zone[z].max_uj = 0;
		r->nzones++;
	}
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	if (!r->nzones)
		log_debug("no RAPL energy counters readable in %s (%d zones not readable: "
			  "energy_uj is root's on recent kernels)",
			  RAPL_DIR, unreadable);
}

int rapl_read(struct rapl *r, struct rapl_reading *out, int max)
{
	int n = 0;

	if (!r->probed)
		probe(r);
	for (int i = 0; i < r->nzones && n < max; i++) {
		if (read_u64(r, r->zone[i].dir, "energy_uj", &out[n].energy_uj))
			continue;
		snprintf(out[n].zone, sizeof(out[n].zone), "%s", r->zone[i].name);
		out[n].max_uj = r->zone[i].max_uj;
		n++;
	}
	return n;
}
