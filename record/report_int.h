/*
 * report_int.h - shared between the report's files (record/report*.c):
 * what report.c gathers from the run's record (the power trace, the
 * timeline of events, director mode's meter) and the helpers its sections
 * share; the plots (report_plot.c); the score's table (report_score.c);
 * the "System under test" section (report_sut.c), gathered from the run's
 * events while report.c walks them, and written after the plots.
 */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include "common/eeb_common.h"
#include "record/eeb_record.h"
#include "rundb/eeb_config_record.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* What the record says of the system under test; zero it, then
 * report_sut_free it. */
struct report_sut {
    json_t *deployed;    /* the "deployed" event's payload, NULL if none */
    json_t *stopped;     /* the "stopped" event's (the SUT's counters), NULL if none */
    long long eeb_steps; /* the most training steps eeb's own events count */
    int have_eeb_steps;  /* an event gave eeb_steps */
};

/* Takes what the section needs from one event (payload: its JSON, or
 * NULL); the payload stays the caller's. */
void report_sut_event(struct report_sut *s, const char *kind, json_t *payload);

/* The section: <h2>, the table id="sut" and, when the SUT's step count
 * disagrees with eeb's, the note id="sut-mismatch".  cfg is the run's
 * configuration as read; backend, the run's row's (if cfg has none). */
void report_sut_section(FILE *f, const struct report_sut *s, const struct eeb_config_record *cfg,
                        const char *backend);

void report_sut_free(struct report_sut *s);

/* ---- what report.c gathers (its gathering section) ---- */

/* The plots' size in pixels. */
#define PLOT_W   960
#define PLOT_H   300
#define MARGIN_L 60
#define MARGIN_R 60
#define MARGIN_T 20
#define MARGIN_B 40
/* the plot area's pixel columns: a series is drawn with at most two
 * points in each (columns_add) */
#define PLOT_COLUMNS (PLOT_W - MARGIN_L - MARGIN_R)

struct point {
    double t, v; /* seconds since the first sample; watts or loss */
};

struct series {
    struct point *p;
    size_t n, cap;
};

/* ---- downsampling ----
 *
 * A series is drawn with at most two points in each pixel column of the
 * plot: the column's lowest and highest value, in the order they came.  A
 * peak one sample wide still shows at its height, and a trace of millions
 * of samples is at most 2 x PLOT_COLUMNS points (the server draws a live
 * run's page each second). */
struct columns {
    double x_hi; /* the time axis's end: columns span [0, x_hi] */
    struct column {
        double lo, hi, t_lo, t_hi;
        int used;
    } c[PLOT_COLUMNS];
};

struct trace {
    int pass;       /* 0: the span, 1: the columns */
    int64_t t0, t1; /* first and last sample */
    int64_t origin; /* pass 1: time 0 of the axis, on this trace's clock */
    uint64_t n;
    double peak;
    char source[256];    /* the first sample's power source */
    struct columns cols; /* pass 1: on the time axis, which needs the span */
};

struct timeline {
    int have_t0;                                   /* t0 is the first sample's, or else */
    int64_t t0;                                    /* the first event's (the same clock) */
    double ft_begin, ft_end, test_begin, test_end; /* seconds, NAN if absent */
    double last;                                   /* the last event, seconds; NAN if none */
    struct series loss, metric;                    /* train events; epoch ends */
    json_t *events;                                /* [t, kind, payload] but "train" */
    struct report_sut sut;                         /* the system under test's events */
};

/* Director mode: the server's meter gave E, and its power log is another
 * run of the same database (the configuration's power.meter_run).  Its
 * trace is the one plotted; the team's own log is drawn beside it, placed
 * on the meter's clock by their fine-tune's begin (each log's own
 * finetune_begin event: the meter run's is written when the run is
 * scored), or by their first samples until then. */
struct director {
    int64_t meter_run;         /* 0: not director mode */
    struct trace *meter;       /* its samples */
    struct series watts;       /* the meter's, downsampled */
    char meter_provenance[16]; /* as its power log says */
    char team_provenance[16];  /* of the team's own samples */
    int by_fine_tune;          /* placed by the fine-tune's begin, not the first samples */
};

/* A series drawn over [0, x_hi], downsampled into out: -1 out of memory. */
int report_downsample(const struct series *in, double x_hi, struct series *out);

/* v to a fixed number of decimals, or "-" when the run never had it
 * (into out, which it returns). */
const char *report_fixed(char out[EEB_NUMBER_MAX], double v, int decimals);

/* ---- the plots (report_plot.c) ---- */

/* Both plots' time axis: the run's record, and T_max's marker if it falls
 * near it. */
struct time_axis {
    double end;     /* the record's last sample or event, seconds */
    double tmax_at; /* fine-tuning's start + T_max; NAN without either, or on the modeled clock */
    int modeled;    /* T_max is on the modeled clock, not this (the host's) axis */
    int tmax_shown; /* within TMAX_NEAR x end: drawn, the axis stretched to it */
    double x_hi;
    const char *x_label;
};

/* The time axis of a record of samples (0: none) spanning span_s, with
 * the timeline tl; T_max's marker where it falls near (not on the modeled
 * clock). */
struct time_axis report_time_axis(uint64_t samples, double span_s, const struct timeline *tl,
                                  double t_max, int modeled);

/* The power trace's SVG plot and its legend: P_max's line, the stage
 * bands, T_max's marker; in director mode the server's meter, with the
 * team's own log beside it. */
void report_power_plot(FILE *f, const struct trace *tr, const struct timeline *tl,
                       const struct series *watts, const struct time_axis *ta, double t_max,
                       double p_max, const struct director *d);

/* The loss and training metric's SVG plot and its legend. */
void report_training_plot(FILE *f, const struct timeline *tl, const struct time_axis *ta);

/* ---- the score (report_score.c) ---- */

/* The score's table: each term, its weight and its share of the penalty,
 * the utilization fractions, and S. */
void report_score_table(FILE *f, const struct eeb_run_row *run, const struct eeb_run_outcome *o,
                        const struct timeline *tl, const struct eeb_config_record *cfg);

#endif
