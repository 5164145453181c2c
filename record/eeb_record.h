/*
 * eeb_record.h - what is done with a run's record (its run database)
 * once it is written: the outcome and its verdict, the judge that computes
 * them from the record alone, the results it stores, the check that
 * compares them with what the run stored, and the HTML report.  `eeb run`,
 * `eeb check`, `eeb report` and the evaluation server all judge a run
 * here, so they cannot disagree.
 */
#ifndef EEB_RECORD_H
#define EEB_RECORD_H

#include "common/eeb_common.h"
#include "rundb/eeb_rundb.h"
#include "scoring/eeb_score.h"

#include <stddef.h>
#include <stdint.h>

/* Director mode: the run's own power log against the server's meter in
 * time (eeb_power_align over the fine-tune window). */
struct eeb_meter_offset {
    int sought;         /* the run has its own log and a meter run with its window */
    int determinable;   /* s is the offset; else note says why there is none */
    int at_least;       /* the best match lay at the end of the shifts searched: the
                         * offset is at least s */
    double s;           /* how much later the run's log shows the load than the meter
                         * does (> 0: behind it), or NAN */
    double correlation; /* of the two traces there, or NAN */
    char note[200];     /* why not determinable, "" when it is */
};

/* The accuracy audit (harness/run_audit_accuracy.c, the rule in judge.c;
 * docs/check.md): of a system that saves its fine-tuned model as an .eebm,
 * EEB_AUDIT_SAMPLE test items (all, if fewer) drawn with the run's seed are
 * predicted again from that model by eeb's reference backend for its format,
 * and at least EEB_AUDIT_MIN_AGREEMENT of them must get the answer the
 * system gave in the test stage: the same top-1 class (cls, video), or the
 * same best detection (det: the same class, IoU >= EEB_AUDIT_IOU, or no
 * detection on either side). */
#define EEB_AUDIT_SAMPLE        64
#define EEB_AUDIT_MIN_AGREEMENT 0.9
#define EEB_AUDIT_IOU           0.5

/* The run's end, as eeb_run_execute and eeb_run_check compute it. */
struct eeb_run_outcome {
    int64_t run;
    char uuid[37];
    enum eeb_task task;
    char provenance[16];     /* modeled, measured or counter */
    char util_source[512];   /* M_u's: the report, the spec, or the xclbin (run only) */
    char backend_detail[64]; /* what the backend ran on (run only) */
    int complete;            /* the run reached a terminal state */
    int aborted;             /* stopped by the harness (a budget, a hung accelerator) */
    int tmax_reached;        /* fine-tuning was stopped at T_max */
    int valid;               /* the power measurement is valid and the records agree */
    int pass;                /* and no budget failed: S is defined */
    struct eeb_score score;
    int modeled_clock; /* T and E are the modeled device's (EEB_CLOCK_MODELED) */
    double energy_j, t_s, worst_w;
    /* E's and M_p's relative uncertainty: the largest the meter stated for
     * a reading (NAN: it stated none); and S's that makes, w_p M_p times it */
    double power_uncertainty, s_uncertainty;
    double host_time_s;      /* the fine-tune's wall time on the host (run only; never scored) */
    double window_s;         /* the P_max rule's window, worst_w's (the rules') */
    double t_max_s, p_max_w; /* the budgets the run was held to */
    char design[512];        /* the modeled device's design, or "" (run only) */
    double device_time_s;    /* its modeled time for the steps run; NAN without one */
    double device_energy_j;  /* and energy */
    uint64_t steps, test_items;
    int64_t server_run;  /* official mode: the run's id on the server */
    int64_t server_copy; /* eeb check: judged from the server's record of it, this run */
    struct eeb_meter_offset meter_offset; /* director mode (the judge's) */
    char why[768];   /* every reason it failed or is invalid ("; "-separated) */
    char audit[256]; /* the accuracy audit's result in words, "" if the record has none */
};

/* What the server that judges a run saw and alone could see: its copy of
 * the run's record holds them as an evaluator event (rundb's
 * EEB_FACT_* keys), written before the judge reads the record, so that
 * the judge applies the server's rules from the record alone and `eeb
 * check` of the copy gives the server's verdict. */
struct eeb_run_facts {
    int seen;                       /* the record holds them (a server's copy) */
    int official;                   /* a ranked run: its labels count only as below */
    int64_t registered, completed;  /* when the server saw register and complete (UTC ns) */
    char fine_tune[512];            /* why it did not fine-tune as the server saw, or "" */
    int64_t test_served, predicted; /* its inputs' first serving, its predictions' last change */
    double predict_within_s;        /* the deadline after the serving */
    double m_s;                     /* the labels' count (NAN: none, m_s_why says why) */
    char m_s_why[256];
    int64_t seed;       /* handed out (-1: none) */
    char round[65];     /* and the round whose division allows (64 at most) */
    int epochs_max;     /* epochs at most (0: any) */
    char meter[256];    /* why its meter (director mode) has no window, or "" */
    int audit_required; /* its record must hold the training audit (an official run) */
};

/* The facts as an evaluator event's payload (free it; NULL: out of memory). */
char *eeb_run_facts_json(const struct eeb_run_facts *f);
/* And back, from the payload's object (NULL: none, all unknown). */
struct json_t;
void eeb_run_facts_read(const struct json_t *payload, struct eeb_run_facts *f);

/* Why a run's labels may not count (its M_s, its S, a verdict on them),
 * "" if they may: it fine-tuned as the server saw, and an official run's
 * predictions followed its test inputs within the deadline.  The server
 * asks before it counts M_s (none is counted, stored or sent for a run
 * whose labels are barred); the judge, after. */
void eeb_run_labels_barred(const struct eeb_run_facts *f, char *why, size_t n);

/* The verdict in a word: incomplete, aborted, invalid, pass or fail (in
 * capitals if upper). */
const char *eeb_run_verdict(const struct eeb_run_outcome *o, int upper);

/* ---- the check ---- */

/*
 * Judges run from the database at db_path: T from the fine-tune events,
 * E, validity and the P_max rule from its samples (eeb_power_summarize),
 * M_u, the weights and the budgets from its stored configuration, and
 * M_s as given, or, if m_s is NAN, recounted from its stored predictions
 * (which hold the truth).  An abort or error event in the record makes the
 * run aborted or invalid.  In director mode E is the server's meter's, and
 * the run's own log must agree with it, in E to 5 % and in time to 0.5 s
 * where the load gives its timing (out->meter_offset).  Fills out's
 * verdict fields; returns an error only for a database that cannot be
 * read.
 */
int eeb_run_judge(const char *db_path, int64_t run, double m_s, struct eeb_run_outcome *out,
                  char *err, size_t errlen);

/* eeb_run_judge with the facts a server saw given (NULL: as its copy of
 * the record holds them): the server judges with the facts it is about to
 * write into the record with the verdict, in one transaction. */
int eeb_run_judge_with(const char *db_path, int64_t run, double m_s,
                       const struct eeb_run_facts *facts, struct eeb_run_outcome *out, char *err,
                       size_t errlen);

/* Whether a run on the modeled clock whose complete event says `said`
 * steps kept the schedule a server counted for it (`schedule` steps): it
 * took exactly those, unless it was stopped (its chain holds an abort or
 * an error: the run is then no pass), when it took no more.  A reason of
 * its own in the complete event changes nothing: T is counted in steps.
 * 0, or 1 with why it did not. */
int eeb_run_steps_off_schedule(double said, int stopped, double schedule, char *why, size_t whylen);

/* The training audit (record/audit.c): before fine-tuning and after it,
 * the system predicts EEB_TRAINING_AUDIT_ITEMS items of the fine-tune set (fewer
 * for a smaller set), drawn from the run's seed, so that a server that
 * handed the seed out draws the same.  Writes the slice's indices into the
 * fine-tune set, ascending and distinct, into idx[0 .. n - 1] and returns
 * n = min(EEB_TRAINING_AUDIT_ITEMS, set_items). */
#define EEB_TRAINING_AUDIT_ITEMS 16
int eeb_run_training_audit_slice(uint64_t seed, uint64_t set_items,
                                 uint64_t idx[EEB_TRAINING_AUDIT_ITEMS]);

/* Stores o's figures as run's results: M_u with util_provenance, T, E and
 * the power figures with the run's provenance, the rest as computed; a
 * figure that is NAN is left out (S unless the run passed). */
struct eeb_rundb;
int eeb_run_store_results(struct eeb_rundb *db, int64_t run, const struct eeb_run_outcome *o,
                          const char *util_provenance, char *err, size_t errlen);

/* A figure eeb check recomputes, beside what the run stored. */
struct eeb_check_figure {
    const char *key;   /* its name in the results table: m_u, t_s, pass... */
    const char *label; /* M_u, T, passed... */
    const char *unit;  /* "s", "J", or "" */
    double recomputed; /* NAN: the record gives none */
    double stored;     /* NAN: the run stored none */
    int agree;
};

enum { EEB_CHECK_FIGURES = 8 };

struct eeb_check_figures {
    struct eeb_check_figure f[EEB_CHECK_FIGURES];
    size_t n;                     /* 0: the run was not judged (incomplete, aborted, an error) */
    struct eeb_chain_check chain; /* its record's chain, verified */
};

/* The stored predictions' truth against the test shard at shard_path,
 * for a reviewer who holds it: its SHA-256 must be the run's recorded test
 * inputs', and each stored prediction's truth (label, boxes) the shard's
 * item's, so a record whose labels were replaced (by its predictions, say)
 * is found.  A disagreement is added to out->why and makes out invalid;
 * *agreed counts the predictions whose truth was compared and agreed.  An
 * error only for a shard or database that cannot be read. */
int eeb_run_check_test_shard(const char *db_path, int64_t run, const char *shard_path,
                             struct eeb_run_outcome *out, uint64_t *agreed, char *err,
                             size_t errlen);

/* The modeled device's figures a run was timed by, recomputed. */
struct eeb_device_check {
    int modeled;                    /* the run records a modeled device (design non-empty) */
    int recomputed;                 /* the figures below were recomputed; else note says why not */
    int agree;                      /* both equal the recorded ones, bit for bit */
    double train_step_s, train_w;   /* the analytical model's, or NAN */
    double stored_step_s, stored_w; /* the configuration's */
    char model[1024];               /* the model file read (or sought) */
    char note[1400];                /* why not recomputed, or "" */
};

/*
 * The modeled device of run (its configuration's device_model) recomputed
 * by the analytical model (eeb_perf_model) from what the record names: the
 * recorded design, the model file the run started from (model_path, else
 * the path its configuration records), and the training's batch and frozen
 * layers.  The figures are pure arithmetic of those, so train_step_s and
 * train_w must equal the recorded ones exactly; a disagreement, or a
 * design, batch or frozen count the model cannot take, is added to
 * out->why and makes out invalid.  A model file that is not at the
 * recorded path, or another file there, is no fault of the run: dev->note
 * says why nothing was recomputed.  An error for a model_path whose
 * SHA-256 is not the recorded one (naming both), a model file or database
 * that cannot be read.  A run without a modeled device: dev->modeled 0.
 */
int eeb_run_check_device(const char *db_path, int64_t run, const char *model_path,
                         struct eeb_run_outcome *out, struct eeb_device_check *dev, char *err,
                         size_t errlen);

/* Recomputes every metric and the verdict of run (0: the latest) from the
 * database alone and compares them with what the run stored, each figure
 * into figures (if not NULL), and verifies its chain: a link that breaks,
 * or no chain at all, makes it invalid. */
int eeb_run_check(const char *db_path, int64_t run, struct eeb_check_figures *figures,
                  struct eeb_run_outcome *out, char *err, size_t errlen);

/* ---- the report ---- */

/* Writes run's self-contained HTML report (inline SVG, no external
 * assets) to html_path, atomically.  Its plots draw at most two points a
 * pixel column (a column's lowest and highest), however many samples. */
int eeb_run_report(const char *db_path, int64_t run, const char *html_path, char *err,
                   size_t errlen);
/* The same report written to out (the caller's: an open_memstream, or a
 * file it made with the mode it wants). */
int eeb_run_report_write(const char *db_path, int64_t run, FILE *out, char *err, size_t errlen);

#endif
