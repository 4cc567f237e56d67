/*
 * cudaproto.h - the messages between the CUDA hook (in the profiled
 * process) and its receiver (`jobscope run --cuda`'s socket, or the agent's).
 *
 * A connection is a Unix stream socket; each message is a frame: a 4-byte
 * little-endian payload length (at most CUDA_PROTO_MAX_FRAME) and the
 * payload, text lines ending in '\n' with tab-separated fields.
 *
 * hook -> receiver:
 *   hello  "hello\t1\t<pid>\t<state>\t<cupti_version>\t<message>\n"
 *   status "status\t<state>\t<message>\n"          (the state changed)
 *   snap   "snap\t<seq>\t<final 0|1>\t<contexts>\t<dropped>\n" then one line per stat:
 *          "<kind>\t<count>\t<total_ns>\t<min_ns>\t<max_ns>\t<m2_ns2>\t<bytes>\t<min_bytes>\t
 *           <max_bytes>\t<m2_bytes2>\t<name>\n"  (one line; kind as cuda_stat_kind_name)
 * receiver -> hook:
 *   "on\t<interval_ms>\n" (record and send a snapshot every interval) or "off\n".
 *
 * A snapshot is cumulative: it replaces the process's previous one whole.
 * It may give a kind and name twice (two API callback ids of one name):
 * the store merges them.
 * Names never hold a tab or a newline (the encoder turns them into blanks).
 *
 * Parsers do no I/O and take untrusted input: every field is checked, and
 * a bad payload is -EPROTO with nothing half-applied.
 */
#ifndef JOBSCOPE_CUDAPROTO_H
#define JOBSCOPE_CUDAPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "cuda/cudastat.h"

#define CUDA_PROTO_VERSION   1
#define CUDA_PROTO_MAX_FRAME (16u << 20) /* bytes of one payload */
#define CUDA_PROTO_MAX_STATS 65536	 /* stats in one snapshot */
#define CUDA_PROTO_HEADER    4		 /* the length prefix */

enum cuda_msg_type { CUDA_MSG_HELLO, CUDA_MSG_STATUS, CUDA_MSG_SNAP, CUDA_MSG_ON, CUDA_MSG_OFF };

/* Appends one whole frame (length prefix included) to out; 0 or -ENOMEM. */
int cuda_proto_hello(struct strbuf *out, int32_t pid, enum cuda_proc_state state,
		     uint32_t cupti_version, const char *message);
int cuda_proto_status(struct strbuf *out, enum cuda_proc_state state, const char *message);
/* p's snapshot header (seq, final, contexts, dropped) and stats. */
int cuda_proto_snap(struct strbuf *out, const struct cuda_proc *p);
int cuda_proto_on(struct strbuf *out, int64_t interval_ms);
int cuda_proto_off(struct strbuf *out);

/*
 * The length of the frame at the head of buf: 0 while its 4-byte prefix is
 * not all there, else the payload's length; -EMSGSIZE above the maximum.
 */
int64_t cuda_proto_frame_len(const void *buf, size_t len);
/* A payload's type; -EPROTO when it is none of them. */
int cuda_proto_type(const char *payload, size_t len, enum cuda_msg_type *type);
/*
 * Parses a hello, status or snap payload into p (which keeps its pid
 * unless a hello sets it, and its state unless hello or status do).  For
 * a snap, p's stats are replaced whole.  On -EPROTO p is unchanged.
 */
int cuda_proto_parse(const char *payload, size_t len, struct cuda_proc *p);
/* An on/off payload: *on and *interval_ms (0 for off); -EPROTO else. */
int cuda_proto_parse_command(const char *payload, size_t len, bool *on, int64_t *interval_ms);

#endif
