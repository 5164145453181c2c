/*
 * eeb_tasks.h - what each task of seed 004 (Table 2) brings to a run: its
 * reference model, the labels its loss wants, and batches streamed from
 * a shard.
 */
#ifndef EEB_TASKS_H
#define EEB_TASKS_H

#include "eeb_accel.h"
#include "eeb_net.h"
#include "eeb_shard.h"

#include <stddef.h>
#include <stdint.h>

/*
 * The task's reference model for the shard's items, He-initialized from
 * seed.  cls: a small residual CNN (three stride-2 stages, two residual
 * blocks, global pooling, fc); det: the same backbone and a single-shot
 * grid head, one box per cell of the input/8 grid (YOLO v1 style).
 * EEB_EINVAL for a task without one yet (video).
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

/*
 * A record's labels for the net's loss: its class, or grid targets -- the
 * cell holding a box's centre gets the object flag, the class, the centre's
 * offset in the cell and the square roots of the box's width and height as
 * fractions of the image (Q16).  Difficult boxes are left out; of two boxes
 * in one cell the larger wins.
 */
void eeb_task_labels(const struct eeb_net *net, const struct eeb_shard_info *info,
                     const struct eeb_record *r, int32_t *labels);

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

#endif
