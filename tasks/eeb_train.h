/*
 * eeb_train.h - the training loop, once: passes over a shard's batches on
 * an accelerator (eeb run's fine-tuning worker trains through it), and the
 * reference model trained on a shard (eeb model pretrain, and the embedded
 * default's base model).
 */
#ifndef EEB_TRAIN_H
#define EEB_TRAIN_H

#include "fpga/accel/eeb_accel.h"
#include "tasks/eeb_tasks.h"

#include <stdio.h>

/* What trains, and how far.  step counts the batches of every pass. */
struct eeb_trainer {
    struct eeb_accel *acc;
    struct eeb_batcher *bt;
    const struct eeb_net *net;
    long step;      /* batches trained so far; eeb_train_pass counts on */
    long max_steps; /* -1: no limit */
    /* optional: NULL means no early stop.  Asked before every batch;
     * nonzero stops the pass at that batch boundary. */
    int (*stop)(void *arg);
    /* optional: NULL means nobody watches.  After every batch: its items
     * and mean loss. */
    void (*on_step)(void *arg, long step, int items, double loss);
    void *arg;
};

/* One pass, as far as it went. */
struct eeb_pass {
    long items, correct, targets; /* correct out of targets: eeb_task_targets */
    double loss_sum;              /* the batches' mean losses times their items */
    int finished;                 /* the shard ran out: a whole epoch */
};

/* Pass `epoch` (1..; the batches rewound after the first) until the shard
 * runs out, t->max_steps is reached or t->stop says so.  A loss that is not
 * finite is an error naming the step. */
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
