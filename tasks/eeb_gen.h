/*
 * eeb_gen.h - seeded synthetic data for the three tasks: learnable images,
 * boxes and clips in two domains, so that a full pre-train -> fine-tune ->
 * test run shows real learning on any machine.
 *
 *   cls    20 classes: 5 shapes x 4 textures (solid, horizontal stripes,
 *          vertical stripes, checker), one object per image
 *   det    5 classes (the shapes), 1-3 objects per image with tight boxes;
 *          tiny ones are marked difficult, as VOC marks hard objects
 *   video  20 classes: 2 shapes x 10 motions (8 directions, grow, shrink);
 *          no single frame tells the class, only their order does
 *
 * The pre-train domain draws saturated objects on dark, plain backgrounds;
 * the fine-tune domain draws washed-out, smaller objects on coloured
 * gradients crossed by clutter, so a model pre-trained on the first does
 * measurably worse on the second until it is fine-tuned.  Every record
 * depends only on (seed, task, domain, split, index).
 */
#ifndef EEB_GEN_H
#define EEB_GEN_H

#include "common/eeb_common.h"

#include <stddef.h>
#include <stdint.h>

enum eeb_gen_domain { EEB_GEN_PRETRAIN, EEB_GEN_FINETUNE };

struct eeb_gen_spec {
    enum eeb_task task;
    enum eeb_gen_domain domain;
    int test;      /* 0 train split, 1 test split (disjoint draws) */
    uint64_t n;    /* records */
    uint64_t seed; /* the same spec and seed give the same bytes */
    int size;      /* image side in pixels, 16..1024 */
    int frames;    /* video: frames per clip, 2..64; else 1 */
};

/* Writes the shard spec describes to path (atomically).  progress, if
 * not NULL, is called after each record with the count written so far. */
int eeb_gen_shard(const char *path, const struct eeb_gen_spec *spec,
                  void (*progress)(uint64_t done, uint64_t total, void *arg), void *arg, char *err,
                  size_t errlen);

#endif
