/*
 * run_int.h - the parts of a run (harness/run*.c), one file per job:
 *
 *   run.c           the whole: the stages in order, events, states, cleanup
 *   run_prepare.c   INIT: the inputs read and checked, the device modeled,
 *                   the accelerator and the meter chosen; DEPLOY
 *   run_record.c    the configuration stored with the run, the run created
 *   run_power.c     the meter: the sampler's lifecycle, the modeled power
 *   run_ranging.c   the meter ranged on the workload before FINETUNE, the SUT
 *                   deployed again after it
 *   run_finetune.c  FINETUNE: the worker thread and the harness's clock
 *   run_audit_training.c
 *                   the training audit: a slice of the fine-tune set
 *                   predicted before and after FINETUNE
 *   run_test.c      STOPPED, TEST: the predictions made and stored
 *   run_audit_accuracy.c
 *                   the accuracy audit: the model saved at STOPPED, a sample
 *                   of the test answers checked against it after the test
 *   run_score.c     SCORE: the record judged, the verdict event
 *   run_local.c     the evaluator in this process (the test set's labels here)
 *   run_official.c  the evaluation server as the evaluator (eeb run --server)
 */
#ifndef EEB_RUN_INT_H
#define EEB_RUN_INT_H

#include "eeb_run.h"

#include "fpga/model/eeb_perf.h"
#include "rundb/eeb_rundb.h"
#include "sut/eeb_sut_host.h"
#include "tasks/eeb_tasks.h"

#include <jansson.h>

struct run_evaluator;

#define RUN_MAX_BOXES 100 /* det: boxes a SUT may predict per image (the test stage, the audit) */

/* The training audit's slice (run_audit_training.c): which items, and their pixels
 * as stored. */
struct run_training_audit {
    int n;
    uint64_t idx[EEB_TRAINING_AUDIT_ITEMS];
    size_t px;       /* bytes per item */
    uint8_t *pixels; /* n items */
};

struct run {
    const struct eeb_run_config *c; /* cfg, which official mode sets from the server */
    struct eeb_run_config cfg;
    const struct eeb_run_hooks *hooks;
    const struct run_evaluator *eval;
    struct eeb_run_outcome *out;
    struct eeb_rules rules;
    struct eeb_util util;
    const struct eeb_accel_ops *ops; /* eeb's own backend's table; NULL for a team's SUT */
    struct eeb_power_source *src;
    struct eeb_rundb *db;
    int64_t id;
    struct eeb_sampler *sampler; /* while sampling */
    struct eeb_net *net;         /* eeb's own model (an .eebm); NULL for a team's SUT */
    char *model_bytes;           /* the model file as hashed, handed to the SUT as a private copy */
    size_t model_len;
    char *xclbin_bytes; /* the xclbin (--xclbin) as hashed, likewise, or NULL */
    size_t xclbin_len;
    char private_dir[4100]; /* the SUT's private files, in the system's temporary space: */
    char model_copy[4200];  /*   the copies */
    char xclbin_copy[4200]; /*   ("" without an xclbin) */
    char workdir[4200];     /*   the SUT's work directory */
    struct eeb_perf perf;   /* the device the analytical model predicts */
    int modeled_device;     /* perf is set */
    int modeled_clock;      /* T is steps x perf.train_step_s, E steps x its energy */
    char *xclbin_design;    /* the xclbin's design as k=v,..., or NULL */
    struct eeb_sut *sut;
    struct eeb_sut_identity identity; /* what the SUT said it is when first opened */
    struct eeb_shard *shard;
    struct eeb_batcher *bt;
    char sha_model[EEB_SHA256_HEX], sha_finetune[EEB_SHA256_HEX], sha_test[EEB_SHA256_HEX];
    char sha_xclbin[EEB_SHA256_HEX];
    uint64_t finetune_items, test_items;
    uint64_t trained_items; /* the items of the train calls that returned OK */
    struct run_training_audit training_audit;
    int64_t ft_begin, ft_end;  /* the metered window */
    int abandoned;             /* the worker still holds sut and bt */
    char test_inputs[4200];    /* official mode: the server's test inputs, downloaded */
    int submitting;            /* official mode: the record is being sent */
    int unlogged;              /* fine-tuning stopped: the power log could not be written */
    struct run_stream *stream; /* official mode: the chain streamed (run_stream.c) */
    const char *tested;        /* the test inputs the test stage predicted, once it has */
    const char *audit_model;   /* the fine-tuned model the SUT saved, or NULL (audit_skip) */
    char audit_copy[4200];     /* a private file for it, when --save-model was not given */
    char audit_skip[256];      /* why no model was saved */
};

/*
 * Who holds the test set's labels and judges the run: this process
 * (run_local_evaluator) or the evaluation server (run_official_evaluator).
 * The stages call these where the two differ, and nowhere else ask which.
 */
struct run_evaluator {
    /* INIT, the fine-tune shard loaded: the test inputs checked.
     * optional: NULL means they come later (test_inputs) */
    int (*check_inputs)(struct run *r, char *err, size_t errlen);
    /* INIT done, before the run is created: the run registered, and the
     * terms it is held to taken.  optional: NULL means nobody to tell */
    int (*enroll)(struct run *r, char *err, size_t errlen);
    /* The run created: what the evaluator follows of it from here.
     * optional: NULL means nothing */
    int (*created)(struct run *r, char *err, size_t errlen);
    /* The run over, however it ended: what created started, stopped.
     * optional: NULL means nothing */
    void (*release)(struct run *r);
    /* The run failed after enroll, before its record was handed over: whoever
     * judges told why, so that it ends now.  optional: NULL means nobody */
    void (*abandon)(struct run *r, const char *why);
    /* FINETUNE, just before its begin event: whoever judges told that
     * fine-tuning starts now.  optional: NULL means nobody to tell */
    int (*begin)(struct run *r, char *err, size_t errlen);
    /* The configuration's keys that say who tests: "test", "official". */
    void (*describe)(const struct run *r, json_t *config);
    /* STOPPED: the path of the test inputs, ready to read. */
    int (*test_inputs)(struct run *r, const char **path, char *err, size_t errlen);
    /* SCORE: the verdict into r->out; m_s is the metric counted here, or
     * NAN when the test inputs held no labels. */
    int (*judge)(struct run *r, double m_s, char *err, size_t errlen);
    int labelled;       /* the test inputs hold the truth: predictions keep it */
    int judges_aborted; /* an aborted run is judged too (the server hears of it) */
};

extern const struct run_evaluator run_local_evaluator, run_official_evaluator;

/* run.c: the pieces every stage uses */
char *run_dump(json_t *payload);
int64_t run_event(struct run *r, const char *kind, json_t *payload);
int run_enter(struct run *r, enum eeb_run_state state, char *err, size_t errlen);
void run_progress(struct run *r, struct eeb_run_progress *p);
int run_cancelled(const struct run *r);

/* run_stream.c: official mode's chain sent to the server as it is
 * written, from start (the run created) to stop (fine-tuning over; every
 * link written by then sent).  stop is harmless without a start. */
int run_stream_start(struct run *r, char *err, size_t errlen);
int run_stream_stop(struct run *r, char *err, size_t errlen);
/* The links written so far sent now, not at the next beat: the fine-tune's
 * begin, which the server times the fine-tune from, waits for no beat. */
void run_stream_kick(struct run *r);
/* 1, with why, if the server refused the stream (a 4xx: the team revoked,
 * the run ended there): the fine-tune stops, aborted. */
int run_stream_refused(struct run *r, char *why, size_t n);

/* run_prepare.c */
int run_prepare(struct run *r, char *err, size_t errlen);
int run_hash_test(struct run *r, const char *path, char *err, size_t errlen);
/* The SUT opened (its private files made, the model loaded) before the
 * run is recorded, so that what it says it is (r->identity) is in the
 * stored configuration; run_deploy then records it deployed. */
int run_open(struct run *r, char *err, size_t errlen);
int run_deploy(struct run *r, char *err, size_t errlen);
/* The SUT closed and deployed again from the model as hashed, the
 * fine-tune's batches from the start (a "deployed" event saying why). */
int run_redeploy(struct run *r, const char *why, char *err, size_t errlen);

/* run_record.c */
json_t *run_device_model_json(const struct run *r);
char *run_config_json(const struct run *r);
int run_create(struct run *r, char *err, size_t errlen);

/* run_power.c */
void run_drive(struct run *r, double watts);
int run_start_sampling(struct run *r, char *err, size_t errlen);
int run_stop_sampling(struct run *r, int rc, char *err, size_t errlen);

/* run_ranging.c: the meter's ranging pass on the workload, before
 * FINETUNE (nothing for a meter without ranges, or --ranging-s 0). */
int run_ranging(struct run *r, char *err, size_t errlen);

/* run_audit_training.c: the slice read from the fine-tune shard (before the
 * batcher reads it), and predicted by the SUT, its answers recorded in a
 * training_audit event; when is EEB_TRAINING_AUDIT_BEFORE or EEB_TRAINING_AUDIT_AFTER. */
int run_training_audit_read(struct run *r, char *err, size_t errlen);
int run_training_audit(struct run *r, const char *when, char *err, size_t errlen);

/* run_finetune.c */
int run_finetune(struct run *r, char *err, size_t errlen);

/* run_test.c */
int run_test(struct run *r, struct eeb_task_score *score, char *err, size_t errlen);

/* run_audit_accuracy.c: STOPPED, the fine-tuned model saved (to --save-model, else
 * a private file); after the test, the audit and its event (nothing judged
 * here: the rule is record/judge.c's); at the end, the private file gone. */
int run_accuracy_save(struct run *r, char *err, size_t errlen);
int run_accuracy_audit(struct run *r, char *err, size_t errlen);
void run_accuracy_forget(struct run *r);

/* run_score.c */
int run_judge_record(struct run *r, int64_t record, double m_s, char *err, size_t errlen);
const char *run_judged_as(const struct eeb_run_outcome *o);
void run_score_event(struct run *r, int by_server);

#endif
