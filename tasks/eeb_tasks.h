/*
 * eeb_tasks.h - what each task of Tao et al. (Table 2) brings to a run: its
 * reference model, the labels its loss wants, and batches streamed from
 * a shard.
 */
#ifndef EEB_TASKS_H
#define EEB_TASKS_H

#include "fpga/accel/eeb_accel.h"
#include "eeb_metrics.h"
#include "fpga/net/eeb_net.h"
#include "eeb_shard.h"
#include "eeb_task_ops.h"

#include <stddef.h>
#include <stdint.h>

/*
 * The task's reference model for the shard's items, He-initialized from
 * seed.  cls: a small residual CNN (three stride-2 stages, two residual
 * blocks, global pooling, fc); det: the same backbone and a single-shot
 * grid head, one box per cell of the input/8 grid (YOLO v1 style); video:
 * a slow-fusion CNN over the stacked frames (groups of 4 frames fused in
 * pairs, then all together), global pooling, fc.
 */
int eeb_task_model(const struct eeb_shard_info *info, uint64_t seed, struct eeb_net **out,
                   char *err, size_t errlen);

/* The net's input for items of this shard: frames stacked along channels.
 * EEB_EINVAL naming both shapes if they differ, or the class counts. */
int eeb_task_check_model(const struct eeb_net *net, const struct eeb_shard_info *info, char *err,
                         size_t errlen);

/* int32 labels per item the net's loss takes: 1 (softmax), or 6 per grid
 * cell (grid loss). */
size_t eeb_task_label_count(const struct eeb_net *net);

/* What a batch's train result `correct` counts out of: its items
 * (softmax), or its object cells (grid). */
long eeb_task_targets(const struct eeb_net *net, const struct eeb_batch *b);

/*
 * A record's labels for the net's loss: its class, or grid targets -- the
 * cell holding a box's centre gets the object flag, the class, the centre's
 * offset in the cell and the square roots of the box's width and height as
 * fractions of the image (Q16).  Difficult boxes are left out; of two boxes
 * in one cell the larger wins.
 */
void eeb_task_labels(const struct eeb_net *net, const struct eeb_shard_info *info,
                     const struct eeb_record *r, int32_t *labels);

/* Copies a record's pixels with frames stacked along channels, as the
 * net takes them: the item T x H x W x C becomes H x W x (T * C). */
void eeb_task_stack_frames(const struct eeb_shard_info *in, const uint8_t *src, uint8_t *dst);

/*
 * Batches from a shard, through a shuffle window of `window` records (the
 * memory bound): each item is drawn at random from the window and its slot
 * refilled from the stream.  The order depends only on seed and epoch.
 */
struct eeb_batcher;

int eeb_batcher_new(struct eeb_batcher **out, struct eeb_shard *shard, const struct eeb_net *net,
                    int batch, int window, uint64_t seed, char *err, size_t errlen);
/* The next batch of up to `batch` items (b->n == 0 at the end of an
 * epoch); the buffers stay valid until the next call. */
int eeb_batcher_next(struct eeb_batcher *bt, struct eeb_batch *b, char *err, size_t errlen);
/* Starts the next epoch. */
int eeb_batcher_rewind(struct eeb_batcher *bt, char *err, size_t errlen);
void eeb_batcher_free(struct eeb_batcher *bt);

/* ---- the test stage ---- */

/* One test item's prediction as the evaluator judged it: enough, with the
 * truth, to compute the metric again without the shard. */
struct eeb_task_prediction {
    enum eeb_prediction_kind kind; /* the shard's task's: which fields below it fills */
    uint64_t index;                /* the record's position in the shard */
    const char *id;
    int label;   /* cls, video: the true class */
    int nranked; /* cls, video: the best classes, best first */
    const int *ranked;
    int nboxes;                         /* det: the boxes reported, after NMS, best first */
    const struct eeb_scored_box *boxes; /*      (continuous pixels) */
    int ntruth;                         /* det: the record's ground truth */
    const struct eeb_box *truth;
};

struct eeb_task_eval_options {
    int batch;               /* items per predict call (at most the backend's batch_max) */
    double iou;              /* det: IoU a detection needs to be a true positive */
    double nms_iou;          /* det: overlap above which NMS drops the lower box */
    float min_score;         /* det: boxes scoring less are not reported */
    int max_boxes;           /* det: per image, after NMS */
    const char *predictions; /* NULL, or where to write the predictions: a CSV
                                file (cls, video) or a directory of VOC devkit
                                result files (det), the formats `eeb eval` reads */
    void (*progress)(uint64_t done, uint64_t total, void *arg); /* after each batch */
    /* NULL, or called for every item in shard order; a non-zero return
     * (with err filled) stops the evaluation and is returned */
    int (*on_prediction)(void *arg, const struct eeb_task_prediction *p, char *err, size_t errlen);
    void *arg;
};

/* batch 32, IoU 0.5, NMS 0.45, min score 0.005, 100 boxes, no files. */
void eeb_task_eval_defaults(struct eeb_task_eval_options *opt);

/* The test stage's figures: top-k counts (cls, video) or mAP (det), and
 * value, the task's M_s (top-5 accuracy or mAP@iou, all-point AP). */
struct eeb_task_score {
    enum eeb_prediction_kind prediction; /* the shard's task's: top-k or mAP */
    uint64_t items, detections;
    struct eeb_topk topk;
    double map; /* NaN when no class has ground truth */
    double value;
};

/*
 * Predicts every record of the shard at shard_path on accelerator a
 * (loaded with net) and scores the predictions: ranked classes, or the
 * grid detector's boxes -- decoded, non-maximum suppressed per class --
 * judged by the VOC devkit's rules against the shard's boxes.
 */
int eeb_task_evaluate(struct eeb_accel *a, const struct eeb_net *net, const char *shard_path,
                      const struct eeb_task_eval_options *opt, struct eeb_task_score *score,
                      char *err, size_t errlen);

/*
 * One item's grid output (loss layer input, cells x (5 + classes)) as
 * boxes in the shard's pixels: for every cell and class, score =
 * sigmoid(objectness) x softmax class probability, kept if >= min_score;
 * centre = (cell + offset) / grid, side = (sqrt side)^2, clamped to the
 * image.  Returns how many were written (at most max; none for a net
 * scoring more than EEB_SHARD_MAX_CLASSES classes).
 */
int eeb_task_decode_grid(const struct eeb_net *net, const struct eeb_shard_info *info,
                         const float *out, float min_score, struct eeb_scored_box *boxes, int max);

#endif
