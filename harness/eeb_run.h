/*
 * eeb_run.h - the benchmark run of seed 004 (Fig. 3) on one machine, and
 * what is done with a run database afterwards.
 *
 *   INIT -> DEPLOY -> FINETUNE -> STOPPED -> TEST -> SCORE -> DONE | FAILED
 *
 * Each transition is a state in the run database and an event on the
 * power samples' clock.  Only FINETUNE ("finetune_begin" .. "finetune_end")
 * is metered for M_p; the data is loaded into memory before it.  Sections:
 * the configuration, the run, the check, the report.
 */
#ifndef EEB_RUN_H
#define EEB_RUN_H

#include "eeb_accel.h"
#include "eeb_common.h"
#include "eeb_power.h"
#include "eeb_score.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- configuration ---- */

/* Everything a run is given: from a JSON file (keys named as the options,
 * '-' written '_'), then options.  Strings are owned (eeb_run_config_free). */
struct eeb_run_config {
    int task;                      /* enum eeb_task, or -1 until given */
    char *finetune, *test, *model; /* the fine-tune and test shards, the pre-trained model */
    char *backend;
    char *xclbin;   /* xrt: the accelerator's xclbin */
    double device;  /* xrt: the device index */
    char *design;   /* the analytical model's design (k=v,...); NULL: the xclbin's */
    char *power;    /* power source URI; NULL: the modeled power (sim:profile=model) */
    double rate_hz; /* sampling */
    double t_max_s, p_max_w, grace_s;
    int abort_on_pmax;
    char *rules; /* a rules file; NULL: the built-in v1 */
    char *util;  /* a utilization report, or lut=..,ff=..,bram=..,dsp=.. */
    double declared_power_w;
    double seed, epochs, steps, batch, frozen, window;
    double lr, momentum, decay;
    char *db, *report, *save_model, *predictions;
    char *server; /* official mode: the evaluation server's URL (hooks' server its client) */
};

/* Nothing set: task -1, NULL paths, NAN budgets; eeb_run_config_finish
 * fills what is left from the task's embedded default. */
void eeb_run_config_init(struct eeb_run_config *c);
void eeb_run_config_free(struct eeb_run_config *c);

/* The keys a configuration takes, NULL-terminated, as option names
 * ("tmax", "abort-on-pmax"), and one line of help each. */
struct eeb_run_key {
    const char *name, *arg, *help;
};
const struct eeb_run_key *eeb_run_keys(void);

/* Sets one key from text (an option's argument; "1"/"0" for switches);
 * errors name the key and the source ("--tmax", "run.json: key 'tmax'"). */
int eeb_run_config_set(struct eeb_run_config *c, const char *key, const char *value,
                       const char *where, char *err, size_t errlen);

/* Reads a JSON configuration file: one object of those keys (numbers,
 * strings, booleans); an unknown key or a wrong type is an error naming the
 * file, the line and the key.  Keys already set are kept (options win). */
int eeb_run_config_load(struct eeb_run_config *c, const char *path, char *err, size_t errlen);

/* The embedded default of a task: synthetic data sizes, the base model's
 * pre-training, and the fine-tune run's budgets and schedule. */
struct eeb_run_profile {
    int size, frames;                   /* pixels per side, frames per item */
    int pretrain_n, finetune_n, test_n; /* records */
    int pretrain_epochs;
    double lr; /* pre-training and fine-tuning */
    int epochs;
    double t_max_s, p_max_w;
    const char *design; /* the PE array the analytical model predicts */
};

/* The embedded default's design (see run_config.c). */
#define EEB_RUN_DESIGN "device=zcu104,pes=4,macs=16,clock_mhz=250,ddr=1,mult=dsp2"
const struct eeb_run_profile *eeb_run_profile(enum eeb_task task);

/* Fills every unset field from the task's profile and checks the whole:
 * a task, existing inputs, budgets > 0, rates in range. */
int eeb_run_config_finish(struct eeb_run_config *c, char *err, size_t errlen);

/* ---- the run ---- */

/* What the live display shows; handed to the progress hook. */
struct eeb_run_progress {
    enum eeb_run_state state;
    int epoch, epochs;
    long step, steps; /* steps: the whole schedule's, or -1 */
    double elapsed_s; /* in the stage */
    double t_max_s;
    double watts, p_max_w; /* now */
    double reading_age_s;  /* since the meter's last reading; NAN before the first */
    double joules;         /* since fine-tuning began */
    double loss;           /* the mean of the last steps */
    uint64_t tested, test_items;
    int over_pmax; /* the live 1 s mean went above P_max */
};

struct eeb_client;

struct eeb_run_hooks {
    const struct eeb_accel_ops *backend; /* NULL: config's backend by name */
    void (*progress)(const struct eeb_run_progress *p, void *arg);
    void *arg;
    double progress_every_s;             /* how often progress is called (default 0.25) */
    const volatile sig_atomic_t *cancel; /* NULL, or set (by a signal) to stop the run */
    struct eeb_client *server;           /* official mode (config's server): its client */
};

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
    double energy_j, t_s, worst_w;
    double t_max_s, p_max_w; /* the budgets the run was held to */
    char design[512];        /* the modeled device's design, or "" (run only) */
    double device_time_s;    /* its modeled time for the steps run; NAN without one */
    double device_energy_j;  /* and energy */
    uint64_t steps, test_items;
    int64_t server_run; /* official mode: the run's id on the server */
    char why[768];      /* every reason it failed or is invalid ("; "-separated) */
};

/* The verdict in a word: incomplete, aborted, invalid, pass or fail (in
 * capitals if upper). */
const char *eeb_run_verdict(const struct eeb_run_outcome *o, int upper);

/* Runs the whole workflow.  Returns EEB_OK when the run was judged (look at
 * out->pass), or an error; either way a run that was created is left in a
 * terminal state, with the error as an "error" event.
 *
 * Official mode (c->server, with hooks->server): the server drives the
 * stages.  The run is registered after INIT, which gives it T_max, P_max,
 * the rules and the fine-tune set it must train on; at STOPPED the server
 * is told "complete" and sends the test inputs without labels; the
 * predictions are made on them, and SCORE sends the power log and the
 * predictions and takes the server's verdict (its M_s) as the run's.  A
 * submission that fails there leaves the record whole, to be sent again
 * with `eeb submit --resume`. */
int eeb_run_execute(const struct eeb_run_config *c, const struct eeb_run_hooks *hooks,
                    struct eeb_run_outcome *out, char *err, size_t errlen);

/* ---- the check ---- */

/*
 * Judges run from the database at db_path: T from the fine-tune events,
 * E, validity and the P_max rule from its samples (eeb_power_summarize),
 * M_u, the weights and the budgets from its stored configuration, and
 * M_s as given, or, if m_s is NAN, recounted from its stored predictions
 * (which hold the truth).  An abort or error event in the record makes the
 * run aborted or invalid.  Fills out's verdict fields; returns an error
 * only for a database that cannot be read.
 */
int eeb_run_judge(const char *db_path, int64_t run, double m_s, struct eeb_run_outcome *out,
                  char *err, size_t errlen);

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
    size_t n; /* 0: the run was not judged (incomplete, aborted, an error) */
};

/* Recomputes every metric and the verdict of run (0: the latest) from the
 * database alone and compares them with what the run stored, each figure
 * into figures (if not NULL). */
int eeb_run_check(const char *db_path, int64_t run, struct eeb_check_figures *figures,
                  struct eeb_run_outcome *out, char *err, size_t errlen);

/* ---- the report ---- */

/* Writes run's self-contained HTML report (inline SVG, no external
 * assets) to html_path, atomically. */
int eeb_run_report(const char *db_path, int64_t run, const char *html_path, char *err,
                   size_t errlen);

#endif
