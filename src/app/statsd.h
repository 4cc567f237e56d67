/*
 * statsd.h - StatsD / DogStatsD lines in, app points and markers out.
 *
 * The line format (etsy StatsD, with DogStatsD's extensions):
 *
 *   name:value|type[|@rate][|#tag:v,tag2][|c:container][|T<unix s>]
 *   name:v1:v2:v3|type...          several values in one line (DogStatsD 1.1)
 *   _e{title_len,text_len}:title|text[|d:ts][|#tags]...   an event: a marker
 *   _sc|name|status...             a service check: counted, ignored
 *
 * Fields after the type: @rate (0 < rate <= 1), #tags, c:container (not
 * used: senders are known by pid), T<unix s>, and any other
 * "lowercase-key:value" (DogStatsD's later e:, card:) ignored; anything
 * else, a field twice, or an empty one makes the line bad.  A set's value
 * is one member, ':' included.
 *
 * type: c (counter), g (gauge; "+N"/"-N" moves it), ms (timer), h
 * (histogram), d (distribution), s (set).  A datagram holds lines split
 * by '\n' (a trailing '\r' is dropped).  Tags are kept canonical (sorted,
 * deduplicated, joined by ','); `job:...` is one like any other (the
 * agent's UDP socket reads it to attribute).  A line that is not this
 * format is counted bad and dropped; nothing in a datagram can crash the
 * parser or grow memory beyond the caps below.
 */
#ifndef JOBSCOPE_STATSD_H
#define JOBSCOPE_STATSD_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/appstat.h"

#define STATSD_MAX_VALUES  256	  /* values in one line */
#define APP_AGG_MAX_SERIES 10000  /* metrics one aggregator keeps (more: dropped, counted) */
#define APP_AGG_MAX_SET	   100000 /* set members per tick, all sets together */
#define APP_AGG_MAX_MARKS  10000  /* markers per tick */

enum statsd_kind {
	STATSD_METRIC,
	STATSD_EVENT,	      /* a marker: name is the title, text the text */
	STATSD_SERVICE_CHECK, /* known, not kept */
};

struct statsd_line {
	enum statsd_kind kind;
	char name[APP_NAME_MAX];
	char tags[APP_TAGS_MAX]; /* canonical */
	enum app_type type;
	double rate;			  /* (0, 1]; 1 when absent */
	double values[STATSD_MAX_VALUES]; /* numeric types */
	size_t nvalues;
	bool delta;	    /* gauge: every value is "+N" or "-N" */
	const char *member; /* set: the member (in the input), member_len bytes */
	size_t member_len;
	char text[APP_TAGS_MAX]; /* event: its text */
	int64_t ts_ms;		 /* event "d:" / metric "T": 0 when absent */
};

/*
 * The next line of a datagram at *pos (before end): *line and *len (a
 * trailing '\r' dropped, empty lines skipped), *pos advanced past it;
 * false when none is left.  How app_agg_feed splits a datagram.
 */
bool statsd_next_line(const char **pos, const char *end, const char **line, size_t *len);
/* One line (no '\n' in it): 0, or -EINVAL when it is not a valid line. */
int statsd_parse_line(const char *s, size_t len, struct statsd_line *out);
/* The value of tag key in canonical tags ("" when the tag has none): true when present. */
bool statsd_tag_get(const char *tags, const char *key, char *val, size_t size);

/*
 * One job's metrics during the current tick (plus each gauge's last value
 * and the markers), fed line by line.  Counters of what was refused.
 */
struct app_agg {
	struct app_point *pts; /* this tick's points */
	size_t npts, alloc;
	void *index;  /* name/type/tags -> pts slot (private) */
	void *gauges; /* gauge last values across ticks (private) */
	void *sets;   /* set members this tick (private) */
	struct app_mark *marks;
	size_t nmarks, marks_alloc;
	uint64_t lines, bad_lines, dropped; /* dropped: over a cap */
};

void app_agg_init(struct app_agg *a);
void app_agg_release(struct app_agg *a);
/* Adds a parsed line received at now_ms from pid (0: unknown).  -ENOMEM: counted dropped. */
int app_agg_add(struct app_agg *a, const struct statsd_line *l, int32_t pid, int64_t now_ms);
/* Splits a datagram into lines, parses and adds each; bad ones counted. */
void app_agg_feed(struct app_agg *a, const char *data, size_t len, int32_t pid, int64_t now_ms);
/*
 * The tick's points and markers, moved out (the caller owns them: release
 * each point with app_point_release and free the arrays); the aggregator
 * starts the next tick empty (gauges' last values kept).
 */
void app_agg_take(struct app_agg *a, struct app_point **pts, size_t *npts, struct app_mark **marks,
		  size_t *nmarks);

/*
 * The sockets programs send to: UDP (127.0.0.1, a fresh port or a given
 * one) and a Unix datagram socket whose receiver learns each sender's pid
 * from the kernel (SO_PASSCRED / SCM_CREDENTIALS), not from what it says.
 */
#define APP_DGRAM_MAX 65536 /* bytes of a datagram read (longer: cut, its last line bad) */

struct app_collector {
	int udp_fd, unix_fd; /* -1: not open */
	uint16_t udp_port;
	char path[108]; /* the Unix socket's file, "" when none */
	char *buf;	/* APP_DGRAM_MAX bytes while a socket is open (private) */
	uint64_t datagrams, bytes;
};

void app_collector_init(struct app_collector *c);
/* UDP on addr:port (port 0: the kernel picks; udp_port says which). */
int app_collector_open_udp(struct app_collector *c, const char *addr, uint16_t port);
/*
 * A Unix datagram socket at path, mode 0600 unless world (0666).  A
 * socket file nobody listens on is replaced; -EADDRINUSE when a receiver
 * is bound there, -EEXIST when path is not a socket.
 */
int app_collector_open_unix(struct app_collector *c, const char *path, bool world);
size_t app_collector_fds(const struct app_collector *c, struct pollfd *fds, size_t max);
/*
 * Reads every datagram waiting on the ready descriptors (fds as
 * app_collector_fds filled them, polled), calling fn with each and its
 * sender's pid (0: UDP, or not known).
 */
void app_collector_handle(struct app_collector *c, const struct pollfd *fds, size_t n,
			  void (*fn)(void *arg, const char *data, size_t len, int32_t pid),
			  void *arg);
/* Reads whatever is still queued (the end of a run), without waiting. */
void app_collector_drain(struct app_collector *c,
			 void (*fn)(void *arg, const char *data, size_t len, int32_t pid),
			 void *arg);
/* Closes both sockets and removes the Unix socket's file. */
void app_collector_release(struct app_collector *c);

/*
 * Sends one datagram to where the environment says (JOBSCOPE_STATSD_SOCKET,
 * else STATSD_HOST/STATSD_PORT, else 127.0.0.1:8125): `jobscope mark` and
 * `jobscope metric`.  Writes where it sent into `where`.  0 or -errno.
 * To a Unix socket it returns once the receiver has read the datagram (or
 * after STATSD_SEND_WAIT_MS): the receiver may still read the sender's
 * parent from /proc then.
 */
#define STATSD_SEND_WAIT_MS 1000 /* Unix socket: how long statsd_send waits for the read */
int statsd_send(const char *data, size_t len, char *where, size_t where_size);

#endif
