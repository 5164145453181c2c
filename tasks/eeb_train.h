/*
 * eeb_train.h - the training loop, once: passes over a shard's batches,
 * each batch trained by a step function (eeb's net on an accelerator,
 * eeb_trainer_accel_step, or a system under test); eeb run's fine-tuning
 * worker trains through it.  And the reference model trained on a shard
 * (eeb model pretrain, and the embedded default's base model).
 */
#ifndef EEB_TRAIN_H
#define EEB_TRAIN_H

#include "fpga/accel/eeb_accel.h"
#include "tasks/eeb_tasks.h"

#include <stdio.h>

/* What one training step reports of its batch. */
struct eeb_trainer_step {
    int has_loss;          /* 0: the step reports no loss (loss is ignored) */
    double loss;           /* the batch's mean loss */
    long correct, counted; /* of `counted` targets (items, or object cells), how
                              many came out right (0, 0: not counted) */
    int done;              /* 1: training is over, no more batches */
};

/* eeb's net on an accelerator, as a trainer's step (train_arg a struct
 * eeb_trainer_accel): batches in the net's layout (eeb_batcher_new), the
 * accelerator's train_batch, its loss, and `correct` out of
 * eeb_task_targets. */
struct eeb_trainer_accel {
    struct eeb_accel *acc;
    const struct eeb_net *net;
};
int eeb_trainer_accel_step(void *arg, const struct eeb_task_batch *b, struct eeb_trainer_step *out,
                           char *err, size_t errlen);

/* What trains, and how far.  step counts the batches of every pass. */
struct eeb_trainer {
    struct eeb_batcher *bt;
    /* One training step on a batch of bt, in its layout: fills *out (zeroed
     * before the call); non-zero (err filled) ends the pass with it. */
    int (*train)(void *train_arg, const struct eeb_task_batch *b, struct eeb_trainer_step *out,
                 char *err, size_t errlen);
    void *train_arg;
    long step;      /* batches trained so far; eeb_train_pass counts on */
    long max_steps; /* -1: no limit */
    int done;       /* a step said training is over: passes train no more */
    /* optional: NULL means no early stop.  Asked before every batch;
     * nonzero stops the pass at that batch boundary. */
    int (*stop)(void *arg);
    /* optional: NULL means nobody watches.  After every batch: its items
     * and mean loss (NAN when the step reports none). */
    void (*on_step)(void *arg, long step, int items, double loss);
    void *arg;
};

/* One pass, as far as it went. */
struct eeb_pass {
    long items, correct, targets; /* correct out of targets: the steps' `counted` */
    double loss_sum;              /* the batches' mean losses times their items, */
    long loss_items;              /*   of the batches that reported a loss */
    int finished;                 /* the shard ran out: a whole epoch */
};

/* Pass `epoch` (1..; the batches rewound after the first) until the shard
 * runs out, t->max_steps is reached, t->stop says so or a step says it is
 * done (t->done: the batch counts, and later passes train nothing).  A
 * reported loss that is not finite is an error naming the step. */
int eeb_train_pass(struct eeb_trainer *t, int epoch, struct eeb_pass *p, char *err, size_t errlen);

/* The reference model trained on a shard of its task. */
struct eeb_pretrain {
    enum eeb_task task;
    const char *data, *out; /* the shard; the model written after every epoch */
    const char *init;       /* a model to start from, or NULL: eeb_task_model's */
    const char *backend;    /* the accelerator that trains */
    struct eeb_accel_config cfg;
    double epochs, steps; /* steps <= 0: no limit */
    double window, seed;
    enum eeb_format format; /* of the model written */
    FILE *log;              /* a line at the start and one per epoch, or NULL */
};

/* Everything but the task, the shard and the output: the fp32 backend,
 * 10 epochs, a 1024-record window, seed 1, a float32 model. */
void eeb_pretrain_defaults(struct eeb_pretrain *a);

int eeb_pretrain(const struct eeb_pretrain *a, char *err, size_t errlen);

#endif
