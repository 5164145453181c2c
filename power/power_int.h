/*
 * power_int.h - shared inside power/: the built-in sources' tables and the
 * argument parsing they have in common.
 */
#ifndef POWER_INT_H
#define POWER_INT_H

#include "eeb_power.h"

extern const struct eeb_power_source_ops power_sim_ops, power_replay_ops, power_faulty_ops,
    power_hwmon_ops, power_rapl_ops, power_scpi_ops, power_ptd_ops;

/* Parses "key=value,key=value" (args may be empty): calls fn for each
 * pair; fn returns EEB_OK or an error it wrote.  uri names the source in
 * messages. */
int power_each_option(const char *uri, const char *args,
                      int (*fn)(void *arg, const char *key, const char *value, char *err,
                                size_t errlen),
                      void *arg, char *err, size_t errlen);

/* The whole of text as a finite number, or EEB_EINVAL naming uri and key. */
int power_number(const char *uri, const char *key, const char *text, double *out, char *err,
                 size_t errlen);

/*
 * An energy counter read as power: each reading is the mean watts since
 * the one before, so the samples integrate back to the counter's own
 * energy.  A counter that wraps to 0 past range (RAPL) is unwrapped; one
 * that goes backwards without a range was reset.
 */
struct power_counter {
    double joules; /* at the last reading */
    int64_t t_ns;  /* its time */
    double range;  /* the joules at which it wraps, 0: never */
};

void power_counter_start(struct power_counter *c, double joules, int64_t t_ns, double range);

/* The mean watts over (the last reading, t_ns]; EEB_EDEVICE, naming uri
 * and the counter (a rail, a zone), when time did not advance or the
 * counter was reset (it restarts from this reading). */
int power_counter_watts(struct power_counter *c, const char *uri, const char *counter,
                        double joules, int64_t t_ns, double *watts, char *err, size_t errlen);

/* Waits long enough (200 ms) for counters started just now to tell a
 * power: `eeb power list` reads each twice. */
void power_counter_settle(void);

/*
 * A line-oriented TCP connection to a network meter (SCPI, PTDaemon),
 * from URIs "scheme://host:port[?key=value,...]".  Every wait is bounded
 * by timeout_ms.  Any failure closes the connection (a late reply would
 * answer the wrong question); the next command reconnects.
 */
struct power_line {
    int fd; /* -1: not connected */
    char host[256], port[8];
    int timeout_ms;
    const char *eol; /* ends each command: "\n" or "\r\n" */
    char buf[4096];  /* received, not yet returned */
    size_t len;
};

/* Parses args, "//host:port[?options]" ("[v6addr]:port" too), into c
 * (not connected); *options points at the options ("" if none). */
int power_line_init(struct power_line *c, const char *uri, const char *args, const char *eol,
                    const char **options, char *err, size_t errlen);
/* Sends a command that has no reply. */
int power_line_send(struct power_line *c, const char *uri, const char *cmd, char *err,
                    size_t errlen);
/* Sends a command and reads its one-line reply (without the line end):
 * EEB_ETIMEOUT, EEB_EDEVICE for a closed connection, EEB_EFORMAT for a
 * line longer than the buffer. */
int power_line_query(struct power_line *c, const char *uri, const char *cmd, char *reply,
                     size_t len, char *err, size_t errlen);
void power_line_close(struct power_line *c);

/* The meters' replies parsed (their fuzz targets' entries): a WT300's
 * ":NUMeric:NORMal:VALue?" answer "U,I,P" into v; PTDaemon's "RL" answer
 * (name,value pairs; reply is cut up) into out's watts, volts and amps;
 * PTDaemon's "Uncertainty" answer, in percent, into *out as a fraction
 * (INFINITY: PTDaemon could not evaluate it). */
int power_scpi_parse(const char *uri, const char *reply, double v[3], char *err, size_t errlen);
int power_ptd_parse(const char *uri, char *reply, struct eeb_sample *out, char *err, size_t errlen);
int power_ptd_uncertainty(const char *uri, const char *reply, double *out, char *err,
                          size_t errlen);

/* ---- the PTDaemon emulator's conversation (ptd_emulator.c) ---- */

#include "eeb_ptd_emulator.h"

/* What a connection has sent that is not a whole line yet. */
struct power_ptd_emu_conn {
    char buf[EEB_PTD_EMU_LINE_MAX + 2]; /* a line and its CR LF */
    size_t have;
    int dropping; /* the rest of a line too long, up to its LF, is dropped */
};

/* The emulator without its socket and threads (fuzz_ptd_emulator's, and
 * the conversation's tests): cfg's load read once, for the first reading;
 * eeb_ptd_emulator_stop frees it. */
int power_ptd_emu_open_idle(const struct eeb_ptd_emulator_config *cfg,
                            struct eeb_ptd_emulator **out, char *err, size_t errlen);

/* n bytes a client sent, on connection c: each whole line answered
 * through reply_to (its reply without the line end; nonzero ends the
 * feed), a line longer than EEB_PTD_EMU_LINE_MAX answered with an Error
 * and dropped.  0, or -1 when reply_to failed. */
int power_ptd_emu_feed(struct eeb_ptd_emulator *e, struct power_ptd_emu_conn *c, const char *data,
                       size_t n, int (*reply_to)(void *arg, const char *reply), void *arg);

/* ---- recorded traces, replay:'s readers (trace.c, trace_csv.c, trace_ptd_log.c) ---- */

struct power_trace_point {
    double t;                  /* seconds after the trace's first reading */
    double watts, volts, amps; /* volts, amps NAN where the trace has none */
    int valid;                 /* 0: the meter had no valid reading (PTDaemon's Watts -1) */
    int line;                  /* of the file, for messages */
};

/*
 * The options of a replay: URI, in one list that the URI's parser, the two
 * readers and their messages all go by.  The first four name a CSV's
 * columns, in the order of the CSV reader's quantities.
 */
enum power_trace_option {
    EEB_TRACE_TIME,
    EEB_TRACE_POWER,
    EEB_TRACE_VOLTS,
    EEB_TRACE_AMPS,
    EEB_TRACE_TIME_UNIT, /* CSV: the unit of a time column whose name has none */
    EEB_TRACE_DECIMAL,   /* CSV: the decimal mark, "," or "." */
    EEB_TRACE_CHANNEL,   /* PTDaemon: "N" or "total" */
    EEB_TRACE_DATE,      /* PTDaemon: "MM-DD" or "DD-MM" */
    EEB_TRACE_MARK,      /* PTDaemon: only the readings with this Mark */
    EEB_TRACE_OPTIONS
};

struct power_trace_option_info {
    const char *name;   /* as the URI writes it: "time", "channel" */
    const char *values; /* what it takes, for messages: "COLUMN", "N|total" */
    int ptd_log;        /* 1: a PTDaemon log's option, 0: a CSV's */
};

extern const struct power_trace_option_info power_trace_option_list[EEB_TRACE_OPTIONS];

/* What a replay: URI's options ask of its trace: value[option], NULL if
 * not given. */
struct power_trace_options {
    const char *value[EEB_TRACE_OPTIONS];
};

struct power_trace {
    const char *path;            /* the file, for messages */
    struct power_trace_point *p; /* n readings, times increasing (free it) */
    size_t n, cap;               /* cap: p's slots, grown as readings are added */
    int last_line;               /* the line p[n - 1] came from */
    char note[512];              /* what the reader skipped or marked, "" if nothing */
};

/* 1 if text is a SPEC PTDaemon log: its first line that is not blank
 * starts "Time," and a date. */
int power_trace_is_ptd_log(const char *text);

/* EEB_EINVAL naming the first option o gives that is not for this kind of
 * file (ptd_log: a PTDaemon log, else a CSV). */
int power_trace_options_for(const struct power_trace *t, const struct power_trace_options *o,
                            int ptd_log, char *err, size_t errlen);

/* Reads text (cut up in the reading) into t, which starts empty; errors
 * name t->path, the line and the field.  EEB_EINVAL when the file needs an
 * option it was not given (a channel, the date order, a column, a unit, the
 * decimal mark), or has nothing an option asks for; EEB_EFORMAT for
 * anything else. */
int power_trace_read_ptd_log(struct power_trace *t, char *text, const struct power_trace_options *o,
                             char *err, size_t errlen);
int power_trace_read_csv(struct power_trace *t, char *text, const struct power_trace_options *o,
                         char *err, size_t errlen);

/* The next line at *cursor, cut off at its end (CR LF or LF) and *cursor
 * moved past it; NULL after the last. */
char *power_trace_line(char **cursor);

/* Appends p (p->line its line), growing t->p; EEB_EFORMAT, quoting
 * time_text, when its time is not after the reading before's; EEB_ENOMEM. */
int power_trace_add(struct power_trace *t, const struct power_trace_point *p, const char *time_text,
                    char *err, size_t errlen);

/* Seconds since 1970-01-01 00:00:00 of a calendar date and time of day on
 * the trace's own clock (no time zone); 0, or -1 if a field is out of
 * range (February 30th, hour 24). */
int power_civil_seconds(int year, int month, int day, int hour, int min, int sec, int64_t *out);

/* ---- the sample ring (ring.c) ---- */

#include <stdalign.h>
#include <stdatomic.h>

/*
 * A bounded lock-free queue for one producer (the sampler thread) and one
 * consumer (the writer thread).  head counts pushes, tail pops; each is
 * written by one side only and read by the other with acquire/release, so
 * a slot is never read before it is written nor overwritten before it is
 * read.  The two counters sit on their own cache lines.
 */
struct power_ring {
    alignas(64) _Atomic uint64_t head;
    alignas(64) _Atomic uint64_t tail;
    alignas(64) struct eeb_sample *slot;
    uint64_t mask; /* capacity - 1, capacity a power of two */
};

/* EEB_EINVAL unless cap is a power of two >= 2; EEB_ENOMEM. */
int power_ring_init(struct power_ring *r, size_t cap);
void power_ring_free(struct power_ring *r);
/* Producer: 1 if pushed, 0 if the ring is full. */
int power_ring_push(struct power_ring *r, const struct eeb_sample *s);
/* Consumer: up to max samples into out, oldest first; how many. */
size_t power_ring_pop(struct power_ring *r, struct eeb_sample *out, size_t max);

#endif
