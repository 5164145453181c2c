/*
 * eeb_task_ops.h - the tasks behind one ops table, as accelerators and
 * power sources are: each task is one constant struct eeb_task_ops in a
 * file of its own (task_cls.c, task_det.c, task_video.c) saying what its
 * items are, what its test stage predicts and how M_s counts it, its
 * embedded default, the data it imports and generates and its reference
 * model; registry.c lists them.  Code outside tasks/ asks a task's ops and
 * never compares task numbers, so a new task is a new file here and a line
 * in the registry (and its identity in common/).
 *
 * A task's identity -- enum eeb_task and its name, "cls" -- is common/'s
 * (eeb_common.h): shard headers, model files, the run database and the
 * rules file store it, and rooms below tasks/ read those.
 */
#ifndef EEB_TASK_OPS_H
#define EEB_TASK_OPS_H

#include "common/eeb_common.h"
#include "eeb_gen.h"
#include "eeb_import.h"
#include "eeb_prediction.h"
#include "eeb_shard.h"
#include "fpga/net/eeb_net.h"

#include <stdint.h>

#define EEB_TASK_OPS_VERSION 1

/* Frames per clip a reference model takes, and the generator and the
 * importers make (at least 2). */
#define EEB_TASK_MAX_FRAMES 64

/* The embedded default of a task: synthetic data sizes, the base model's
 * pre-training, and the fine-tune run's budgets and schedule. */
struct eeb_task_profile {
    int size, frames;                   /* pixels per side, frames per item */
    int pretrain_n, finetune_n, test_n; /* records */
    int pretrain_epochs;
    double lr; /* pre-training and fine-tuning */
    int epochs;
    double t_max_s, p_max_w;
    const char *design; /* the PE array the analytical model predicts */
};

/* The embedded default's design: the one `eeb dse` finds best for the cls
 * model on the ZCU104 under the default budgets (fpga/model). */
#define EEB_TASK_DESIGN "device=zcu104,pes=4,macs=16,clock_mhz=250,ddr=1,mult=dsp2"

struct eeb_task_ops {
    int version;        /* EEB_TASK_OPS_VERSION */
    enum eeb_task task; /* its identity (eeb_task_name gives its name) */
    const char *metric; /* M_s in words: "top-5 accuracy", "mAP@0.5" */
    /* what a training step's `correct` counts (eeb_task_targets):
     * "top-1", "object-cell class" */
    const char *train_metric;
    /* what its test stage predicts for an item (the record it stores) and
     * what it is judged against: ranked classes against the item's class
     * (its records carry a label), or boxes against the item's boxes (its
     * records carry boxes, their label 0) */
    enum eeb_prediction_kind prediction;
    int clips;                       /* 1: an item is a clip of frames; 0: an image (1 frame) */
    struct eeb_task_profile profile; /* its embedded default (`eeb run` without data) */
    enum eeb_import_format import;   /* the dataset layout `eeb data import` makes it from */

    /* the synthetic data (gen.c): classes, their names, one record */
    int gen_classes;
    void (*gen_class_name)(int k, char name[EEB_SHARD_MAX_NAME + 1]);
    void (*gen_record)(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng);

    /* the reference model (models.c): the features of info's items (their
     * layer, or negative with net->err), the head and loss on them */
    int (*model_features)(struct eeb_net *net, const struct eeb_shard_info *info);
    int (*model_head)(struct eeb_net *net, int features, int classes);
    enum eeb_layer_kind loss; /* the loss its models end in */
};

/* Tasks built in, NULL-terminated. */
const struct eeb_task_ops *const *eeb_task_list(void);
/* A task's ops, or NULL for a number no task has. */
const struct eeb_task_ops *eeb_task_get(enum eeb_task task);
/* A task's ops by its name ("cls"), or NULL. */
const struct eeb_task_ops *eeb_task_find(const char *name);
/* The task a dataset layout is imported into, or NULL. */
const struct eeb_task_ops *eeb_task_importing(enum eeb_import_format format);

/* The task's metric M_s in words (its ops' metric), "?" for no task. */
const char *eeb_task_metric(enum eeb_task task);
/* A task as a model file holds it (eeb_model_load's task) in words: its
 * name, or "none" for a model of no task (EEB_MODEL_NO_TASK). */
const char *eeb_task_name_or_none(int task);
/* The task's embedded default (its ops' profile). */
const struct eeb_task_profile *eeb_task_profile(enum eeb_task task);

#endif
