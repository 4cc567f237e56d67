/*
 * libs.h - the frameworks and libraries a process loaded, from the files it
 * maps (/proc/PID/maps): PyTorch, TensorFlow, JAX, ONNX Runtime, the CUDA
 * runtime, cuDNN, cuBLAS, NCCL, MPI and the Python interpreter, with their
 * versions where the file names (or, for Python packages, the package's
 * version.py or its dist-info directory) carry them.  docs/frameworks.md
 * lists the rules.
 *
 * Parsers (libs_classify_path, libs_parse_maps, libs_parse_version_py,
 * libs_version_from_distinfo) do no I/O and never read past len: maps text
 * is outside input (a fuzz target).  libs_read reads one process through
 * sysroot: its maps, and a Python package's version under /proc/PID/root
 * (a container's files are seen as the process sees them).  A process we
 * may not read (another user's) gives no libraries, never an error.
 *
 * Ownership: a lib_set is a plain value; a libs_reader owns one buffer.
 * Errors: 0 or -errno.  Not thread-safe.
 */
#ifndef JOBSCOPE_LIBS_H
#define JOBSCOPE_LIBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define LIBS_NAME_MAX	 64
#define LIBS_VERSION_MAX 64
#define LIBS_PATH_MAX	 256
#define LIBS_MAX	 24 /* libraries kept per process; more are dropped */

struct lib_found {
	char name[LIBS_NAME_MAX];	/* "pytorch", "cuda-runtime", "python", ... */
	char version[LIBS_VERSION_MAX]; /* "" when unknown */
	char path[LIBS_PATH_MAX];	/* the file it was seen in (cut to fit) */
	/*
	 * A Python package's: the length of path's site-packages directory
	 * (with its '/') and the package's directory name ("torch"), to look
	 * its version up; 0 and "" otherwise.
	 */
	size_t site_len;
	char pkg[16];
	bool version_looked; /* libs_read looked the package's version up */
};

struct lib_set {
	size_t n;
	struct lib_found lib[LIBS_MAX];
};

/*
 * What a mapped file is: true and out filled, or false (not one we know).
 * path need not be terminated.
 */
bool libs_classify_path(const char *path, size_t len, struct lib_found *out);
/*
 * Adds l to set unless a library of its name is there (then a version it
 * lacked is taken from l).  true: added; false: known already, or full.
 */
bool lib_set_add(struct lib_set *set, const struct lib_found *l);
/*
 * Every file-backed mapping of maps text (complete lines), classified and
 * added to set.  Returns how many libraries were added.  Lines that do not
 * parse are skipped.
 */
size_t libs_parse_maps(const char *text, size_t len, struct lib_set *set);
/*
 * `__version__ = '2.3.0+cu121'` (or `_version = "..."`, jaxlib's) in a
 * Python file's text -> out.  0, or -ENOENT when not found.
 */
int libs_parse_version_py(const char *text, size_t len, char *out, size_t size);
/* "torch-2.3.0.dist-info" for pkg "torch" -> "2.3.0"; false if not pkg's. */
bool libs_version_from_distinfo(const char *dirname, const char *pkg, char *out, size_t size);

struct libs_reader {
	struct strbuf buf;
};

void libs_reader_init(struct libs_reader *r);
void libs_reader_release(struct libs_reader *r);
/*
 * Reads /proc/PID/maps and adds what it finds to set, with Python package
 * versions looked up once per package: returns how many were added (>= 0),
 * or -ENOENT (gone), -EACCES (not ours to read).
 */
int libs_read(struct libs_reader *r, int pid, struct lib_set *set);

#endif
