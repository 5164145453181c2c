/*
 * eeb_score.h - the composite score S of Tao et al. (equations 3-5) and the
 * rules that govern it.
 *
 *   M_u = mean(LUT, FF, BRAM, DSP utilization)     utilization report
 *   M_t = T / T_max                                 T clamped to T_max
 *   M_p = E / (P_max * T)                           E in joules
 *   M_s = top-5 accuracy or mAP@0.5
 *   S   = 1 - [w_u M_u + w_t M_t + w_p M_p + w_s (1 - M_s)]
 *
 * A run whose power exceeds P_max fails and has no S.  Sections: utilization
 * reports, weights and S, the P_max rule, the rules file, aggregation.
 * Everything here is a pure function of what it is handed, except the two
 * loaders that read a named file.
 */
#ifndef EEB_SCORE_H
#define EEB_SCORE_H

#include "common/eeb_common.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Utilization ------------------------------------------------------ */

enum eeb_util_kind { EEB_UTIL_LUT, EEB_UTIL_FF, EEB_UTIL_BRAM, EEB_UTIL_DSP, EEB_UTIL_COUNT };

struct eeb_util {
    double used[EEB_UTIL_COUNT];      /* from the Used column (BRAM may be x.5) */
    double available[EEB_UTIL_COUNT]; /* from the Available column */
    double frac[EEB_UTIL_COUNT];      /* used / available, in [0, 1] */
    int line[EEB_UTIL_COUNT];         /* report line of each row; 0 if given */
    char family[16];                  /* "ultrascale", "versal", "7series" or "given" */
    char device[64];                  /* the report's "Device" field, or "" */
    char state[32];                   /* its "Design State" ("Routed"), or "" */
    int state_line;                   /* that field's line; 0 if none */
};

/* "lut", "ff", "bram", "dsp". */
const char *eeb_score_util_name(enum eeb_util_kind kind);

/*
 * Parses the text of a Vivado report_utilization report (UltraScale(+),
 * Versal or 7-series; with or without the Prohibited column).  name is used
 * in error messages, which name the line at fault.  Reports that do not
 * count the whole design are refused with EEB_EFORMAT and the report to give
 * instead: one whose Black Boxes section lists any (a block design's top
 * synthesized with its IP out of context), one made with -cells, -pblocks
 * or -hierarchical, one made by another command (Vitis's
 * report_accelerator_utilization kernel report), one of an out-of-context
 * synthesis ("out_of_context" in its header: one IP), and one whose LUT,
 * FF, BRAM and DSP are all 0.  A synthesized report is parsed: whether its
 * figures may give M_u is eeb_score_util_check_implemented's to say.
 */
int eeb_score_util_parse(const char *text, size_t len, const char *name, struct eeb_util *out,
                         char *err, size_t errlen);

/* Reads and parses a report file. */
int eeb_score_util_load(const char *path, struct eeb_util *out, char *err, size_t errlen);

/* Parses "lut=0.30,ff=0.19,bram=0.49,dsp=0.19" (fractions, all four, not
 * all 0). */
int eeb_score_util_from_spec(const char *spec, struct eeb_util *out, char *err, size_t errlen);

/*
 * Whether a report's figures are an implemented design's, which M_u needs:
 * its Design State one of placement's or routing's ("Fully Placed",
 * "Routed").  A synthesized design's counts are synthesis estimates, before
 * optimization and placement have kept or dropped what they do, so
 * EEB_EFORMAT names the report and the line.  A report without the header
 * (a copied table, state "") and the spec form are taken as they are.
 */
int eeb_score_util_check_implemented(const struct eeb_util *util, const char *name, char *err,
                                     size_t errlen);

/* A --util argument (REPORT|SPEC): a report file if one exists by that
 * name or the argument has no '=', else a spec.  A report must pass
 * eeb_score_util_check_implemented.  text, if not NULL, receives what was
 * parsed -- the report's text or the spec (free it). */
int eeb_score_util_arg(const char *arg, struct eeb_util *out, char **text, char *err,
                       size_t errlen);

/* M_u: the mean of the four fractions. */
double eeb_score_m_u(const struct eeb_util *util);

/* How far apart two readings of one design's fractions may be, per
 * resource: an absolute difference of 0.01 (one percentage point). */
#define EEB_UTIL_AGREE 0.01

/*
 * Checks that the fractions of given (named given_name: "the report
 * u.rpt") are those of ref (ref_name: "fx.xclbin's routed figures") within
 * EEB_UTIL_AGREE each; EEB_EINVAL names the first resource that is not
 * ("LUT 0.1120 in the report u.rpt, 0.2310 in fx.xclbin's routed figures:
 * more than 1 % apart").
 */
int eeb_score_util_agree(const struct eeb_util *given, const char *given_name,
                         const struct eeb_util *ref, const char *ref_name, char *err,
                         size_t errlen);

/* ---- Weights and S ---------------------------------------------------- */

struct eeb_weights {
    double u, t, p, s; /* w_u, w_t, w_p, w_s: each in [0, 1], summing to 1 */
};

/* Checks the weights: each finite and in [0, 1], sum 1 within 1e-9. */
int eeb_score_weights_check(const struct eeb_weights *w, char *err, size_t errlen);

/* Parses and checks "wu,wt,wp,ws", e.g. "0.1,0.1,0.4,0.4". */
int eeb_score_weights_parse(const char *spec, struct eeb_weights *out, char *err, size_t errlen);

struct eeb_score_input {
    double m_u;      /* mean utilization, [0, 1] */
    double t_s;      /* fine-tune wall time T, seconds, > 0 */
    double t_max_s;  /* time budget T_max, seconds, > 0 */
    double energy_j; /* fine-tune energy E, joules, >= 0 */
    double p_max_w;  /* power budget P_max, watts, > 0 */
    double m_s;      /* task metric, [0, 1] */
    struct eeb_weights w;
};

struct eeb_score {
    double m_u, m_t, m_p, m_s;
    double t_s;          /* T after clamping to T_max */
    int t_clamped;       /* 1 if the given T exceeded T_max */
    double mean_power_w; /* E / T (the unclamped T) */
    int pass;            /* 0: the power budget failed and S is not computed */
    double s;            /* the score; NAN when !pass */
    char reason[160];    /* why the run failed, or "" */
};

/*
 * Computes the four metrics and S.  A mean power E/T above P_max fails the
 * run (a mean above P_max implies a window above it); the moving-window rule
 * over the samples is eeb_score_power_check().  Returns EEB_EINVAL, naming the
 * input, for values out of range; a failed budget is not an error.
 */
int eeb_score_compute(const struct eeb_score_input *in, struct eeb_score *out, char *err,
                      size_t errlen);

/* ---- The P_max rule --------------------------------------------------- */

struct eeb_power_rule {
    double window_s;    /* the moving-average window, seconds (default 1) */
    double min_rate_hz; /* fewer samples per second than this fails the run (fewer than
                         * span x rate: one short of (n - 1) / span is the ticks' placement) */
};

struct eeb_psample {
    int64_t t_ns; /* CLOCK_MONOTONIC nanoseconds, strictly increasing */
    double watts;
};

struct eeb_power_verdict {
    int pass;
    double worst_w;    /* the highest window mean, watts */
    double worst_t0_s; /* that window, seconds after the first sample */
    double worst_t1_s;
    double rate_hz;   /* achieved sample rate: (n - 1) / span */
    size_t n_windows; /* windows examined */
    int short_series; /* the whole series spans less than one window */
    char reason[256]; /* every reason the run failed, "; "-separated */
};

/*
 * Applies the P_max rule: from each sample, the shortest run of consecutive
 * samples spanning at least window_s; its trapezoidal mean power must not be
 * above P_max (equal passes).  Power is quantized to microwatts and the
 * comparison made in exact integer arithmetic, so a trace held at exactly
 * P_max passes on every machine.  A series shorter than the window is judged
 * as one window and flagged.  Needs n >= 2.
 */
int eeb_score_power_check(const struct eeb_psample *samples, size_t n, double p_max_w,
                          const struct eeb_power_rule *rule, struct eeb_power_verdict *out,
                          char *err, size_t errlen);

/* ---- The rules file (scoring/rules/v1.json) --------------------------- */

struct eeb_rules {
    char version[16]; /* "rules_version" */
    struct eeb_weights weights[EEB_TASK_COUNT];
    struct eeb_power_rule power;
};

/* Parses rules JSON; errors name the key ("tasks.det.weights.u: ..."). */
int eeb_score_rules_parse(const char *json, size_t len, const char *name, struct eeb_rules *out,
                          char *err, size_t errlen);

/* Reads a rules file; path NULL loads the v1 rules built into eeb. */
int eeb_score_rules_load(const char *path, struct eeb_rules *out, char *err, size_t errlen);

/* The v1 rules file as built into the binary, NUL-terminated. */
extern const char eeb_score_rules_v1[];

/* ---- Aggregation over repeated runs ----------------------------------- */

struct eeb_aggregate {
    size_t n;
    double median;
    double olympic_mean; /* mean without the best and the worst when n >= 3 */
    double mean;
    double min, max;
    double stddev; /* sample standard deviation (n - 1); 0 when n == 1 */
};

int eeb_score_aggregate(const double *x, size_t n, struct eeb_aggregate *out, char *err,
                        size_t errlen);

#endif
