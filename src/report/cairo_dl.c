/*
 * cairo_dl.c - resolves the cairo functions of cairo_dl.h with dlopen().
 */
#include "report/cairo_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/log.h"

struct cairo_dl cairo_fn;

static bool loaded;

int cairo_dl_load(void)
{
	const char *name = getenv("JOBSCOPE_CAIRO_LIBRARY"); /* tests: another path */
	void *dl;

	if (loaded)
		return 0;
	dl = dlopen(name && name[0] ? name : "libcairo.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		log_err(0, "--plot needs libcairo2 (%s): apt-get install libcairo2", dlerror());
		return -ENOENT;
	}
#define CAIRO_DL_RESOLVE(name)                                                                     \
	cairo_fn.name = (__typeof__(cairo_fn.name))dlsym(dl, "cairo_" #name);                      \
	if (!cairo_fn.name)                                                                        \
		goto out_missing;
	CAIRO_DL_FUNCTIONS(CAIRO_DL_RESOLVE)
#undef CAIRO_DL_RESOLVE
	loaded = true;
	return 0;
out_missing:
	log_err(0, "--plot needs libcairo2 1.10 or later (%s): apt-get install libcairo2",
		dlerror());
	dlclose(dl);
	return -ENOENT;
}
