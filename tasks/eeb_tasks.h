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
 * A batch of a task's items in one of two layouts:
 *   the net's     (eeb_batcher_new): frames stacked along the channels,
 *                 H x W x (T * C) bytes an item, and labels as the net's
 *                 loss takes them, eeb_task_label_count(net) an item;
 *   the shard's   (eeb_batcher_new_as_stored, and what a test-stage
 *                 predictor is given): items as the shard holds them,
 *                 T x H x W x C bytes each (frame-major), and the shard's
 *                 labels -- a class an item (cls, video), or a box count
 *                 an item and the boxes (det) -- or none (predicting).
 * Items follow one another; fields a layout does not use are NULL.
 */
struct eeb_task_batch {
    int n;
    const uint8_t *pixels;
    const int32_t *labels;       /* the net's: its loss's; the shard's: n classes (cls, video) */
    const int32_t *box_counts;   /* the shard's, det: n counts */
    const struct eeb_box *boxes; /* the shard's, det: every item's boxes, item by item */
};

/*
 * Batches from a shard, through a shuffle window of `window` records (the
 * memory bound): each item is drawn at random from the window and its slot
 * refilled from the stream.  The order depends only on seed and epoch, so
 * both layouts give the same items in the same order.
 */
struct eeb_batcher;

/* Batches in the net's layout, for net (checked against the shard). */
int eeb_batcher_new(struct eeb_batcher **out, struct eeb_shard *shard, const struct eeb_net *net,
                    int batch, int window, uint64_t seed, char *err, size_t errlen);
/* Batches in the shard's layout, with the shard's labels: what a system
 * under test trains on. */
int eeb_batcher_new_as_stored(struct eeb_batcher **out, struct eeb_shard *shard, int batch,
                              int window, uint64_t seed, char *err, size_t errlen);
/* The next batch of up to `batch` items, in the batcher's layout (b->n == 0
 * at the end of an epoch); the buffers stay valid until the next call. */
int eeb_batcher_draw(struct eeb_batcher *bt, struct eeb_task_batch *b, char *err, size_t errlen);
/* The same as the accelerator takes it: a batcher in the net's layout
 * only (EEB_EINVAL otherwise). */
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

/* What a predictor says of one test item: the kind of the shard's task
 * (eeb_task_ops.prediction) says which half it fills.  The evaluation
 * judges it and hands it on as a struct eeb_task_prediction (with the
 * item's id and truth). */
struct eeb_task_predicted {
    int nranked;                  /* ranked: 0..EEB_TOPK_MAX classes, 0..classes-1, */
    int ranked[EEB_TOPK_MAX];     /*   best first */
    float scores[EEB_TOPK_MAX];   /*   their scores, any monotone scale (not judged) */
    int nboxes;                   /* boxes: 0..opt->max_boxes, after NMS, best first */
    struct eeb_scored_box *boxes; /* the evaluation's array of opt->max_boxes (continuous pixels) */
};

/*
 * What predicts the test items: eeb's net on an accelerator
 * (eeb_task_evaluate), or a system under test.  It sees the items, never
 * their labels.
 */
struct eeb_task_predictor {
    /* optional: NULL means nothing to prepare.  Called once, before the
     * first batch, with the test shard's header and the options (batch:
     * the most items a call gets; max_boxes); non-zero (err filled) ends
     * the evaluation. */
    int (*start)(void *arg, const struct eeb_shard_info *info,
                 const struct eeb_task_eval_options *opt, char *err, size_t errlen);
    /* Predicts b's 1..opt->batch items, in the shard's layout without
     * labels, into out[0 .. b->n - 1] (boxes already point at their
     * arrays).  Non-zero (err filled) ends the evaluation. */
    int (*predict)(void *arg, const struct eeb_task_batch *b, struct eeb_task_predicted *out,
                   char *err, size_t errlen);
    void *arg;
};

/*
 * Predicts every record of the shard at shard_path through p, a batch at a
 * time in shard order, and scores the predictions: ranked classes against
 * the item's class, or boxes judged by the VOC devkit's rules against the
 * shard's boxes.  A prediction out of its bounds (a count, or a class the
 * shard does not have) is EEB_EINVAL naming the item.
 */
int eeb_task_evaluate_with(const struct eeb_task_predictor *p, const char *shard_path,
                           const struct eeb_task_eval_options *opt, struct eeb_task_score *score,
                           char *err, size_t errlen);

/*
 * eeb_task_evaluate_with, the items predicted by accelerator a (loaded
 * with net) and turned into predictions by eeb_task_decode.
 */
int eeb_task_evaluate(struct eeb_accel *a, const struct eeb_net *net, const char *shard_path,
                      const struct eeb_task_eval_options *opt, struct eeb_task_score *score,
                      char *err, size_t errlen);

/* ---- eeb's nets: outputs to predictions ---- */

/* Turns an eeb net's outputs into predictions, holding the room it needs. */
struct eeb_task_decoder;

/* A decoder for net's outputs on items of info, with opt's min_score,
 * nms_iou and max_boxes (free it with eeb_task_decoder_free).  EEB_ENOMEM. */
int eeb_task_decoder_new(struct eeb_task_decoder **out, const struct eeb_net *net,
                         const struct eeb_shard_info *info, const struct eeb_task_eval_options *opt,
                         char *err, size_t errlen);
void eeb_task_decoder_free(struct eeb_task_decoder *d);

/*
 * One item's outputs (the loss layer's input) as its prediction, as the
 * test stage judges eeb's nets, by what info's task predicts: ranked, the
 * EEB_TOPK_MAX best classes, best first (ties: the lower class first),
 * their scores the outputs; boxes, the grid decoded (eeb_task_decode_grid
 * at min_score), non-maximum suppressed per class (eeb_nms at nms_iou) and
 * cut to max_boxes, written to p->boxes (the caller's, room for
 * max_boxes).  EEB_ENOMEM.
 */
int eeb_task_decode(struct eeb_task_decoder *d, const float *out, struct eeb_task_predicted *p,
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
