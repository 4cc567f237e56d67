/*
 * proc.c - parsers and readers for /proc/PID/{stat,status,io,cmdline}.
 *
 * The parsers walk the text with a bounded cursor (struct scan) and never
 * look past len: the text comes from a strbuf in production but from raw,
 * unterminated bytes under the fuzzer.  The readers fetch one file through
 * sysroot into the reader's scratch buffer and hand it to a parser.
 */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/scan.h"
#include "common/sysroot.h"

/* stat, status and io are a few kB at most; cmdline is read with its own bound. */
#define PROC_READ_MAX ((size_t)1 << 20)

/*
 * Fields 25 on of stat: the layout's addresses folded into one digest
 * (proc_stat.layout), 0 when any is missing or not a number (older
 * kernels stop before 51) or when they are hidden: a process we may not
 * trace shows 1 for the code's start and end and 0 for all the rest.
 */
static uint64_t scan_layout(struct scan *s)
{
	uint64_t h = FNV1A_SEED, v, shown = 0;

	for (int field = 25; field <= 51; field++) {
		bool kept = (field >= 26 && field <= 28) || field >= 45;

		if (!kept) {
			if (scan_skip_field(s))
				return 0;
			continue;
		}
		if (scan_u64(s, &v))
			return 0;
		h = fnv1a(h, &v, sizeof(v));
		if (field >= 28)
			shown |= v;
	}
	return shown ? (h ? h : 1) : 0;
}

/*
 * The comm field is whatever the process named itself, so it may hold
 * spaces, parentheses and even newlines: it runs from the first '(' to the
 * last ')', and the fixed-format fields follow that.
 */
int proc_parse_stat(const char *text, size_t len, struct proc_stat *out)
{
	struct proc_stat st;
	struct scan s = {text, text + len};
	const char *open, *close;
	uint64_t skip;
	size_t n;
	int field, ret;

	memset(&st, 0, sizeof(st));
	if (len == 0)
		return -EINVAL;
	open = memchr(text, '(', len);
	close = memrchr(text, ')', len);
	if (!open || !close || close < open)
		return -EINVAL;

	s.end = open;
	ret = scan_i32(&s, &st.pid);
	if (ret)
		return ret;
	scan_blanks(&s);
	if (s.pos != open || st.pid <= 0)
		return -EINVAL;

	n = (size_t)(close - open - 1);
	if (n >= sizeof(st.comm))
		n = sizeof(st.comm) - 1;
	memcpy(st.comm, open + 1, n);
	st.comm[n] = '\0';

	s.pos = close + 1;
	s.end = text + len;
	if (s.pos == s.end || *s.pos != ' ')
		return -EINVAL;
	scan_blanks(&s);
	if (s.pos == s.end || scan_at_delim(&s))
		return -EINVAL;
	st.state = *s.pos++;
	if (!scan_at_delim(&s))
		return -EINVAL;

	/* Fields numbered as in proc(5); comm is 2 and state is 3. */
	for (field = 4; field <= 24; field++) {
		switch (field) {
		case 4:
			ret = scan_i32(&s, &st.ppid);
			break;
		case 5:
			ret = scan_i32(&s, &st.pgrp);
			break;
		case 6:
			ret = scan_i32(&s, &st.session);
			break;
		case 9:
			ret = scan_u32(&s, &st.flags);
			break;
		case 14:
			ret = scan_u64(&s, &st.utime_ticks);
			break;
		case 15:
			ret = scan_u64(&s, &st.stime_ticks);
			break;
		case 16:
			ret = scan_u64(&s, &st.cutime_ticks);
			break;
		case 17:
			ret = scan_u64(&s, &st.cstime_ticks);
			break;
		case 20:
			ret = scan_u64(&s, &skip);
			if (!ret && skip > INT64_MAX)
				ret = -EINVAL;
			st.num_threads = (int64_t)skip;
			break;
		case 22:
			ret = scan_u64(&s, &st.start_ticks);
			break;
		case 23:
			ret = scan_u64(&s, &st.vsize_bytes);
			break;
		case 24:
			ret = scan_u64(&s, &st.rss_pages);
			break;
		default:
			/* tty, flags, fault counts, priority and nice may be negative */
			ret = scan_skip_field(&s);
			break;
		}
		if (ret)
			return ret;
	}
	st.layout = scan_layout(&s);
	*out = st;
	return 0;
}

int proc_parse_status(const char *text, size_t len, struct proc_status *out)
{
	struct proc_status st;
	struct scan s = {text, text + len};
	struct scan line;

	memset(&st, 0, sizeof(st));
	/*
	 * A value that does not parse (a file cut mid-line) leaves its field
	 * missing rather than failing the rest; the kernel repeats no keys.
	 */
	while (scan_line(&s, &line)) {
		if (scan_key(&line, "VmRSS")) {
			if (!scan_kb(&line, &st.rss_bytes))
				st.valid |= PROC_STATUS_RSS;
		} else if (scan_key(&line, "VmHWM")) {
			if (!scan_kb(&line, &st.hwm_bytes))
				st.valid |= PROC_STATUS_HWM;
		} else if (scan_key(&line, "VmSwap")) {
			if (!scan_kb(&line, &st.swap_bytes))
				st.valid |= PROC_STATUS_SWAP;
		} else if (scan_key(&line, "Uid")) {
			if (!scan_u32(&line, &st.uid))
				st.valid |= PROC_STATUS_UID;
		} else if (scan_key(&line, "Threads")) {
			if (!scan_u32(&line, &st.threads))
				st.valid |= PROC_STATUS_THREADS;
		} else if (scan_key(&line, "NSpid")) {
			int32_t v;

			/* one pid per namespace level, outermost first */
			while (scan_i32(&line, &v) == 0 && v > 0) {
				st.nspid = v;
				st.valid |= PROC_STATUS_NSPID;
				scan_blanks(&line);
			}
		}
	}
	/* Every process, kernel threads and zombies too, has Uid and Threads. */
	if (!st.valid)
		return -EINVAL;
	*out = st;
	return 0;
}

int proc_parse_io(const char *text, size_t len, struct proc_io *out)
{
	static const struct {
		const char *key;
		size_t offset;
	} io_keys[] = {
	    {"rchar", offsetof(struct proc_io, rchar)},
	    {"wchar", offsetof(struct proc_io, wchar)},
	    {"syscr", offsetof(struct proc_io, syscr)},
	    {"syscw", offsetof(struct proc_io, syscw)},
	    {"read_bytes", offsetof(struct proc_io, read_bytes)},
	    {"write_bytes", offsetof(struct proc_io, write_bytes)},
	    {"cancelled_write_bytes", offsetof(struct proc_io, cancelled_write_bytes)},
	};
	struct proc_io io;
	struct scan s = {text, text + len};
	struct scan line;
	bool have_read = false, have_write = false;
	size_t i;

	memset(&io, 0, sizeof(io));
	while (scan_line(&s, &line)) {
		for (i = 0; i < sizeof(io_keys) / sizeof(io_keys[0]); i++) {
			uint64_t v;

			if (!scan_key(&line, io_keys[i].key))
				continue;
			if (scan_u64(&line, &v))
				return -EINVAL;
			memcpy((char *)&io + io_keys[i].offset, &v, sizeof(v));
			if (io_keys[i].offset == offsetof(struct proc_io, read_bytes))
				have_read = true;
			if (io_keys[i].offset == offsetof(struct proc_io, write_bytes))
				have_write = true;
			break;
		}
	}
	if (!have_read || !have_write)
		return -EINVAL;
	*out = io;
	return 0;
}

/*
 * more: raw is only the start of a cmdline that goes on with more text, so
 * it is cut whatever its length and its trailing NULs separate arguments.
 */
/* A decimal u64 from text[*i]: its digits, then a blank, a newline or the end; false if not. */
static bool schedstat_field(const char *text, size_t len, size_t *i, uint64_t *out)
{
	size_t start = *i;
	uint64_t v = 0;

	while (*i < len && text[*i] >= '0' && text[*i] <= '9') {
		unsigned d = (unsigned)(text[*i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		(*i)++;
	}
	if (*i == start || (*i < len && text[*i] != ' ' && text[*i] != '\n'))
		return false;
	*out = v;
	return true;
}

int proc_parse_schedstat(const char *text, size_t len, uint64_t *run_ns)
{
	size_t i = 0;

	return schedstat_field(text, len, &i, run_ns) ? 0 : -EINVAL;
}

int proc_parse_schedstat_wait(const char *text, size_t len, uint64_t *run_ns, uint64_t *wait_ns,
			      bool *has_wait)
{
	size_t i = 0;

	*has_wait = false;
	if (!schedstat_field(text, len, &i, run_ns))
		return -EINVAL;
	if (i >= len || text[i] != ' ')
		return 0;
	i++;
	/* run_ns stands; a wait that does not parse or fit is unknown */
	*has_wait = schedstat_field(text, len, &i, wait_ns);
	return 0;
}

static size_t format_cmdline(const char *raw, size_t len, bool more, char *out, size_t size)
{
	size_t cap, n, i;
	bool cut;

	if (size == 0)
		return 0;
	if (!more) {
		while (len > 0 && raw[len - 1] == '\0')
			len--;
	}
	cap = size - 1;
	cut = more || len > cap;
	n = len < cap ? len : cap;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)raw[i];

		if (c == '\0')
			out[i] = ' ';
		else if (c < 0x20 || c == 0x7f)
			out[i] = '?';
		else
			out[i] = (char)c;
	}
	if (cut) {
		size_t dots = cap < 3 ? cap : 3;
		size_t keep = n > dots ? n - dots : 0;

		/* Do not leave half a UTF-8 sequence before the dots. */
		while (keep > 0 && ((unsigned char)out[keep] & 0xc0) == 0x80)
			keep--;
		memset(out + keep, '.', dots);
		n = keep + dots;
	}
	out[n] = '\0';
	return n;
}

size_t proc_format_cmdline(const char *raw, size_t len, char *out, size_t size)
{
	return format_cmdline(raw, len, false, out, size);
}

void proc_reader_init(struct proc_reader *r, long hz)
{
	strbuf_init(&r->buf, PROC_READ_MAX);
	r->hz = hz > 0 ? hz : 100;
}

void proc_reader_release(struct proc_reader *r)
{
	strbuf_release(&r->buf);
}

static int read_pid_file(struct proc_reader *r, int pid, const char *name)
{
	char path[64];

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return sysroot_read(path, &r->buf);
}

int proc_read_stat(struct proc_reader *r, int pid, struct proc_stat *out)
{
	int ret = read_pid_file(r, pid, "stat");

	if (ret)
		return ret;
	return proc_parse_stat(strbuf_str(&r->buf), r->buf.len, out);
}

int proc_read_stat_fd(struct proc_reader *r, int fd, struct proc_stat *out)
{
	int ret = sysroot_read_fd(fd, &r->buf);

	if (ret)
		return ret;
	if (r->buf.len == 0)
		return -ENOENT;
	return proc_parse_stat(strbuf_str(&r->buf), r->buf.len, out);
}

int proc_read_schedstat_fd(struct proc_reader *r, int fd, uint64_t *run_ns)
{
	int ret = sysroot_read_fd(fd, &r->buf);

	if (ret)
		return ret;
	if (r->buf.len == 0)
		return -ENOENT;
	return proc_parse_schedstat(strbuf_str(&r->buf), r->buf.len, run_ns);
}

int proc_read_schedstat_wait_fd(struct proc_reader *r, int fd, uint64_t *run_ns, uint64_t *wait_ns,
				bool *has_wait)
{
	int ret = sysroot_read_fd(fd, &r->buf);

	*has_wait = false;
	if (ret)
		return ret;
	if (r->buf.len == 0)
		return -ENOENT;
	return proc_parse_schedstat_wait(strbuf_str(&r->buf), r->buf.len, run_ns, wait_ns,
					 has_wait);
}

int proc_read_status(struct proc_reader *r, int pid, struct proc_status *out)
{
	int ret = read_pid_file(r, pid, "status");

	if (ret)
		return ret;
	return proc_parse_status(strbuf_str(&r->buf), r->buf.len, out);
}

/*
 * A kernel built without task I/O accounting has no io file at all.  That
 * process is alive and only its I/O is unknown, so it reads as -EACCES, the
 * same as another user's io; -ENOENT is kept for a process that is gone.
 */
int proc_read_io(struct proc_reader *r, int pid, struct proc_io *out)
{
	char dir[32];
	int ret = read_pid_file(r, pid, "io");

	if (ret == -ENOENT) {
		snprintf(dir, sizeof(dir), "/proc/%d", pid);
		return sysroot_exists(dir) ? -EACCES : -ENOENT;
	}
	if (ret)
		return ret;
	return proc_parse_io(strbuf_str(&r->buf), r->buf.len, out);
}

/*
 * After the first size + 1 bytes of a cmdline: is there any text left, or
 * only the NUL padding that setproctitle() leaves behind?
 */
static int cmdline_has_more(int fd, bool *more)
{
	char chunk[256];
	ssize_t n, i;

	*more = false;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ESRCH ? -ENOENT : -errno;
		if (n == 0)
			return 0;
		for (i = 0; i < n; i++) {
			if (chunk[i] != '\0') {
				*more = true;
				return 0;
			}
		}
	}
}

/*
 * Command lines can be megabytes long (ARG_MAX), so only one byte more than
 * fits in out is kept: with it, format_cmdline() knows whether to cut.
 */
int proc_read_cmdline(struct proc_reader *r, int pid, char *out, size_t size)
{
	char path[64];
	size_t want = size + 1;
	bool more = false;
	ssize_t n;
	int fd, ret;

	if (size == 0)
		return -EINVAL;
	out[0] = '\0';
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = sysroot_open(path, O_RDONLY);
	if (fd < 0)
		return fd;
	strbuf_reset(&r->buf);
	ret = strbuf_grow(&r->buf, want);
	if (ret)
		goto out_close;
	while (r->buf.len < want) {
		n = read(fd, r->buf.buf + r->buf.len, want - r->buf.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* a process that exits while we read reads as ESRCH */
			ret = errno == ESRCH ? -ENOENT : -errno;
			goto out_close;
		}
		if (n == 0)
			break;
		r->buf.len += (size_t)n;
	}
	r->buf.buf[r->buf.len] = '\0';
	if (r->buf.len == want) {
		ret = cmdline_has_more(fd, &more);
		if (ret)
			goto out_close;
	}
	format_cmdline(r->buf.buf, r->buf.len, more, out, size);
out_close:
	close(fd);
	return ret;
}

uint64_t proc_ticks_to_ms(const struct proc_reader *r, uint64_t ticks)
{
	return scan_ticks_to_ms(ticks, r->hz);
}

static bool parse_pid_name(const char *name, int *pid)
{
	uint64_t v = 0;
	const char *p;

	if (!*name)
		return false;
	for (p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > INT_MAX)
			return false;
	}
	if (v == 0)
		return false;
	*pid = (int)v;
	return true;
}

int proc_for_each_pid(int (*fn)(int pid, void *arg), void *arg)
{
	char path[4096 + 16];
	struct dirent *de;
	DIR *dir;
	int pid, ret;

	ret = sysroot_path(path, sizeof(path), "/proc");
	if (ret)
		return ret;
	dir = opendir(path);
	if (!dir)
		return -errno;
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			ret = errno ? -errno : 0;
			break;
		}
		if (!parse_pid_name(de->d_name, &pid))
			continue;
		ret = fn(pid, arg);
		if (ret)
			break;
	}
	closedir(dir);
	return ret;
}

uint64_t proc_self_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}
