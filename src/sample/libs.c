/*
 * libs.c - frameworks and libraries from the files a process maps: the
 * rules that name a file (by its base name, and for Python packages by the
 * site-packages directory it lies in), the maps parser, the version.py and
 * dist-info readers, and the reader of one process.  See libs.h.
 */
#include "libs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/scan.h"
#include "common/sysroot.h"

/* maps of a big process (a JVM, a Python with every framework) run to MBs */
#define LIBS_MAPS_MAX	((size_t)16 << 20)
#define LIBS_CHUNK	65536
#define LIBS_PYFILE_MAX ((size_t)64 << 10)

/*
 * A file whose base name starts with `prefix` is `name`; with `soname`,
 * the digits and dots after ".so." are its version (libcudart.so.12.4.127).
 * First match wins.
 */
static const struct lib_rule {
	const char *prefix;
	const char *name;
	const char *pkg; /* its Python package directory, where it has one */
	bool soname;
} lib_rules[] = {
    {"libtorch", "pytorch", "torch", false},
    {"libc10", "pytorch", "torch", false},
    {"_C.cpython", "pytorch", "torch", false}, /* only under .../torch/ (below) */
    {"libtensorflow_framework.so", "tensorflow", "tensorflow", true},
    {"libtensorflow_cc.so", "tensorflow", "tensorflow", true},
    {"_pywrap_tensorflow", "tensorflow", "tensorflow", false},
    {"xla_extension", "jax", "jaxlib", false}, /* only under .../jaxlib/ */
    {"libonnxruntime.so", "onnxruntime", "onnxruntime", true},
    {"onnxruntime_pybind11_state", "onnxruntime", "onnxruntime", false},
    {"libcudart.so", "cuda-runtime", NULL, true},
    {"libcudnn", "cudnn", NULL, true},
    {"libnccl.so", "nccl", NULL, true},
    {"libcublas", "cublas", NULL, true},
    {"libmpich", "mpich", NULL, false},
    {"libmpi.so", "mpi", NULL, false}, /* openmpi or mpich: see mpi_name() */
};

static bool span_has(const char *s, size_t len, const char *needle)
{
	/* s is never NULL; the test keeps GCC's -O2 sanitizer builds from thinking so */
	return s && memmem(s, len, needle, strlen(needle)) != NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [0-9.]+ at s up to end, no trailing dot: its length, else 0 */
static size_t version_span(const char *s, const char *end)
{
	size_t n = 0;

	while (s + n < end && (is_digit(s[n]) || s[n] == '.'))
		n++;
	while (n && s[n - 1] == '.')
		n--;
	return n && is_digit(s[0]) ? n : 0;
}

static void copy_span(char *out, size_t size, const char *s, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* "python3.11" or "libpython3.11.so.1.0": the interpreter and its version */
static bool classify_python(const char *base, const char *end, struct lib_found *out)
{
	const char *v;
	size_t n;

	if ((size_t)(end - base) > 9 && memcmp(base, "libpython", 9) == 0)
		v = base + 9;
	else if ((size_t)(end - base) > 6 && memcmp(base, "python", 6) == 0)
		v = base + 6;
	else
		return false;
	n = version_span(v, end);
	if (!n)
		return false;
	/* the executable is exactly pythonX.Y; the library goes on with ".so" */
	if (v + n != end && ((size_t)(end - (v + n)) < 3 || memcmp(v + n, ".so", 3) != 0))
		return false;
	snprintf(out->name, sizeof(out->name), "python");
	copy_span(out->version, sizeof(out->version), v, n);
	return true;
}

static const char *mpi_name(const char *path, size_t len, const char *version)
{
	if (span_has(path, len, "openmpi") || strcmp(version, "40") == 0 ||
	    strncmp(version, "40.", 3) == 0)
		return "openmpi";
	if (span_has(path, len, "mpich") || span_has(path, len, "intel"))
		return "mpich";
	return "mpi";
}

/* ".../site-packages/PKG/..." : the length of the directory before PKG */
static size_t site_of(const char *path, size_t len, const char *pkg)
{
	static const char *const sites[] = {"/site-packages/", "/dist-packages/"};

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		const char *s = memmem(path, len, sites[i], strlen(sites[i]));
		size_t off, plen = strlen(pkg);

		if (!s)
			continue;
		off = (size_t)(s - path) + strlen(sites[i]);
		if (len - off > plen && memcmp(path + off, pkg, plen) == 0 &&
		    path[off + plen] == '/')
			return off;
	}
	return 0;
}

bool libs_classify_path(const char *path, size_t len, struct lib_found *out)
{
	const char *end = path + len, *base;
	const struct lib_rule *rule = NULL;
	struct lib_found l;

	if (!len || path[0] != '/')
		return false;
	base = memrchr(path, '/', len);
	base = base ? base + 1 : path; /* path[0] is '/': never NULL */
	memset(&l, 0, sizeof(l));
	if (classify_python(base, end, &l))
		goto found;
	for (size_t i = 0; i < sizeof(lib_rules) / sizeof(lib_rules[0]); i++) {
		size_t n = strlen(lib_rules[i].prefix);

		if ((size_t)(end - base) >= n && memcmp(base, lib_rules[i].prefix, n) == 0) {
			rule = &lib_rules[i];
			break;
		}
	}
	if (!rule) {
		/* any shared object of the torch or jaxlib package */
		if (span_has(base, (size_t)(end - base), ".so") && site_of(path, len, "torch"))
			rule = &lib_rules[0];
		else if (span_has(base, (size_t)(end - base), ".so") &&
			 site_of(path, len, "jaxlib"))
			rule = &lib_rules[6];
		else
			return false;
	}
	if ((strcmp(rule->prefix, "_C.cpython") == 0 && !span_has(path, len, "/torch/")) ||
	    (strcmp(rule->prefix, "xla_extension") == 0 && !span_has(path, len, "/jaxlib/")))
		return false;
	if (rule->soname || strcmp(rule->name, "mpi") == 0) {
		const char *so = memmem(base, (size_t)(end - base), ".so.", 4);

		if (so && version_span(so + 4, end) == (size_t)(end - (so + 4)))
			copy_span(l.version, sizeof(l.version), so + 4, (size_t)(end - (so + 4)));
	}
	snprintf(l.name, sizeof(l.name), "%s",
		 strcmp(rule->name, "mpi") == 0 ? mpi_name(path, len, l.version) : rule->name);
	if (strcmp(rule->name, "mpi") == 0)
		l.version[0] = '\0'; /* an MPI soname is its ABI's number, not a release */
	if (rule->pkg) {
		l.site_len = site_of(path, len, rule->pkg);
		if (l.site_len)
			snprintf(l.pkg, sizeof(l.pkg), "%s", rule->pkg);
	}
found:
	copy_span(l.path, sizeof(l.path), path, len);
	if (l.site_len + strlen(l.pkg) + 1 >= sizeof(l.path))
		l.site_len = 0; /* cut: its directory is not all there */
	*out = l;
	return true;
}

bool lib_set_add(struct lib_set *set, const struct lib_found *l)
{
	for (size_t i = 0; i < set->n; i++) {
		struct lib_found *have = &set->lib[i];
		size_t hn = strlen(have->version);

		if (strcmp(have->name, l->name) != 0)
			continue;
		/* "12" from one file, "12.4.127" from another: the finer one */
		if ((!hn && l->version[0]) ||
		    (hn && strncmp(l->version, have->version, hn) == 0 && l->version[hn] == '.')) {
			snprintf(have->version, sizeof(have->version), "%s", l->version);
			snprintf(have->path, sizeof(have->path), "%s", l->path);
		}
		if (!have->site_len && l->site_len) {
			have->site_len = l->site_len;
			memcpy(have->pkg, l->pkg, sizeof(have->pkg));
			if (!l->version[0])
				snprintf(have->path, sizeof(have->path), "%s", l->path);
		}
		return false;
	}
	if (set->n >= LIBS_MAX)
		return false;
	set->lib[set->n++] = *l;
	return true;
}

/*
 * "addr-addr perms offset dev inode   path": the path (blanks in it kept,
 * " (deleted)" dropped), or false for an anonymous mapping.
 */
static bool maps_path(struct scan *line, const char **path, size_t *len)
{
	uint64_t inode;

	for (int field = 0; field < 4; field++) {
		scan_blanks(line);
		while (!scan_at_delim(line))
			line->pos++;
	}
	scan_blanks(line);
	if (scan_digits(line, &inode) || inode == 0)
		return false;
	scan_blanks(line);
	if (scan_at_end(line) || *line->pos != '/')
		return false;
	*path = line->pos;
	*len = (size_t)(line->end - line->pos);
	if (*len > 10 && memcmp(*path + *len - 10, " (deleted)", 10) == 0)
		*len -= 10;
	return true;
}

size_t libs_parse_maps(const char *text, size_t len, struct lib_set *set)
{
	struct scan s = {text, text + len}, line;
	const char *prev = NULL, *path;
	size_t prev_len = 0, plen, added = 0;
	struct lib_found l;

	while (scan_line(&s, &line)) {
		if (!maps_path(&line, &path, &plen))
			continue;
		/* a file is mapped in several consecutive pieces */
		if (prev && plen == prev_len && memcmp(path, prev, plen) == 0)
			continue;
		prev = path;
		prev_len = plen;
		if (libs_classify_path(path, plen, &l) && lib_set_add(set, &l))
			added++;
	}
	return added;
}

int libs_parse_version_py(const char *text, size_t len, char *out, size_t size)
{
	static const char *const keys[] = {"__version__", "_version"};
	struct scan s = {text, text + len}, line;

	while (scan_line(&s, &line)) {
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t n = strlen(keys[k]);
			const char *q, *close;

			if ((size_t)(line.end - line.pos) <= n || memcmp(line.pos, keys[k], n) != 0)
				continue;
			line.pos += n;
			scan_blanks(&line);
			/* a typed assignment, `__version__: str = '...'`, too */
			if (line.pos < line.end && *line.pos == ':') {
				q = memchr(line.pos, '=', (size_t)(line.end - line.pos));
				if (!q)
					break;
				line.pos = q;
			}
			if (line.pos >= line.end || *line.pos != '=')
				break;
			line.pos++;
			scan_blanks(&line);
			if (line.pos >= line.end || (*line.pos != '\'' && *line.pos != '"'))
				break;
			q = line.pos++;
			close = memchr(line.pos, *q, (size_t)(line.end - line.pos));
			if (!close || close == line.pos)
				break;
			copy_span(out, size, line.pos, (size_t)(close - line.pos));
			for (char *c = out; *c; c++)
				if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
					*c = '?';
			return 0;
		}
	}
	return -ENOENT;
}

bool libs_version_from_distinfo(const char *dirname, const char *pkg, char *out, size_t size)
{
	size_t n = strlen(pkg), dl = strlen(dirname), v;
	const char *p = dirname + n;
	static const char suffix[] = ".dist-info";
	static const char *const variants[] = {"_gpu", "_cpu", "_rocm"};

	if (dl <= n + sizeof(suffix) || strncmp(dirname, pkg, n) != 0 ||
	    strcmp(dirname + dl - (sizeof(suffix) - 1), suffix) != 0)
		return false;
	/*
	 * torch-2.3.0, onnxruntime_gpu-1.17.1, tensorflow_cpu-2.15.0: the
	 * package's builds, not its companions (tensorflow_estimator-2.15.0,
	 * torch_tensorrt-2.1.0 are other packages)
	 */
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		size_t vn = strlen(variants[i]);

		if (strncmp(p, variants[i], vn) == 0 && p[vn] == '-') {
			p += vn;
			break;
		}
	}
	if (*p != '-')
		return false;
	p++;
	v = (size_t)(dirname + dl - (sizeof(suffix) - 1) - p);
	if (!v || version_span(p, p + v) == 0)
		return false;
	copy_span(out, size, p, v);
	return true;
}

void libs_reader_init(struct libs_reader *r)
{
	strbuf_init(&r->buf, LIBS_PYFILE_MAX);
}

void libs_reader_release(struct libs_reader *r)
{
	strbuf_release(&r->buf);
}

/*
 * A file of another user's tree, read as root by the agent: a regular file
 * only (a FIFO put there would block the sampler), its first
 * LIBS_PYFILE_MAX bytes.
 */
static int read_regular(struct libs_reader *r, const char *path)
{
	char buf[4096];
	struct stat sb;
	ssize_t got;
	int fd = sysroot_open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return fd;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	strbuf_reset(&r->buf);
	while (r->buf.len < LIBS_PYFILE_MAX && (got = read(fd, buf, sizeof(buf))) > 0)
		if (strbuf_add(&r->buf, buf, (size_t)got))
			break;
	close(fd);
	return 0;
}

/*
 * The version of a Python package, from PKG/version.py or PKG-V.dist-info:
 * it overrides a file name's (libtensorflow_framework.so.2 says only "2").
 */
static void python_version(struct libs_reader *r, int pid, struct lib_found *l)
{
	char path[LIBS_PATH_MAX + 64], dir[LIBS_PATH_MAX + 64];
	struct dirent *de;
	DIR *d;
	int n;

	n = snprintf(path, sizeof(path), "/proc/%d/root%.*s%s/version.py", pid, (int)l->site_len,
		     l->path, l->pkg);
	if (n > 0 && (size_t)n < sizeof(path) && read_regular(r, path) == 0 &&
	    libs_parse_version_py(strbuf_str(&r->buf), r->buf.len, l->version,
				  sizeof(l->version)) == 0)
		return;
	n = snprintf(path, sizeof(path), "/proc/%d/root%.*s", pid, (int)l->site_len, l->path);
	if (n <= 0 || (size_t)n >= sizeof(path) || sysroot_path(dir, sizeof(dir), path))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL)
		if (libs_version_from_distinfo(de->d_name, l->pkg, l->version, sizeof(l->version)))
			break;
	closedir(d);
}

int libs_read(struct libs_reader *r, int pid, struct lib_set *set)
{
	char path[64], chunk[LIBS_CHUNK];
	size_t have = 0, total = 0, added = 0;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = sysroot_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fd == -ENOENT || fd == -ESRCH ? -ENOENT : -EACCES;
	/* line by line through a window: only whole lines reach the parser */
	for (;;) {
		const char *nl;

		got = read(fd, chunk + have, sizeof(chunk) - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		have += (size_t)got;
		total += (size_t)got;
		nl = memrchr(chunk, '\n', have);
		if (!nl) {
			if (have == sizeof(chunk))
				have = 0; /* one line longer than the window: dropped */
			continue;
		}
		added += libs_parse_maps(chunk, (size_t)(nl + 1 - chunk), set);
		have -= (size_t)(nl + 1 - chunk);
		memmove(chunk, nl + 1, have);
		if (total > LIBS_MAPS_MAX)
			break;
	}
	if (got < 0 && total == 0) {
		int e = errno;

		close(fd);
		return e == ESRCH || e == ENOENT ? -ENOENT : -EACCES;
	}
	close(fd);
	if (have)
		added += libs_parse_maps(chunk, have, set);
	for (size_t i = 0; i < set->n; i++) {
		struct lib_found *l = &set->lib[i];

		if (l->site_len && !l->version_looked) {
			python_version(r, pid, l);
			l->version_looked = true;
		}
	}
	return (int)added;
}
