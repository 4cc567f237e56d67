/*
 * fuzz_proc.c - libFuzzer target for the /proc/PID parsers, the cmdline
 * formatter, the proc connector's and taskstats' netlink datagrams.  The input is copied into a
 * buffer of exactly its size, not NUL-terminated, so ASan catches any read past len.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample/proc.h"
#include "sample/procev.h"
#include "sample/taskstats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* taskstats_parse's promise: a terminated comm. */
static void on_exit_msg(const struct taskstats_exit *e, void *arg)
{
	(void)arg;
	if (strnlen(e->comm, sizeof(e->comm)) >= sizeof(e->comm))
		abort();
}

static void on_end(int32_t pid, int64_t mono_ns, void *arg)
{
	(void)arg;
	if (pid <= 0 || mono_ns < 0)
		abort();
}

static void on_new_pid(int32_t pid, void *arg)
{
	(void)arg;
	if (pid <= 0)
		abort();
}

/* proc_format_cmdline's promises: terminated, no NULs inside, fits. */
static void check_cmdline(const char *text, size_t len, size_t size)
{
	char out[PROC_CMDLINE_MAX + 1];
	size_t n, i;

	memset(out, 'Z', sizeof(out));
	n = proc_format_cmdline(text, len, out, size);
	if (size == 0) {
		if (n != 0 || out[0] != 'Z')
			abort();
		return;
	}
	if (n >= size || out[n] != '\0' || strlen(out) != n)
		abort();
	for (i = 0; i < n; i++) {
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	struct proc_stat st;
	struct proc_status status;
	struct proc_io io;
	uint64_t run_ns;

	if (!text)
		return 0;
	memcpy(text, data, size);

	if (proc_parse_stat(text, size, &st) == 0) {
		if (st.pid <= 0 || strnlen(st.comm, sizeof(st.comm)) >= sizeof(st.comm))
			abort();
	}
	if (proc_parse_status(text, size, &status) == 0 && status.valid == 0)
		abort();
	proc_parse_io(text, size, &io);
	if (proc_parse_schedstat(text, size, &run_ns) == 0 &&
	    (size == 0 || text[0] < '0' || text[0] > '9'))
		abort(); /* a reading starts with a digit */
	{
		uint64_t run2 = 0, wait_ns = 0;
		bool has_wait = false;

		/* the same run time as the plain parser, a wait only after it */
		if (proc_parse_schedstat_wait(text, size, &run2, &wait_ns, &has_wait) !=
			proc_parse_schedstat(text, size, &run_ns) ||
		    (has_wait && run2 != run_ns))
			abort();
	}

	procev_parse(text, size, on_new_pid, NULL);
	procev_parse_events(text, size, on_new_pid, on_end, NULL);
	/* the family id the kernel gave is any number: taken from the input */
	taskstats_parse(text, size, size >= 2 ? (uint16_t)(data[0] | data[1] << 8) : 0, on_exit_msg,
			NULL);

	check_cmdline(text, size, PROC_CMDLINE_MAX);
	check_cmdline(text, size, size ? (size_t)(unsigned char)text[0] % 16 : 0);
	check_cmdline(text, size, 1);
	check_cmdline(text, size, 0);

	free(text);
	return 0;
}
