/*
 * sut_data.h - shards, batches and predictions the SUT suites share
 * (tests/sut/sut_data.c).
 */
#ifndef SUT_DATA_H
#define SUT_DATA_H

#include "sut/eeb_sut.h"
#include "tasks/eeb_shard.h"

#include <stdint.h>

#define BATCH     8
#define SIDE      16
#define FRAMES    4 /* video */
#define TOP_K     5
#define MAX_BOXES 3 /* det: fewer than its 5 classes, so the limit is met */

/* A batch of records as the shards hold them, and the SUT's view of it. */
struct batch {
    uint8_t px[BATCH * FRAMES * SIDE * SIDE * 3];
    int32_t labels[BATCH], counts[BATCH];
    struct eeb_sut_box boxes[BATCH * EEB_SHARD_MAX_BOXES];
    struct eeb_sut_batch b;
};

/* A whole shard read into batches of at most BATCH records. */
struct data {
    struct eeb_shard_info info;
    int nbatches;
    struct batch *batches;
};

/* What predict wrote for a batch (zeroed first, so memcmp compares them). */
struct preds {
    int32_t classes[BATCH * TOP_K], counts[BATCH];
    float scores[BATCH * TOP_K];
    struct eeb_sut_detection dets[BATCH * MAX_BOXES];
};

/* A shard of the task made by the generator (SIDE pixels, FRAMES for
 * video); its path. */
const char *sut_test_shard(enum eeb_task task, int n, uint64_t seed);
/* The shard at path, read into batches. */
struct data sut_test_read(const char *path);
/* The setup for items of info: BATCH, TOP_K, MAX_BOXES. */
struct eeb_sut_setup sut_test_setup(const struct eeb_shard_info *info, uint64_t seed,
                                    const char *config);
/* A model file of the first line alone: untrained (both examples read it). */
const char *sut_test_empty_model(void);
/* predict on the batch's pixels alone, into p (zeroed first). */
void sut_test_predict(const struct eeb_sut_ops *ops, void *h, const struct eeb_sut_batch *b,
                      struct preds *p);
/* Classes in range, top_k distinct ones best first; boxes inside the
 * image, at most max_boxes, best first. */
void sut_test_well_formed(const struct data *d, const struct preds *p, int n);
/* Whether class k was a target of item i of batch b. */
int sut_test_shown(const struct data *d, const struct batch *b, int i, int k);
/* Item i's best class (det: its best box's), or -1. */
int sut_test_first(const struct data *d, const struct preds *p, int i);

#endif
