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
int power_line_connect(struct power_line *c, const char *uri, char *err, size_t errlen);
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
 * (name,value pairs; reply is cut up) into out's watts, volts and amps. */
int power_scpi_parse(const char *uri, const char *reply, double v[3], char *err, size_t errlen);
int power_ptd_parse(const char *uri, char *reply, struct eeb_sample *out, char *err, size_t errlen);

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
