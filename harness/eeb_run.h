/*
 * eeb_run.h - the benchmark run of Tao et al. (Fig. 3) on one machine: its
 * configuration and the run itself.  What is done with its record
 * afterwards (the verdict, the check, the report) is record/eeb_record.h.
 *
 *   INIT -> DEPLOY -> FINETUNE -> STOPPED -> TEST -> SCORE -> DONE | FAILED
 *
 * Each transition is a state in the run database and an event on the
 * power samples' clock.  Only FINETUNE ("finetune_begin" .. "finetune_end")
 * is metered for M_p; the data is loaded into memory before it.  Sections:
 * the configuration, the run.
 */
#ifndef EEB_RUN_H
#define EEB_RUN_H

#include "fpga/accel/eeb_accel.h"
#include "common/eeb_common.h"
#include "power/eeb_power.h"
#include "scoring/eeb_score.h"
#include "record/eeb_record.h"

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
    char *backend;                 /* eeb's own, a team's library (a path), or exec:PROGRAM ARGS */
    char *sut_config;              /* a team's SUT: its configuration string */
    double sut_deadline;           /* a team's SUT: seconds a call may take */
    int in_process;                /* a team's library loaded into eeb (not hosted) */
    char *xclbin;                  /* xrt: the accelerator's xclbin */
    double device;                 /* xrt: the device index */
    char *design;                  /* the analytical model's design (k=v,...); NULL: the xclbin's */
    char *power;      /* power source URI; NULL: the modeled power (sim:profile=model) */
    double rate_hz;   /* sampling */
    double ranging_s; /* a meter with ranges: the ranging pass's seconds (NAN: min(T_max, 30)) */
    double t_max_s, p_max_w, grace_s;
    char *clock; /* EEB_CLOCK_*; NULL: modeled for an emulated run without --power */
    int abort_on_pmax;
    char *rules; /* a rules file; NULL: the built-in v1 */
    char *util;  /* a utilization report, or lut=..,ff=..,bram=..,dsp=.. */
    double declared_power_w;
    double seed, epochs, steps, batch, frozen, window;
    double lr, momentum, decay;
    char *db, *report, *save_model, *predictions;
    char *server; /* official mode: the evaluation server's URL (hooks' server its client) */
    /* official mode in a round: the entry the run is a run of, its division
     * and P_max tier (NULL, NAN: the server's default) */
    char *entry, *division;
    double tier_w;
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

/* Fills every unset field from the task's profile and checks the whole:
 * a task, existing inputs, budgets > 0, rates in range. */
int eeb_run_config_finish(struct eeb_run_config *c, char *err, size_t errlen);

/* ---- the run ---- */

/* The payload of a run's score event: its verdict, why, S; and the
 * server that judged it (o->server_run there), NULL: judged here. */
struct json_t;
struct json_t *eeb_run_score_json(const struct eeb_run_outcome *o, const char *server);

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
    int modeled;           /* elapsed_s, watts and joules are the modeled device's */
    uint64_t tested, test_items;
    int over_pmax; /* the live 1 s mean went above P_max */
};

struct eeb_client;

struct eeb_run_hooks {
    void (*progress)(const struct eeb_run_progress *p, void *arg);
    void *arg;
    double progress_every_s;             /* how often progress is called (default 0.25) */
    const volatile sig_atomic_t *cancel; /* NULL, or set (by a signal) to stop the run */
    struct eeb_client *server;           /* official mode (config's server): its client */
};

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

#endif
