/*
 * eeb_power.h - everything between a power meter and the run database:
 * power sources, the sampler that reads one on a fixed clock into SQLite,
 * and the energy and validity figures computed from the samples.
 *
 * A source is a URI, "scheme:arguments", opened through a constant table
 * of functions per scheme (SQLite's VFS shape), which starts with its
 * version and capabilities; slots marked optional may be NULL.  Each reading carries the
 * provenance of its numbers: measured (a meter), counter (an energy
 * counter, differentiated), declared (a recorded trace replayed: what its
 * file says, not read here) or modeled (a simulation or the analytical
 * model) -- leaderboards never mix them.
 */
#ifndef EEB_POWER_H
#define EEB_POWER_H

#include "common/eeb_common.h"
#include "rundb/eeb_rundb.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- sources ---- */

enum eeb_provenance { EEB_MEASURED, EEB_COUNTER, EEB_MODELED, EEB_DECLARED };

/* "measured", "counter", "modeled", "declared". */
const char *eeb_provenance_name(enum eeb_provenance p);

/* A provenance by its name: 0, or -1 for none of them. */
int eeb_provenance_parse(const char *name, enum eeb_provenance *out);

/* The provenance a source's URI fixes whatever it reads: sim:'s readings
 * are modeled, replay:'s declared, faulty:WHEN:URI's its inner source's;
 * -1 for the others (a meter's, known once it is opened). */
int eeb_power_uri_provenance(const char *uri);

/* Whether uri names one of eeb's sources by its scheme as eeb spells it
 * (a wrapper's inner source too): "Replay:" is none of them. */
int eeb_power_uri_known(const char *uri);

struct eeb_power_source {
    const struct eeb_power_source_ops *ops;
    char *uri;                      /* as opened */
    enum eeb_provenance provenance; /* of its readings */
    const char *note;               /* optional: NULL means opening found nothing the user
                                     * should hear; else that (a replayed log's skipped
                                     * lines, a PTDaemon's identity and ranges), the
                                     * source's own */
    double uncertainty;             /* the last reading's relative uncertainty as its meter
                                     * reports it (0.01: 1 %; INFINITY: the meter could not
                                     * evaluate it); NAN: none reported.  The sampler sets it
                                     * to NAN before each read, a source that knows it sets
                                     * it in read */
    double update_interval_s;       /* how often the meter makes a new reading (a PTDaemon's
                                     * interval), seconds; 0: unknown.  Sampling faster reads
                                     * the same reading again (eeb_power_default_rate) */
};

/* The rate to sample s at when none is given: once per its meter's update
 * interval (1..10000 Hz), else EEB_POWER_DEFAULT_RATE_HZ. */
#define EEB_POWER_DEFAULT_RATE_HZ 100.0
double eeb_power_default_rate(const struct eeb_power_source *s);

/* The layout of struct eeb_power_source_ops this eeb knows (SQLite's
 * iVersion): a table says which one it was written against, and the
 * registry refuses a table of another.  version, caps and scheme keep
 * their places in every version, so that a refusal can name the source. */
#define EEB_POWER_SOURCE_OPS_VERSION 2 /* 2: the range slot */

/* Where a kind of source gets its readings (curl's features): ops->caps,
 * one of the first four bits. */
enum eeb_power_cap {
    EEB_POWER_CAP_LIVE = 1u << 0,      /* reads a meter or counter as the run goes */
    EEB_POWER_CAP_RECORDED = 1u << 1,  /* plays a recording back (replay:) */
    EEB_POWER_CAP_SIMULATED = 1u << 2, /* makes its readings up (sim:) */
    EEB_POWER_CAP_WRAPPER = 1u << 3,   /* another source's, named in its URI (faulty:) */
};

/* What a run tells its source as it goes: the power of the modeled device
 * in the stage now, for a source that plays the model (sim:profile=model). */
struct eeb_power_control {
    double watts; /* the level to read from now on */
    double noise; /* the standard deviation of the noise around it, watts */
};

/* What a ranging pass set (eeb_power_source_range): the analyzer's
 * ranges as its commands give them ("Auto" while ranging, else the
 * number), and the largest volts and amps the pass read. */
struct eeb_power_ranges {
    char volts[32], amps[32];
    double max_volts, max_amps; /* NAN: none read (begin) */
    char identity[256];         /* the meter's, as it says it */
};

enum eeb_power_range_phase {
    EEB_POWER_RANGE_BEGIN, /* autorange, and track the largest volts and amps read */
    EEB_POWER_RANGE_END,   /* fix the ranges to what the pass read, measure in them */
};

struct eeb_power_source_ops {
    int version;        /* EEB_POWER_SOURCE_OPS_VERSION, first: what the rest of the table is */
    unsigned caps;      /* enum eeb_power_cap bits */
    const char *scheme; /* "sim" opens "sim:..." */
    const char *description; /* one line, for --help and `eeb power list` */
    /* Opens the source that args, the URI after "scheme:", describes
     * (uri is the whole, for messages); fills every base field but uri. */
    int (*open)(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                size_t errlen);
    /* One reading for the sampler's deadline t_mono_ns: out->watts, and
     * volts and amps (NAN when the source has none).  The sampler stamps
     * the times.  EEB_EDEVICE or EEB_ETIMEOUT for a meter that failed,
     * EEB_EFORMAT quoting an unparseable reply. */
    int (*read)(struct eeb_power_source *s, int64_t t_mono_ns, struct eeb_sample *out, char *err,
                size_t errlen);
    void (*close)(struct eeb_power_source *s);
    /* optional: NULL means meters of this kind are found only by address
     * (network meters).  The meters of this kind found on this machine,
     * one line each with the URI that opens it and a reading now; how
     * many, or an error. */
    int (*list)(FILE *out, char *err, size_t errlen);
    /* optional: NULL means the source takes no control.  What s reads from
     * now on, c; called on another thread than read's while it samples.
     * EEB_ENOTSUP naming s if this one cannot follow it (sim: but
     * profile=model).  Call it through eeb_power_source_control. */
    int (*control)(struct eeb_power_source *s, const struct eeb_power_control *c, char *err,
                   size_t errlen);
    /* optional: NULL means the meter has no ranges to set.  A ranging pass
     * on the run's own workload, MLPerf's ranging mode: BEGIN autoranges
     * and starts a ranging measurement, whose readings (read goes on
     * sampling them) are tracked; END stops it, fixes the voltage range to
     * the largest volts and the current range to 1.1 x the largest amps
     * read, and starts the testing measurement in them.  out says what was
     * set.  Called on another thread than read's while it samples; a read
     * of the ranging pass with no valid reading (the analyzer switching
     * ranges) is EEB_ENODATA, and its uncertainty is not held (MLPerf
     * checks the testing pass's).  EEB_ENOTSUP for a meter opened to leave
     * its ranges alone.  Call it through eeb_power_source_range. */
    int (*range)(struct eeb_power_source *s, enum eeb_power_range_phase phase,
                 struct eeb_power_ranges *out, char *err, size_t errlen);
};

/* Sources built in, NULL-terminated. */
const struct eeb_power_source_ops *const *eeb_power_sources(void);

/* EEB_OK if this eeb can drive ops: its version is
 * EEB_POWER_SOURCE_OPS_VERSION and every slot not marked optional is
 * filled; else EEB_EVERSION or EEB_EINVAL naming the scheme.
 * eeb_power_open checks the table of every source it opens. */
int eeb_power_source_ops_check(const struct eeb_power_source_ops *ops, char *err, size_t errlen);

/* Opens a source by URI; EEB_EINVAL naming the schemes for an unknown one. */
int eeb_power_open(const char *uri, struct eeb_power_source **out, char *err, size_t errlen);

/* Tells s what to read from now on (eeb run moves a "sim:profile=model"
 * source to the modeled device's power in each stage): EEB_OK, or
 * EEB_ENOTSUP naming s when it takes no control; err may be NULL. */
int eeb_power_source_control(struct eeb_power_source *s, const struct eeb_power_control *c,
                             char *err, size_t errlen);

/* A ranging pass's phase on s (the range slot): EEB_OK with out filled,
 * EEB_ENOTSUP naming s when its meter has no ranges, or the meter's error;
 * err may be NULL. */
int eeb_power_source_range(struct eeb_power_source *s, enum eeb_power_range_phase phase,
                           struct eeb_power_ranges *out, char *err, size_t errlen);

/* 1 if s can range (eeb_power_source_range may succeed). */
int eeb_power_source_ranges(const struct eeb_power_source *s);

static inline void eeb_power_close(struct eeb_power_source *s)
{
    if (s)
        s->ops->close(s);
}

/* ---- the sampler ---- */

struct eeb_sampler_config {
    const char *db_path; /* the run database (the writer opens its own connection) */
    int64_t run;         /* the run the samples belong to */
    double rate_hz;      /* 1 .. 10000 */
    size_t ring;         /* samples the ring holds; a power of two (default 65536) */
    int writer_delay_ms; /* tests: the writer sleeps this long per batch */
};

/* rate 100 Hz, a ring of 65536 samples (11 minutes at 100 Hz). */
void eeb_sampler_config_default(struct eeb_sampler_config *cfg);

/* While sampling: what the live display shows. */
struct eeb_sampler_live {
    uint64_t samples; /* read so far */
    double watts;     /* the last reading */
    double joules;    /* trapezoidal, since the start */
    double seconds;   /* since the first sample */
    int64_t last_ns;  /* CLOCK_MONOTONIC of the last reading, 0 before the first */
    uint64_t dropped; /* the ring was full */
    uint64_t failed;  /* reads that failed */
    int write_failed; /* the writer stopped on an error (a full disk): nothing
                       * more is stored, and eeb_sampler_stop says why */
};

struct eeb_sampler_stats {
    uint64_t ticks;     /* deadlines the clock reached */
    uint64_t samples;   /* readings taken */
    uint64_t failed;    /* reads that failed (meter errors) */
    uint64_t missed;    /* deadlines skipped because a read overran them */
    uint64_t dropped;   /* readings lost because the ring was full */
    uint64_t written;   /* samples committed to the database */
    double achieved_hz; /* samples / their span */
    double jitter_p50_us, jitter_p99_us, jitter_max_us; /* wake-up past the deadline */
    double sampler_cpu_s, writer_cpu_s;                 /* thread CPU time */
    int realtime;          /* the sampler thread ran at SCHED_FIFO priority */
    int timer_slack;       /* its timer slack was set to 1 ns */
    char first_error[256]; /* the first read error, "" if none */
};

struct eeb_sampler;

/*
 * Starts sampling src into the run: a sampler thread wakes on absolute
 * CLOCK_MONOTONIC deadlines (clock_nanosleep, TIMER_ABSTIME), reads, and
 * pushes into a lock-free single-producer ring; a writer thread commits
 * the ring to the database in batches.  The sampler never touches disk.
 * A read that fails is counted and recorded once as a "power_fault" event
 * with the reason (and "power_recovered" when readings resume); a reading
 * over the uncertainty limit (below) is kept, and recorded the same way; a
 * ring that is full counts the reading as dropped.  src stays the caller's.
 */
int eeb_sampler_start(struct eeb_power_source *src, const struct eeb_sampler_config *cfg,
                      struct eeb_sampler **out, char *err, size_t errlen);

/* Records an event now, on the samples' clock (written by the writer);
 * payload_json may be NULL.  Returns its time. */
int64_t eeb_sampler_mark(struct eeb_sampler *s, const char *kind, const char *payload_json);

/* Returns once everything sampled and marked before the call is
 * committed (the writer drains at once). */
void eeb_sampler_sync(struct eeb_sampler *s);

void eeb_sampler_live(struct eeb_sampler *s, struct eeb_sampler_live *out);

/* The results the sampler stores for its run when it stops (provenance
 * computed), so that a measurement can be judged from the database alone. */
#define EEB_RESULT_SAMPLES     "samples"          /* count */
#define EEB_RESULT_DROPPED     "samples_dropped"  /* count */
#define EEB_RESULT_FAILED      "reads_failed"     /* count */
#define EEB_RESULT_MISSED      "deadlines_missed" /* count */
#define EEB_RESULT_ACHIEVED_HZ "achieved_rate"    /* Hz */
#define EEB_RESULT_JITTER_P99  "jitter_p99"       /* us */

/* The largest relative uncertainty of the readings (a fraction), stored
 * with the source's provenance by a sampler whose source reported any
 * (eeb_power_source.uncertainty); a source that reports none stores none. */
#define EEB_RESULT_UNCERTAINTY_MAX "power_uncertainty_max"

/*
 * The most a reading's uncertainty may be: MLPerf's power rules hold the
 * analyzer to 1 % per sample as PTDaemon reports it, and the MLPerf power
 * checker fails a run whose testing phase logs PTDaemon's "Uncertainty
 * X.XX%, which is above 1.00% limit for the last sample!" (mlcommons/
 * inference_policies power_measurement.adoc; mlcommons/power-dev
 * compliance/check.py).  A reading over it, or one whose uncertainty the
 * meter could not evaluate, is recorded by the sampler as a power_fault
 * event whose payload holds EEB_EVENT_KEY_UNCERTAINTY (the fraction, or
 * null: unknown), at the reading's time, once per stretch of such readings
 * (power_recovered when they are back within); the judge (record/) makes
 * the run invalid for it, naming the reading's time.
 */
#define EEB_POWER_UNCERTAINTY_LIMIT 0.01
#define EEB_EVENT_POWER_FAULT       "power_fault"     /* {reason[, uncertainty]} */
#define EEB_EVENT_POWER_RECOVERED   "power_recovered" /* {reason} */
#define EEB_EVENT_KEY_UNCERTAINTY   "uncertainty"

/* A run of readings held to EEB_POWER_UNCERTAINTY_LIMIT (the sampler's
 * rule, which the evaluation server applies to a station agent's
 * readings): start it at {NAN, 0}. */
struct eeb_power_hold {
    double max; /* the largest finite uncertainty seen, NAN: none */
    int over;   /* the last reading was over the limit, or of unknown uncertainty */
};

/* Reading x of the meter uri, of uncertainty u (NAN: none stated, which
 * is not held; INFINITY: the meter could not evaluate it), held: the kind
 * of event to record at x's time (EEB_EVENT_POWER_FAULT for the first of
 * a stretch over the limit, EEB_EVENT_POWER_RECOVERED for the first back
 * within) with its payload JSON, newly allocated (free it; NULL: out of
 * memory, record "{}"), or NULL when there is none to record. */
const char *eeb_power_hold(struct eeb_power_hold *h, const char *uri, const struct eeb_sample *x,
                           double u, char **payload);

/* Stops both threads, commits what is left, stores the counts above with
 * the run and frees s.  An error of the writer (a full disk, say) is
 * returned here; what was committed stays. */
int eeb_sampler_stop(struct eeb_sampler *s, struct eeb_sampler_stats *stats, char *err,
                     size_t errlen);

/* ---- energy and validity ---- */

struct eeb_energy {
    double joules;  /* trapezoidal integral over [t0, t1] */
    double seconds; /* t1 - t0 */
    double mean_w, peak_w;
    uint64_t samples;   /* inside the window */
    uint64_t gaps;      /* intervals longer than twice the nominal one */
    double gap_seconds; /* their total length */
    double achieved_hz; /* samples / seconds */
};

/*
 * Energy of a stage from time-ordered samples: the trapezoidal integral of
 * watts over [t0_ns, t1_ns], the samples' linear interpolation carried to
 * the window's edges where samples lie beyond them (so a piecewise-linear
 * signal sampled at its corners integrates exactly).  interval_s is the
 * nominal sampling interval: samples further apart than twice it leave a
 * gap; a window edge before the first or after the last sample is held at
 * that sample's watts if shorter than a gap, else is one.  EEB_EINVAL for
 * fewer than two samples covering any of the window.
 */
int eeb_power_energy(const struct eeb_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
                     double interval_s, struct eeb_energy *out, char *err, size_t errlen);

/* Validity of a measurement (MLPerf power practice): minimum achieved rate,
 * maximum fraction of the window in gaps, maximum fraction dropped. */
struct eeb_power_validity {
    double min_rate_hz;       /* default 1 */
    double max_gap_fraction;  /* default 0.05 */
    double max_drop_fraction; /* default 0.001 */
};

void eeb_power_validity_default(struct eeb_power_validity *v);

/* 1 if valid; else 0 and every reason in why ("; "-separated). */
int eeb_power_valid(const struct eeb_energy *e, uint64_t dropped, uint64_t failed,
                    const struct eeb_power_validity *v, char *why, size_t whylen);

/* ---- the time shift between two traces ---- */

/*
 * How far in time two meters' traces of one load are apart: A, the
 * reference (the evaluation server's meter), and B (the run's own log).
 * Both are resampled on one grid over the window by linear interpolation,
 * B at each candidate shift, and the shift whose mean-removed series
 * correlate best (normalized cross-correlation, -1..1) is the estimate.
 * The correlation ignores scale and level, so two meters on different
 * rails of one board, or a wall meter and a board's, still agree on when
 * the load changed.
 *
 * A constant load says nothing of time, and the estimate is then not
 * determinable, never a figure:
 *   - flat: A's standard deviation over the window is at most
 *     EEB_ALIGN_FLAT_FRACTION (1 %) of its mean, or under
 *     EEB_ALIGN_FLAT_FLOOR_W (1 mW).  A laboratory meter reads a steady
 *     load to 0.1-0.5 % and a board's INA sensor to about 1 %, so what
 *     varies less than that is the meters' own noise;
 *   - weak: the best correlation is under EEB_ALIGN_MIN_CORRELATION
 *     (0.5).  For two independently noisy copies of one signal the peak
 *     correlation is S / (S + N), signal over signal-and-noise variance:
 *     under 0.5 the meters' noise is larger than what the load did;
 *   - unlocated: the correlation does not fall by EEB_ALIGN_MARGIN (0.05)
 *     on both sides of its best (a load that changes too slowly over the
 *     window to time, a ramp), or climbs back within that margin of the
 *     best after falling by it (a load that repeats: its period makes
 *     shifts a period apart match alike);
 *   - a window of fewer than EEB_ALIGN_MIN_POINTS (10) grid points, or a
 *     B that covers the window at no shift searched.
 * B must cover the window moved by every shift searched; where its ends
 * do not, only the shifts they cover are searched (lo_s..hi_s).  A best
 * match at an end of those says the shift is at least that far (at_edge):
 * a larger one lies outside what was searched.
 */
#define EEB_ALIGN_FLAT_FRACTION   0.01
#define EEB_ALIGN_FLAT_FLOOR_W    0.001
#define EEB_ALIGN_MIN_CORRELATION 0.5
#define EEB_ALIGN_MARGIN          0.05
#define EEB_ALIGN_MIN_POINTS      10

/* Where to look for the shift. */
struct eeb_power_align_query {
    int64_t a0_ns, a1_ns; /* the window, on A's clock (clipped to A's samples) */
    int64_t b_to_a_ns;    /* B's times plus this are on A's clock */
    double range_s;       /* the shifts searched: -range_s .. +range_s */
    double step_s;        /* the grid's spacing and the search's step, > 0 */
};

/* What the traces say of the shift. */
struct eeb_power_shift {
    int determinable;    /* 1: shift_s is the estimate; 0: why says why not */
    int at_edge;         /* the best match is at an end of the shifts searched: the shift
                          * is at least shift_s (in its sign) */
    double shift_s;      /* how much later B shows what A shows, on A's clock (> 0: B lags);
                          * the best match even when not determinable, NAN if none */
    double correlation;  /* there, or NAN */
    double lo_s, hi_s;   /* the shifts searched */
    double mean_w, sd_w; /* A over the window */
    size_t points;       /* the grid's */
    char why[200];       /* why not determinable, "" when it is */
};

/*
 * The shift between a (na samples) and b (nb), each time-ordered, over the
 * window q gives (above): EEB_OK with out filled, determinable or not; or
 * EEB_EINVAL naming the field for a query or trace that cannot be
 * searched (an empty window, a step <= 0, fewer than two samples, times
 * that do not increase), EEB_ENOMEM.
 */
int eeb_power_align(const struct eeb_sample *a, size_t na, const struct eeb_sample *b, size_t nb,
                    const struct eeb_power_align_query *q, struct eeb_power_shift *out, char *err,
                    size_t errlen);

/* ---- a run's power, from the database alone ---- */

struct eeb_power_summary {
    int64_t run;
    char source[256];         /* the URI the samples came from */
    char provenance[16];      /* measured, counter or modeled ("" if unrecorded) */
    char window[64];          /* which events bound it: "finetune", "log", or "all samples" */
    int64_t t0_ns, t1_ns;     /* the window */
    double rate_hz;           /* the nominal sampling rate (0 if unrecorded) */
    double update_interval_s; /* the meter's own update interval (0 if unrecorded); gaps are
                               * judged against it where it is longer than 1 / rate_hz */
    struct eeb_energy energy;
    uint64_t dropped, failed, missed; /* as the sampler counted them */
    int valid;                        /* the validity rules (eeb_power_valid) hold */
    char invalid[512];                /* why not */
    double p_max_w;                   /* the budget judged against, or NAN: none */
    int p_max_pass;                   /* the P_max rule (scoring/) over the window's samples */
    double worst_w;                   /* its worst window's mean */
    char p_max_reason[256];
};

/*
 * Summarizes the power of run (0: the latest) in the database at path,
 * read-only: the window is the fine-tune stage ("finetune_begin" ..
 * "finetune_end" events), else a standalone log's ("log_begin" ..
 * "log_end"), else all its samples, of the run's first source.  p_max_w,
 * if not NAN, overrides the run's budget; the P_max rule is the built-in
 * rules'.
 */
int eeb_power_summarize(const char *path, int64_t run, double p_max_w,
                        struct eeb_power_summary *out, char *err, size_t errlen);

/* The samples of run's first source in db, in time order: *out newly
 * allocated (free it; NULL when there are none), *n of them; EEB_ENOMEM or
 * the database's error (then *out is NULL). */
int eeb_power_samples_read(struct eeb_rundb *db, int64_t run, struct eeb_sample **out, size_t *n,
                           char *err, size_t errlen);

#endif
