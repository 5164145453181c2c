/*
 * task_data.h - the small shards the tasks suites (test_batches.c,
 * test_evaluate.c) read back item by item, each record telling which it
 * is, so a test can say what every item must hold (tests/tasks/task_data.c).
 */
#ifndef TASK_DATA_H
#define TASK_DATA_H

#include "tasks/eeb_shard.h"

#include <stdint.h>

/* Record i of the clip shard (video, 3 classes, 2 frames of 2x2x3 = 24
 * bytes, id "clipNN"): frame 0 all i, frame 1 counting 200 + its byte's
 * position; its class i % 3.  Its pixels into px. */
void task_test_clip(int i, uint8_t px[24]);
/* A shard of n such clips; its path (static storage, a fresh directory). */
const char *task_test_clip_shard(int n);

/* The detection shard's header: 16x16x3 images, 3 classes. */
struct eeb_shard_info task_test_det_info(void);
/* Record i of the detection shard (id "imgNN", first byte i, the rest 7)
 * has i % 4 boxes -- record 0 none; box k of them is this: class
 * (i + k) % 3, difficult when k == 2, its corners telling i and k apart. */
int task_test_det_boxes(int i);
struct eeb_box task_test_det_box(int i, int k);
/* A shard of n such records; its path (static storage, a fresh directory). */
const char *task_test_det_shard(int n);

#endif
