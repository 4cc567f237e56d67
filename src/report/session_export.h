/*
 * session_export.h - a profiling session from a head's store, rendered:
 * its frames as JSON or CSV (`jobscope export --session`), a report in
 * words and tables (`jobscope report --session`) and plots per device
 * (`jobscope report --session --plot`).
 *
 * Both read the store (which the caller opened and still owns) and append
 * to a strbuf the caller owns; they return 0 or -errno: a store error as
 * the store gave it, -ENOMEM, -E2BIG past the buffer's cap.
 * session_export_report logs why it failed; session_export_frames logs
 * only running out of memory.  Not thread-safe: one store per thread.
 */
#ifndef JOBSCOPE_SESSION_EXPORT_H
#define JOBSCOPE_SESSION_EXPORT_H

#include <stdbool.h>

#include "common/progress.h"
#include "common/strbuf.h"
#include "store/store.h"
#include "store/profiling.h"

/*
 * Every frame of session s up to now (JSON: with the units, summaries by
 * device and by node, the gaps and the jobs; csv: one row per frame and GPU).
 */
int session_export_frames(struct store *st, const struct session_record *s, bool csv,
			  struct strbuf *out);
/*
 * Session s as the file gswarm-profiler's head writes when a run stops
 * (session_gswarm.c; docs/gswarm.md): a frame a period (the session's
 * interval, else 1 s) from its start to its end (now while active) holding
 * every GPU of its nodes, the summaries and request_time_info, laid out
 * byte for byte as Python's json.dumps(indent=2).  Logs only running out
 * of memory.
 */
int session_export_gswarm(struct store *st, const struct session_record *s, struct strbuf *out);
/*
 * The two above, telling progress (common/progress.h; NULL: nobody) how
 * many frames are written and what part of the session's window they
 * cover, and finishing it at the end.  With spill_fd >= 0 the bytes in out
 * are written to spill_fd whenever it holds SESSION_EXPORT_SPILL_BYTES at
 * a frame's end, so that a session of any length takes the same memory;
 * what is left in out at the end is the caller's to write
 * (session_export_spill(out, spill_fd, 0)).  -1: all of it in out.
 */
#define SESSION_EXPORT_SPILL_BYTES ((size_t)1 << 20)
int session_export_frames_progress(struct store *st, const struct session_record *s, bool csv,
				   struct strbuf *out, int spill_fd,
				   const struct progress_hook *progress);
int session_export_gswarm_progress(struct store *st, const struct session_record *s,
				   struct strbuf *out, int spill_fd,
				   const struct progress_hook *progress);
/*
 * out's bytes written to fd and out emptied, when it holds at least min
 * bytes (fd < 0: nothing done): 0, or -errno of the write (said), or
 * out's own error (past its cap, out of memory).
 */
int session_export_spill(struct strbuf *out, int fd, size_t min);
/* That file's frame clock: the period (ms), and the frames it holds at now_ms. */
#define SESSION_GSWARM_PERIOD_MS 1000 /* gswarm's head: a frame a second */
int64_t session_gswarm_period_ms(const struct session_record *s);
int64_t session_gswarm_frames(const struct session_record *s, int64_t now_ms);
/*
 * A request's other_times as that file holds it, from the store's text
 * (NULL, or anything): an object of numbers as Python writes it at the
 * file's depth, anything else {}.  For session_export_gswarm and its fuzz
 * target.
 */
void session_gswarm_other(struct strbuf *out, const char *text);
/* The session called name (-ENOENT, with a message, when there is none). */
int session_export_report(struct store *st, const char *name, struct strbuf *out);
/*
 * Session s drawn per device (session_plot.c): next to path, named from
 * it, PATH-NODE-host.ext (the node's CPU, memory, storage, network) and
 * PATH-NODE-gpuI.ext (each GPU's utilization, memory, traffic, power);
 * path itself, saying so, when the session has no frame.  Each file
 * written is appended to written, one a line.  Logs why it failed.
 */
int session_export_plots(struct store *st, const struct session_record *s, const char *path,
			 struct strbuf *written);
/*
 * Session s as one picture at path (.png, .pdf, .svg; session_plot.c):
 * for every GPU of every node a line "host:index" in each panel (GPU
 * utilization %, memory used in bytes, PCIe rx + tx and NVLink rx + tx in
 * bytes/s); without any GPU, each node's CPU % and memory; without any
 * frame, a picture saying so.  Lines break at gaps.  Logs why it failed.
 */
int session_export_plot(struct store *st, const struct session_record *s, const char *path);

#endif
